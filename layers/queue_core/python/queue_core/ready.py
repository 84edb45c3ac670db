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
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from . import limits
from .errors import QueueError
from .keys import Space
from .store import ConditionFailed, Write
from .store import ready as writes

if TYPE_CHECKING:
    from .context import Context

logger = logging.getLogger("queue_core")


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


def announce(ctx: Context, space: Space, due: Iterable[tuple[int, int]]) -> None:
    """Puts the markers after the messages are stored, stamped with the clock read now, after that write (a
    marker must never look older than what it announces). A marker that cannot be written now is logged, not
    raised: the messages are stored (a failure would make the sender send them twice), a per-client receive
    sees them, and the sweep puts the marker of every sub-queue with visible messages."""
    store = ctx.store
    puts = marker_writes(space, due, ctx.now_ms())
    try:
        if len(puts) == 1:
            store.write(puts[0])
            return
        for start in range(0, len(puts), 25):
            chunk = puts[start : start + 25]
            for position in store.batch_write(puts=[put.item or {} for put in chunk]):
                store.write(chunk[position])
    except QueueError:
        logger.warning("ready marker of %s not written; the sweep will", space.client, exc_info=True)


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
