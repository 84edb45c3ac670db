"""Replay of the archive on the throttling backend: how fast a replay goes at its rate, what it costs per message,
and what a shard count too small for the rate does.

A standard queue of a fixed shard count acknowledges `MESSAGES` messages (1 KB) with its archive on; then one
replay of them all runs at each rate, alone, on the simulated clock (`bench.throttling`: DynamoDB's per-key and
per-table limits, the clock moved by the replay's own waits). A throttle stops a run of the replay (the core
surfaces it as `Throttled`); the scenario waits a simulated second and runs it again, as `dq archive replay` would
call again. Figures: simulated seconds, new messages a second, stops, and write units per replayed message
(everything the replay wrote: the new messages, their dedup items, the job's updates).
"""

from __future__ import annotations

from typing import Any, Final

from queue_core import QueueClient, Throttled

from ..backend import moto_backend
from ..messages import KB, body
from ..throttling import SimClock, Throttler

NAME: Final = "replay"
COMMAND: Final = ".venv/bin/python -m bench.run --only replay"
TABLE: Final = "replay"
MESSAGES: Final = 1_000
QUICK_MESSAGES: Final = 200
RATES: Final = (100, 500, 1_000)
SHARDS: Final = (1, 8)
STOP_WAIT_SECONDS: Final = 1.0


def run(quick: bool = False) -> dict[str, Any]:
    messages = QUICK_MESSAGES if quick else MESSAGES
    results: dict[str, Any] = {"messages": messages, "rows": []}
    with moto_backend() as backend:
        results["backend"] = backend.name
        clock = SimClock()
        core = QueueClient(TABLE, dynamodb=backend.client, clock=clock)
        core.create_table()
        for shards in SHARDS:
            queue = f"replayed-{shards}"
            core.create_queue(queue, shards=shards, archive_days=1)
            sub_queue = core.queue(queue, "a")
            _acknowledge(sub_queue, messages, clock)
            until = int(clock() * 1000)
            throttler = Throttler(backend.meter, clock).attach(backend.client)
            try:
                for rate in RATES:
                    results["rows"].append(_replay(sub_queue, backend.meter, clock, shards, rate, until))
            finally:
                throttler.detach()
    for row in results["rows"]:
        print(
            f"  {row['shards']} shards, rate {row['rate']}: {row['replayed']} in {row['seconds']:.1f} s "
            f"({row['per_second']:.0f}/s), {row['stops']} stops, {row['write_units']:.2f} WU a message"
        )
    return results


def _acknowledge(sub_queue: Any, messages: int, clock: SimClock) -> None:
    for start in range(0, messages, 10):
        sub_queue.send_batch([{"body": body(KB)} for _ in range(min(10, messages - start))])
        got = sub_queue.receive(max_messages=10)
        sub_queue.delete_batch([message.receipt_handle for message in got])
        clock.advance(0.01)
    left = sub_queue.receive(max_messages=10)
    while left:
        sub_queue.delete_batch([message.receipt_handle for message in left])
        left = sub_queue.receive(max_messages=10)


def _replay(sub_queue: Any, meter: Any, clock: SimClock, shards: int, rate: int, until: int) -> dict[str, Any]:
    clock.advance(60)  # full buckets: each replay starts from a rested table
    replay_id = sub_queue.replay_start(until=until, rate=rate).replay_id
    began, mark, stops = clock(), meter.mark(), 0
    status = sub_queue.replay_status(replay_id)
    while status.state == "running":
        try:
            status = sub_queue.replay_run(replay_id, 60, sleep=clock.advance)
        except Throttled:
            stops += 1
            clock.advance(STOP_WAIT_SECONDS)
    seconds = max(clock() - began, 1e-9)
    totals = meter.since(mark)
    return {
        "shards": shards,
        "rate": rate,
        "replayed": status.replayed,
        "seconds": seconds,
        "per_second": status.replayed / seconds,
        "stops": stops,
        "write_units": totals.all_write_units / max(status.replayed, 1),
    }


def section(figures: dict[str, Any]) -> list[str]:
    """The replay's paragraph for docs/benchmarks.md."""
    rows = [
        f"| {row['shards']} | {row['rate']} | {row['replayed']} | {row['seconds']:.1f} | {row['per_second']:.0f} | "
        f"{row['stops']} | {row['write_units']:.2f} |"
        for row in figures["rows"]
    ]
    return [
        "## Replay of the archive\n",
        f"One replay of {figures['messages']} archived messages (1 KB) into a standard queue of a fixed shard count, "
        "alone, at each rate, on the throttling backend's simulated clock (DynamoDB's per-key and per-table limits). "
        "A throttle stops a run of the replay; it is run again a simulated second later. Write units per replayed "
        f"message count everything the replay wrote. Reproduce with `{COMMAND}`.\n",
        "| shards | rate (/s) | replayed | seconds | replayed /s | stops | WU a message |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]
