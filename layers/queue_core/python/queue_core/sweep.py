"""The sweep: bounded, resumable housekeeping that the scheduled sweeper runs.

Visibility needs no sweep (an expired claim is visible by itself). The sweep does what nothing else would do
soon: moves messages past their receive limit to the DLQ while no receive touches them, frees FIFO groups a
crashed consumer left locked, deletes messages past retention before TTL does, and reports each sub-queue's depth.
Every write it makes is conditional, so it is safe beside receives and beside another sweep.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from . import limits
from .context import Context
from .fifo import FifoQueue
from .messages import is_expired
from .models import SweepReport
from .standard import StandardQueue
from .subqueue import SubQueue


class Sweeper:
    def __init__(self, ctx: Context, sub_queue: Callable[[str, str], SubQueue]) -> None:
        self._ctx = ctx
        self._sub_queue = sub_queue

    def run(self, budget_seconds: float | None, max_items: int | None, cursor: str | None) -> SweepReport:
        """Sub-queues in a stable order from `cursor`; stops when the time or item budget is spent and says
        where to resume (`cursor`) and that work is left (`complete` False)."""
        report = SweepReport()
        deadline = None if budget_seconds is None else time.monotonic() + budget_seconds
        targets = sorted(
            (settings.name, client)
            for settings in self._ctx.registry.list()
            for client in self._ctx.registry.clients(settings.name)
        )
        for queue, client in targets:
            position = f"{queue}/{client}"
            if cursor and position <= cursor:
                continue
            out_of_time = deadline is not None and time.monotonic() >= deadline
            if out_of_time or (max_items is not None and report.items_read >= max_items):
                report.complete = False
                return report
            self._sweep_one(self._sub_queue(queue, client), report)
            report.cursor = position
        report.cursor = None
        return report

    def _sweep_one(self, sub: SubQueue, report: SweepReport) -> None:
        engine = sub.engine()
        now = self._ctx.now_ms()
        report.sub_queues += 1
        if isinstance(engine, FifoQueue):
            report.groups_freed += engine.free_stuck_groups(now)
        else:
            self._sweep_standard(engine, now, report)
        for item in list(sub.dlq_items(0, max_items=limits.STATS_SCAN_LIMIT)):
            report.items_read += 1
            if is_expired(item, now) and self._ctx.store.delete({"pk": item["pk"], "sk": item["sk"]}):
                report.expired_deleted += 1
        stats = sub.stats()
        report.depths.append({"queue": sub.queue, "client": sub.client, **stats.to_dict()})

    def _sweep_standard(self, engine: StandardQueue, now: int, report: SweepReport) -> None:
        limit = engine.settings.max_receive_count
        for shard in range(engine.settings.read_shards):
            entries = list(
                self._ctx.store.query_all(engine.partition_key(shard), index=True, max_items=limits.STATS_SCAN_LIMIT)
            )
            report.items_read += len(entries)
            for entry in entries:
                key = {"pk": entry["pk"], "sk": entry["sk"]}
                visible = int(entry["gsi1sk"].split("#", 1)[0]) <= now
                if is_expired(entry, now):
                    report.expired_deleted += engine.delete_expired(key, now)
                elif visible and limit and int(entry.get("receive_count", 0)) >= limit:
                    report.moved_to_dlq += engine.move_to_dlq(key, int(entry["receive_count"]), now)
