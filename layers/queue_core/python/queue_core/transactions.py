"""Sends and acks inside the caller's own DynamoDB transaction: the outbox without a relay, exactly-once effects.

A transactional send is the very writes a normal send makes (the engines build both), handed to the caller as
TransactWriteItems entries: the message exists if and only if the caller's transaction commits. A transactional
ack is the delete a normal delete makes (plus the FIFO group's release), each write conditional on the claim
token: if the message was received again since the handle, the whole transaction is cancelled, so the caller's
effect is applied once, by whoever still holds the message.

Our entries are `OwnedItem`s: plain dicts to the SDK, that remember which send or ack they belong to wherever the
caller copies them, so that `commit` reads a cancellation index by index: the caller's own condition, a duplicate,
a stale claim, or a FIFO fence moved by another sender (built again and committed again: nothing of the cancelled
attempt was applied, and the caller's conditions are checked afresh).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, Final

from .dedup import duplicate_of
from .engine import Engine, SendWrites
from .errors import (
    DuplicateMessage,
    QueueError,
    ReceiptHandleStale,
    Throttled,
    TransactionConditionFailed,
    ValidationError,
)
from .limits import MAX_TRANSACTION_ITEMS
from .messages import Entry
from .receipts import Receipt
from .store import Item, OutcomeUnknown, Overdue, Store, TransactionCancelled

logger = logging.getLogger("queue_core.transactions")

# Commits of one transaction while FIFO fences keep moving under other senders (each attempt applies nothing).
_COMMIT_ATTEMPTS = 25
# DynamoDB honours a ClientRequestToken for ten minutes of real time; past that the same request with the same
# token is a new transaction. A commit whose answers were all lost is sent again with its token only this long
# after its first send, leaving a minute for the request's own time on the way.
TOKEN_REUSE_SECONDS: Final = 9 * 60
# How often a FIFO ack of one of several held messages is built again after the claim's done set changed under it.
_ACK_REBUILDS: Final = 3
_STALE = "the message was received again since this receipt handle (or is gone): nothing of the transaction applied"

# Gives the sub-queue's engine for the current settings; True asks for settings read afresh.
EngineSource = Callable[[bool], Engine]


class OwnedItem(dict):
    """One TransactWriteItems entry of a send or an ack: a plain dict to the SDK; `owner` and `position` say
    whose entry it is, so that a cancellation reason at its index is read as ours."""

    owner: _Part
    position: int


def _owned(entries: list[dict[str, Any]], owner: _Part) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for position, entry in enumerate(entries):
        item = OwnedItem(entry)
        item.owner = owner
        item.position = position
        items.append(item)
    return items


class _Part:
    """A send or an ack inside a caller's transaction."""

    items: list[dict[str, Any]]
    # A commit of these entries whose every answer was lost: (the request's fingerprint, its client request token,
    # when that token was first sent, on the monotonic clock). It may have been applied, so only that very request,
    # with that token, may be sent again, and only while DynamoDB still knows the token.
    unsure: tuple[str, str, float] | None = None
    # By when (monotonic) its entries must be sent: built from a queue's settings, they may not land after another
    # process acts on a change of them (`QueueSettings.send_deadline`). None: whenever.
    send_by: float | None = None

    def check_uncommitted(self) -> None:
        """Refuses a part that a transaction already committed, when committing it again would do harm."""

    def failure(self, position: int, old: Item | None) -> QueueError | None:
        """What a failed condition of our entry at `position` means; None when the entries were built again
        (the cancellation is one a new attempt gets past)."""
        raise NotImplementedError

    def committed(self) -> None:
        """Runs once the transaction committed."""

    def build_again(self) -> None:
        """Builds the entries again from settings read afresh, once they were too old to send (`send_by`)."""


