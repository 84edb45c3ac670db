"""The set of clients with visible messages: ready markers, written by sends and read by queue-wide receives.

A send stores its messages first, then puts one marker per priority it used (`keys.Space.ready_marker`): "ready
now", or "ready at" the delivery time of a delayed message. A queue-wide receive reads the due markers and
receives from those clients only, so an idle client costs nothing. A client that yields nothing is *drained*:
its marker is dropped (on the condition that it is the one read), then the client is looked at again (its first
index entry of that priority, one item per shard) and a marker is put back for when that entry is due. A marker
carries the time it was last put (`put_at`, read after the write it announces); a drop of a marker put within
`limits.INDEX_LAG_GRACE_SECONDS` leaves a *reminder*, a ready-at marker for when the index shows what it
announced; the grace is how long a message sent just before a drain may wait when the index lags. No message
is left without a marker (design.md, "Why no message is left without a marker").

Markers cost a write unit a send, paid only by queues that use them (`QueueSettings.queue_wide`): on a queue never
received queue-wide, sends put only the markers of priorities above 0, which per-client receives read to learn
a sub-queue's priorities (priority 0 is always read). The first queue-wide receive switches them on; until every
process's sends put them and the sweep has put those of what was sent before (`build`), queue-wide receives visit
every client (`QueueSettings.markers_trusted`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from . import limits
from .errors import QueueError, Throttled
from .keys import Space
from .store import ConditionFailed, Write
from .store import ready as writes

if TYPE_CHECKING:
    from .context import Context

logger = logging.getLogger("queue_core")

# A marker put that DynamoDB throttled (or whose answer was lost) is tried again this many times, after these
# pauses, before the sweep is left to put it: a priority above 0 is known to per-client receives only by its
# markers, so its messages would wait for a sweep pass to reach their sub-queue. The puts are unconditional and
# stamped anew, so a repeat of one that was applied changes nothing.
MARKER_RETRY_PAUSES = (0.05, 0.2)


class Drainable(Protocol):
    space: Space

    def next_visible(self, priority: int, now: int) -> int | None:
        """When the sub-queue next has a message of `priority` to give (its first index entry); None: none."""


def marker_writes(space: Space, due: Iterable[tuple[int, int]], now: int) -> list[Write]:
    """One put per distinct marker for `(priority, visible_at)` pairs: what a send, a redrive, a release or an
    unlock writes after its own write; `now` is the time of the put, after that write (the markers' `put_at`)."""
    items: dict[tuple[Any, Any], dict[str, Any]] = {}
    for priority, visible_at in due:
        item = {**space.ready_marker(priority, visible_at, now), "put_at": now}
        items[(item["pk"], item["sk"])] = item
    return [writes.mark(item) for item in items.values()]


def marking(ctx: Context, space: Space) -> bool:
    """Whether the sub-queue's sends put every marker, by the settings this process has (cached: a switch reaches
    every sender within `limits.SETTINGS_CACHE_SECONDS`). In doubt (the queue gone, or created again since),
    they do: a marker too many costs a unit, one too few hides a message."""
    try:
        settings = ctx.registry.get(space.queue)
    except QueueError:
        return True
    return settings.queue_wide or settings.generation != space.generation


def announce(ctx: Context, space: Space, due: Iterable[tuple[int, int]]) -> None:
    """Puts the markers after the messages are stored, stamped with the clock read now, after that write (a
    marker must never look older than what it announces). A marker that cannot be written now is logged, not
    raised: the messages are stored (a failure would make the sender send them twice), a per-client receive
    sees them, and the sweep puts the marker of every sub-queue with visible messages. On a queue not received
    queue-wide, only the markers of priorities above 0 are put (see the module's docstring)."""
    due = list(due)
    if any(priority == 0 for priority, _ in due) and not marking(ctx, space):
        due = [(priority, at) for priority, at in due if priority]
    _put(ctx, space, due)


def _put(ctx: Context, space: Space, due: list[tuple[int, int]]) -> bool:
    """Whether every marker was written (a throttle is tried again, see `MARKER_RETRY_PAUSES`)."""
    if not due:
        return True
    for pause in (*MARKER_RETRY_PAUSES, None):
        try:
            _write(ctx, marker_writes(space, due, ctx.now_ms()))
            return True
        except QueueError as error:
            if isinstance(error, Throttled) and pause is not None:
                time.sleep(pause)
                continue
            logger.warning("ready marker of %s not written; the sweep will", space.client, exc_info=error)
            return False
    return False


def _write(ctx: Context, puts: list[Write]) -> None:
    store = ctx.store
    if len(puts) == 1:
        store.write(puts[0])
        return
    for start in range(0, len(puts), 25):
        chunk = puts[start : start + 25]
        for position in store.batch_write(puts=[put.item or {} for put in chunk]):
            store.write(chunk[position])


def drain(ctx: Context, engine: Drainable, priority: int, key: dict[str, str], gsi1sk: str, now: int) -> None:
    """The client gave nothing of `priority`: its marker leaves, and comes back for the next entry's time. The
    look happens whatever the drop answered (a drop that lost to another drain is harmless to follow with a look
    of our own). A marker last put within the grace may announce writes the look did not see: a reminder follows
    it, as it follows a marker this very drop removed with its answer lost (its `put_at` is unknown), unless the
    look's own marker comes first (its drain reminds in turn). A marker another drain removed first is that
    drain's to remind of: reminding here too would keep an idle client's reminders coming, each drain racing
    another. The grace is judged and the reminder timed by the clock read just before the look, not by the
    receive's start: a receive that drained many markers may have started long before."""
    taken_by_another = False
    try:
        dropped = ctx.store.write(writes.drop(key, gsi1sk))
    except ConditionFailed as failed:
        dropped, taken_by_another = None, not failed.repeated
    looked_at = ctx.now_ms()
    at = engine.next_visible(priority, now)
    if at is not None:
        announce(ctx, engine.space, [(priority, at)])
    grace = limits.INDEX_LAG_GRACE_SECONDS * 1000
    if taken_by_another or (dropped is not None and int(dropped.get("put_at", 0)) <= looked_at - grace):
        return
    # A whole second, so that the drains of one marker by several consumers at once leave one reminder.
    remind_at = -(-(looked_at + grace) // 1000) * 1000
    if at is not None and at <= remind_at:
        return
    # Stamped with the look's time, the grace before its own: its drain looks once the index has caught up.
    reminder = {**engine.space.ready_marker(priority, remind_at, looked_at), "put_at": looked_at}
    try:
        ctx.store.write(writes.remind(reminder))
    except ConditionFailed:
        pass  # a marker for that time is there already: it serves as well
    except QueueError:
        logger.warning("reminder of %s not written; the sweep will mark it", engine.space.client, exc_info=True)


def build(ctx: Context, engine: Drainable, priorities: Iterable[int], now: int) -> int:
    """Puts the markers a sub-queue would have had, had its sends put them: one per priority with index entries,
    for when its first entry is due (what a drain's look puts back). Done by the sweep once every sender puts
    them and the index shows what was sent before; returns how many were put. Raises `Throttled` when they could
    not be: the queue must not count as built."""
    due = [(priority, at) for priority in priorities if (at := engine.next_visible(priority, now)) is not None]
    if not _put(ctx, engine.space, due):
        raise Throttled("ready markers not written; the next sweep builds them")
    return len(due)
