"""One `(queue, client)` sub-queue: the public face of the core's message operations.

It validates every argument before anything is written, then hands the work to the standard or the FIFO engine.
A consumer of one client never sees, receives or deletes another client's messages: every key it builds carries
both names, and a receipt handle of another sub-queue is refused.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from . import (
    archive,
    autoshard,
    browse,
    limits,
    reasons,
    receive_attempts,
    replays,
    validation,
)
from .context import Context
from .dead_letter_receives import WithDeadLetters
from .dead_letters import DeadLetter
from .engine import Engine
from .errors import MessageNotFound, QueueError, ValidationError
from .fifo import FifoQueue
from .keys import MessageRef, Space, message_id_shaped
from .messages import Entry, is_expired
from .models import (
    ArchivedMessage,
    ArchivePage,
    BatchResult,
    BrowsePage,
    Message,
    QueueStats,
    ReceivedMessage,
    ReplayStatus,
    SendResult,
)
from .receipts import Receipt
from .settings import QueueSettings
from .standard import StandardQueue
from .subqueue_dead_letters import SubQueueDeadLetters, dlq_pks
from .transactions import TransactAck, TransactSend, commit

_ENTRY_KEYS = frozenset(
    {"body", "attributes", "attribute_types", "delay_seconds", "group_id", "dedup_id", "priority", "deliver_at"}
)
_FIRST_POLL_SECONDS = 0.05
_MAX_POLL_SECONDS = 0.5


class SubQueue(SubQueueDeadLetters):
    """One `(queue, client)` sub-queue of the library: send, receive and settle messages, look at them, and
    manage its DLQ. Every method validates its arguments before it writes anything; errors are `QueueError`s.
    Cheap to create: settings and the sub-queue's receipt secret are cached in the client."""

    def __init__(self, ctx: Context, queue: str, client: str) -> None:
        self._ctx = ctx
        self.queue = validation.queue_name(queue)
        self.client = validation.client_id(client)
        self._engine_cache: tuple[QueueSettings, Engine] | None = None
        self.claim_conflicts = 0

    def __repr__(self) -> str:
        return f"SubQueue({self.queue!r}, {self.client!r})"

    @property
    def settings(self) -> QueueSettings:
        return self._ctx.registry.get(self.queue)

    def engine(self) -> Engine:
        """The standard or FIFO operations for the current settings (rebuilt when the settings change)."""
        settings = self.settings
        if self._engine_cache is None or self._engine_cache[0] is not settings:
            self._engine_cache = (settings, engine_for(self._ctx, settings, self.client))
        return self._engine_cache[1]

    @property
    def space(self) -> Space:
        return self.engine().space

    def _now(self) -> int:
        return self._ctx.now_ms()

    # Send.
    def send(
        self,
        body: str,
        attributes: dict[str, str] | None = None,
        delay_seconds: int | None = None,
        group_id: str | None = None,
        dedup_id: str | None = None,
        attribute_types: dict[str, str] | None = None,
        priority: int | None = None,
        deliver_at: int | float | str | None = None,
    ) -> SendResult:
        """`attribute_types` gives SQS data types (`Number`, `Binary`, `String.x`, ...) of some `attributes`;
        left out, every attribute is a plain string. `priority` 0-9 (9 first); `deliver_at` (epoch seconds or
        ISO-8601 with a zone) instead of a delay; either may put delivery as far ahead as the queue's retention
        less `limits.MIN_DELIVERY_WINDOW_SECONDS`."""
        entry = self._entry(
            0,
            _raw_entry(body, attributes, delay_seconds, group_id, dedup_id, attribute_types, priority, deliver_at),
        )
        result = self._send([entry])[0]
        if isinstance(result, QueueError):
            raise result
        return result

    def send_batch(self, entries: list[dict[str, Any]]) -> BatchResult:
        """1-25 entries; each succeeds or fails on its own, and a refused batch (size) writes nothing."""
        entries = validation.batch("messages", entries)
        prepared: list[Entry] = []
        failed: list[dict[str, Any]] = []
        for index, raw in enumerate(entries):
            try:
                prepared.append(self._entry(index, raw))
            except QueueError as error:
                failed.append({"index": index, "code": error.code, "message": error.message})
        successful = []
        sqs_message_ids = {}
        for entry, result in zip(prepared, self._send(prepared) if prepared else [], strict=True):
            if isinstance(result, QueueError):
                failed.append({"index": entry.index, "code": result.code, "message": result.message})
            else:
                successful.append({"index": entry.index, **result.to_dict()})
                sqs_message_ids[entry.index] = result.sqs_message_id
        return BatchResult(
            successful=successful, failed=sorted(failed, key=lambda f: f["index"]), sqs_message_ids=sqs_message_ids
        )

    def _send(self, entries: list[Entry]) -> list[SendResult | QueueError]:
        """A dedup id repeated inside one batch is stored once: the later entries answer as duplicates of the
        first (as SQS does), and never reach DynamoDB, which refuses two writes of one item in a transaction."""
        engine = self.engine()
        now = self._now()
        self._ctx.registry.register_client(engine.space, now)
        firsts: dict[str, int] = {}
        repeats: dict[int, int] = {}
        unique: list[Entry] = []
        for entry in entries:
            if entry.dedup_id is not None and entry.dedup_id in firsts:
                repeats[entry.index] = firsts[entry.dedup_id]
                continue
            if entry.dedup_id is not None:
                firsts[entry.dedup_id] = entry.index
            unique.append(entry)
        with self.metered(engine, unique):
            sent = engine.send(unique, now)
        results = {entry.index: result for entry, result in zip(unique, sent, strict=True)}
        for index, first in repeats.items():
            outcome = results[first]
            results[index] = replace(outcome, duplicate=True) if isinstance(outcome, SendResult) else outcome
        return [results[entry.index] for entry in entries]

    def send_transact_items(
        self,
        body: str,
        attributes: dict[str, str] | None = None,
        delay_seconds: int | None = None,
        group_id: str | None = None,
        dedup_id: str | None = None,
        attribute_types: dict[str, str] | None = None,
        priority: int | None = None,
        deliver_at: int | float | str | None = None,
    ) -> TransactSend:
        """The writes of `send` as TransactWriteItems entries for the caller's own transaction: the message
        exists if and only if that transaction commits (an outbox with no relay). Validated as `send` is;
        nothing is written here but the client's registration (once per process). Commit with
        `QueueClient.transact` to have a cancellation mapped to our errors; it also puts the client's ready
        marker once the transaction committed, as `send` does after its write."""
        entry = self._entry(
            0,
            _raw_entry(body, attributes, delay_seconds, group_id, dedup_id, attribute_types, priority, deliver_at),
        )
        self._ctx.registry.register_client(self.engine().space, self._now())
        return TransactSend(self._engine_for, self._ctx.store.table, entry, self._now)

    def _engine_for(self, fresh: bool) -> Engine:
        if fresh:
            self._ctx.registry.get(self.queue, fresh=True)
        return self.engine()

    def _entry(self, index: int, raw: Any) -> Entry:
        if not isinstance(raw, dict):
            raise ValidationError(f"message {index} must be an object")
        unknown = set(raw) - _ENTRY_KEYS
        if unknown:
            raise ValidationError(f"unknown message fields: {', '.join(sorted(map(str, unknown)))}")
        settings = self.settings
        body = validation.body(raw.get("body"), settings.max_message_bytes)
        attributes = validation.attributes(raw.get("attributes"))
        attribute_types = validation.attribute_types(raw.get("attribute_types"), attributes)
        delay = raw.get("delay_seconds")
        dedup_id = validation.dedup_id(raw.get("dedup_id"))
        if dedup_id is None and settings.content_based_dedup:
            dedup_id = hashlib.sha256(body.encode()).hexdigest()
        group_id = validation.group_id(raw.get("group_id"), settings.fifo)
        validation.stored_size(attributes, group_id, dedup_id, attribute_types)
        priority = validation.priority(raw.get("priority"), settings.fifo)
        retention = settings.message_retention(self._now())
        deliver_at = raw.get("deliver_at")
        if deliver_at is not None and delay is not None:
            raise ValidationError("give delay_seconds or deliver_at, not both")
        return Entry(
            index=index,
            body=body,
            attributes=attributes,
            attribute_types=attribute_types,
            # The queue's delay, raised with its retention, waits for the retention too (see `retention_from`).
            delay_seconds=min(settings.delay_seconds, validation.latest_delay_seconds(retention))
            if delay is None
            else validation.delay(delay, retention),
            group_id=group_id,
            dedup_id=dedup_id,
            priority=priority,
            deliver_at=None if deliver_at is None else validation.deliver_at(deliver_at, self._now(), retention),
        )

    # Receive.
    @contextmanager
    def metered(self, engine: Engine, sent: list[Entry] | None = None) -> Iterator[None]:
        """Within it, one call of `engine` (a send of `sent`, or a receive, this sub-queue's own or a queue-wide
        one's): what it put on the queue's shard keys and the throttles this thread met, told at its end to the
        load meter, for an automatic shard count (memory, and now and then a report; see `load_meter`)."""
        store = self._ctx.store
        throttles, old = store.throttles, store.old_place_throttles
        try:
            yield
        finally:
            bodies = self._ctx.bodies
            stored_at_most = bodies.offload_bytes if bodies.bucket else None
            autoshard.note_traffic(
                self._ctx,
                engine.settings,
                engine.space,
                sent or [],
                store.throttles - throttles,
                stored_at_most,
                store.old_place_throttles - old,
            )

    def receive(
        self,
        max_messages: int = 1,
        visibility_timeout: int | None = None,
        wait_seconds: int | None = 0,
        order: str = "oldest",
    ) -> list[ReceivedMessage]:
        """Long-polls up to `wait_seconds` (None: the queue's `receive_wait_seconds`), returning as soon as
        anything is received."""
        want = validation.integer("max_messages", max_messages, 1, limits.MAX_RECEIVE)
        order = validation.order(order)
        engine = self.engine()
        if wait_seconds is None:
            wait_seconds = engine.settings.receive_wait_seconds
        wait = validation.integer("wait_seconds", wait_seconds, 0, limits.MAX_WAIT_SECONDS)
        engine.check_order(order)
        visibility = (
            engine.settings.visibility_timeout
            if visibility_timeout is None
            else validation.integer("visibility_timeout", visibility_timeout, 0, limits.MAX_VISIBILITY_SECONDS)
        )
        deadline = time.monotonic() + wait
        pause = _FIRST_POLL_SECONDS
        while True:
            conflicts = engine.claim_conflicts
            # No secret: nothing was ever sent to this sub-queue in this generation, so there is nothing to claim.
            secret = engine.secret()
            with self.metered(engine):
                got = engine.receive(want, visibility, order, self._now(), secret) if secret else []
            self.claim_conflicts += engine.claim_conflicts - conflicts
            left = deadline - time.monotonic()
            if got or left <= 0:
                return got
            time.sleep(min(pause, left))
            pause = min(pause * 2, _MAX_POLL_SECONDS)

    def receive_attempt(
        self,
        attempt_id: str,
        max_messages: int = 1,
        visibility_timeout: int | None = None,
        wait_seconds: int | None = 0,
        fit: Callable[[list[Any]], int] | None = None,
    ) -> list[ReceivedMessage]:
        """`receive` under an attempt id (SQS's ReceiveRequestAttemptId): repeated within five minutes, it answers
        the same messages with the same handles while they are still held by them (see `receive_attempts`).
        `fit`: how many of a new receive's messages the caller's answer carries; the others go back unseen."""
        return receive_attempts.receive_once(
            self._ctx, self, attempt_id, max_messages, visibility_timeout, wait_seconds, fit=fit
        )

    def receive_with_dead_letters(
        self,
        sources: Sequence[SubQueue],
        max_messages: int = 1,
        visibility_timeout: int | None = None,
        wait_seconds: int | None = 0,
        attempt_id: str | None = None,
        fit: Callable[[list[Any]], int] | None = None,
    ) -> list[ReceivedMessage | DeadLetter]:
        """This sub-queue's own messages first, then the dead letters of `sources` (SQS: a queue others name as
        their dead-letter target), each claimed as `dlq_receive` claims; the dead letters the own messages leave
        no room for are given back at once. Under an attempt id, as `receive_attempt`, dead letters included (see
        `dead_letter_receives`)."""
        receiver = WithDeadLetters(self, sources)
        if attempt_id is None:
            return receiver.receive(max_messages, visibility_timeout, wait_seconds)
        return receive_attempts.receive_once(
            self._ctx, receiver, attempt_id, max_messages, visibility_timeout, wait_seconds, fit=fit
        )

    def held_message(self, message_id: str, receipt_handle: str) -> Message:
        """The message a handle of this sub-queue's was handed out with, as it is now (`get`)."""
        return self.get(message_id)

    def hold_handles(self, receipt_handles: list[str], visibility_timeout: int | None) -> bool:
        """Every handle's message held again by its claim for `visibility_timeout` seconds (the queue's when None),
        all or none: False, nothing changed, when any of them is settled or was received again since."""
        seconds = self.settings.visibility_timeout if visibility_timeout is None else visibility_timeout
        seconds = validation.integer("visibility_timeout", seconds, 0, limits.MAX_VISIBILITY_SECONDS)
        receipts = [self._receipt(handle) for handle in receipt_handles]
        now = self._now()
        return self.engine().hold_again(receipts, now + seconds * 1000, now)

    # Claimed messages.
    def _receipt(self, handle: Any) -> Receipt:
        secret = self.engine().secret()
        if secret is None:
            raise ValidationError("receipt_handle is not valid for this queue (no message was ever received from it)")
        receipt = Receipt.decode(handle, secret)
        receipt.check_owner(self.queue, self.client)
        return receipt

    def delete(self, receipt_handle: str) -> None:
        receipt = self._receipt(receipt_handle)
        self.engine().delete(receipt, self._now())

    def delete_transact_items(self, receipt_handle: str) -> TransactAck:
        """The writes of `delete` as TransactWriteItems entries (standard: 1, FIFO: 2), each conditional on the
        claim: in the caller's transaction with the effect of processing the message, the effect and the ack
        commit together, and if the message was received again since this handle the whole transaction is
        cancelled (`ReceiptHandleStale` through `transact`). Reads nothing, but the group once for a FIFO message
        held with others: the ack that completes the claim unlocks the group in the same transaction."""
        receipt = self._receipt(receipt_handle)
        return TransactAck(self._engine_for, self._ctx.store.table, receipt, self._now)

    def transact(self, items: list[Any], token: str | None = None) -> None:
        """`QueueClient.transact` on this sub-queue's table."""
        commit(self._ctx.store, items, token)

    def delete_batch(self, receipt_handles: list[str]) -> BatchResult:
        return delete_each(self._ctx, self.delete, receipt_handles)

    def change_visibility(self, receipt_handle: str, visibility_timeout: int) -> int:
        """Returns the new `visible_at` (epoch ms)."""
        seconds = validation.integer("visibility_timeout", visibility_timeout, 0, limits.MAX_VISIBILITY_SECONDS)
        receipt = self._receipt(receipt_handle)
        now = self._now()
        return self.engine().change_visibility(receipt, now + seconds * 1000, now)

    def release(self, receipt_handle: str, delay_seconds: int | None = None, reason: str | None = None) -> int:
        """Gives the message back. Without a delay it waits a randomized exponential backoff of its receive
        count (full jitter, capped), so a failing message does not spin. Returns the new `visible_at`. `reason`:
        why this attempt failed, kept with the message (its first line is what groupings show; at most 2 KB, cut
        visibly), in the release's own write; without one the attempt reads "released"."""
        text = reasons.given(reason)
        receipt = self._receipt(receipt_handle)
        if delay_seconds is None:
            ceiling = min(limits.BACKOFF_MAX_SECONDS, limits.BACKOFF_BASE_SECONDS * 2 ** (receipt.receive_count - 1))
            delay_ms = int(random.uniform(ceiling / 2, ceiling) * 1000)
        else:
            delay_ms = validation.integer("delay_seconds", delay_seconds, 0, limits.MAX_VISIBILITY_SECONDS) * 1000
        now = self._now()
        why = reasons.released(receipt.receive_count, text, now)
        return self.engine().release(receipt, now + delay_ms, now, why)

    def note_attempt(self, receipt_handle: str, outcome: str, reason: str) -> None:
        """Records why the handle's attempt ends where nothing else is written: a push delivery that timed out,
        whose claim then runs out by itself (`reasons`). Nothing once the handle no longer holds its message."""
        receipt = self._receipt(receipt_handle)
        self.engine().note(receipt, reasons.entry(receipt.receive_count, outcome, reasons.given(reason), self._now()))

    def return_unseen(self, receipt_handle: str) -> None:
        """Gives back a message this process claimed but never handed to anyone (an answer cut short, a batch
        never sent): visible now, with the receive count (and first receive time) it had before the claim, so a
        receive nobody saw never counts towards `max_receive_count`. Conditional on the claim, like `release`; a
        FIFO group is given back as by `release(handle, 0)`. A message that was handed out must be released."""
        receipt = self._receipt(receipt_handle)
        self.engine().return_unseen(receipt, self._now())

    # Looking without claiming.
    def peek(self, limit: int = 10) -> list[Message]:
        limit = validation.integer("limit", limit, 1, limits.MAX_PEEK)
        return self.engine().peek(limit, self._now())

    def browse(
        self,
        limit: int = 10,
        state: str | None = None,
        priority: int | None = None,
        group: str | None = None,
        cursor: str | None = None,
    ) -> BrowsePage:
        """Up to `limit` waiting messages, whatever their state (visible, in flight, delayed), each with until when
        that lasts, `get`'s fields, and nothing changed; `state`, `priority` (standard) and `group` (FIFO) keep
        only those. Bounded: at most `limits.BROWSE_READ_ITEMS` items read in at most `limits.BROWSE_QUERIES`
        Queries of the messages' own partitions, so a filtered page may be short or empty; the page's `cursor`
        goes on from where it stopped (None: read to the end). Order: standard, shard by shard in send order;
        FIFO, group by group in each group's order."""
        limit = validation.integer("limit", limit, 1, limits.MAX_PEEK)
        engine = self.engine()
        wanted = browse.Filter.of(state, priority, group, engine.settings.fifo)
        return browse.browse(engine, limit, wanted, cursor, self._now())  # type: ignore[arg-type]

    def _ref(self, message_id: Any) -> MessageRef:
        if not isinstance(message_id, str) or not 1 <= len(message_id) <= 400:
            raise ValidationError("message_id must be a message id string")
        try:
            ref = MessageRef.parse(message_id)
        except ValidationError:
            if message_id_shaped(message_id):
                raise MessageNotFound(f"message {message_id!r} not found") from None
            raise
        if (ref.group is not None) != self.settings.fifo:
            raise MessageNotFound(f"message {message_id!r} not found")
        return ref

    def get(self, message_id: str) -> Message:
        found = self.engine().locate(self._ref(message_id), self._now())
        if found is None:
            raise MessageNotFound(f"message {message_id!r} not found")
        return found

    # The archive of acknowledged messages.
    def archive_list(
        self,
        since: int | None = None,
        until: int | None = None,
        order: str = "newest",
        limit: int = 10,
        cursor: str | None = None,
    ) -> ArchivePage:
        """Archived messages acknowledged in [`since`, `until`] (epoch ms, either open), newest or oldest first,
        a page at a time (`cursor` from the page before). Empty when the queue keeps no archive (`archive_days`
        0). Bounded: one Query of at most `limit` + 1 items for each of `archive.BUCKETS` partitions."""
        engine = self.engine()
        since, until = archive.time_bound("since", since), archive.time_bound("until", until)
        return archive.page(self._ctx, [engine.space], since, until, order, limit, cursor, self._now())

    def archive_get(self, message_id: str) -> list[ArchivedMessage]:
        """Every archived copy of one message (one per acknowledgement), oldest first; `MessageNotFound` when the
        archive holds none."""
        if not isinstance(message_id, str) or not 1 <= len(message_id) <= 400:
            raise ValidationError("message_id must be a message id string")
        found = archive.find(self._ctx, self.engine().space, message_id, self._now())
        if not found:
            raise MessageNotFound(f"message {message_id!r} is not in the archive")
        return found

    # Replays of the archive (see `replays`).
    def replay_start(
        self,
        since: int | None = None,
        until: int | None = None,
        message_ids: list[str] | None = None,
        attributes: dict[str, str] | None = None,
        rate: int | None = None,
        source: str | None = None,
        reason: str | None = None,
    ) -> ReplayStatus:
        """Starts a replay of this sub-queue's archive into it: the messages acknowledged in [`since`, `until`]
        (epoch ms, either open; an open or later `until` is now), or the latest archived copy of each of
        `message_ids`, only those whose `attributes` include the given ones; at most `rate` a second. Records the
        job and sends nothing: `replay_run` sends. `ValidationError` when the queue keeps no archive. `source`
        "dlq": its dead letters instead (those that died in [`since`, `until`], whose last reason contains
        `reason`), each removed from the DLQ with the send of its new message (see `dead_letter_replays`)."""
        space = self.engine().space  # an unknown queue is a 404 before any refusal of the request
        now = self._now()
        chosen = replays.selection(since, until, message_ids, attributes, now, source, reason)
        rate = replays.checked_rate(rate)
        return replays.start(self._ctx, space, self.settings, chosen, rate, now)

    def replay_run(
        self, replay_id: str, seconds: float = 10.0, sleep: Callable[[float], None] = time.sleep
    ) -> ReplayStatus:
        """Goes on with a running replay for about `seconds` (at least one batch of up to 10 messages), from where
        it stands; each archived message is sent again at most once per replay, whatever fails or is repeated.
        Run it again after an error (a throttle, a lost answer) or a crash: it goes on from where it stopped."""
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= 86_400:
            raise ValidationError("seconds must be a number of seconds from 0 to 86400")
        return replays.run(self._ctx, self, replay_id, seconds, sleep)

    def replay(self, replay_id: str, sleep: Callable[[float], None] = time.sleep) -> ReplayStatus:
        """Runs a replay to its end (or its cancel)."""
        found = self.replay_status(replay_id)
        while found.state == "running":
            found = self.replay_run(replay_id, limits.MAX_REPLAY_RUN_SECONDS, sleep)
        return found

    def replay_status(self, replay_id: str) -> ReplayStatus:
        """Where a replay stands: its state and counts; `MessageNotFound` for an unknown id."""
        return replays.status(self._ctx, self.engine().space, self.queue, replay_id)

    def replay_list(self, limit: int = 10) -> list[ReplayStatus]:
        """The sub-queue's replays, newest first."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= limits.MAX_PEEK:
            raise ValidationError(f"limit must be an integer from 1 to {limits.MAX_PEEK}")
        return replays.listed(self._ctx, self.engine().space, self.queue, limit)

    def replay_cancel(self, replay_id: str) -> ReplayStatus:
        """Stops a running replay: nothing is sent after the cancel and its counts are final."""
        return replays.cancel(self._ctx, self.engine().space, self.queue, replay_id, self._now())

    def cancel(self, message_id: str) -> bool:
        """Removes a message wherever it is (waiting, in flight or in the DLQ), so it is never processed."""
        ref = self._ref(message_id)
        if self.engine().cancel(ref, self._now()):
            return True
        dead = self._ctx.store.delete(ref.dlq_key(self.space))
        self._ctx.bodies.discard([dead])
        if dead is not None and not is_expired(dead, self._now()):
            return True
        raise MessageNotFound(f"message {message_id!r} not found")

    def purge(self) -> int:
        """Removes every waiting and in-flight message (not the DLQ), however many, with batched deletes."""
        return self.engine().purge()

    def stats(self, live: QueueStats | None = None, dead: tuple[int, bool] | None = None) -> QueueStats:
        """`live` (the engine's figures) and `dead` (the DLQ's count, and whether it reached the scan limit): what a
        sweep just read of the sub-queue, counted instead of read a second time."""
        engine = self.engine()
        now = self._now()
        figures = live if live is not None else engine.stats(now)
        dlq, dlq_truncated = dead if dead is not None else self._dlq_count(now)
        age = figures.oldest_age_seconds
        return QueueStats(
            figures.visible,
            figures.in_flight,
            figures.delayed,
            dlq,
            age,
            figures.approximate or dlq_truncated,
            figures.by_priority,
            figures.stuck,
        )


def _raw_entry(
    body: str,
    attributes: dict[str, str] | None,
    delay_seconds: int | None,
    group_id: str | None,
    dedup_id: str | None,
    attribute_types: dict[str, str] | None,
    priority: int | None = None,
    deliver_at: int | float | str | None = None,
) -> dict[str, Any]:
    """One message's fields as a batch entry carries them, validated by `_entry` like every other entry."""
    return {
        "body": body,
        "attributes": attributes,
        "attribute_types": attribute_types,
        "delay_seconds": delay_seconds,
        "group_id": group_id,
        "dedup_id": dedup_id,
        "priority": priority,
        "deliver_at": deliver_at,
    }


