"""`dq migrate`: upgrades a table in place to the layout this release writes (`layout.CURRENT_LAYOUT`).

From a table with no layout record or at layout 1, the one step is the ready set: every sub-queue with messages
of priority 0 gets the marker a send of layout 2 would have put (ready now, or ready at the time its first
message is due: an in-flight message's claim end, a delayed message's delivery), so queue-wide receives see
messages that were waiting before the upgrade at once, not at the next sweep. Markers are put without a
condition and carry only their keys and `put_at`: putting one twice, by a rerun or by the SDK's repeat after a lost
answer, changes nothing, and a drain racing the put is the ordinary race of `ready` (the messages announced were
stored long before the marker's `put_at`). Nothing else changes: messages, registrations and their receipt
secrets, settings and dead letters are read by this release as layout 1 wrote them, so every handle issued
before the upgrade still works.

The run is recorded in the layout item: `begin` (the target, only from the layout read; a resumed run does not
repeat it), `progress` (the last sub-queue done, every `PROGRESS_EVERY` and when the run stops on an error) and
`finish` (the layout, only by a run of that target). Each read and each repeatable write is tried again with
backoff while DynamoDB throttles (`STEP_ATTEMPTS`); a run that still stops halfway (throttled longer, a crash)
leaves the item at its source layout with `migrating_to` set and the cursor at the last sub-queue done; the next
run resumes after it (without reading the queues before it again), so every run under throttling gets further and
the last one records the layout. The table is served throughout. Producers and consumers of this release may keep
running; those of a release before it must be stopped or upgraded first, as they send without markers.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar

from . import keys, layout, ready, shard_marks
from .errors import QueueError, QueueNotFound, TableLayoutMismatch, Throttled
from .layout import CURRENT_LAYOUT, MIGRATES_FROM, TableLayout
from .store import ConditionFailed
from .store import layout as writes
from .version import __version__

if TYPE_CHECKING:
    from .context import Context
    from .subqueue import SubQueue

logger = logging.getLogger("queue_core")

PROGRESS_EVERY: Final = 25
# A step stopped by throttling is tried this many times (with backoff) before the run stops, resumable.
STEP_ATTEMPTS: Final = 6
STEP_BACKOFF_SECONDS: Final = 0.05
STEP_BACKOFF_MAX_SECONDS: Final = 2.0

T = TypeVar("T")


@dataclass
class MigrationReport:
    """What a run found and did (or, with `dry_run`, would do)."""

    table: str
    found: TableLayout
    target: int = CURRENT_LAYOUT
    dry_run: bool = False
    sub_queues: int = 0
    markers: int = 0
    resumed_after: str | None = None
    changes: list[str] = field(default_factory=list)
    upgraded: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "found": self.found.describe(),
            "target_layout": self.target,
            "dry_run": self.dry_run,
            "sub_queues": self.sub_queues,
            "markers": self.markers,
            "resumed_after": self.resumed_after,
            "upgraded": self.upgraded,
            "changes": self.changes,
        }


def migrate(
    ctx: Context,
    sub_queue: Callable[[str, str], SubQueue],
    dry_run: bool = False,
    on_step: Callable[[str], None] | None = None,
) -> MigrationReport:
    store = ctx.store
    found = layout.read(store)
    report = MigrationReport(table=store.table, found=found, dry_run=dry_run)

    def step(text: str) -> None:
        report.changes.append(text)
        if on_step is not None:
            on_step(text)

    if found.layout == CURRENT_LAYOUT and found.migrating_to is None:
        return report
    if found.layout not in MIGRATES_FROM or found.migrating_to not in (None, CURRENT_LAYOUT):
        refused = layout.refusal(store.table, found)
        raise refused or TableLayoutMismatch(
            f"table {store.table} is at {found.describe()} with a migration to layout {found.migrating_to} under "
            f"way; this release (dynamo-queue {__version__}) migrates to layout {CURRENT_LAYOUT} only"
        )
    cursor = _position(found.cursor) if found.migrating_to == CURRENT_LAYOUT and found.cursor else None
    report.resumed_after = found.cursor if cursor else None
    if not dry_run and found.migrating_to is None:
        # A resumed run skips it: the record already says where the run goes, and `progress` and `finish` hold
        # only while it does.
        _begin(ctx, found)
    done = 0
    last: str | None = None  # the last sub-queue done (its marker stored)
    saved = found.cursor if cursor else None
    try:
        for settings in _retried(ctx.registry.list):
            if cursor and settings.name < cursor[0]:
                continue  # done by an earlier run: not even its clients are read again
            for client in _retried(partial(ctx.registry.clients, settings.name, settings.generation)):
                if cursor and (settings.name, client) <= cursor:
                    continue
                try:
                    engine = _retried(sub_queue(settings.name, client).engine)
                except QueueNotFound:  # deleted since the listing: nothing of it is served any more
                    break
                now = ctx.now_ms()
                due = _retried(partial(engine.next_visible, 0, now))
                name = f"{settings.name}/{client}"
                report.sub_queues += 1
                if due is not None:
                    report.markers += 1
                    when = "now" if due <= now else f"at {iso_ms(due)}"
                    verb = "would put" if dry_run else "put"
                    step(f"{name}: {verb} a ready marker (priority 0, due {when})")
                    if not dry_run:
                        for write in ready.marker_writes(engine.space, [(0, due)], ctx.now_ms()):
                            _retried(partial(store.write, write))
                if not dry_run:
                    # Its shard marks: receives of a queue of several shards visit the shards they name.
                    marks = _retried(partial(shard_marks.build, ctx, engine, engine.settings.read_shards))
                    if marks:
                        step(f"{name}: put {marks} shard mark(s)")
                last = name
                done += 1
                if not dry_run and done % PROGRESS_EVERY == 0:
                    _retried(partial(_progress, ctx, last))
                    saved = last
    except BaseException:
        # Stopped halfway (a throttle, a lost answer, an interrupt): the next run resumes after the last
        # sub-queue done, not from the start, so that runs under throttling each get further.
        if not dry_run and last is not None and last != saved:
            _save_progress(ctx, last)
        raise
    if dry_run:
        step(f"would record layout {CURRENT_LAYOUT} (now: {found.describe()})")
        return report
    try:
        _retried(partial(_finish, ctx))
    except QueueError:
        # Every sub-queue is done: a run after this one only records the layout.
        if last is not None and last != saved:
            _save_progress(ctx, last)
        raise
    report.upgraded = True
    step(f"recorded layout {CURRENT_LAYOUT} (was: {found.describe()})")
    return report


def iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def _position(cursor: str) -> tuple[str, str]:
    queue, _, client = cursor.partition("/")
    return queue, client


def _retried(call: Callable[[], T]) -> T:
    """A read, or a write that changes nothing when repeated (a marker, the cursor), tried again with backoff while
    DynamoDB throttles or an answer is lost: a table under load throttles while it is migrated, and a sub-queue of
    many shards takes a read of each, so a run that stopped at the first throttle would rarely get far."""
    for attempt in range(STEP_ATTEMPTS - 1):
        try:
            return call()
        except Throttled:
            time.sleep(min(STEP_BACKOFF_MAX_SECONDS, STEP_BACKOFF_SECONDS * 2**attempt))
    return call()


def _save_progress(ctx: Context, cursor: str) -> None:
    """Best effort: when this write fails too, the next run resumes from the cursor saved before. A failed
    condition: the record moved on (this run's `finish`, applied with its answer lost, or another run's)."""
    with contextlib.suppress(QueueError, ConditionFailed):
        ctx.store.write(writes.progress(keys.layout_key(), CURRENT_LAYOUT, cursor))


def _progress(ctx: Context, cursor: str) -> None:
    """The cursor, only while the record still says this run's migration: a run that finished meanwhile (and a
    later release's migration begun since) is told, as `_finish` tells it, not left to a failed condition."""
    try:
        ctx.store.write(writes.progress(keys.layout_key(), CURRENT_LAYOUT, cursor))
    except ConditionFailed as failed:
        raise _changed(ctx, failed.item, "during the migration") from None


def _changed(ctx: Context, item: dict[str, Any] | None, when: str) -> TableLayoutMismatch:
    now = TableLayout.from_item(item)
    return TableLayoutMismatch(f"table {ctx.store.table} changed {when}: {now.describe()}; run `dq migrate` again")


def _begin(ctx: Context, found: TableLayout) -> None:
    try:
        ctx.store.write(writes.begin(keys.layout_key(), CURRENT_LAYOUT, found.layout, __version__, ctx.now_ms()))
    except ConditionFailed as failed:
        # Another run moved the record since it was read (a run of another release, or one that finished).
        raise _changed(ctx, failed.item, "while the migration started") from None


def _finish(ctx: Context) -> None:
    try:
        ctx.store.write(writes.finish(keys.layout_key(), CURRENT_LAYOUT, __version__, ctx.now_ms()))
    except ConditionFailed as failed:
        now = TableLayout.from_item(failed.item)
        if now.layout == CURRENT_LAYOUT and now.migrating_to is None:
            return  # this very write, applied and repeated after a lost answer, or a concurrent run's
        raise _changed(ctx, failed.item, "during the migration") from None
