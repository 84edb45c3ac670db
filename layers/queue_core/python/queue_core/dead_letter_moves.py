"""Dead letters moved into another queue (SQS's StartMessageMoveTask with a DestinationArn).

Each dead letter becomes a new message of the destination sub-queue in one transaction with the removal of the
very DLQ copy it was read from (conditional on that copy, as a DLQ handle's delete is): the message is in the
destination if and only if its copy left the DLQ. A move cut short, or run twice at once, moves each copy once: the
second transaction finds the copy gone and applies nothing. A commit whose answer was lost is sent again with its
client request token by `transactions.commit`, so the SDK's or our own repeat never makes a second message. The
new message carries a dedup id drawn from the copy, so a FIFO destination with content-based dedup never takes it
for a duplicate of an earlier message with the same body, and the SQS id it had (`sqs_ids`).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from typing import Any, Protocol

from . import keys
from .context import Context
from .errors import DuplicateMessage, MessageBodyMissing, QueueError, TransactionConditionFailed
from .keys import MessageRef, Space
from .messages import DLQ, looked_at
from .settings import QueueSettings
from .store import Item
from .store import messages as writes
from .transactions import commit


class Source(Protocol):
    """The sub-queue whose dead letters move."""

    @property
    def settings(self) -> QueueSettings: ...

    @property
    def space(self) -> Space: ...


class Destination(Protocol):
    """The sub-queue they move into: its send, as items of the move's own transaction."""

    @property
    def settings(self) -> QueueSettings: ...

    def send_transact_items(self, body: str, **options: Any) -> Any: ...


def move(ctx: Context, source: Source, destination: Destination, items: Iterable[Item]) -> int:
    """Moves each of `items` (DLQ items of `source`) into `destination`; the number moved. A copy gone meanwhile
    (deleted, redriven, moved by another task) is passed over."""
    fifo = source.settings.fifo
    space = source.space
    moved = 0
    for item in items:
        ref = MessageRef.from_dlq_sk(item["sk"], keys.shard_of(item["pk"]), fifo, int(item.get("priority", 0)))
        try:
            message = looked_at(item, ref, DLQ, ctx.bodies)
        except MessageBodyMissing:
            continue
        send = destination.send_transact_items(
            message.body,
            attributes=message.attributes or None,
            attribute_types=message.attribute_types or None,
            group_id=message.group_id if destination.settings.fifo else None,
            dedup_id=_move_id(item, message.message_id),
            priority=None if destination.settings.fifo else message.priority or None,
        )
        send.keep_sqs_id(message.sqs_message_id)
        removal = writes.delete_dead_letter(
            ref.dlq_key(space), int(item.get("moved_at", 0)), str(item.get("dlq_id", ""))
        )
        try:
            commit(ctx.store, [send, removal.transact_item(ctx.store.table)])
        except (TransactionConditionFailed, DuplicateMessage):
            # The copy left meanwhile (or this very move committed before): nothing of this attempt was applied.
            continue
        with contextlib.suppress(QueueError):
            ctx.bodies.discard([item])
        moved += 1
    return moved


def _move_id(item: Item, message_id: str) -> str:
    """A dedup id of this very DLQ copy: the same for a repeat of its move, new for a later copy of the message."""
    copy = f"{message_id}|{item.get('moved_at', 0)}|{item.get('dlq_id', '')}"
    return "move-" + hashlib.sha256(copy.encode()).hexdigest()[:40]
