"""FIFO receive attempts (SQS's `ReceiveRequestAttemptId`): a receive repeated after a lost answer gets the same
messages with the same handles, instead of finding their groups held until the visibility ends.

The first receive under an attempt id keeps its answer (message ids and receipt handles, no bodies) in an item of
the sub-queue for `ATTEMPT_SECONDS`, with a TTL. A repeat within that time holds every kept message again with its
handle, all of them or none in one transaction, which is also the check that nothing changed meanwhile: if one of
them was deleted, given back, or received again by someone else after its visibility ran out, the attempt is spent
(SQS: a retry works only while none of its messages was modified) and nothing of it is held again; the repeat is a
new receive whose answer replaces the kept one. A first receive whose answer cannot be kept (tried again after
short pauses) gives its claims back before it fails, so its retry finds the messages instead of their groups held
by nobody; those it cannot give back either it answers, held by its caller (only an answer lost as well then leaves
them held until they run out, said in a log line, `UNKEPT`). An answer of dead letters (SQS: at a DLQ's URL, or
at a queue others name as their dead-letter target) keeps their handles beside the live ones, and its receiver
holds them again with the live ones, all or none (`dead_letter_receives`).

Attempt records are spread over `DEDUP_BUCKETS` partitions by the attempt id's hash, as dedup items are: one
partition per sub-queue would throttle first under load, which is when clients retry.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from typing import Any, Final, Protocol

from .context import Context
from .errors import QueueError, ValidationError
from .keys import Space
from .models import Message, ReceivedMessage
from .store import ConditionFailed, Item
from .store import messages as writes

ATTEMPT_SECONDS: Final = 300
# Pauses between tries to keep an answer whose messages could not be given back after its first keep failed.
KEEP_RETRY_PAUSES: Final = (0.05, 0.2, 0.5)
# The log line of an answer neither kept nor given back (the attempt id, the number of messages).
UNKEPT: Final = "a receive under attempt id %r answers %d message(s) it did not keep"
logger = logging.getLogger("queue_core")


class Receiver(Protocol):
    """What a receive under an attempt id needs of its sub-queue."""

    @property
    def space(self) -> Space: ...

    @property
    def client(self) -> str: ...

    def receive(
        self, max_messages: int = 1, visibility_timeout: int | None = None, wait_seconds: int | None = 0
    ) -> list[ReceivedMessage]: ...

    def hold_handles(self, receipt_handles: list[str], visibility_timeout: int | None) -> bool: ...

    def held_message(self, message_id: str, receipt_handle: str) -> Message: ...

    def return_unseen(self, receipt_handle: str) -> None: ...


def receive_once(
    ctx: Context,
    sub: Receiver,
    attempt_id: str,
    want: int,
    visibility_timeout: int | None,
    wait_seconds: int | None,
    scope: str = "",
    fit: Callable[[list[Any]], int] | None = None,
) -> list[ReceivedMessage]:
    """`sub.receive(...)` under an attempt id: the kept answer while it holds, else a new receive kept. `scope`:
    see `Space.attempt_key`. `fit`: how many of a new receive's messages its answer carries (a size budget); the
    others go back unseen before the answer is kept, so a repeat answers exactly what the first answered."""
    if not isinstance(attempt_id, str) or not 1 <= len(attempt_id) <= 128:
        raise ValidationError("an attempt id is 1-128 characters")
    key = sub.space.attempt_key(attempt_id, scope)
    kept = ctx.store.get(key)
    now = ctx.now_ms()
    spent = None
    if kept is not None and int(kept["kept_until"]) > now:
        again = _replayed(sub, kept, visibility_timeout)
        if again is not None:
            return again
        spent = str(kept["tok"])
    got = sub.receive(want, visibility_timeout=visibility_timeout, wait_seconds=wait_seconds)
    if fit is not None and got:
        carried = max(1, fit(got))
        _give_back(sub, got[carried:])
        got = got[:carried]
    if not got:
        # A repeat sent while the first receive still ran (a gateway's timeout, retried at once) finds the groups
        # held by that receive's claims: once the first kept its answer, that answer is this one's too.
        kept = ctx.store.get(key)
        if kept is not None and int(kept["kept_until"]) > ctx.now_ms() and str(kept["tok"]) != spent:
            return _replayed(sub, kept, visibility_timeout) or []
        return got
    token = secrets.token_hex(8)
    try:
        ctx.store.write(writes.keep_attempt(_answer_item(key, token, got, now), now, spent))
    except ConditionFailed as failed:
        if failed.item is not None and failed.item.get("tok") != token:
            # Another receive under the same id kept its answer first: ours goes back unseen, theirs is the answer.
            _give_back(sub, got)
            return _replayed(sub, failed.item, visibility_timeout) or []
    except QueueError:
        # Not kept (throttled, unavailable). Kept within a few pauses, the answer stands. If not, the client is
        # told to retry, and its retry must find these messages: they go back. What cannot be given back either
        # is answered: held by this caller, never by nobody until it runs out, and kept if it can be by now (a
        # repeat after a lost answer then answers it too). Only when that keep fails as well does a lost answer
        # leave them held until they run out, as SQS leaves a lost answer's messages: said in a log line.
        if _keep_late(ctx, writes.keep_attempt(_answer_item(key, token, got, now), now, spent), token) and _held_again(
            sub, got, visibility_timeout
        ):
            return got
        held = _give_back_or_hold(sub, got, visibility_timeout)
        if not held:
            raise
        # A keep of `got` may have landed with its answer lost: under our token it would answer the messages given
        # back, not these. This answer has a token of its own and replaces that keep; our first token found by a
        # failed condition is then not this answer kept.
        late = secrets.token_hex(8)
        if not _keep_late(ctx, writes.keep_attempt(_answer_item(key, late, held, now), now, spent, token), late):
            logger.warning(UNKEPT, attempt_id, len(held))
        return held
    return got


def _keep_late(ctx: Context, keep: Any, token: str) -> bool:
    """An answer whose keep failed, kept after all if DynamoDB lets it within a few pauses (`KEEP_RETRY_PAUSES`):
    kept, a repeat after a lost answer answers it too. A failed condition that finds our own token is a keep
    applied whose answer was lost; another's token, another receive under the id kept first: not ours."""
    for pause in (*KEEP_RETRY_PAUSES, None):
        try:
            ctx.store.write(keep)
            return True
        except ConditionFailed as failed:
            return failed.item is not None and failed.item.get("tok") == token
        except QueueError:
            if pause is None:
                return False
            time.sleep(pause)
    return False


