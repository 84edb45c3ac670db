"""Write sharding: the ceiling of one queue under DynamoDB's per-partition limits, from a recorded trace.

DynamoDB serves at most 1,000 write units and 3,000 read units per second on one partition key, on the table and
on each index partition alike. For each shard count a trace is recorded (send in batches of 25, receive 10 at a
time, delete) and the meter's units are split by partition key. The ceiling is the message rate at which a shard's
key reaches its limit when every shard carries its share: `shards x limit / (units per message on the shard keys
of that table or index)`. The busiest key of the trace is reported beside it: senders pick a shard at random, so
over a short trace (12 messages per shard) some shards get half as much again as their share, an imbalance that
shrinks as traffic grows. Messages are 1 KB items (the largest body whose item stays within 1 KB) at every shard
count, and 1 KB bodies (items a little over 1 KB: two write units per table write) at the fewest and most. The
baselines have no shards: their one partition key (or index partition) is their ceiling.

At low load many shards cost empty queries: a receive may visit shards that hold nothing. That is measured with
one message sent at a time, `LOW_LOAD_PAUSE` apart, and received with receive(10). An automatic queue (the
default) gives its shards back once quiet: the same trickle, at `AUTO_RATE` messages a second, on a standard and
a FIFO queue that grew to the most shards a queue takes (`limits.MAX_SHARDS`), got messages on its shards (every
one, standard; most, FIFO) and was drained, then passed its quiet period (the clock is moved on, so the sweep's
decisions run as they would after `QUIET_SECONDS`).
"""

from __future__ import annotations

import time
from typing import Any, Final

from queue_core import QueueClient, autoshard, limits

from ..backend import moto_backend
from ..baselines import HiddenUntilQueue, StatusIndexQueue
from ..meter import Totals
from ..queues import OursQueue, QueueUnderTest
from .life_cost import fitting_body

NAME: Final = "sharding"
SHARDS: Final = (1, 8, 32, 64)
QUICK_SHARDS: Final = (1, 8)
MESSAGES_PER_SHARD: Final = 12
MIN_MESSAGES: Final = 100
WRITE_LIMIT: Final = 1_000
READ_LIMIT: Final = 3_000
LOW_LOAD_SHARDS: Final = 64
PEAK_SHARDS: Final = limits.MAX_SHARDS
LOW_LOAD_MESSAGES: Final = 10
LOW_LOAD_PAUSE: Final = 0.25
AUTO_RATE: Final = 10
AUTO_MESSAGES: Final = 50


class MovableClock:
    """Wall-clock time that the scenario may move on, as a quiet period would."""

    def __init__(self) -> None:
        self.skew = 0.0

    def __call__(self) -> float:
        return time.time() + self.skew


def ceiling(totals: Totals, messages: int) -> dict[str, Any]:
    """The message rate at which the busiest partition key meets DynamoDB's limit, and that key."""
    worst_rate, worst_key = float("inf"), ""
    for (space, key), (write, read) in totals.partitions.items():
        rate = min(
            WRITE_LIMIT * messages / write if write else float("inf"),
            READ_LIMIT * messages / read if read else float("inf"),
        )
        if rate < worst_rate:
            worst_rate, worst_key = rate, f"{space} {key}"
    return {"ceiling": worst_rate, "busiest_key": worst_key}


def _trace(queue: QueueUnderTest, meter: Any, text: str, messages: int) -> Totals:
    with meter.window() as cost:
        queue.send_batch([text] * messages)
        done = 0
        while done < messages:
            got = queue.receive(10)
            if not got:
                break
            queue.delete_batch([message.handle for message in got])
            done += len(got)
    return cost


def _even(totals: Totals, messages: int, shards: int, prefix: str) -> float:
    """The ceiling if every shard carried exactly its share of the trace's units."""
    rates = []
    for space in {space for space, _ in totals.partitions}:
        write = sum(w for (s, k), (w, _) in totals.partitions.items() if s == space and k.startswith(prefix))
        read = sum(r for (s, k), (_, r) in totals.partitions.items() if s == space and k.startswith(prefix))
        if write:
            rates.append(WRITE_LIMIT * shards * messages / write)
        if read:
            rates.append(READ_LIMIT * shards * messages / read)
    return min(rates) if rates else float("inf")


def _low_load(backend: Any, pause: float, messages: int) -> dict[str, float]:
    queue = OursQueue.create(backend.client, "sharding-low", queue="low", shards=LOW_LOAD_SHARDS)
    queue.warm()
    delivered = 0
    with backend.meter.window() as cost:
        for _ in range(messages):
            queue.send("low load")
            got = queue.receive(10)
            queue.delete_batch([message.handle for message in got])
            delivered += len(got)
            time.sleep(pause)
    return {
        "shards": LOW_LOAD_SHARDS,
        "delivered": delivered,
        "empty_queries_per_delivered": cost.empty_queries / max(delivered, 1),
        "queries_per_delivered": cost.calls["Query"] / max(delivered, 1),
        "read_units_per_delivered": cost.read_units / max(delivered, 1),
    }


