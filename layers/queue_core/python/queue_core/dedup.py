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
from .sqs_ids import SQS_ID_ATTRIBUTE, sqs_id_of_key
from .store import Item, Write
from .store import messages as writes


def dedup_put(space: Space, settings: QueueSettings, dedup_id: str, ref: MessageRef, now: int, sqs_id: str) -> Write:
    """The dedup item keeps the message's SQS id too (`sqs_ids`): a duplicate answers it."""
    window = settings.dedup_window_seconds * 1000
    item = {
        **space.dedup_key(dedup_id),
        "message_id": ref.message_id,
        "sequence": ref.sequence,
        SQS_ID_ATTRIBUTE: sqs_id,
        "dedup_until": now + window,
        "expires_at": (now + window) // 1000 + 1,
    }
    return writes.dedup(item, now)


def duplicate_of(reason: tuple[str, Item | None], settings: QueueSettings) -> SendResult:
    code, old = reason
    if code != "ConditionalCheckFailed" or old is None:
        raise Throttled("the send raced another; retry")
    return SendResult(old["message_id"], old["sequence"], duplicate=True, sqs_message_id=first_sqs_id(old, settings))


def first_sqs_id(old: Item, settings: QueueSettings) -> str:
    """The SQS id of the message a dedup item names. One written before dedup items kept it was written with the
    message, at its send time: the end of its window less the window (exact while the window is unchanged)."""
    kept = old.get(SQS_ID_ATTRIBUTE)
    if kept:
        return str(kept)
    sent_at = int(old["dedup_until"]) - settings.dedup_window_seconds * 1000
    return sqs_id_of_key(str(old["pk"]), str(old["message_id"]), sent_at)