class TransactSend(_Part):
    """A message that exists once the caller's transaction commits. `items` are its TransactWriteItems entries
    (standard: 1, 2 with a dedup id; FIFO: 2, 3 with a dedup id, plus one per earlier place of the group while a
    change of `shards` moves it); `message_id` and `sequence` name the message. Committed through
    `QueueClient.transact`, a FIFO send may be built again after another sender moved its group's sequence:
    `items`, `message_id` and `sequence` then name the message as committed."""

    def __init__(self, engine_of: EngineSource, table: str, entry: Entry, now_ms: Callable[[], int]) -> None:
        self._engine_of = engine_of
        self._table = table
        self._entry = entry
        self._now_ms = now_ms
        self.items: list[dict[str, Any]] = []
        self.message_id = ""
        self.sequence = ""
        # The id SQS clients see (`sqs_ids`).
        self.sqs_message_id = ""
        self._planned: SendWrites | None = None
        self._committed = False
        self._build(self._engine_of(False), None)

    def __repr__(self) -> str:
        return f"TransactSend(message_id={self.message_id!r}, items={len(self.items)})"

    def _build(self, engine: Engine, last_seq: int | None) -> None:
        self.send_by = engine.settings.send_deadline()
        planned = engine.send_writes(self._entry, self._now_ms(), last_seq)
        engine.mark_ahead(planned.ready)
        self._planned = planned
        self.items[:] = _owned([write.transact_item(self._table) for write in planned.writes], self)
        self.message_id = planned.ref.message_id
        self.sequence = planned.ref.sequence
        self.sqs_message_id = planned.sqs_id

    def keep_sqs_id(self, sqs_id: str) -> None:
        """The message keeps the SQS id of the message it carries on (a dead letter moved into another queue:
        `dead_letter_moves`), instead of an id of its own; its items are built again with it."""
        self._entry = replace(self._entry, sqs_id=sqs_id)
        self._build(self._engine_of(False), None)

    def committed(self) -> None:
        """The message is stored: its ready marker is put (see `ready`), as a normal send puts it after its write."""
        assert self._planned is not None
        self._committed = True
        self._engine_of(False).send_committed(self._planned, self._now_ms())

    def build_again(self) -> None:
        self._build(self._engine_of(True), None)

    def check_uncommitted(self) -> None:
        """A send is one message: committed again (a FIFO fence it moved itself would be built again, a new
        sequence), it would be a second copy."""
        if self._committed:
            raise self._stored_already()

    def _stored_already(self) -> DuplicateMessage:
        return DuplicateMessage(
            f"message {self.message_id!r} was stored by an earlier commit of this send: nothing of the transaction "
            "was applied",
            self.message_id,
            self.sequence,
        )

    def failure(self, position: int, old: Item | None) -> QueueError | None:
        planned = self._planned
        assert planned is not None
        if position == planned.dedup:
            try:
                first = duplicate_of(("ConditionalCheckFailed", old), self._engine_of(False).settings)
            except Throttled as raced:
                return raced
            return DuplicateMessage(
                f"dedup id {self._entry.dedup_id!r} was used by message {first.message_id!r} inside the dedup "
                "window: the transaction was cancelled",
                first.message_id,
                first.sequence,
            )
        if planned.fence is None:
            # A standard message's key is drawn for this send alone: taken, it holds this very message, stored by
            # an earlier commit (the caller's repeat without its token).
            return self._stored_already()
        if position == planned.fence and old is not None and not old.get("moved") and "last_seq" in old:
            self._build(self._engine_of(False), int(old["last_seq"]))  # another sender moved the group's sequence
            return None
        # The group moved to another place (a change of `shards`), or one of its old places changed meanwhile.
        self._build(self._engine_of(True), None)
        return None


class TransactAck(list):
    """The TransactWriteItems entries of an ack (standard: 1, FIFO: 2): a list, as `delete_transact_items`
    promises, that also knows its receipt."""

    def __init__(self, engine_of: EngineSource, table: str, receipt: Receipt, now_ms: Callable[[], int]) -> None:
        super().__init__()
        self._part = _AckPart(self, engine_of, table, receipt, now_ms)

    @property
    def message_id(self) -> str:
        return self._part.receipt.message_id

    def on_commit(self, callback: Callable[[], None]) -> None:
        """Runs `callback` once the transaction that carries this ack committed."""
        self._part.callbacks.append(callback)


