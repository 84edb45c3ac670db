"""Receives whose answer holds dead letters: SQS's ReceiveMessage at a queue other queues name as their dead-letter
target (the queue's own messages, then the sources' dead letters), and at a DLQ's URL (dead letters only).

`WithDeadLetters` is such a receive, and the receiver `receive_attempts` keeps and repeats under an attempt id: an
answer's dead letters are kept by their handles beside the live messages' (a dead letter's handle names its own
sub-queue, so one record serves both), and a repeat holds all of them again or none. Every dead letter is checked
first: still held by the claim its handle names (and, in a FIFO DLQ, its group still held by that claim). Then the
live messages are held again, all or none in one transaction (`SubQueue.hold_handles`), then the dead letters one
by one. When one of them was taken or settled between its check and its hold, whatever this repeat held again goes
back, given back at once rather than left hidden for a visibility timeout with nobody holding it, and the attempt is
spent: the repeat is a new receive.

Cost of a repeat, in DynamoDB calls, besides the attempt record's read: per dead letter one GetItem of its copy
(and one of its group's claim in a FIFO DLQ) to check, then the change of visibility of `dead_letter_groups` (a
TransactWriteItems, refused and followed by an UpdateItem once the group is held as long; one UpdateItem in a
standard DLQ); the live messages' one transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from .dead_letters import DeadLetter, DeadLetterReceipt
from .errors import QueueError, Throttled, ValidationError
from .keys import Space
from .models import Message, ReceivedMessage
from .settings import QueueSettings


class Source(Protocol):
    """A sub-queue whose dead letters a receive reads (`SubQueue`)."""

    @property
    def queue(self) -> str: ...

    @property
    def client(self) -> str: ...

    def dlq_receive(self, limit: int = 10, visibility_timeout: int | None = None) -> list[DeadLetter]: ...

    def dlq_held(self, receipt_handle: str) -> Message | None: ...

    def dlq_change_visibility(self, receipt_handle: str, visibility_timeout: int, again: bool = False) -> None: ...


class Home(Source, Protocol):
    """The sub-queue a receive is made at (`SubQueue`): its own messages besides its dead letters."""

    @property
    def settings(self) -> QueueSettings: ...

    @property
    def space(self) -> Space: ...

    def receive(
        self, max_messages: int = 1, visibility_timeout: int | None = None, wait_seconds: int | None = 0
    ) -> list[ReceivedMessage]: ...

    def hold_handles(self, receipt_handles: list[str], visibility_timeout: int | None) -> bool: ...

    def get(self, message_id: str) -> Message: ...

    def return_unseen(self, receipt_handle: str) -> None: ...

    def release(self, receipt_handle: str, delay_seconds: int | None = None, reason: str | None = None) -> int: ...


# The attempts of a DLQ's URL, kept apart from those of its queue's (`Space.attempt_key`).
DLQ_SCOPE = "dlq"
logger = logging.getLogger("queue_core")


class WithDeadLetters:
    """`home`'s own messages (none when `own` is False: `home`'s DLQ is read at its URL), then the oldest dead
    letters of `sources` no claim holds, in their order, each claimed as `SubQueue.dlq_receive` claims; the dead
    letters the own messages leave no room for are given back at once."""

    def __init__(self, home: Home, sources: Sequence[Source], own: bool = True) -> None:
        self._home = home
        self._sources = list(sources)
        self._own = own
        # The dead letters the last `hold_handles` found held, by handle: what `held_message` answers for them.
        self._held: dict[str, Message] = {}

    @property
    def space(self) -> Space:
        return self._home.space

    @property
    def client(self) -> str:
        return self._home.client

    def receive(
        self, max_messages: int = 1, visibility_timeout: int | None = None, wait_seconds: int | None = 0
    ) -> list[ReceivedMessage | DeadLetter]:
        """Waits up to `wait_seconds` for the own messages only when no dead letter was found."""
        if visibility_timeout is None:
            visibility_timeout = self._home.settings.visibility_timeout
        dead: list[DeadLetter] = []
        for source in self._sources:
            if len(dead) >= max_messages:
                break
            dead += source.dlq_receive(max_messages - len(dead), visibility_timeout)
        if not self._own:
            return list(dead)
        try:
            own = self._home.receive(max_messages, visibility_timeout, 0 if dead else wait_seconds)
        except QueueError:
            self._give_back([letter.receipt_handle for letter in dead])
            raise
        room = max(0, max_messages - len(own))
        self._give_back([letter.receipt_handle for letter in dead[room:]])
        return [*own, *dead[:room]]

    def hold_handles(self, receipt_handles: list[str], visibility_timeout: int | None) -> bool:
        """Every handle's message or dead letter held again by its claim for `visibility_timeout` seconds (the
        home queue's when None), all or none: False, nothing held again, when any of them is settled or was taken
        since."""
        seconds = self._home.settings.visibility_timeout if visibility_timeout is None else visibility_timeout
        dead = [handle for handle in receipt_handles if DeadLetterReceipt.owner(handle) is not None]
        live = [handle for handle in receipt_handles if DeadLetterReceipt.owner(handle) is None]
        self._held = {}
        for handle in dead:
            message = self._source_of(handle).dlq_held(handle)
            if message is None:
                return False
            self._held[handle] = message
        if live and not (self._own and self._home.hold_handles(live, seconds)):
            return False
        for position, handle in enumerate(dead):
            try:
                self._source_of(handle).dlq_change_visibility(handle, seconds, again=True)
            except Throttled:
                # Nothing was taken meanwhile: the attempt is not spent. Raised, so that the client sends it again;
                # what this one held again stays held (by the same claims) for the retry, given to nobody else.
                raise
            except QueueError:
                self._give_back(live + dead[:position])
                return False
        return True

    def held_message(self, message_id: str, receipt_handle: str) -> Message:
        held = self._held.get(receipt_handle)
        return held if held is not None else self._home.get(message_id)

    def return_unseen(self, receipt_handle: str) -> None:
        """A dead letter's receive counted nothing: it is only given back."""
        if DeadLetterReceipt.owner(receipt_handle) is None:
            self._home.return_unseen(receipt_handle)
        else:
            self._source_of(receipt_handle).dlq_change_visibility(receipt_handle, 0)

    def _source_of(self, handle: str) -> Source:
        owner = DeadLetterReceipt.owner(handle)
        for source in self._sources:
            if owner == (source.queue, source.client):
                return source
        raise ValidationError("receipt_handle is a dead letter's handle of a queue this receive does not read")

    def _give_back(self, handles: list[str]) -> None:
        """Best effort: a hold not given back ends with its visibility timeout. A live message was handed out
        before: released, with its receive counted."""
        for handle in handles:
            try:
                if DeadLetterReceipt.owner(handle) is None:
                    self._home.release(handle, 0)
                else:
                    self._source_of(handle).dlq_change_visibility(handle, 0)
            except QueueError as error:
                logger.warning("a held message stays hidden until its visibility ends: %s", error.message)