def _low_load_after_growth(backend: Any, fifo: bool, messages: int) -> dict[str, Any]:
    """Queries and items read per delivered message, at `AUTO_RATE` a second, on an automatic queue that grew to
    `PEAK_SHARDS` and was then quiet."""
    clock = MovableClock()
    core = QueueClient("sharding-auto", dynamodb=backend.client, clock=clock)
    core.create_table()
    name = "auto.fifo" if fifo else "auto"
    core.create_queue(name, visibility_timeout=30)
    core.reshard_automatically(name, PEAK_SHARDS)  # where a load peak leaves it (see the load-step scenario)
    sub = core.queue(name, "tenant-a")
    # Standard sends go round the shards: four a shard. FIFO groups hash to theirs: one group a shard on average
    # (each a transaction of its own: more would cost minutes here and show nothing more).
    for start in range(0, (1 if fifo else 4) * PEAK_SHARDS, 25):
        entries = [{"body": f"peak {n}", **({"group_id": f"g{n}"} if fifo else {})} for n in range(start, start + 25)]
        sub.send_batch(entries)
    while got := sub.receive(10):
        sub.delete_batch([message.receipt_handle for message in got])
    peak = core.get_queue(name).read_shards
    clock.skew += autoshard.QUIET_SECONDS + 60
    core.sweep()  # quiet for long enough: back to the minimum
    clock.skew += 120
    core.sweep()  # every process sends by the new count, the old shards are empty: receivers stop visiting them
    settings = core.get_queue(name)
    delivered = 0
    with backend.meter.window() as cost:
        for n in range(messages):
            started = time.monotonic()
            sub.send("low load", **({"group_id": f"t{n % 5}"} if fifo else {}))
            got = sub.receive(10)
            sub.delete_batch([message.receipt_handle for message in got])
            delivered += len(got)
            time.sleep(max(0.0, 1 / AUTO_RATE - (time.monotonic() - started)))
    return {
        "fifo": fifo,
        "peak_shards": peak,
        "shards": settings.shards,
        "read_shards": settings.read_shards,
        "delivered": delivered,
        "queries_per_delivered": cost.calls["Query"] / max(delivered, 1),
        "items_read_per_delivered": cost.items_read / max(delivered, 1),
        "empty_queries_per_delivered": cost.empty_queries / max(delivered, 1),
    }


def run(quick: bool = False) -> dict[str, Any]:
    shard_counts = QUICK_SHARDS if quick else SHARDS
    rows = []
    with moto_backend() as backend:
        probe = OursQueue.create(backend.client, "sharding-probe", queue="probe")
        probe.send("warm")
        fit = fitting_body(probe, backend.meter)
        bodies = {"kb_body": "k" * 1024, "fitting_body": "f" * fit}
        for shards in shard_counts:
            for variant, text in bodies.items():
                if variant == "kb_body" and shards not in (shard_counts[0], shard_counts[-1]):
                    continue
                queue = OursQueue.create(backend.client, "sharding", queue=f"s{shards}-{variant[0]}", shards=shards)
                queue.warm()
                messages = max(MIN_MESSAGES, MESSAGES_PER_SHARD * shards)
                totals = _trace(queue, backend.meter, text, messages)
                prefix = f"M#s{shards}-{variant[0]}#"
                figures = ceiling(totals, messages)
                row = {
                    "design": "ours",
                    "shards": shards,
                    "body": variant,
                    "messages": messages,
                    "ceiling": figures["ceiling"],
                    "busiest_key": figures["busiest_key"],
                    "even_ceiling": _even(totals, messages, shards, prefix),
                }
                rows.append(row)
                print(
                    f"  sharding ours {shards:>2} shards, {variant:<12}: ceiling {row['ceiling']:8.0f} msg/s "
                    f"(even spread {row['even_ceiling']:8.0f})"
                )
        for name, design in (("hidden_until", HiddenUntilQueue), ("status_index", StatusIndexQueue)):
            queue = design.create(backend.client, f"sharding-{name}")
            totals = _trace(queue, backend.meter, "k" * 1024, MIN_MESSAGES)
            figures = ceiling(totals, MIN_MESSAGES)
            rows.append({"design": name, "shards": 1, "body": "kb_body", "messages": MIN_MESSAGES, **figures})
            print(f"  sharding {name}: ceiling {figures['ceiling']:8.0f} msg/s ({figures['busiest_key']})")
        low = _low_load(backend, LOW_LOAD_PAUSE, 5 if quick else LOW_LOAD_MESSAGES)
        print(
            f"  low load, {LOW_LOAD_SHARDS} shards: {low['empty_queries_per_delivered']:.1f} empty-shard queries "
            f"per delivered message"
        )
        auto = [_low_load_after_growth(backend, fifo, 10 if quick else AUTO_MESSAGES) for fifo in (False, True)]
        for figures in auto:
            print(
                f"  low load, {'FIFO' if figures['fifo'] else 'standard'} automatic queue once at "
                f"{figures['peak_shards']} shards, now {figures['read_shards']}: "
                f"{figures['queries_per_delivered']:.2f} queries, {figures['items_read_per_delivered']:.2f} items read "
                "per delivered message"
            )
        name = backend.name
    return {"backend": name, "fitting_body_bytes": fit, "rows": rows, "low_load": low, "low_load_auto": auto}