class _AckPart(_Part):
    def __init__(
        self, items: list[dict[str, Any]], engine_of: EngineSource, table: str, receipt: Receipt, now_ms: Any
    ) -> None:
        self.items = items
        self.receipt = receipt
        self._engine_of = engine_of
        self._table = table
        self._now_ms = now_ms
        self.callbacks: list[Callable[[], None]] = []
        self._rebuilt = 0
        self._build(group_may_be_empty=True)

    def _build(self, group_may_be_empty: bool) -> None:
        engine = self._engine_of(False)
        writes = engine.delete_writes(self.receipt, self._now_ms(), group_may_be_empty)
        if engine.settings.fifo:  # the ack may unlock its group, in a transaction the caller may commit itself
            engine.mark_ahead([(0, self._now_ms(), self.receipt.group_shard)])
        self.items[:] = _owned([write.transact_item(self._table) for write in writes], self)
        self._may_empty = group_may_be_empty

    def failure(self, position: int, old: Item | None) -> QueueError | None:
        held = old is not None and old.get("tok") == self.receipt.token
        if position == 1 and held and self._may_empty and self.receipt.held <= 1:
            # The lock is still ours; a send came since the claim, so the group is not empty: unlock it instead.
            self._build(group_may_be_empty=False)
            return None
        if position == 1 and held and self.receipt.held > 1 and self._rebuilt < _ACK_REBUILDS:
            # One of several held: the done set changed since the ack was built (another of the claim's messages
            # acked or given back meanwhile): built again from the group as it is now.
            self._rebuilt += 1
            self._build(self._may_empty)
            return None
        return ReceiptHandleStale(_STALE)

    def committed(self) -> None:
        try:
            self._engine_of(False).delete_committed(self.receipt, self._now_ms(), self._may_empty)
        except QueueError:
            # The ack committed; only the group's early unlock is missing, and its lock running out makes up for it.
            logger.warning("group bookkeeping after the ack of %s failed", self.receipt.message_id, exc_info=True)
        for callback in self.callbacks:
            callback()


def commit(store: Store, items: Iterable[Any], token: str | None = None) -> None:
    """Runs one transaction of the caller's items with our sends and acks among them, and maps a cancellation
    to our errors (see `QueueClient.transact`)."""
    slots = _expand(items)
    if not slots:
        raise ValidationError("a transaction needs at least one item")
    if len(slots) > MAX_TRANSACTION_ITEMS:
        raise ValidationError(
            f"a transaction takes at most {MAX_TRANSACTION_ITEMS} items (DynamoDB's limit); this one has {len(slots)}"
        )
    if not _complete(slots):
        raise ValidationError("a send's or an ack's items must all be in the transaction, each once")
    parts = list({id(part): part for _, part, _ in slots if part is not None}.values())
    for part in parts:
        part.check_uncommitted()
    for attempt in range(_COMMIT_ATTEMPTS):
        request = [dict(item) for item, _, _ in slots]  # plain dicts to the SDK: the owners stay here
        fingerprint = _fingerprint(request)
        sent_token, first_sent = _token_for(parts, fingerprint, token if attempt == 0 else None)
        deadlines = [part.send_by for part in parts if part.send_by is not None]
        try:
            with store.sent_by(min(deadlines, default=None)):
                store.transact_items(request, token=sent_token)
        except TransactionCancelled as cancelled:
            for part in parts:
                part.unsure = None  # answered: nothing of it was applied
            slots = _after_cancel(slots, cancelled.reasons)
            continue
        except Overdue:
            # Not sent: its sends were built from settings another process may have changed since.
            if any(part.unsure is not None for part in parts):
                raise ValidationError(
                    "a commit of these sends or acks may have been applied (its answers were lost), and the queue "
                    "settings they were built from are now too old to send it again: check its effects, then build "
                    "new sends or acks"
                ) from None
            for part in parts:
                part.build_again()
            slots = _rebuilt(slots)
            continue
        except OutcomeUnknown as unknown:
            for part in parts:
                part.unsure = (fingerprint, unknown.token, first_sent)
            raise
        for part in parts:
            part.unsure = None
            part.committed()
        return
    raise Throttled("other senders kept moving the FIFO group's sequence; nothing was applied; retry")


