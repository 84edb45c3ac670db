"""The sweep: bounded, resumable housekeeping that the scheduled sweeper runs.

Visibility needs no sweep (an expired claim is visible by itself). The sweep does what nothing else would do
soon: moves messages past their receive limit to the DLQ while no receive touches them, frees FIFO groups a
crashed consumer left locked, deletes messages past retention before TTL does, drops shard layouts nothing lives
under any more, sizes automatic shard counts by their load (see `autoshard`), finishes the removal of deleted
queues, puts the ready markers of what was sent to a queue before its first queue-wide receive (see `ready`),
refreshes the copies of settings the list of queues shows where an earlier release's settings write left them
behind (see `Registry.refresh_copy`), runs on the replays whose runner is gone (see `replays.orphaned`), and
reports each sub-queue's depth. Every write it makes is conditional, so it is safe beside receives and beside
another sweep (a replay's runs overlap at no risk: each commit is a compare-and-set on where the job stands).

A throttle or a lost answer (`Throttled`) stops only the step it hit: that sub-queue, or that queue-wide step, is
counted in the report's `failures` and the pass goes on with the rest; the next pass does it again. A pass that
stopped at the first one would, under steady throttling, almost never reach the queues after it, and what only
the sweep restores (a ready marker whose write failed) would stay missing.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

from . import autoshard, limits, ready, replays
from .context import Context
from .errors import QueueError, QueueNotFound, Throttled
from .keys import Space
from .messages import is_expired
from .models import SweepReport
from .registry import Tombstone
from .settings import QueueSettings
from .store import ConditionFailed
from .store import messages as writes
from .subqueue import SubQueue, remove_sub_queue

# A queue's settings as the pass listed them (read strongly consistent) stand for a fresh read this long after: an
# automatic shard change decided on them is fenced on their version all the same, so a change made meanwhile only
# makes that decision wait for the next pass. A pass over many queues reads each one again once it is older.
LISTING_FRESH_SECONDS = 5.0

# A deleted queue's tombstone is passed over again once every process's cached settings have expired (so no
# send can land under it any more), with a margin for a slow request.
TOMBSTONE_SECONDS = 2 * limits.SETTINGS_CACHE_SECONDS + 60

logger = logging.getLogger("queue_core")


def _failed(report: SweepReport, what: str) -> None:
    """A step DynamoDB throttled (or whose answer was lost): counted and logged; the next pass does it again."""
    report.failures += 1
    logger.warning("sweep of %s throttled; the next pass tries again", what, exc_info=True)


class Sweeper:
    def __init__(
        self, ctx: Context, sub_queue: Callable[[str, str], SubQueue], sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._ctx = ctx
        self._sub_queue = sub_queue
        self._sleep = sleep  # a resumed replay's wait for its rate
        self._orphans: list[tuple[SubQueue, str]] = []
        self._listed_at = 0.0  # `time.monotonic()` when the pass read the list of queues

    def run(
        self, budget_seconds: float | None, max_items: int | None, cursor: str | None, lease_seconds: float | None
    ) -> SweepReport:
        """Sub-queues in a stable order from `cursor`; stops when the time or item budget is spent and says
        where to resume (`cursor`) and that work is left (`complete` False). With `lease_seconds`, a fresh sweep
        first takes the sweep lease (one conditional write) and does nothing (`skipped`) while another sweep's
        lease runs: overlapping sweeps are harmless, every write being conditional, but read everything twice. The
        lease is given back at the end (a second write), so a finished sweep never delays the next one.

        A leased sweep that runs out of time leaves where it stopped on the lease's item, and the next leased
        sweep starts after it, goes to the last queue and on from the first one back to it: every sub-queue is
        reached within as many passes as there are sub-queues (each pass sweeps at least one), instead of the
        queues after a big one never. A complete pass removes the point, so the next one starts at the first
        queue. A point naming a queue or client that is gone is only a place in the order."""
        if not lease_seconds or cursor:
            return self._run(budget_seconds, max_items, cursor)
        taken = self._ctx.registry.take_sweep_lease_resuming(self._ctx.now_ms(), lease_seconds)
        if taken is None:
            return SweepReport(skipped=True)
        holder, resume = taken
        # Kept as it was should the pass fail before it reaches a sub-queue.
        next_resume = resume
        try:
            report = self._run(budget_seconds, max_items, None, resume, leased=True)
            # A pass that went all the way round ends with no cursor, even when something else was left over.
            next_resume = None if report.complete else report.cursor
            return report
        finally:
            try:
                self._ctx.registry.release_sweep_lease(holder, next_resume)
            except Throttled:
                logger.warning("sweep lease not given back; it ends by itself", exc_info=True)

    def _run(
        self,
        budget_seconds: float | None,
        max_items: int | None,
        cursor: str | None,
        resume: str | None = None,
        leased: bool = False,
    ) -> SweepReport:
        """From after `cursor` to the last queue; from after `resume` around to it (a leased pass: it sweeps at
        least one sub-queue, whatever its budget, so that successive passes get round)."""
        report = SweepReport()
        deadline = None if budget_seconds is None else time.monotonic() + budget_seconds
        if not cursor:
            self._finish_deleted_queues(report)
        listed = self._ctx.registry.listed_with_copies()
        self._listed_at = time.monotonic()
        self._refresh_copies(listed, report, deadline)
        swept = 0
        for settings, after, upto in _rounds([listed_settings for listed_settings, _ in listed], cursor, resume):
            listed_at = self._ctx.now_ms()
            try:
                clients = self._ctx.registry.clients(settings.name, settings.generation)
            except Throttled:
                _failed(report, settings.name)
                continue
            # Shard layouts belong to the whole queue: dropped only when this pass saw every one of its clients.
            whole_queue = after is None and upto is None
            old_place_in_use = False
            # A sub-queue this pass could not sweep: its old places and its markers are unknown.
            missed = False
            # Markers are built once every sender puts them and the index shows what was sent before, from a
            # list of clients read after that (a client registered just before shows after the index's lag).
            building = (
                settings.queue_wide
                and not settings.markers_built
                and listed_at >= settings.markers_from + limits.INDEX_LAG_GRACE_SECONDS * 1000
            )
            try:
                for client in clients:
                    position = (settings.name, client)
                    if (after is not None and position <= after) or (upto is not None and position > upto):
                        continue
                    out_of_time = deadline is not None and time.monotonic() >= deadline
                    spent = out_of_time or (max_items is not None and report.items_read >= max_items)
                    if spent and (swept or not leased):
                        report.complete = False
                        self._resume_orphans(report, deadline)
                        return report
                    swept += 1
                    sub = self._sub_queue(settings.name, client)
                    try:
                        old_place_in_use |= self._sweep_one(sub, report, building, settings)
                    except Throttled:
                        _failed(report, "/".join(position))
                        missed = True
                    except QueueNotFound:
                        raise
                    except QueueError as error:
                        # What one sub-queue holds must not stop the pass of every other, pass after pass.
                        report.failures += 1
                        logger.error("sweep of %s failed: %s", "/".join(position), error.message)
                        missed = True
                    self._find_orphans(sub, report)
                    report.cursor = "/".join(position)
            except QueueNotFound:
                # Deleted since the listing: what it left is its deletion's to remove (see the tombstones), and the
                # queues after it are still swept in this pass.
                continue
            if whole_queue:
                self._whole_queue(
                    settings, clients, listed_at, report, old_place_in_use or missed, building and not missed, deadline
                )
        report.cursor = None
        self._resume_orphans(report, deadline)
        return report

    def _resume_orphans(self, report: SweepReport, deadline: float | None) -> None:
        """The orphaned replays this pass found, run on in turn, each for its share of the time left (at most
        `replays.SWEEP_SLICE_SECONDS`, at least one batch); a throttle stops that one run until the next pass. A
        pass out of time still runs the first one a batch (a transaction), so that passes that always run out of
        time (a table of many sub-queues) still move every replay they find."""
        for index, (sub, replay_id) in enumerate(self._orphans):
            share = replays.SWEEP_SLICE_SECONDS
            if deadline is not None:
                share = min(share, (deadline - time.monotonic()) / (len(self._orphans) - index))
            if share <= 0 and index:
                report.complete = False
                return
            try:
                before = sub.replay_status(replay_id).replayed
                after = sub.replay_run(replay_id, max(0.0, share), self._sleep).replayed
            except QueueError:
                _failed(report, f"{sub.queue}/{sub.client} (replay {replay_id})")
                continue
            report.replays_resumed += 1
            report.replayed += after - before

    def _refresh_copies(
        self,
        listed: list[tuple[QueueSettings, QueueSettings | None]],
        report: SweepReport,
        deadline: float | None,
    ) -> None:
        """The copies of settings on the listing entries (what the list of queues shows) that differ from the
        settings, written again: left behind by an earlier release's settings write, or an entry from before they
        carried one. First, so that a pass whose budget runs out on sub-queues still refreshes every queue's; but
        within the budget (at least one a pass): the first pass over a table of an earlier release finds every
        entry without a copy, a write each, and a pass past its budget would be cut off by the function's timeout."""
        written = 0
        for settings, copy in listed:
            if copy is not None and copy.to_item() == settings.to_item():
                continue
            if written and deadline is not None and time.monotonic() >= deadline:
                report.complete = False  # the rest on the next pass
                return
            written += 1
            try:
                if self._ctx.registry.refresh_copy(settings):
                    logger.info("sweep refreshed the listed copy of %s's settings", settings.name)
            except Throttled:
                _failed(report, f"{settings.name} (listed copy)")

    def _whole_queue(
        self,
        settings: QueueSettings,
        clients: list[str],
        listed_at: int,
        report: SweepReport,
        old_place_in_use: bool,
        built: bool,
        deadline: float | None = None,
    ) -> None:
        """The steps of a queue swept whole, each on its own: a throttled one leaves the others done. A FIFO
        queue's old places count as in use when a sub-queue was missed (its group items were not looked at); a
        standard queue's are looked at here, for every client. The markers count as built only when every
        sub-queue's were (`built`)."""
        try:
            # As of the listing: a client registered within the index's lag before it may be missing from it.
            if not settings.fifo:
                old_place_in_use = old_shards_in_use(self._ctx, settings, clients, listed_at, deadline)
            pruned = self._ctx.registry.prune_layouts(settings, listed_at, not old_place_in_use)
        except Throttled:
            pruned = True  # perhaps written, its answer lost
            _failed(report, f"{settings.name} (layouts)")
        try:
            self._decide_shards(settings, clients, report, fresh=pruned)
        except Throttled:
            _failed(report, f"{settings.name} (shards)")
        if built:
            try:
                self._markers_built(settings)
            except Throttled:
                _failed(report, f"{settings.name} (markers built)")

    def _markers_built(self, listed: QueueSettings) -> None:
        """Read again, as pruning may have made a new version (the fence of this update); only the incarnation
        whose clients were just marked."""
        try:
            current = self._ctx.registry.get(listed.name, fresh=True)
        except QueueNotFound:
            return
        if current.generation == listed.generation and current.queue_wide and not current.markers_built:
            self._ctx.registry.markers_built(current)

    def _decide_shards(self, listed: QueueSettings, clients: list[str], report: SweepReport, fresh: bool) -> None:
        """An automatic queue's count, sized by its clients' load reports (see `autoshard`); every queue's count
        goes in the report, for the `Shards` metric, and a throttled queue that does not grow in `held`, with the
        reason. Read again first when pruning made a new version (the fence of this change: `fresh`) or the listing
        is older than `LISTING_FRESH_SECONDS`."""
        shards = listed.shards
        if listed.auto_shards:
            reports = autoshard.read_reports(self._ctx, listed, clients)
            current = listed
            if fresh or time.monotonic() - self._listed_at >= LISTING_FRESH_SECONDS:
                try:
                    current = self._ctx.registry.get(listed.name, fresh=True)
                except QueueNotFound:
                    return
            if current.generation != listed.generation:
                return
            decided = autoshard.decide(self._ctx, current.name, reports=reports, settings=current)
            shards = current.shards
            if decided is not None:
                shards = decided.changed or current.shards
                if decided.held:
                    report.held.append(
                        {
                            "queue": listed.name,
                            "shards": shards,
                            "reason": decided.held,
                            "throttles_per_minute": round(decided.throttles_per_minute),
                        }
                    )
        report.shards.append({"queue": listed.name, "shards": shards, "auto": listed.auto_shards})

    def _finish_deleted_queues(self, report: SweepReport) -> None:
        """A tombstone old enough that nothing can be sent under it any more: one last removal, then it goes."""
        now = self._ctx.now_ms()
        try:
            tombstones = self._ctx.registry.tombstones()
        except Throttled:
            _failed(report, "deleted queues")
            return
        for tombstone in tombstones:
            if now - tombstone.deleted_at >= TOMBSTONE_SECONDS * 1000:
                try:
                    self._remove_generation(tombstone)
                except Throttled:
                    _failed(report, f"deleted queue {tombstone.settings.name}")

    def _remove_generation(self, tombstone: Tombstone) -> None:
        settings = tombstone.settings
        for client in self._ctx.registry.clients(settings.name, settings.generation):
            remove_sub_queue(self._ctx, settings, client, keep_registration=False)
        self._ctx.registry.drop_tombstone(settings)

    def _sweep_one(
        self, sub: SubQueue, report: SweepReport, build_markers: bool = False, listed: QueueSettings | None = None
    ) -> bool:
        """Returns whether a FIFO group item of this sub-queue still lives at an earlier layout's place. The
        layouts are dropped on the `listed` settings: a sub-queue whose engine judged old places by other settings
        (its process's cache, older or newer) counts as in use, since a place current by one count is an old one by
        another, and a group still living there would be started again elsewhere with sequence 1."""
        now = self._ctx.now_ms()
        report.sub_queues += 1
        engine = sub.engine()
        if listed is not None and (engine.settings.generation, engine.settings.version) != (
            listed.generation,
            listed.version,
        ):
            # This process's cache is from before the listing (a growth since: the marks' backstop would skip what
            # one shard did not need): the settings are read again.
            self._ctx.registry.forget(listed.name)
            engine = sub.engine()
        swept = engine.sweep(now, report)
        old_place_in_use = swept.old_place_in_use
        seen = (engine.settings.generation, engine.settings.version)
        if listed is not None and seen != (listed.generation, listed.version):  # a queue made anew counts again
            old_place_in_use = True
        if build_markers:
            ready.build(self._ctx, engine, engine.priorities(), now)
        # Read after the engine's sweep, so the messages it moved are among them: the DLQ's depth is counted here,
        # unless a partition's read was full (what it deleted makes room for dead letters it did not read).
        dead, read = 0, Counter[str]()
        for item in list(sub.dlq_items(now, max_items=limits.STATS_SCAN_LIMIT, include_expired=True)):
            report.items_read += 1
            read[item["pk"]] += 1
            if not is_expired(item, now):
                dead += 1
            elif self._delete_expired(item, now):
                report.expired_deleted += 1
        full = any(count >= limits.STATS_SCAN_LIMIT for count in read.values())
        stats = sub.stats(swept.live, None if full else (dead, False))
        report.depths.append({"queue": sub.queue, "client": sub.client, **stats.to_dict()})
        return old_place_in_use

    def _find_orphans(self, sub: SubQueue, report: SweepReport) -> None:
        """The sub-queue's replays that no runner moves any more (of its archive or of its DLQ; one Query of its
        newest replays, whatever its settings: a DLQ replay needs no archive, and one whose dead letters all left
        meanwhile must still be found to end): a step of its own, so that a throttle of the sub-queue's other steps
        leaves its replays to run on in this pass."""
        try:
            found = replays.orphaned(self._ctx, sub.engine().space, self._ctx.now_ms())
        except Throttled:
            _failed(report, f"{sub.queue}/{sub.client} (replays)")
            return
        self._orphans += [(sub, replay_id) for replay_id in found]

    def _delete_expired(self, item: dict, now: int) -> bool:
        """Only if it is still expired: a redrive or a new DLQ move may have put a fresh item under the key."""
        try:
            old = self._ctx.store.write(writes.delete_expired({"pk": item["pk"], "sk": item["sk"]}, now))
            self._ctx.bodies.discard([old])
            return old is not None
        except ConditionFailed:
            return False


