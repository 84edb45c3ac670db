"""Concurrent consumers on one sub-queue: wasted conditional writes (claims lost to another consumer) per message
delivered, duplicates held at once, and receives that came back empty while visible messages existed.

For each shard count and each number of consumer threads, a fresh queue gets `MESSAGES` messages; each thread is its
own consumer (its own core client, as another Lambda instance would be) and loops receive(10) then delete_batch
until half the messages are deleted: the queue never runs low, as in steady state (draining it to the last message
would measure the final scramble for the last few messages instead). Requests reach moto one at a time (DynamoDB's
per-request atomicity); threads interleave between requests, as they would against the service. A receive that came
back empty is "false" when fewer messages had been claimed than sent by the time it returned: with no visibility
timeout expiring during the run, some message was visible throughout that receive.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Final

from ..backend import moto_backend
from ..messages import body
from ..queues import OursQueue

NAME: Final = "contention"
CONSUMERS: Final = (1, 4, 16)
SHARDS: Final = (1, 4, 8, 16)
# Past the grid: more shards for the most consumers, to see whether shards alone reach the target.
EXTRA: Final = ((64, 16),)
MESSAGES: Final = 480
QUICK_MESSAGES: Final = 120
IDLE_PAUSE_SECONDS: Final = 0.005


class _Tally:
    """What the consumers saw, under one lock."""

    def __init__(self, total: int, stop_at: int) -> None:
        self.lock = threading.Lock()
        self.total = total
        self.stop_at = stop_at
        self.claimed = 0
        self.deleted = 0
        self.held: set[str] = set()
        self.duplicates_held = 0
        self.false_empty = 0
        self.receives = 0

    def done(self) -> bool:
        with self.lock:
            return self.deleted >= self.stop_at


def _consume(queue: OursQueue, tally: _Tally, start: threading.Barrier) -> None:
    start.wait()
    while not tally.done():
        got = queue.receive(10)
        with tally.lock:
            tally.receives += 1
            tally.claimed += len(got)
            if not got and tally.claimed < tally.total:
                tally.false_empty += 1
            for message in got:
                tally.duplicates_held += message.message_id in tally.held
                tally.held.add(message.message_id)
        if not got:
            time.sleep(IDLE_PAUSE_SECONDS)
            continue
        queue.delete_batch([message.handle for message in got])
        with tally.lock:
            tally.deleted += len(got)
            tally.held.difference_update(message.message_id for message in got)


def run_one(backend: Any, shards: int, consumers: int, messages: int) -> dict[str, Any]:
    queue = OursQueue.create(backend.client, "contention", queue=f"c-{shards}-{consumers}", shards=shards)
    with backend.meter.paused():
        queue.send_batch([body(256, seed=n) for n in range(messages)])
    workers = [queue.consumer() for _ in range(consumers)]
    for worker in workers:
        worker.warm()
    tally = _Tally(messages, stop_at=messages // 2)
    start = threading.Barrier(consumers + 1)
    threads = [threading.Thread(target=_consume, args=(worker, tally, start)) for worker in workers]
    for thread in threads:
        thread.start()
    with backend.meter.window() as cost:
        started = time.perf_counter()
        start.wait()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
    core_conflicts = sum(worker.sub.claim_conflicts for worker in workers)
    return {
        "shards": shards,
        "consumers": consumers,
        "delivered": tally.claimed,
        "wasted_per_delivered": cost.condition_failures / max(tally.claimed, 1),
        "core_conflicts_per_delivered": core_conflicts / max(tally.claimed, 1),
        "duplicates_held": tally.duplicates_held,
        "false_empty_receives": tally.false_empty,
        "receives": tally.receives,
        "api_calls_per_delivered": cost.api_calls / max(tally.claimed, 1),
        "items_read_per_delivered": cost.items_read / max(tally.claimed, 1),
        "seconds": seconds,
    }


def run(quick: bool = False) -> dict[str, Any]:
    messages = QUICK_MESSAGES if quick else MESSAGES
    shard_counts = (1, 16) if quick else SHARDS
    rows = []
    with moto_backend() as backend:
        runs = [(shards, consumers) for shards in shard_counts for consumers in CONSUMERS]
        for shards, consumers in runs + ([] if quick else list(EXTRA)):
            row = run_one(backend, shards, consumers, messages)
            rows.append(row)
            print(
                f"  contention {consumers:>2} consumers, {shards:>2} shards: "
                f"{row['wasted_per_delivered']:.3f} wasted writes / delivered, "
                f"{row['duplicates_held']} duplicates held, {row['false_empty_receives']} false empty receives "
                f"({row['seconds']:.1f} s)"
            )
        name = backend.name
    return {"backend": name, "messages": messages, "rows": rows}
