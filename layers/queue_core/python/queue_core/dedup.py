"""Deduplication, shared by standard and FIFO sends.

A dedup item `(queue, client, dedup_id)` is written in the send's transaction only if no live one exists, so a
duplicate inside the window cancels the transaction and the item as it was names the first message: a duplicate
writes nothing and costs no read.
"""

from __future__ import annotations

from .errors import Throttled
from .keys import MessageRef, Space
from .models import SendResult
from .settings import QueueSettings
from .store import Item, Write
from .store import messages as writes


def dedup_put(space: Space, settings: QueueSettings, dedup_id: str, ref: MessageRef, now: int) -> Write:
    window = settings.dedup_window_seconds * 1000
    item = {
        **space.dedup_key(dedup_id),
        "message_id": ref.message_id,
        "sequence": ref.sequence,
        "dedup_until": now + window,
        "expires_at": (now + window) // 1000 + 1,
    }
    return writes.dedup(item, now)


def duplicate_of(reason: tuple[str, Item | None]) -> SendResult:
    code, old = reason
    if code != "ConditionalCheckFailed" or old is None:
        raise Throttled("the send raced another; retry")
    return SendResult(old["message_id"], old["sequence"], duplicate=True)
