"""Message items and the values built from them, shared by standard and FIFO queues."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import limits, reasons
from .bodies import COMPRESSED, FORMS, OFFLOADED, Bodies, item_size
from .keys import MessageRef, message_index_sk, object_prefix_of
from .models import Message, ReceivedMessage, SendResult
from .receipts import new_token
from .sqs_ids import SQS_ID_ATTRIBUTE, sqs_id_of
from .store import Item, TransactionCancelled, Write
from .store import messages as writes

VISIBLE, IN_FLIGHT, DELAYED, DLQ = "visible", "in_flight", "delayed", "dlq"


@dataclass(frozen=True)
class Entry:
    """A validated message to send; `index` is its place in the caller's batch."""

    index: int
    body: str
    attributes: dict[str, str] = field(default_factory=dict)
    # The data types of the attributes whose type is not plain `String` (see `validation.attribute_types`).
    attribute_types: dict[str, str] = field(default_factory=dict)
    delay_seconds: int = 0
    group_id: str | None = None
    dedup_id: str | None = None
    # Kept from the first send when a message is moved back from the DLQ.
    sent_at: int | None = None
    # The body as the DLQ item stored it (`bodies.stored_form`), when a message is moved back: kept as it is, so
    # an offloaded body keeps its object.
    stored: Item | None = None
    priority: int = 0
    # `deliver_at` (epoch ms), when given instead of a delay.
    deliver_at: int | None = None
    # The SQS id it had, when a message takes a new place (`sqs_ids`): kept in its new item.
    sqs_id: str | None = None

    def visible_from(self, now_ms: int) -> int:
        return max(now_ms, self.deliver_at) if self.deliver_at is not None else now_ms + self.delay_seconds * 1000


