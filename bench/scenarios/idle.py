"""Idle shards: what a quiet receive costs on a queue of a fixed number of shards, standard and FIFO.

Each queue is created with a fixed `shards` (1, 8, 64, 512) and measured twice in the same run, by the same code:
*before* with the home shard and the shard marks switched off (sends go round the shards, a receive visits them
from a random one and every one before it answers empty: the design until this change), and *after* as built
(`queue_core/shard_marks.py`). Two figures per queue: queries per empty receive (receive(10) on a drained queue,
`EMPTY_RECEIVES` times), and queries per delivered message at low load (one message sent at a time, received with
receive(10) and deleted, `PAUSE` seconds apart; FIFO messages in five groups), with the write units each message
cost in all (send, receive, delete, and any mark). Queries are counted by the meter's botocore hook, per call.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from queue_core import QueueClient, shard_marks
from queue_core.shards import HomeLane

from ..backend import moto_backend

NAME: Final = "idle"
SHARDS: Final = (1, 8, 64, 512)
QUICK_SHARDS: Final = (1, 64)
EMPTY_RECEIVES: Final = 10
MESSAGES: Final = 20
QUICK_MESSAGES: Final = 5
PAUSE: Final = 0.25
TARGET_EMPTY: Final = 2.0
TARGET_DELIVERED: Final = {False: 1.5, True: 3.0}


@contextmanager
def design(before: bool) -> Iterator[None]:
    """`before`: no home shard and no marks, as the core was before them (patched here, for the comparison)."""
    if not before:
        yield
        return
    in_use, take = shard_marks.in_use, HomeLane.take
    shard_marks.in_use = lambda settings: False  # type: ignore[assignment]
    HomeLane.take = lambda self, count=1: False  # type: ignore[assignment,method-assign]
    try:
        yield
    finally:
        shard_marks.in_use = in_use  # type: ignore[assignment]
        HomeLane.take = take  # type: ignore[method-assign]


def _case(backend: Any, shards: int, fifo: bool, before: bool, messages: int) -> dict[str, Any]:
    name = f"{'b' if before else 'a'}{shards}" + (".fifo" if fifo else "")
    core = QueueClient("idle", dynamodb=backend.client)
    core.create_table()
    core.create_queue(name, shards=shards, visibility_timeout=30)
    sub = core.queue(name, "tenant-a")
    extra = (lambda n: {"group_id": f"g{n % 5}"}) if fifo else (lambda n: {})
    with design(before):
        sub.send("warm", **extra(0))
        while got := sub.receive(10):
            sub.delete_batch([message.receipt_handle for message in got])
        empties = EMPTY_RECEIVES if shards < 512 else 3
        with backend.meter.window() as empty:
            for _ in range(empties):
                sub.receive(10)
        delivered = 0
        with backend.meter.window() as low:
            for n in range(messages):
                started = time.monotonic()
                sub.send(f"low {n}", **extra(n))
                got = sub.receive(10)
                sub.delete_batch([message.receipt_handle for message in got])
                delivered += len(got)
                time.sleep(max(0.0, PAUSE - (time.monotonic() - started)))
    return {
        "shards": shards,
        "fifo": fifo,
        "design": "before" if before else "after",
        "queries_per_empty_receive": empty.calls["Query"] / empties,
        "read_units_per_empty_receive": empty.read_units / empties,
        "delivered": delivered,
        "queries_per_delivered": low.calls["Query"] / max(delivered, 1),
        "write_units_per_delivered": low.all_write_units / max(delivered, 1),
    }


def run(quick: bool = False) -> dict[str, Any]:
    rows = []
    with moto_backend() as backend:
        for shards in QUICK_SHARDS if quick else SHARDS:
            for fifo in (False, True):
                for before in (True, False):
                    row = _case(backend, shards, fifo, before, QUICK_MESSAGES if quick else MESSAGES)
                    rows.append(row)
                    print(
                        f"  {'FIFO' if fifo else 'standard'} {shards:>3} shards, {row['design']:<6}: "
                        f"{row['queries_per_empty_receive']:6.1f} queries per empty receive, "
                        f"{row['queries_per_delivered']:6.2f} per delivered, "
                        f"{row['write_units_per_delivered']:5.2f} write units per message",
                        flush=True,
                    )
        name = backend.name
    return {"backend": name, "pause": PAUSE, "rows": rows}


def summary_rows(results: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    rows = []
    for fifo in (False, True):
        after = [row for row in results["rows"] if row["fifo"] == fifo and row["design"] == "after"]
        worst_empty = max(row["queries_per_empty_receive"] for row in after)
        worst = max(row["queries_per_delivered"] for row in after)
        most = TARGET_DELIVERED[fifo]
        kind = "FIFO" if fifo else "standard"
        counts = "/".join(str(row["shards"]) for row in after)
        rows.append(
            (
                f"quiet receive, {kind}, fixed {counts} shards: queries per empty receive; per delivered at low load",
                f"≤ {TARGET_EMPTY:g}; ≤ {most:g}",
                f"{worst_empty:.2f}; {worst:.2f} (worst count)",
                "yes" if worst_empty <= TARGET_EMPTY and worst <= most else "no",
            )
        )
    return rows


def section(results: dict[str, Any]) -> list[str]:
    doc = "\n\n".join(" ".join(part.split()) for part in (__doc__ or "").strip().split("\n\n"))
    header = (
        "| queue | shards | queries per empty receive, before → after | queries per delivered "
        "| write units per message |"
    )
    lines = ["## Idle shards\n", f"Backend: {results['backend']}. {doc}\n", header, "| --- | --- | --- | --- | --- |"]
    by = {(row["fifo"], row["shards"], row["design"]): row for row in results["rows"]}
    for fifo in (False, True):
        for shards in sorted({row["shards"] for row in results["rows"]}):
            before, after = by[(fifo, shards, "before")], by[(fifo, shards, "after")]
            lines.append(
                f"| {'FIFO' if fifo else 'standard'} | {shards} | "
                f"{before['queries_per_empty_receive']:.1f} → {after['queries_per_empty_receive']:.1f} | "
                f"{before['queries_per_delivered']:.2f} → {after['queries_per_delivered']:.2f} | "
                f"{before['write_units_per_delivered']:.2f} → {after['write_units_per_delivered']:.2f} |"
            )
    lines.append("")
    return lines