def _fingerprint(request: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()


def _token_for(parts: list[_Part], fingerprint: str, given: str | None) -> tuple[str | None, float]:
    """The token to send and when it was first sent: the token of a commit whose answers were all lost, when this
    is that very request (DynamoDB then answers with that commit's outcome, applied once); else `given` (None: a
    new one), first sent now. A part whose commit may have been applied cannot go into another request, nor into
    the same one once DynamoDB has forgotten its token: it could be applied twice."""
    unsure = {part.unsure for part in parts if part.unsure is not None}
    for seen, token, first_sent in unsure:
        if seen != fingerprint:
            continue
        if time.monotonic() - first_sent > TOKEN_REUSE_SECONDS:
            raise ValidationError(
                f"a commit of these sends or acks may have been applied more than {TOKEN_REUSE_SECONDS // 60} "
                "minutes ago (its answers were lost) and DynamoDB no longer tells its outcome: committing it again "
                "could apply it twice; check its effects, then build new sends or acks"
            )
        return token, first_sent
    if unsure:
        raise ValidationError(
            "a commit of these sends or acks may have been applied (its answers were lost): commit exactly the same "
            "items again to learn its outcome"
        )
    return given, time.monotonic()


_Slot = tuple[dict[str, Any], _Part | None, int]


def _expand(items: Iterable[Any]) -> list[_Slot]:
    """Flattens what the caller passes: entries (its own or ours), sends (their `items`), lists of entries."""
    slots: list[_Slot] = []
    for element in items:
        if isinstance(element, OwnedItem):
            slots.append((element, element.owner, element.position))
        elif isinstance(element, dict):
            slots.append((element, None, -1))
        elif isinstance(element, TransactSend):
            slots += _expand(element.items)
        elif isinstance(element, list | tuple):
            slots += _expand(element)
        else:
            raise ValidationError(
                f"a transaction item must be a TransactWriteItems entry (a dict), not {type(element).__name__}"
            )
    return slots


def _after_cancel(slots: list[_Slot], reasons: Sequence[tuple[str, Item | None]]) -> list[_Slot]:
    """Raises the error a cancellation means; or, when only FIFO fences moved, returns the entries built again."""
    failed = [(index, old) for index, (code, old) in enumerate(reasons) if code == "ConditionalCheckFailed"]
    own = [(index, old) for index, old in failed if slots[index][1] is not None]
    errors = [error for index, old in own if (error := _own_failure(slots[index], old)) is not None]
    # A stale ack first: once another consumer holds (or finished) the message, the caller's own condition
    # failing too is most likely that consumer's effect, already applied.
    stale = [error for error in errors if isinstance(error, ReceiptHandleStale)]
    if stale:
        raise stale[0]
    for index, old in failed:
        if slots[index][1] is None:
            raise TransactionConditionFailed(
                f"the condition of transaction item {index} failed: nothing of the transaction was applied",
                index,
                old,
            )
    if errors:
        raise errors[0]
    return _rebuilt(slots)


def _rebuilt(slots: list[_Slot]) -> list[_Slot]:
    """The slots with each of our parts' entries as built again."""
    if not _complete(slots):
        # Built again with another number of entries (the group moved to another place meanwhile): the caller's
        # list cannot be brought up to date here.
        raise Throttled("the FIFO group moved to another place meanwhile; nothing was applied; send again")
    return [
        (part.items[position], part, position) if part is not None else (item, part, position)
        for item, part, position in slots
    ]


def _complete(slots: list[_Slot]) -> bool:
    """Whether every send and ack among the slots is there whole, each entry once."""
    positions: dict[int, list[int]] = {}
    for _, part, position in slots:
        if part is not None:
            positions.setdefault(id(part), []).append(position)
    return all(sorted(positions[id(part)]) == list(range(len(part.items))) for _, part, _ in slots if part is not None)


def _own_failure(slot: _Slot, old: Item | None) -> QueueError | None:
    _, part, position = slot
    assert part is not None
    return part.failure(position, old)
