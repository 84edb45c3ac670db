"""A sub-queue's dead letters: looked at, read and received with handles (at a DLQ's URL too), their reasons,
and moved back (a redrive), into another queue, or there from a waiting message.

A part of `SubQueue` (its base), kept apart because the DLQ is an idea of its own: copies with their own handles,
claims and FIFO group order (`dead_letters`, `dead_letter_groups`), never the live messages' claims.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from typing import Any

from . import (
    dead_letter_groups,
    dead_letter_moves,
    dead_letter_receives,
    dead_letters,
    keys,
    limits,
    reasons,
    receive_attempts,
    validation,
)
from .context import Context
from .dead_letter_receives import WithDeadLetters
from .dead_letters import DeadLetter
from .engine import Engine
from .errors import MessageBodyMissing, ReceiptHandleStale, ValidationError
from .keys import MessageRef, Space
from .messages import DLQ, is_expired, looked_at
from .models import Message, ReceivedMessage
from .settings import QueueSettings
from .store import Item


class SubQueueDeadLetters:
    """The DLQ operations of `SubQueue`, which supplies what they stand on (below)."""

    _ctx: Context
    queue: str
    client: str

    @property
    def settings(self) -> QueueSettings:
        raise NotImplementedError

    @property
    def space(self) -> Space:
        raise NotImplementedError

    def engine(self) -> Engine:
        raise NotImplementedError

    def _now(self) -> int:
        raise NotImplementedError

    def _ref(self, message_id: Any) -> MessageRef:
        raise NotImplementedError

    def _dlq_pks(self) -> list[str]:
        return dlq_pks(self.engine())

    def dlq_items(self, now: int, max_items: int | None = None, include_expired: bool = False) -> Iterator[Item]:
        for pk in self._dlq_pks():
            for item in self._ctx.store.query_all(pk, max_items=max_items, consistent=True):
                if include_expired or not is_expired(item, now):
                    yield item

    def _dlq_count(self, now: int) -> tuple[int, bool]:
        count, truncated = 0, False
        for pk in self._dlq_pks():
            read = 0
            for item in self._ctx.store.query_all(pk, projection="pk, expires_at", max_items=limits.STATS_SCAN_LIMIT):
                read += 1
                count += not is_expired(item, now)
            truncated = truncated or read >= limits.STATS_SCAN_LIMIT
        return count, truncated

    def dlq_list(self, limit: int = 10) -> list[Message]:
        return [message for _, message in self._dlq_read(limit)]

    def _dlq_read(self, limit: int) -> list[tuple[Item, Message]]:
        limit = validation.integer("limit", limit, 1, limits.MAX_PEEK)
        fifo = self.settings.fifo
        found: list[tuple[Item, Message]] = []
        for item in self.dlq_items(self._now()):
            shard = keys.shard_of(item["pk"])
            ref = MessageRef.from_dlq_sk(item["sk"], shard, fifo, int(item.get("priority", 0)))
            with contextlib.suppress(MessageBodyMissing):  # still listed by `get`, which says its body is gone
                found.append((item, looked_at(item, ref, DLQ, self._ctx.bodies)))
            if len(found) >= limit:
                break
        return found

    def dlq_read(self, limit: int = 10) -> list[DeadLetter]:
        """`dlq_list` with a receipt handle for each message, which deletes that DLQ copy and nothing else
        (`dlq_delete`). Like `dlq_list`, a look: nothing is hidden or counted."""
        secret = self.engine().secret()
        if secret is None:  # nothing was ever sent in this generation: nothing can be dead-lettered
            return []
        return [dead_letters.handed_out(item, message, self.space, secret) for item, message in self._dlq_read(limit)]

    def dlq_receive(self, limit: int = 10, visibility_timeout: int | None = None) -> list[DeadLetter]:
        """The oldest dead letters no live claim holds, up to `limit`, each claimed for `visibility_timeout`
        seconds (the queue's visibility timeout when None): until then no other `dlq_receive` answers it, and only
        this claim's handle deletes it or moves the claim's end (`dlq_change_visibility`). Nothing is counted. A
        FIFO DLQ gives its groups as a FIFO queue does: one claim holds a group's dead letters at a time, given in
        the group's order (`dead_letter_groups`)."""
        limit = validation.integer("limit", limit, 1, limits.MAX_PEEK)
        if visibility_timeout is None:
            visibility_timeout = self.settings.visibility_timeout
        seconds = validation.integer("visibility_timeout", visibility_timeout, 0, limits.MAX_VISIBILITY_SECONDS)
        secret = self.engine().secret()
        if secret is None:  # nothing was ever sent in this generation: nothing can be dead-lettered
            return []
        now = self._now()
        fifo = self.settings.fifo
        until = now + seconds * 1000
        if fifo:
            return dead_letter_groups.receive(self._ctx, self.space, self.dlq_items(now), secret, limit, until, now)
        found: list[DeadLetter] = []
        for item in self.dlq_items(now):
            if int(item.get("dlq_until", 0)) > now:
                continue
            shard = keys.shard_of(item["pk"])
            ref = MessageRef.from_dlq_sk(item["sk"], shard, fifo, int(item.get("priority", 0)))
            try:
                message = looked_at(item, ref, DLQ, self._ctx.bodies)
            except MessageBodyMissing:
                continue
            dead = dead_letters.claimed(self._ctx, item, message, self.space, secret, until, now)
            if dead is not None:
                found.append(dead)
            if len(found) >= limit:
                break
        return found

    def dlq_receive_attempt(
        self,
        attempt_id: str,
        limit: int = 10,
        visibility_timeout: int | None = None,
        fit: Callable[[list[Any]], int] | None = None,
    ) -> list[DeadLetter | ReceivedMessage]:
        """`dlq_receive` under an attempt id (SQS's ReceiveRequestAttemptId at the DLQ's URL, apart from the
        queue's own attempt ids): repeated within five minutes, it answers the same dead letters with the same
        handles while their claims still hold them all (see `dead_letter_receives`)."""
        receiver = WithDeadLetters(self, [self], own=False)
        return receive_attempts.receive_once(
            self._ctx, receiver, attempt_id, limit, visibility_timeout, 0, scope=dead_letter_receives.DLQ_SCOPE, fit=fit
        )

    def dlq_held(self, receipt_handle: str) -> Message | None:
        """The dead letter a `dlq_receive` handle was handed out with, while the claim it names still holds it
        (in a FIFO DLQ: and its group) and its holder never changed it, as it is now (what a repeated receive may
        answer again); None once it is settled, changed, gone, or taken by another claim. A look: nothing is held
        or changed."""
        receipt = self.dlq_check_handle(receipt_handle)
        ref = self._ref(receipt.message_id)
        held = dead_letter_groups.held if self.settings.fifo else dead_letters.held
        item = held(self._ctx, self.space, ref, receipt)
        if item is None or item.get("dlq_changed") == receipt.token:
            return None
        try:
            return looked_at(item, ref, DLQ, self._ctx.bodies)
        except MessageBodyMissing:
            return None

    def dlq_change_visibility(self, receipt_handle: str, visibility_timeout: int, again: bool = False) -> None:
        """Moves the end of the claim a `dlq_receive` handle was handed out with to `visibility_timeout` seconds
        from now (0 releases the dead letter to the next receive). `ReceiptHandleStale` when a later claim took the
        copy, or it is gone; `ValidationError` for a handle that is not a genuine dead letter's handle here.
        `again`: a repeated receive holds it again (stale too once its holder changed it)."""
        seconds = validation.integer("visibility_timeout", visibility_timeout, 0, limits.MAX_VISIBILITY_SECONDS)
        receipt = self.dlq_check_handle(receipt_handle)
        now = self._now()
        until = now + seconds * 1000
        ref = self._ref(receipt.message_id)
        if self.settings.fifo:
            held = dead_letter_groups.hold(self._ctx, self.space, ref, receipt, until, now, again)
        else:
            held = dead_letters.hold(self._ctx, self.space, ref, receipt, until, again)
        if not held:
            raise ReceiptHandleStale("the dead letter was received again since this receipt handle, or is gone")

    def dlq_delete(self, receipt_handle: str) -> bool:
        """Removes the DLQ copy a `dlq_read` or `dlq_receive` handle was read from, never the live message nor a
        later DLQ copy of it; a claim's handle only while its claim is the copy's latest. False when that copy is
        gone already, or another claim took it (no error, as a spent handle in SQS); `ValidationError` for a
        handle that is not a genuine dead letter's handle of this sub-queue."""
        receipt = self.dlq_check_handle(receipt_handle)
        ref = self._ref(receipt.message_id)
        if self.settings.fifo:
            return dead_letter_groups.delete(self._ctx, self.space, ref, receipt)
        return dead_letters.delete(self._ctx, self.space, ref, receipt)

    def dlq_check_handle(self, receipt_handle: str) -> dead_letters.DeadLetterReceipt:
        """The receipt a dead letter's handle carries, once its signature and owner are checked."""
        secret = self.engine().secret()
        if secret is None:
            raise ValidationError("receipt_handle is not valid for this queue (no message was ever sent to it)")
        receipt = dead_letters.DeadLetterReceipt.decode(receipt_handle, secret)
        receipt.check_owner(self.queue, self.client)
        return receipt

    def dlq_reasons(self) -> tuple[list[dict[str, Any]], bool]:
        """The distinct last reasons of this sub-queue's dead letters, each with its count and first and last
        seen times, the most frequent first (`reasons.grouped`); and whether the DLQ was longer than the bounded
        read (`limits.STATS_SCAN_LIMIT` items a shard), so the counts are a lower bound."""
        items = list(self.dlq_items(self._now(), max_items=limits.STATS_SCAN_LIMIT))
        return reasons.grouped(items), len(items) >= limits.STATS_SCAN_LIMIT

    def redrive(
        self, max_messages: int | None = None, message_ids: list[str] | None = None, reason: str | None = None
    ) -> int:
        """Moves DLQ messages back with their receive count reset; FIFO keeps each group's order. `reason`: only
        the dead letters whose last reason contains this text."""
        if reason is not None and (not isinstance(reason, str) or not reason):
            raise ValidationError("reason must be a non-empty string")
        now = self._now()
        if message_ids is not None:
            ids = validation.batch("message_ids", message_ids, high=limits.MAX_PEEK)
            refs = [self._ref(message_id) for message_id in ids]
            items = self._ctx.store.batch_get([ref.dlq_key(self.space) for ref in refs])
            items = [item for item in items if not is_expired(item, now)]
            if reason is not None:
                items = [item for item in items if reasons.matches(item, reason)]
        else:
            limit = (
                None
                if max_messages is None
                else validation.integer("max_messages", max_messages, 1, limits.MAX_REDRIVE)
            )
            items = []
            for item in self.dlq_items(now):
                if reason is not None and not reasons.matches(item, reason):
                    continue
                items.append(item)
                if limit is not None and len(items) >= limit:
                    break
        self._ctx.bodies.renew(items, now, self.settings.retention_seconds)
        return self.engine().redrive(items, now)

    def move_dead_letters(self, destination: dead_letter_moves.Destination, max_messages: int | None = None) -> int:
        """Moves this sub-queue's dead letters into `destination` as new messages there (see `dead_letter_moves`);
        the number moved."""
        limit = (
            None if max_messages is None else validation.integer("max_messages", max_messages, 1, limits.MAX_REDRIVE)
        )
        # `max_items` bounds each shard's read; the islice, the whole move's count.
        items = self.dlq_items(self._now(), max_items=limit)
        return dead_letter_moves.move(self._ctx, self, destination, itertools.islice(items, limit))

    def move_to_dlq(self, message_id: str) -> bool:
        """An operator marks a waiting message as invalid: it goes to the DLQ now, whatever its receive count."""
        return self.engine().move_to_dlq(self._ref(message_id), self._now())


def dlq_pks(engine: Engine) -> list[str]:
    shards = 1 if engine.settings.fifo else engine.settings.read_shards
    return [engine.space.dlq_pk(shard) for shard in range(shards)]