def _held_again(sub: Receiver, got: list[ReceivedMessage], visibility_timeout: int | None) -> bool:
    """The claims of an answer kept late, held again for the visibility timeout from now: the pauses may have
    outlasted a short one, and another receive may hold a message since. False, that answer is not given: its
    claims go back as those of an answer not kept (a repeat finds the kept one spent)."""
    try:
        return sub.hold_handles([message.receipt_handle for message in got], visibility_timeout)
    except QueueError:
        return False


def _answer_item(key: Item, token: str, got: list[ReceivedMessage], now: int) -> Item:
    return {
        **key,
        "tok": token,
        "ids": [message.message_id for message in got],
        "handles": [message.receipt_handle for message in got],
        "kept_until": now + ATTEMPT_SECONDS * 1000,
        "expires_at": now // 1000 + ATTEMPT_SECONDS + 1,
    }


def _give_back(sub: Receiver, got: list[ReceivedMessage]) -> None:
    """Best effort, each one tried: a claim not given back is free again when its visibility timeout ends."""
    for message in reversed(got):
        try:
            sub.return_unseen(message.receipt_handle)
        except QueueError as error:
            logger.warning("message %s stays held until its visibility ends: %s", message.message_id, error.message)


def _give_back_or_hold(
    sub: Receiver, got: list[ReceivedMessage], visibility_timeout: int | None
) -> list[ReceivedMessage]:
    """For an answer that cannot be kept: gives the messages back, the last first, and returns those still held
    when one cannot be, to be answered (an earlier message of a FIFO group given back while a later one is out
    would be delivered after it). A give-back that fails has not given its message back (`return_unseen` raises
    only then); as a lost answer repeated to exhaustion could leave that unsure, the claims of the messages up to
    it are held again all or none (`hold_handles`) before they are answered: False, that one is back after all
    and the loop goes on before it; unable to tell, they are answered."""
    position = len(got)
    while position > 0:
        position -= 1
        try:
            sub.return_unseen(got[position].receipt_handle)
            continue
        except QueueError as error:
            logger.warning("message %s of an unkept receive not given back: %s", got[position].message_id, error)
        prefix = got[: position + 1]
        try:
            if not sub.hold_handles([message.receipt_handle for message in prefix], visibility_timeout):
                continue
        except QueueError:
            pass
        return prefix
    return []


def _replayed(sub: Receiver, kept: Item, visibility_timeout: int | None) -> list[ReceivedMessage] | None:
    """The kept messages, all held again for the visibility timeout with their handles; None, nothing held again,
    when one of them is no longer held by its handle (the attempt is spent)."""
    handles = [str(handle) for handle in kept["handles"]]
    try:
        if not sub.hold_handles(handles, visibility_timeout):
            return None
    except ValidationError:  # a handle this sub-queue no longer accepts (another generation): spent
        return None
    return [_answer(sub, str(message_id), handle) for message_id, handle in zip(kept["ids"], handles, strict=True)]


def _answer(sub: Receiver, message_id: str, handle: str) -> ReceivedMessage:
    message = sub.held_message(message_id, handle)
    return ReceivedMessage(
        message_id=message.message_id,
        receipt_handle=handle,
        body=message.body,
        attributes=message.attributes,
        group_id=message.group_id,
        sequence=message.sequence,
        receive_count=message.receive_count,
        sent_at=message.sent_at,
        first_received_at=message.first_received_at,
        attribute_types=message.attribute_types,
        client=sub.client,
        priority=message.priority,
        dedup_id=message.dedup_id,
        sqs_message_id=message.sqs_message_id,
    )
