"""The set of clients with visible messages: ready markers, written by sends and read by queue-wide receives.

A send stores its messages first, then puts one marker per priority it used (`keys.Space.ready_marker`): "ready
now", or "ready at" the delivery time of a delayed message. A queue-wide receive reads the due markers and
receives from those clients only, so an idle client costs nothing. A client that yields nothing is *drained*:
its marker is dropped (on the condition that it is the one read), then the client is looked at again (its first
index entry of that priority, one item per shard) and a marker is put back for when that entry is due. Because
the send writes its marker after its messages, either the marker lands after the drop (and stays), or the
messages were stored before the look (and the drain sees them): no message is left without a marker.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from typing import Any, Protocol

from .errors import QueueError
from .keys import Space
from .store import ConditionFailed, Store, Write
from .store import ready as writes

logger = logging.getLogger("queue_core")


class Drainable(Protocol):
    space: Space

    def next_visible(self, priority: int, now: int) -> int | None:
        """When the sub-queue next has a message of `priority` to give (its first index entry); None: none."""


def marker_writes(space: Space, due: Iterable[tuple[int, int]], now: int) -> list[Write]:
    """One put per distinct marker for `(priority, visible_at)` pairs: what a send, a redrive, a release or an
    unlock writes after its own write, or inside its own transaction."""
    items: dict[tuple[Any, Any], dict[str, Any]] = {}
    for priority, visible_at in due:
        item = space.ready_marker(priority, visible_at, now)
        items[(item["pk"], item["sk"])] = item
    return [writes.mark(item) for item in items.values()]


def announce(store: Store, space: Space, due: Iterable[tuple[int, int]], now: int) -> None:
    """Puts the markers after the messages are stored. A marker that cannot be written now is logged, not
    raised: the messages are stored (a failure would make the sender send them twice), a per-client receive
    sees them, and the sweep puts the marker of every sub-queue with visible messages."""
    puts = marker_writes(space, due, now)
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


def drain(store: Store, engine: Drainable, priority: int, key: dict[str, str], gsi1sk: str, now: int) -> None:
    """The client gave nothing of `priority`: its marker leaves, and comes back for the next entry's time. The
    look happens whatever the drop answered: a drop applied whose answer was lost fails its repeat's condition,
    and a drop that lost to another drain is harmless to follow with a look of our own."""
    with contextlib.suppress(ConditionFailed):
        store.write(writes.drop(key, gsi1sk))
    at = engine.next_visible(priority, now)
    if at is not None:
        announce(store, engine.space, [(priority, at)], now)