def receipt_owner(handle: Any) -> tuple[str, str]:
    """The queue and client a handle names, before its signature is checked (by that client's sub-queue)."""
    return Receipt.owner(handle)


def engine_for(ctx: Context, settings: QueueSettings, client: str) -> Engine:
    kind: type[Engine] = FifoQueue if settings.fifo else StandardQueue
    return kind(ctx, settings, client)


def remove_sub_queue(ctx: Context, settings: QueueSettings, client: str, keep_registration: bool) -> None:
    """Every item of one sub-queue in the generation `settings` names, then (unless kept) its registration, last,
    so that an interrupted removal is found and finished by the next pass. The first pass of a queue's delete
    keeps it: a process that registered before may still send for a few seconds, and the last pass must find
    it."""
    engine = engine_for(ctx, settings, client)
    engine.purge()
    for pk in dlq_pks(engine):
        ctx.delete_messages(pk)
    for pk in engine.space.dedup_pks():
        ctx.store.delete_partition(pk)
    if settings.fifo:
        for shard in range(settings.read_shards):
            ctx.store.delete_partition(engine.space.group_item_pk(shard))
        ctx.store.delete_partition(engine.space.dlq_groups_pk())
    ctx.store.delete_partition(engine.space.ready_pk())
    ctx.store.delete_partition(engine.space.shard_marks_pk())
    for pk in engine.space.attempt_pks():
        ctx.store.delete_partition(pk)
    # No item of this generation can name an object any more, nor can a send add one: whatever is left under
    # its prefix (a send cut short) goes too.
    ctx.bodies.discard_prefix(engine.space.object_prefix())
    if not keep_registration:
        ctx.registry.delete_registration(engine.space)


def delete_each(ctx: Context, delete: Callable[[str], None], receipt_handles: list[str]) -> BatchResult:
    """Each handle deleted on its own, in parallel; one that fails is reported by its index, the others go on."""
    handles = validation.batch("receipt_handles", receipt_handles)

    def delete_one(pair: tuple[int, str]) -> dict[str, Any]:
        index, handle = pair
        try:
            delete(handle)
        except QueueError as error:
            return {"index": index, "code": error.code, "message": error.message}
        return {"index": index}

    outcomes = list(ctx.pool.map(delete_one, enumerate(handles)))
    return BatchResult(successful=[o for o in outcomes if "code" not in o], failed=[o for o in outcomes if "code" in o])
