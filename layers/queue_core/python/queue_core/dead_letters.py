"""Receipt handles of dead letters: what a DLQ read hands out with each message, and the delete they allow.

A DLQ read (`dlq_read`, the REST API's view) is a look; a DLQ receive (`dlq_receive`, SQS's ReceiveMessage on a
DLQ's URL or on a queue other queues name as their dead-letter target) is a claim, as SQS's receive is: it stamps
each copy it answers with a claim token and the claim's end (`dlq_tok`, `dlq_until`), only where no live claim
holds it, so two workers never hold one dead letter at once and a worker that keeps failing on some dead letters
still reaches the others. Either way a caller that read a dead letter needs a handle to remove it, and that
handle must reach nothing else: not the live message (a redrive may have put the same message id back in the
queue, where a worker now holds it), and not a later DLQ copy of the same message (redriven and dead-lettered
again, under the same key). So a handle names the exact copy it was read from: its
key (from the message id), the time it was dead-lettered and the random id stamped on that copy. It is signed with
the sub-queue's receipt secret, as a live handle is, but under a MAC domain of its own: neither kind passes for
the other, and a handle cannot be made from a message id. A claim's handle also names its token: it deletes, or
moves the claim's end, only while that claim is the copy's latest. A redrive or a move task takes copies whether or
not they are claimed: the holder's later delete names the DLQ copy, gone by then, so it never reaches the message
redriven under the same id (it is delivered again: at least once, never lost).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from .context import Context
from .errors import ValidationError
from .keys import MessageRef, Space
from .models import Message
from .receipts import signed, unsigned, verified
from .store import ConditionFailed, Item, Write
from .store import messages as writes

_VERSION = "d1"
# A claim's handle: the look's fields and the claim token.
_CLAIM_VERSION = "d2"
# Prefixed to the payload before it is signed, so the MAC of a dead letter's handle is never a live handle's.
_DOMAIN = b"dead-letter|"


@dataclass(frozen=True)
class DeadLetter:
    """A message read from the DLQ and the handle that deletes this DLQ copy of it."""

    message: Message
    receipt_handle: str

    @property
    def message_id(self) -> str:
        return self.message.message_id


@dataclass(frozen=True)
class DeadLetterReceipt:
    queue: str
    client: str
    message_id: str
    moved_at: int
    # The id stamped on the DLQ copy when it was written; empty for a copy written before copies had one.
    copy: str
    # The claim the handle was handed out with; empty for a look's handle.
    token: str = ""

    @classmethod
    def of(cls, item: Item, message_id: str, queue: str, client: str, token: str = "") -> DeadLetterReceipt:
        return cls(queue, client, message_id, int(item.get("moved_at", 0)), str(item.get("dlq_id", "")), token)

    def encode(self, secret: str) -> str:
        fields = [_VERSION, self.queue, self.client, self.message_id, str(self.moved_at), self.copy]
        if self.token:
            fields[0] = _CLAIM_VERSION
            fields.append(self.token)
        return signed("|".join(fields).encode(), secret, _DOMAIN)

    @classmethod
    def decode(cls, handle: object, secret: str) -> DeadLetterReceipt:
        payload = verified(
            handle,
            secret,
            malformed="receipt_handle is not a dead letter's handle",
            forged="receipt_handle is not a dead letter's handle of this queue (forged or altered)",
            domain=_DOMAIN,
        )
        fields = payload.decode().split("|")
        if not _well_formed(fields):
            raise ValidationError("receipt_handle has an unknown version")
        token = fields[6] if fields[0] == _CLAIM_VERSION else ""
        return cls(fields[1], fields[2], fields[3], int(fields[4]), fields[5], token)

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
        if not _well_formed(fields):
            return None
        return fields[1], fields[2]

    def check_owner(self, queue: str, client: str) -> None:
        if (self.queue, self.client) != (queue, client):
            raise ValidationError("receipt_handle belongs to another queue or client")


def new_token() -> str:
    return secrets.token_hex(8)


def _well_formed(fields: list[str]) -> bool:
    return (fields[0], len(fields)) in ((_VERSION, 6), (_CLAIM_VERSION, 7))


def handed_out(item: Item, message: Message, space: Space, secret: str) -> DeadLetter:
    """A dead letter as a DLQ read answers it: the message and the handle of this very copy."""
    receipt = DeadLetterReceipt.of(item, message.message_id, space.queue, space.client)
    return DeadLetter(message, receipt.encode(secret))


def claimed(
    ctx: Context, item: Item, message: Message, space: Space, secret: str, until: int, now: int, token: str = ""
) -> DeadLetter | None:
    """A dead letter as a DLQ receive answers it: this copy claimed until `until`, with the handle of the claim
    (`token`: the claim of its FIFO group; a fresh one when empty); None when another live claim holds it (or the
    copy is gone). A claim the SDK repeated after a lost answer finds its own token in the item: ours."""
    token = token or new_token()
    receipt = DeadLetterReceipt.of(item, message.message_id, space.queue, space.client, token)
    key = {"pk": item["pk"], "sk": item["sk"]}
    try:
        ctx.store.write(writes.claim_dead_letter(key, receipt.moved_at, receipt.copy, token, until, now))
    except ConditionFailed as failed:
        if failed.item is None or failed.item.get("dlq_tok") != token:
            return None
    return DeadLetter(message, receipt.encode(secret))


def held(ctx: Context, space: Space, ref: MessageRef, receipt: DeadLetterReceipt) -> Item | None:
    """The DLQ copy `receipt` was handed out with, while the claim it names is still that copy's latest (its time
    may have run out); None when the copy is gone, a later copy holds its key, or another claim took it. One read:
    a look before a hold, never a fence."""
    if not receipt.token:
        return None
    item = ctx.store.get(ref.dlq_key(space))
    if item is None:
        return None
    latest = DeadLetterReceipt.of(item, receipt.message_id, space.queue, space.client, str(item.get("dlq_tok", "")))
    return item if latest == receipt else None


def hold(
    ctx: Context, space: Space, ref: MessageRef, receipt: DeadLetterReceipt, until: int, again: bool = False
) -> bool:
    """Moves the end of the claim `receipt` was handed out with (to now: releases it); False when that claim is
    no longer the copy's latest or the copy is gone. A look's handle holds nothing: False. `again`: a repeated
    receive's hold, also False once the holder changed it (`writes.hold_dead_letter`)."""
    if not receipt.token:
        return False
    try:
        ctx.store.write(hold_write(space, ref, receipt, until, again))
    except ConditionFailed:
        return False
    return True


def hold_write(space: Space, ref: MessageRef, receipt: DeadLetterReceipt, until: int, again: bool = False) -> Write:
    """`hold`'s write, for a caller that joins it to another (a FIFO DLQ's group moves with it)."""
    return writes.hold_dead_letter(ref.dlq_key(space), receipt.moved_at, receipt.copy, receipt.token, until, again)


def delete(ctx: Context, space: Space, ref: MessageRef, receipt: DeadLetterReceipt) -> bool:
    """Removes the DLQ copy `receipt` was read from. False when that copy is gone (deleted, redriven, swept), a
    later copy holds its key, or a later claim took it from the handle's claim: nothing is removed, as a delete
    with a spent handle removes nothing in SQS. The SDK's repeat of an applied delete finds the copy gone and
    answers False too."""
    try:
        removed = ctx.store.write(
            writes.delete_dead_letter(ref.dlq_key(space), receipt.moved_at, receipt.copy, receipt.token)
        )
    except ConditionFailed:
        return False
    ctx.bodies.discard([removed])
    return True
