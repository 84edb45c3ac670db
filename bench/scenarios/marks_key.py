"""The shard marks' one partition under many fast senders: its write and read units a second.

`PRODUCERS` sender processes (each its own core client and caches, as Lambda instances are) send `RATE` messages a
second each, in batches of 10, to a standard queue of `SHARDS` fixed shards, for `SECONDS` of queue time (the clock
is moved on, not waited for). Each goes round the shards by runs of 10 messages (`SendRotation`), so each meets
every shard within `MARK_SECONDS`, and, trusting only its own puts, would put every shard's mark every
`MARK_SECONDS`: `PRODUCERS` times what the queue needs, all on one partition key. Counted with the botocore meter:
the write and read units of the marks partition (`K#`) per second of queue time, from the first second on. The
baseline, in the same run: the same senders with `shard_marks.BUSY_PUTS` out of reach, so that they never read
the list (as before they did). A partition key takes at most 1,000 write units a second.
"""

from __future__ import annotations

import time
from typing import Any, Final

from queue_core import QueueClient, shard_marks

from ..backend import moto_backend

NAME: Final = "marks_key"
SHARDS: Final = 64
PRODUCERS: Final = 20
RATE: Final = 70  # messages a second each: 7 shards a second, all 64 within `MARK_SECONDS`
SECONDS: Final = 20
BATCH: Final = 10
KEY_WRITE_UNITS: Final = 1_000


class _Clock:
    """The queue's time: the scenario's alone (moto's time on this machine must not slow the senders' rate)."""

    def __init__(self) -> None:
        self.skew = time.time()

    def __call__(self) -> float:
        return self.skew


def _case(backend: Any, clock: _Clock, name: str, producers: int, seconds: int) -> dict[str, Any]:
    core = QueueClient("marks", dynamodb=backend.client, clock=clock)
    core.create_queue(name, visibility_timeout=30, shards=SHARDS)
    subs = [QueueClient("marks", dynamodb=backend.client, clock=clock).queue(name, "t") for _ in range(producers)]
    batches = RATE // BATCH
    with backend.meter.window() as cost:
        for _ in range(seconds):
            for _ in range(batches):
                for sub in subs:
                    result = sub.send_batch([{"body": "x"} for _ in range(BATCH)])
                    if result.failed:
                        raise RuntimeError(f"send_batch failed: {result.failed[:3]}")
                clock.skew += 1 / batches
    write = sum(units[0] for (_, key), units in cost.partitions.items() if str(key).startswith("K#"))
    read = sum(units[1] for (_, key), units in cost.partitions.items() if str(key).startswith("K#"))
    return {"write_units_a_second": write / seconds, "read_units_a_second": read / seconds}


def run(quick: bool = False) -> dict[str, Any]:
    producers, seconds = (5, 4) if quick else (PRODUCERS, SECONDS)
    with moto_backend() as backend:
        clock = _Clock()
        QueueClient("marks", dynamodb=backend.client, clock=clock).create_table()
        saved = shard_marks.BUSY_PUTS
        shard_marks.BUSY_PUTS = 10**9  # type: ignore[misc]
        try:
            before = _case(backend, clock, "own-only", producers, seconds)
        finally:
            shard_marks.BUSY_PUTS = saved  # type: ignore[misc]
        now = _case(backend, clock, "shared", producers, seconds)
        name = backend.name
    print(
        f"  {producers} senders x {RATE} msg/s on {SHARDS} shards: marks partition {now['write_units_a_second']:.1f} "
        f"WU/s, {now['read_units_a_second']:.1f} RU/s (trusting only their own puts: "
        f"{before['write_units_a_second']:.1f} WU/s, {before['read_units_a_second']:.1f} RU/s)"
    )
    return {"backend": name, "producers": producers, "seconds": seconds, "before": before, "now": now}


def section(results: dict[str, Any]) -> list[str]:
    before, now = results["before"], results["now"]
    per_sender = before["write_units_a_second"] / results["producers"]
    return [
        "## The shard marks' partition under many fast senders",
        "",
        f"{results['producers']} sender processes, each {RATE} messages a second in batches of {BATCH}, on a "
        f"standard queue of {SHARDS} fixed shards, for {results['seconds']} s of queue time. Each goes round the "
        "shards by runs of 10 and meets every one within the marks' trust; trusting only its own puts, each put "
        "every shard's mark. A sender that put several marks within a second now reads the list (at most once a "
        "second) and trusts the marks others put as long as its own, 10 s (`shard_marks.BUSY_PUTS`).",
        "",
        "| senders trust | marks partition: write units a second | read units a second |",
        "| --- | --- | --- |",
        f"| their own puts only (before) | {before['write_units_a_second']:.1f} | "
        f"{before['read_units_a_second']:.1f} |",
        f"| the marks they read too | {now['write_units_a_second']:.1f} | {now['read_units_a_second']:.1f} |",
        "",
        f"Trusting only its own puts, each sender adds {per_sender:.1f} write units a second at {SHARDS} shards, "
        f"{per_sender * 8:.0f} at 512: about {KEY_WRITE_UNITS / max(per_sender * 8, 1):.0f} such senders fill the "
        f"partition's {KEY_WRITE_UNITS:,} a second on a queue of 512 shards. Backend: {results['backend']}. "
        "Rerun: `.venv/bin/python -m bench.run --only marks_key`.",
        "",
    ]