def _position(text: str | None) -> tuple[str, str] | None:
    """A cursor ("queue/client") as a place in the order of the pass: by queue name, then client. Compared as
    a pair, not as text: "a-b/x" comes after "a/y" (queue "a" before "a-b"), though "-" sorts before "/"."""
    if not text:
        return None
    queue, _, client = text.partition("/")
    return queue, client


def _rounds(
    listed: list[QueueSettings], cursor: str | None, resume: str | None
) -> list[tuple[QueueSettings, tuple[str, str] | None, tuple[str, str] | None]]:
    """What a pass sweeps, in order, as (queue, after, up to): its sub-queues whose place is past `after` and
    not past `up to` (None: no bound). After `cursor` to the last queue; or after `resume`, to the last queue,
    then from the first queue up to `resume`, the queue it names split in two (neither part is the whole queue)."""
    start = _position(cursor) or _position(resume)
    if start is None:
        return [(settings, None, None) for settings in listed]
    rounds: list[tuple[QueueSettings, tuple[str, str] | None, tuple[str, str] | None]] = [
        (settings, start if settings.name == start[0] else None, None)
        for settings in listed
        if settings.name >= start[0]
    ]
    if cursor or not resume:
        return rounds
    rounds += [(settings, None, None) for settings in listed if settings.name < start[0]]
    rounds += [(settings, None, start) for settings in listed if settings.name == start[0]]
    return rounds


def old_shards_in_use(
    ctx: Context, settings: QueueSettings, clients: list[str], now: int, deadline: float | None = None
) -> bool:
    """Whether a standard queue's shards past its current count may still hold anything (a message, in flight,
    delayed or in the DLQ) for any of `clients`. Looked at only once every process sends by the current count (a
    send with settings cached from before may land there until then), with one strongly consistent read of at most
    one item per partition. Until none does, receivers keep visiting those shards; once none does, the layout a
    shrink kept goes long before its time is up. Past the sweep's `deadline` (monotonic) it answers True, as
    unknown: a shrink from hundreds of shards costs two queries per old shard and client, which must not run a
    sweep past its function's time (the layout then goes at its time, or after a later pass)."""
    old = range(settings.shards, settings.read_shards)
    if not old:
        return False
    if now < settings.settled_from:
        return True
    for client in clients:
        space = Space(settings.name, client, settings.generation)
        for shard in old:
            if deadline is not None and time.monotonic() >= deadline:
                return True
            for pk in (space.message_pk(shard), space.dlq_pk(shard)):
                if ctx.store.query(pk, limit=1, consistent=True, projection="pk")[0]:
                    return True
    return False
