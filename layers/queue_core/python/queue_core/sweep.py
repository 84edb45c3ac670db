"""The sweep: bounded, resumable housekeeping that the scheduled sweeper runs.

Visibility needs no sweep (an expired claim is visible by itself). The sweep does what nothing else would do
soon: moves messages past their receive limit to the DLQ while no receive touches them, frees FIFO groups a
crashed consumer left locked, deletes messages past retention before TTL does, drops shard layouts nothing lives
under any more, finishes the removal of deleted queues, and reports each sub-queue's depth. Every write it makes
is conditional, so it is safe beside receives and beside another sweep.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from . import limits
from .context import Context
from .errors import QueueNotFound
from .messages import is_expired
from .models import SweepReport
from .registry import Tombstone
from .store import ConditionFailed
from .store import messages as writes
from .subqueue import SubQueue, remove_sub_queue

# A deleted queue's tombstone is passed over again once every process's cached settings have expired (so no
# send can land under it any more), with a margin for a slow request.
TOMBSTONE_SECONDS = 2 * limits.SETTINGS_CACHE_SECONDS + 60


class Sweeper:
    def __init__(self, ctx: Context, sub_queue: Callable[[str, str], SubQueue]) -> None:
        self._ctx = ctx
        self._sub_queue = sub_queue

    def run(
        self, budget_seconds: float | None, max_items: int | None, cursor: str | None, lease_seconds: float | None
    ) -> SweepReport:
        """Sub-queues in a stable order from `cursor`; stops when the time or item budget is spent and says
        where to resume (`cursor`) and that work is left (`complete` False). With `lease_seconds`, a fresh sweep
        first takes the sweep lease (one conditional write) and does nothing (`skipped`) while another sweep's
        lease runs: overlapping sweeps are harmless, every write being conditional, but read everything twice. The
        lease is given back at the end (a second write), so a finished sweep never delays the next one."""
        if not lease_seconds or cursor:
            return self._run(budget_seconds, max_items, cursor)
        holder = self._ctx.registry.take_sweep_lease(self._ctx.now_ms(), lease_seconds)
        if holder is None:
            return SweepReport(skipped=True)
        try:
            return self._run(budget_seconds, max_items, cursor)
        finally:
            self._ctx.registry.release_sweep_lease(holder)

    def _run(self, budget_seconds: float | None, max_items: int | None, cursor: str | None) -> SweepReport:
        report = SweepReport()
        deadline = None if budget_seconds is None else time.monotonic() + budget_seconds
        if not cursor:
            self._finish_deleted_queues()
        for settings in self._ctx.registry.list():
            listed_at = self._ctx.now_ms()
            clients = self._ctx.registry.clients(settings.name, settings.generation)
            # Shard layouts belong to the whole queue: dropped only when this pass saw every one of its clients.
            whole_queue = not cursor or f"{settings.name}/" > cursor
            old_place_in_use = False
            try:
                for client in clients:
                    position = f"{settings.name}/{client}"
                    if cursor and position <= cursor:
                        continue
                    out_of_time = deadline is not None and time.monotonic() >= deadline
                    if out_of_time or (max_items is not None and report.items_read >= max_items):
                        report.complete = False
                        return report
                    old_place_in_use |= self._sweep_one(self._sub_queue(settings.name, client), report)
                    report.cursor = position
            except QueueNotFound:
                # Deleted since the listing: what it left is its deletion's to remove (see the tombstones), and the
                # queues after it are still swept in this pass.
                continue
            if whole_queue:
                # As of the listing: a client registered within the index's lag before it may be missing from it.
                self._ctx.registry.prune_layouts(settings, listed_at, not old_place_in_use)
        report.cursor = None
        return report

    def _finish_deleted_queues(self) -> None:
        """A tombstone old enough that nothing can be sent under it any more: one last removal, then it goes."""
        now = self._ctx.now_ms()
        for tombstone in self._ctx.registry.tombstones():
            if now - tombstone.deleted_at >= TOMBSTONE_SECONDS * 1000:
                self._remove_generation(tombstone)

    def _remove_generation(self, tombstone: Tombstone) -> None:
        settings = tombstone.settings
        for client in self._ctx.registry.clients(settings.name, settings.generation):
            remove_sub_queue(self._ctx, settings, client, keep_registration=False)
        self._ctx.registry.drop_tombstone(settings)

    def _sweep_one(self, sub: SubQueue, report: SweepReport) -> bool:
        """Returns whether a FIFO group item of this sub-queue still lives at an earlier layout's place."""
        now = self._ctx.now_ms()
        report.sub_queues += 1
        old_place_in_use = sub.engine().sweep(now, report)
        for item in list(sub.dlq_items(now, max_items=limits.STATS_SCAN_LIMIT, include_expired=True)):
            report.items_read += 1
            if is_expired(item, now) and self._delete_expired(item, now):
                report.expired_deleted += 1
        stats = sub.stats()
        report.depths.append({"queue": sub.queue, "client": sub.client, **stats.to_dict()})
        return old_place_in_use

    def _delete_expired(self, item: dict, now: int) -> bool:
        """Only if it is still expired: a redrive or a new DLQ move may have put a fresh item under the key."""
        try:
            old = self._ctx.store.write(writes.delete_expired({"pk": item["pk"], "sk": item["sk"]}, now))
            self._ctx.bodies.discard([old])
            return old is not None
        except ConditionFailed:
            return False
