"""Receive cost with a backlog: items read per message delivered when messages in flight or delayed sort ahead
of 100 visible ones.

Each design has one table; the levels are reached one after another by seeding the difference (messages in
flight and delayed are seeded as sent before everything so far, so every design that reads in send order meets
them first) and topping the visible messages up to 100. A consumer then receives 10 at a time and deletes what it
got; everything it calls is counted (the baselines' reads before writes included). The baselines read the whole
backlog again on every receive, which takes moto seconds per receive at the largest levels, so once the backlog
reaches 1,000 they deliver `BASELINE_SAMPLE` messages (every receive then costs the same) while ours delivers all.
Seeding is not metered.
"""

from __future__ import annotations

import time
from typing import Any, Final

from ..backend import moto_backend
from ..baselines import HiddenUntilQueue, StatusIndexQueue
from ..messages import KB, body
from ..meter import Meter
from ..queues import OursQueue, QueueUnderTest

NAME: Final = "backlog"
VISIBLE: Final = 100
LEVELS: Final = ((0, 0), (1_000, 0), (10_000, 0), (10_000, 10_000))
QUICK_LEVELS: Final = ((0, 0), (200, 0), (500, 500))
BASELINE_SAMPLE: Final = 10
DESIGNS: Final = {"ours": OursQueue, "hidden_until": HiddenUntilQueue, "status_index": StatusIndexQueue}


def consume(queue: QueueUnderTest, meter: Meter, want: int) -> dict[str, float]:
    """Receives 10 at a time and deletes, until `want` messages came (or a receive came back empty)."""
    delivered = receives = 0
    started = time.perf_counter()
    with meter.window() as cost:
        while delivered < want:
            got = queue.receive(min(10, want - delivered))
            receives += 1
            if not got:
                break
            queue.delete_batch([message.handle for message in got])
            delivered += len(got)
    seconds = time.perf_counter() - started
    figures = cost.per(delivered)
    figures.update(
        delivered=delivered,
        receives=receives,
        items_read_total=cost.items_read,
        empty_queries=cost.empty_queries,
        seconds=seconds,
    )
    return figures


def run(quick: bool = False) -> dict[str, Any]:
    levels = QUICK_LEVELS if quick else LEVELS
    text = body(KB)
    rows: list[dict[str, Any]] = []
    with moto_backend() as backend:
        for name, design in DESIGNS.items():
            queue = design.create(backend.client, f"backlog-{name}")
            seeded = {"in_flight": 0, "delayed": 0, "visible": 0}
            for in_flight, delayed in levels:
                started = time.perf_counter()
                with backend.meter.paused():
                    for state, target in (("in_flight", in_flight), ("delayed", delayed), ("visible", VISIBLE)):
                        if target > seeded[state]:
                            queue.seed(target - seeded[state], state, text)
                            seeded[state] = target
                seed_seconds = time.perf_counter() - started
                sample = VISIBLE if name == "ours" or in_flight + delayed < 1_000 else BASELINE_SAMPLE
                figures = consume(queue, backend.meter, sample)
                seeded["visible"] -= figures["delivered"]
                rows.append(
                    {
                        "design": name,
                        "in_flight": in_flight,
                        "delayed": delayed,
                        "seed_seconds": seed_seconds,
                        **figures,
                    }
                )
                print(
                    f"  backlog {in_flight:>6} in flight + {delayed:>6} delayed, {name:<13}: "
                    f"{figures['items_read']:9.2f} items read / delivered ({figures['delivered']} delivered, "
                    f"seed {seed_seconds:.1f} s, consume {figures['seconds']:.1f} s)"
                )
            backend.client.delete_table(TableName=f"backlog-{name}")
        backend_name = backend.name
    return {"backend": backend_name, "visible": VISIBLE, "levels": [list(level) for level in levels], "rows": rows}