def expires_s(now_ms: int, retention_seconds: int) -> int:
    """Epoch seconds (DynamoDB's TTL counts seconds), rounded up: a message is kept at least `retention_seconds`
    after `now_ms`, so that every delivery time `validation.delay` and `validation.deliver_at` accept leaves it
    deliverable for `limits.MIN_DELIVERY_WINDOW_SECONDS`."""
    return -(-now_ms // 1000) + retention_seconds


def is_expired(item: Item, now_ms: int) -> bool:
    return int(item.get("expires_at", 0)) <= now_ms // 1000


def new_item(key: dict[str, str], entry: Entry, now_ms: int, visible_at: int, expires_at: int, bodies: Bodies) -> Item:
    """Every message item is built here, whatever sends it: the body is stored compressed or offloaded as
    `bodies` decides (an offloaded body's object is written now, before the caller writes the item)."""
    item: Item = {
        **key,
        "sent_at": entry.sent_at or now_ms,
        "visible_at": visible_at,
        "receive_count": 0,
        "expires_at": expires_at,
    }
    if entry.attributes:
        item["attrs"] = entry.attributes
    if entry.attribute_types:
        item["attr_types"] = entry.attribute_types
    if entry.group_id is not None:
        item["group_id"] = entry.group_id
    if entry.dedup_id is not None:
        item["dedup_id"] = entry.dedup_id
    if entry.priority:
        item["priority"] = entry.priority
    if entry.sqs_id is not None:
        item[SQS_ID_ATTRIBUTE] = entry.sqs_id
    if entry.stored is not None:
        item.update(entry.stored)
    else:
        # The index keys are counted too: every message item carries them or a FIFO group's equivalent.
        index_key = message_index_sk(visible_at, key["sk"], entry.priority)
        around = item_size(item) + item_size({"gsi1pk": key["pk"], "gsi1sk": index_key})
        item.update(bodies.stored(entry.body, object_prefix_of(key["pk"]), around))
        # A reason never costs a body its place: an item near the limit keeps none (`reasons`).
        item.update(reasons.room_mark(item_size(item) + around, limits.MAX_ITEM_BYTES - limits.ITEM_HEADROOM_BYTES))
    return item


def moved_item(item: Item, key: dict[str, str], now_ms: int, **extra: Any) -> Item:
    """A copy of a message under another key (DLQ or back), keeping its body, attributes, group and sent time."""
    names = (*FORMS, "attrs", "attr_types", "group_id", "dedup_id", "sent_at", "priority", SQS_ID_ATTRIBUTE)
    return {**key, **{k: item[k] for k in names if k in item}, **extra}


def dead_letter(
    item: Item,
    key: dict[str, str],
    now_ms: int,
    retention_seconds: int,
    max_receive_count: int,
    ended: dict[str, Any] | None = None,
    why: str | None = None,
) -> Item:
    """The DLQ copy of the live message `item` moved at `now_ms` under `key`: its attempts so far (`ended`: the
    last one's end, when the mover knows it) and why it moved (`reasons`), kept at least a retention from now."""
    attempts = reasons.carried(item, ended)
    copy = moved_item(
        item,
        key,
        now_ms,
        receive_count=int(item["receive_count"]),
        first_received_at=item.get("first_received_at"),
        moved_at=now_ms,
        dlq_id=new_token(),
        expires_at=max(int(item["expires_at"]), expires_s(now_ms, retention_seconds)),
        **attempts,
    )
    copy[reasons.MOVED] = reasons.moved_reason(attempts, max_receive_count, why)
    return copy


# How often a move to the DLQ is made again from the message as it is, after the last holder's write changed it.
MOVE_TRIES = 3


def leaving_for_dlq(key: dict[str, str], item: Item, visible_before: int | None = None) -> Write:
    """The removal of `item` (as read) for its move to the DLQ, fenced on what the copy is made of: its receive
    count and its last holder's release and note as read (`store.messages.leave_for_dlq`)."""
    released_by, noted = str(item.get("released_by", "")), str(item.get("noted", ""))
    return writes.leave_for_dlq(key, int(item["receive_count"]), visible_before, released_by, noted)


def read_again(cancelled: TransactionCancelled) -> Item | None:
    """The message as a cancelled move to the DLQ found it, when only its removal's condition failed (the
    transaction's first action): the move is then made again from it, so that the copy carries the reason a late
    holder's release or note wrote meanwhile. None when any other part failed (the move is not for this claim)."""
    (code, item), *others = cancelled.reasons
    if code != "ConditionalCheckFailed" or any(other not in ("None", "") for other, _ in others):
        return None
    return item


def sent(ref: MessageRef, item: Item) -> SendResult:
    """The answer to the send that stored `item` (a new message at `ref`)."""
    return SendResult(ref.message_id, ref.sequence, sqs_message_id=sqs_id_of(item, ref.message_id))


def received(item: Item, ref: MessageRef, handle: str, bodies: Bodies, client: str) -> ReceivedMessage:
    """`MessageBodyMissing` when the body was offloaded and its object is gone."""
    item = bodies.resolved(item)
    return ReceivedMessage(
        message_id=ref.message_id,
        receipt_handle=handle,
        body=item["body"],
        attributes=dict(item.get("attrs", {})),
        group_id=item.get("group_id"),
        sequence=ref.sequence,
        receive_count=int(item.get("receive_count", 0)),
        sent_at=int(item["sent_at"]),
        first_received_at=item.get("first_received_at"),
        attribute_types=dict(item.get("attr_types", {})),
        client=client,
        priority=int(item.get("priority", 0)),
        dedup_id=item.get("dedup_id"),
        sqs_message_id=sqs_id_of(item, ref.message_id),
    )


def looked_at(item: Item, ref: MessageRef, state: str, bodies: Bodies) -> Message:
    """`MessageBodyMissing` when the body was offloaded and its object is gone."""
    stored = "s3" if OFFLOADED in item else "compressed" if COMPRESSED in item else "item"
    moved_at = item.get("moved_at") if state == DLQ else None
    attempts = reasons.history(item, in_flight=state == IN_FLIGHT, dead=state == DLQ)
    item = bodies.resolved(item)
    return Message(
        message_id=ref.message_id,
        body=item["body"],
        attributes=dict(item.get("attrs", {})),
        group_id=item.get("group_id"),
        sequence=ref.sequence,
        receive_count=int(item.get("receive_count", 0)),
        sent_at=int(item["sent_at"]),
        first_received_at=item.get("first_received_at"),
        state=state,
        visible_at=item.get("visible_at") if state != DLQ else None,
        expires_at=int(item["expires_at"]) * 1000,
        attribute_types=dict(item.get("attr_types", {})),
        priority=int(item.get("priority", 0)),
        dedup_id=item.get("dedup_id"),
        body_stored=stored,
        moved_at=None if moved_at is None else int(moved_at),
        sqs_message_id=sqs_id_of(item, ref.message_id),
        attempts=attempts,
        last_reason=attempts[-1]["reason"] if attempts else None,
        moved_reason=item.get(reasons.MOVED) if state == DLQ else None,
        reasons_dropped=int(item.get(reasons.DROPPED, 0)),
    )
