"""`dq migrate` on a table of 10,000 messages: its time, its DynamoDB calls and units, and that nothing is lost.

The table holds a standard queue (4 shards) and a FIFO queue (10 groups a client), 50 clients each, 100 messages
a sub-queue (10,000 in all), a tenth of them in flight. It is written by this release's code, then its ready
markers and its layout record are removed: what a table of layout 1 holds for the migration, which reads the
registry (settings, the clients' index), each sub-queue's first index entry per shard, and puts one marker per
sub-queue with messages. The migration is measured alone (time on moto, calls and units by the meter). Then every
message is received queue-wide, without a sweep, and deleted: each must come exactly once, the ones in flight once
their claim has run out (the queue's clock is moved past it).
"""

from __future__ import annotations

import contextlib
import copy
import time
import types
from collections import Counter
from collections.abc import Iterator
from typing import Any, Final

from queue_core import QueueClient

from ..backend import moto_backend

NAME: Final = "migration"
TABLE: Final = "bench-migration"
CLIENTS: Final = 50
PER_SUB_QUEUE: Final = 100
QUICK_CLIENTS: Final = 10
QUICK_PER_SUB_QUEUE: Final = 50
GROUPS: Final = 10
IN_FLIGHT_SHARE: Final = 10  # one message in ten is received and kept in flight
COMMAND: Final = ".venv/bin/python -m bench.run --only migration"


class _Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@contextlib.contextmanager
def _no_table_snapshots() -> Iterator[None]:
    """moto 5.2.5 deep-copies the whole table for each item of a transaction (its rollback copy), so filling a table
    of 10,000 messages with FIFO sends (each a transaction) takes the square of its size: over an hour here. The
    fill skips that copy (its transactions do not fail); the migration and the checks after it run on moto as is."""
    import moto.dynamodb.models as models

    real = models.copy
    models.copy = types.SimpleNamespace(
        deepcopy=lambda value, *rest: value if isinstance(value, models.Table) else copy.deepcopy(value, *rest)
    )
    try:
        yield
    finally:
        models.copy = real


def _fill(core: QueueClient, clients: int, per_sub_queue: int) -> dict[tuple[str, str], set[str]]:
    core.create_queue("orders", shards=4, visibility_timeout=600)
    core.create_queue("events.fifo", fifo=True, visibility_timeout=600)
    sent: dict[tuple[str, str], set[str]] = {}
    for queue in ("orders", "events.fifo"):
        for number in range(clients):
            client = f"tenant-{number:03d}"
            sub = core.queue(queue, client)
            bodies = [f"{queue}/{client}/{n}" for n in range(per_sub_queue)]
            for start in range(0, len(bodies), 25):
                entries = [{"body": text} for text in bodies[start : start + 25]]
                if queue.endswith(".fifo"):
                    for entry in entries:
                        group = int(entry["body"].rsplit("/", 1)[1]) % GROUPS
                        entry.update(group_id=f"g{group}", dedup_id=entry["body"])
                result = sub.send_batch(entries)
                if result.failed:
                    raise RuntimeError(f"send failed: {result.failed[:1]}")
            sub.receive(max_messages=per_sub_queue // IN_FLIGHT_SHARE)
            sent[(queue, client)] = set(bodies)
    return sent


def _to_layout_1(client: Any) -> int:
    """Removes the ready markers and the layout record: the table as layout 1 left it."""
    removed = 0
    for page in client.get_paginator("scan").paginate(TableName=TABLE, ProjectionExpression="pk, sk"):
        for key in page["Items"]:
            if key["pk"]["S"].startswith("R#") or key["pk"]["S"] == "META":
                client.delete_item(TableName=TABLE, Key=key)
                removed += 1
    return removed


def _drain(core: QueueClient, queue: str) -> Counter:
    wide = core.queue_wide(queue)
    got: Counter = Counter()
    while batch := wide.receive(max_messages=10):
        for message in batch:
            got[(queue, message.client, message.body)] += 1
        wide.delete_batch([message.receipt_handle for message in batch])
    return got


def run(quick: bool = False) -> dict[str, Any]:
    clients, per_sub_queue = (QUICK_CLIENTS, QUICK_PER_SUB_QUEUE) if quick else (CLIENTS, PER_SUB_QUEUE)
    with moto_backend() as backend:
        clock = _Clock()
        core = QueueClient(TABLE, dynamodb=backend.client, clock=clock)
        with backend.meter.paused():
            core.create_table()
            with _no_table_snapshots():
                sent = _fill(core, clients, per_sub_queue)
            markers_removed = _to_layout_1(backend.client)
        messages = sum(len(bodies) for bodies in sent.values())
        migrator = QueueClient(TABLE, dynamodb=backend.client, clock=clock)  # a fresh process, as `dq migrate` is
        started = time.perf_counter()
        with backend.meter.window() as cost:
            report = migrator.migrate()
        seconds = time.perf_counter() - started
        with backend.meter.paused():
            clock.now += 601  # the claims of the messages left in flight run out
            consumer = QueueClient(TABLE, dynamodb=backend.client, clock=clock)
            got = _drain(consumer, "orders") + _drain(consumer, "events.fifo")
        expected = Counter({(queue, client, text): 1 for (queue, client), bodies in sent.items() for text in bodies})
        lost, twice = len(expected - got), sum(count - 1 for count in got.values() if count > 1)
        figures = {
            "backend": backend.name,
            "messages": messages,
            "sub_queues": report.sub_queues,
            "markers_put": report.markers,
            "markers_removed_before": markers_removed,
            "seconds": seconds,
            "api_calls": cost.api_calls,
            "calls": dict(cost.calls),
            "read_units": cost.read_units,
            "write_units": cost.all_write_units,
            "items_read": cost.items_read,
            "delivered": sum(got.values()),
            "lost": lost,
            "delivered_twice": twice,
            "layout": migrator.table_layout().layout,
        }
    print(
        f"  migration of {messages} messages in {figures['sub_queues']} sub-queues: {seconds:.2f} s, "
        f"{figures['api_calls']} calls, {figures['read_units']:.1f} RU, {figures['write_units']:.1f} WU, "
        f"{figures['markers_put']} markers; then {figures['delivered']} delivered, {lost} lost, {twice} twice"
    )
    if lost or twice:
        raise RuntimeError(f"the migration lost {lost} or doubled {twice} messages")
    return figures


def section(figures: dict[str, Any]) -> list[str]:
    """The migration's paragraph for docs/benchmarks.md."""
    calls = ", ".join(f"{count} {name}" for name, count in sorted(figures["calls"].items()))
    return [
        "## Upgrading a table: `dq migrate`\n",
        f"`dq migrate` from layout 1 on a table of {figures['messages']:,} messages in {figures['sub_queues']} "
        f"sub-queues (a standard queue of 4 shards and a FIFO queue, a tenth of the messages in flight): "
        f"{figures['seconds']:.2f} s on {figures['backend']}, {figures['api_calls']} calls ({calls}), "
        f"{figures['read_units']:.1f} read units and {figures['write_units']:.1f} write units "
        f"({figures['markers_put']} ready markers put, the layout recorded). Its cost grows with the sub-queues, "
        f"not the messages: it reads one index entry per shard of each. Afterwards {figures['delivered']:,} "
        f"messages were received queue-wide without a sweep: {figures['lost']} lost, {figures['delivered_twice']} "
        f"delivered twice. Reproduce with `{COMMAND}`.\n",
    ]
