"""Receipt handles of dead letters: what a DLQ read hands out with each message, and the delete they allow.

A DLQ read is a look, not a claim, but a caller that read a dead letter (over SQS, a receive on the DLQ's URL)
needs a handle to remove it, and that handle must reach nothing else: not the live message (a redrive may have put
the same message id back in the queue, where a worker now holds it), and not a later DLQ copy of the same message
(redriven and dead-lettered again, under the same key). So a handle names the exact copy it was read from: its
key (from the message id), the time it was dead-lettered and the random id stamped on that copy. It is signed with
the sub-queue's receipt secret, as a live handle is, but under a MAC domain of its own: neither kind passes for
the other, and a handle cannot be made from a message id.
"""

from __future__ import annotations

from dataclasses import dataclass

from .context import Context
from .errors import ValidationError
from .keys import MessageRef, Space
from .models import Message
from .receipts import signed, unsigned, verified
from .store import ConditionFailed, Item
from .store import messages as writes

_VERSION = "d1"
# Prefixed to the payload before it is signed, so the MAC of a dead letter's handle is never a live handle's.
_DOMAIN = b"dead-letter|"


@dataclass(frozen=True)
class DeadLetter:
    """A message read from the DLQ and the handle that deletes this DLQ copy of it."""

    message: Message
    receipt_handle: str


@dataclass(frozen=True)
class DeadLetterReceipt:
    queue: str
    client: str
    message_id: str
    moved_at: int
    # The id stamped on the DLQ copy when it was written; empty for a copy written before copies had one.
    copy: str

    @classmethod
    def of(cls, item: Item, message_id: str, queue: str, client: str) -> DeadLetterReceipt:
        return cls(queue, client, message_id, int(item.get("moved_at", 0)), str(item.get("dlq_id", "")))

    def encode(self, secret: str) -> str:
        payload = "|".join((_VERSION, self.queue, self.client, self.message_id, str(self.moved_at), self.copy))
        return signed(payload.encode(), secret, _DOMAIN)

    @classmethod
    def decode(cls, handle: object, secret: str) -> DeadLetterReceipt:
        payload = verified(
            handle,
            secret,
            malformed="receipt_handle is not a dead letter's handle",
            forged="receipt_handle is not a dead letter's handle of this queue (forged or altered)",
            domain=_DOMAIN,
        )
        version, queue, client, message_id, moved_at, copy = payload.decode().split("|")
        if version != _VERSION:
            raise ValidationError("receipt_handle has an unknown version")
        return cls(queue, client, message_id, int(moved_at), copy)

    @staticmethod
    def owner(handle: object) -> tuple[str, str] | None:
        """The queue and client a dead letter's handle names, before its signature is checked (by that
        sub-queue's `dlq_check_handle`); None when `handle` is not a dead letter's handle."""
        if not isinstance(handle, str) or len(handle) > 2048 or handle.count(".") != 1:
            return None
        try:
            fields = unsigned(handle).decode().split("|")
        except (UnicodeDecodeError, ValueError):
            return None
        if len(fields) != 6 or fields[0] != _VERSION:
            return None
        return fields[1], fields[2]

    def check_owner(self, queue: str, client: str) -> None:
        if (self.queue, self.client) != (queue, client):
            raise ValidationError("receipt_handle belongs to another queue or client")


def handed_out(item: Item, message: Message, space: Space, secret: str) -> DeadLetter:
    """A dead letter as a DLQ read answers it: the message and the handle of this very copy."""
    receipt = DeadLetterReceipt.of(item, message.message_id, space.queue, space.client)
    return DeadLetter(message, receipt.encode(secret))


def delete(ctx: Context, space: Space, ref: MessageRef, receipt: DeadLetterReceipt) -> bool:
    """Removes the DLQ copy `receipt` was read from. False when that copy is gone (deleted, redriven, swept) or a
    later copy holds its key: nothing is removed, as a delete with a spent handle removes nothing in SQS. The SDK's
    repeat of an applied delete finds the copy gone and answers False too."""
    try:
        removed = ctx.store.write(writes.delete_dead_letter(ref.dlq_key(space), receipt.moved_at, receipt.copy))
    except ConditionFailed:
        return False
    ctx.bodies.discard([removed])
    return True
