"""Standard sub-queues: the visibility index.

Each message is one item `pk = M#{queue}#{client}#{shard}`, `sk = {sequence}`; its index entry is
`gsi1sk = {visible_at}#{sequence}`. A receive queries the index for entries at or before now, so it reads only
visible messages whatever sits in flight or delayed, and claims each candidate with a conditional update that
moves it past now. Visibility is exact: an expired claim is visible again by itself.
"""

from __future__ import annotations

import contextlib
import logging
import random
from typing import Any

from . import keys, limits, partial, ready
from .clock import sequence_ms
from .context import Context
from .dedup import dedup_put, duplicate_of
from .engine import SendWrites
from .errors import (
    MessageBodyMissing,
    MessageNotFound,
    MessageTooLarge,
    QueueError,
    ReceiptHandleStale,
    Throttled,
    ValidationError,
)
from .keys import MessageRef, Space
from .messages import (
    DELAYED,
    DLQ,
    IN_FLIGHT,
    VISIBLE,
    Entry,
    expires_s,
    is_expired,
    looked_at,
    moved_item,
    new_item,
    received,
)
from .models import Message, QueueStats, ReceivedMessage, SendResult, SweepReport
from .receipts import Receipt, new_token
from .settings import QueueSettings
from .shards import visit
from .store import ConditionFailed, Item, TransactionCancelled, Write
from .store import messages as writes

_CLAIM_ROUNDS = 3
logger = logging.getLogger("queue_core")


class StandardQueue:
    """The message operations of one `(queue, client)` of a standard queue."""

    def __init__(self, ctx: Context, settings: QueueSettings, client: str) -> None:
        self.ctx = ctx
        self.settings = settings
        self.queue = settings.name
        self.client = client
        self.space = Space(settings.name, client, settings.generation)
        self.claim_conflicts = 0
        self.traffic = ctx.traffic(self.space, settings.read_shards, settings.shards)
        self.picker = self.traffic.picker
        self.gauge = self.traffic.gauge

    # Keys.
    def partition_key(self, shard: int) -> str:
        return self.space.message_pk(shard)

    def secret(self) -> str | None:
        return self.ctx.registry.client_secret(self.space)

    # Send.
    def build(self, entry: Entry, now: int) -> tuple[MessageRef, Item]:
        shard = self.traffic.rotation.next()
        ref = MessageRef(shard=shard, sequence=self.ctx.sequences.next(now), priority=entry.priority)
        visible_at = entry.visible_from(now)
        item = new_item(
            ref.live_key(self.space),
            entry,
            now,
            visible_at,
            expires_s(now, self.settings.retention_seconds),
            self.ctx.bodies,
        )
        item["gsi1pk"] = item["pk"]
        item["gsi1sk"] = keys.message_index_sk(visible_at, ref.sequence, entry.priority)
        return ref, item

    def announce(self, items: list[Item]) -> None:
        if items:
            self.traffic.note_bands(int(item.get("priority", 0)) for item in items)
            ready.announce(self.ctx, self.space, _due_pairs(items))

    def send(self, entries: list[Entry], now: int) -> list[SendResult | QueueError]:
        """Entries without a dedup id go in batch writes of 25 (one call); each with one goes in a transaction
        with its dedup item."""
        results: dict[int, SendResult | QueueError] = {}
        plain = [entry for entry in entries if entry.dedup_id is None]
        built = []
        for entry in plain:
            try:
                built.append((entry, *self.build(entry, now)))
            except QueueError as error:  # its body could not be offloaded: nothing of it is stored
                results[entry.index] = error
        for start in range(0, len(built), 25):
            chunk = built[start : start + 25]
            try:
                left = set(self.ctx.store.batch_write(puts=[item for _, _, item in chunk]))
            except QueueError as error:
                # Each entry fails, not the call. A refusal (DynamoDB applies none of a request it refuses)
                # stored none of them: their objects go. Any other outcome is unknown, and keeps them.
                if isinstance(error, MessageTooLarge):
                    self.ctx.bodies.discard(item for _, _, item in chunk)
                results.update({entry.index: error for entry, _, _ in chunk})
                continue
            self.announce([item for position, (_, _, item) in enumerate(chunk) if position not in left])
            for position, (entry, ref, _) in enumerate(chunk):
                results[entry.index] = (
                    Throttled(
                        "DynamoDB did not confirm this entry (throttled, or its answer was lost): it may not be "
                        "stored; send it again, with a dedup id if it must be stored once"
                    )
                    if position in left
                    else SendResult(ref.message_id, ref.sequence)
                )
        for entry in entries:
            if entry.dedup_id is not None:
                results[entry.index] = _as_result(lambda entry=entry: self._send_dedup(entry, now))
        return [results[entry.index] for entry in entries]

    def _send_dedup(self, entry: Entry, now: int) -> SendResult:
        """With a fresh time: the dedup window counts from this transaction, not from the start of the batch."""
        now = max(now, self.ctx.now_ms())
        planned = self.send_writes(entry, now)
        try:
            self.ctx.store.transact_writes(planned.writes)
        except TransactionCancelled as cancelled:
            self.ctx.bodies.discard_unstored(planned.writes, cancelled.reasons)
            return duplicate_of(cancelled.reasons[0])
        except MessageTooLarge:
            self.ctx.bodies.discard(write.item for write in planned.writes)  # refused: nothing was stored
            raise
        self.send_committed(planned, now)
        return SendResult(planned.ref.message_id, planned.ref.sequence)

    def send_writes(self, entry: Entry, now: int, last_seq: int | None = None) -> SendWrites:
        """The dedup item first (when the entry has a dedup id), then the message, conditional on a new key."""
        ref, item = self.build(entry, now)
        due = tuple(_due_pairs([item]))
        if entry.dedup_id is None:
            return SendWrites(ref, [writes.store_new(item)], ready=due)
        dedup = dedup_put(self.space, self.settings, entry.dedup_id, ref, now)
        return SendWrites(ref, [dedup, writes.store_new(item)], dedup=0, ready=due)

    def send_committed(self, planned: SendWrites, now: int) -> None:
        self.traffic.note_bands(priority for priority, _ in planned.ready)
        ready.announce(self.ctx, self.space, planned.ready)

    # Receive.
    def receive(self, want: int, visibility: int, order: str, now: int, secret: str) -> list[ReceivedMessage]:
        """The highest priority with visible messages first; a lower one only for what is still wanted. After a
        throttle it stops (the lower priorities share the throttled shards' partitions) and answers what it holds
        (see `partial`)."""
        got: list[ReceivedMessage] = []
        for priority in self.traffic.bands(self._read_bands):
            try:
                found, _ = self.receive_priority(priority, want - len(got), visibility, order, now, secret)
            except Throttled as error:
                self.ctx.store.note_throttle()  # a claim's throttle was counted on the pool's thread, not the caller's
                return partial.answer(error, got + partial.received(error))
            got += found
            if len(got) >= want:
                break
        return got

    def receive_priority(
        self, priority: int, want: int, visibility: int, order: str, now: int, secret: str
    ) -> tuple[list[ReceivedMessage], bool]:
        """Claims from one priority; also says whether any candidate was seen (False: nothing visible)."""
        seen = []

        def shard_receive(shard: int, need: int) -> tuple[list[ReceivedMessage], bool]:
            found, saw = self._receive_shard(shard, need, visibility, order, now, secret, priority)
            seen.append(saw)
            return found, saw

        got = visit(self.traffic.picker_for(priority), want, shard_receive)
        return got, any(seen)

    def priorities(self) -> list[int]:
        return self.traffic.bands(self._read_bands)

    def _read_bands(self) -> set[int]:
        """The priorities above 0 that this client's ready markers name (cached for a moment). One single-item
        query per priority found, each starting past the last one's markers: delayed messages leave a "ready at"
        marker per distinct time, and reading them all cost a receive behind 10,000 delayed messages 8 items per
        message delivered."""
        bands: set[int] = set()
        floor = 1
        while floor <= limits.MAX_PRIORITY:
            items, _, _ = self.ctx.store.query(
                self.space.ready_pk(),
                sk_condition="sk >= :floor",
                values={":floor": str(floor)},
                limit=1,
                projection="sk",
                consistent=True,
            )
            if not items:
                break
            priority = int(str(items[0]["sk"]).split("@", 1)[0])
            bands.add(priority)
            floor = priority + 1
        return bands

    def next_visible(self, priority: int, now: int) -> int | None:
        """One item read per shard (more only past index entries of items outside the partition)."""
        times = []
        for shard in range(self.settings.read_shards):
            pk = self.partition_key(shard)
            entries = self.ctx.store.earliest(pk, priority)
            if entries and entries[0]["pk"] != pk:
                entries = self.ctx.store.earliest(pk, priority, limit=limits.MAX_PEEK)
            own = [entry for entry in entries if entry["pk"] == pk]
            if own:
                times.append(keys.index_time(own[0]["gsi1sk"]))
        return min(times, default=None)

    def _receive_shard(
        self, shard: int, want: int, visibility: int, order: str, now: int, secret: str, priority: int = 0
    ) -> tuple[list[ReceivedMessage], bool]:
        got: list[ReceivedMessage] = []
        saw_candidates = False
        start = None
        partition = self.partition_key(shard)
        for _ in range(_CLAIM_ROUNDS):
            need = want - len(got)
            try:
                items, start, _ = self.ctx.store.due(
                    partition, now, self.gauge.window(need), forward=order == "oldest", start=start, priority=priority
                )
            except Throttled as error:
                raise partial.after(error, got) from error
            saw_candidates = saw_candidates or bool(items)
            # An index entry of an item outside this partition is not ours, whatever its index key says.
            own = [item for item in items if item["pk"] == partition]
            try:
                candidates = [item for item in own if not self._housekeep_candidate(item, now)]
            except Throttled as error:
                raise partial.after(error, got) from error
            if self.gauge.contended:
                random.shuffle(candidates)
            try:
                got += self._claim_candidates(candidates, need, visibility, now, secret)
            except Throttled as error:  # with what the earlier rounds claimed
                raise partial.after(error, got + partial.received(error)) from partial.original(error)
            if len(got) >= want or not start:
                break
        return got, saw_candidates

    def _housekeep_candidate(self, entry: Item, now: int) -> bool:
        """Expired and over-limit entries are dealt with here, where the index shows them; True if handled."""
        if is_expired(entry, now):
            self.delete_expired({"pk": entry["pk"], "sk": entry["sk"]}, now)
            return True
        limit = self.settings.max_receive_count
        if limit and int(entry.get("receive_count", 0)) >= limit:
            self._to_dlq({"pk": entry["pk"], "sk": entry["sk"]}, int(entry["receive_count"]), now)
            return True
        return False

    def _claim_candidates(self, candidates: list[Item], need: int, visibility: int, now: int, secret: str) -> list:
        """Claims the first `need` candidates in parallel, then the spare ones for each claim lost. A throttled
        claim does not cost the others: they are kept and raised with it (`partial.Interrupted`), and no spare is
        tried in the throttled partition."""
        claimed: list[tuple[int, ReceivedMessage]] = []
        position = 0
        throttle: Throttled | None = None
        while len(claimed) < need and position < len(candidates) and throttle is None:
            batch = candidates[position : position + need - len(claimed)]
            conflicts = self.claim_conflicts
            outcomes = list(
                self.ctx.pool.map(lambda item: self._claim_or_throttle(item, visibility, now, secret), batch)
            )
            self.gauge.record(len(batch), self.claim_conflicts - conflicts)
            throttle = next((outcome for outcome in outcomes if isinstance(outcome, Throttled)), None)
            claimed += [
                (position + i, message) for i, message in enumerate(outcomes) if isinstance(message, ReceivedMessage)
            ]
            position += len(batch)
        got = [message for _, message in sorted(claimed, key=lambda pair: pair[0])]
        if throttle is not None:
            raise partial.after(throttle, got) from throttle
        return got

    def _claim_or_throttle(
        self, entry: Item, visibility: int, now: int, secret: str
    ) -> ReceivedMessage | Throttled | None:
        """`_claim`, its throttle returned instead of raised. A claim whose answer was lost (`OutcomeUnknown`, or
        an outage after the SDK's retries) may have been applied: that one message is then left to its
        visibility timeout, as SQS leaves a message whose receive answer was lost."""
        try:
            return self._claim(entry, visibility, now, secret)
        except Throttled as error:
            return error

    def _claim(self, entry: Item, visibility: int, now: int, secret: str) -> ReceivedMessage | None:
        key = {"pk": entry["pk"], "sk": entry["sk"]}
        ref = MessageRef.of_live(entry)
        token = new_token()
        until = now + visibility * 1000
        try:
            item = self.ctx.store.write(
                writes.claim(key, token, until, now, self.settings.max_receive_count, ref.priority)
            )
        except ConditionFailed as failed:
            if failed.item is not None and failed.item.get("tok") == token:
                item = failed.item  # our claim was applied and its answer lost: the SDK's retry found it taken
            else:
                self._lost_claim(key, failed.item, now)
                return None
        except MessageTooLarge:
            # Stored before sizes were checked: it cannot take a claim's attributes. It must not block the others.
            with contextlib.suppress(QueueError):
                self._to_dlq(key, int(entry.get("receive_count", 0)), now)
            return None
        assert item is not None
        receipt = Receipt(self.queue, self.client, ref.message_id, token, int(item["receive_count"]))
        try:
            return received(item, ref, receipt.encode(secret), self.ctx.bodies, self.client)
        except MessageBodyMissing:
            # Nobody could process it: to the DLQ (where it can be looked at and cancelled), never delivered.
            logger.warning("message %s: its offloaded body is gone; moved to the DLQ", ref.message_id)
            self._to_dlq(key, int(item["receive_count"]), now, item, held=True)
            return None

    def _lost_claim(self, key: dict[str, str], old: Item | None, now: int) -> None:
        """The old item says why a claim failed: expired and over-limit messages are dealt with at once;
        otherwise another consumer got there first."""
        if old is None or "visible_at" not in old or int(old["visible_at"]) > now:
            self.claim_conflicts += 1
        elif is_expired(old, now):
            self.delete_expired(key, now)
        else:
            self._to_dlq(key, int(old["receive_count"]), now, old)

    def check_order(self, order: str) -> None:
        """Both orders: oldest first, or newest first (LIFO)."""

    # Claimed messages.
    def delete(self, receipt: Receipt, now: int) -> None:
        """Idempotent: a message already gone counts as deleted; one claimed again since raises."""
        (write,) = self.delete_writes(receipt, now)
        try:
            self.ctx.bodies.discard([self.ctx.store.write(write)])
        except ConditionFailed as failed:
            if failed.item is not None:
                raise ReceiptHandleStale("the message was received again since this receipt handle") from None

    def delete_writes(self, receipt: Receipt, now: int, group_may_be_empty: bool = True) -> list[Write]:
        """One write: the delete, fenced by the claim token."""
        key = MessageRef.parse(receipt.message_id).live_key(self.space)
        return [writes.fenced_delete(key, receipt.token)]

    def delete_committed(self, receipt: Receipt, now: int, group_may_be_empty: bool = True) -> None:
        """Nothing is left to do: the delete was the whole of it."""

    def change_visibility(self, receipt: Receipt, visible_at: int, now: int) -> int:
        return self._set_visible_at(receipt, visible_at, now, release=False)

    def release(self, receipt: Receipt, visible_at: int, now: int) -> int:
        return self._set_visible_at(receipt, visible_at, now, release=True)

    def hold_again(self, receipts: list[Receipt], visible_at: int, now: int) -> bool:
        """Every receipt's message held by its claim until `visible_at`, all or none in one transaction: False,
        nothing changed, when any of them is no longer held by its handle."""
        refs = [MessageRef.parse(receipt.message_id) for receipt in receipts]
        holds = [
            writes.set_visibility(ref.live_key(self.space), visible_at, receipt.token, None, ref.priority)
            for ref, receipt in zip(refs, receipts, strict=True)
        ]
        try:
            self.ctx.store.transact_writes(holds)
        except TransactionCancelled:
            return False
        ready.announce(self.ctx, self.space, [(ref.priority, visible_at) for ref in refs])
        return True

    def _set_visible_at(self, receipt: Receipt, visible_at: int, now: int, release: bool) -> int:
        """Then puts the ready marker for `visible_at`, so that a queue-wide receive finds the message when it
        is visible again, not only when an earlier marker's time comes."""
        ref = MessageRef.parse(receipt.message_id)
        try:
            release_id = new_token() if release else None
            write = writes.set_visibility(ref.live_key(self.space), visible_at, receipt.token, release_id, ref.priority)
            self.ctx.store.write(write)
        except ConditionFailed as failed:
            if failed.item is None:
                raise MessageNotFound("the message no longer exists (deleted or expired)") from None
            if release_id is None or failed.item.get("released_by") != release_id:
                raise ReceiptHandleStale("the message was received again since this receipt handle") from None
            # This very release was applied and its answer lost (the SDK's retry found it done): announced below.
        ready.announce(self.ctx, self.space, [(ref.priority, visible_at)])
        return visible_at

    def return_unseen(self, receipt: Receipt, now: int) -> None:
        """Visible now, with the receive count and first receive time it had before this claim; then its ready
        marker, as after a release."""
        ref = MessageRef.parse(receipt.message_id)
        release_id = new_token()
        write = writes.unseen(
            ref.live_key(self.space), receipt.token, receipt.receive_count, release_id, now, ref.priority
        )
        try:
            self.ctx.store.write(write)
        except ConditionFailed as failed:
            _check_own_release(failed.item, release_id)
        ready.announce(self.ctx, self.space, [(ref.priority, now)])

    # Housekeeping.
    def delete_expired(self, key: dict[str, str], now: int) -> bool:
        try:
            self.ctx.bodies.discard([self.ctx.store.write(writes.delete_expired(key, now))])
        except ConditionFailed:
            return False
        return True

    def _to_dlq(
        self, key: dict[str, str], receive_count: int, now: int, old: Item | None = None, held: bool = False
    ) -> bool:
        """Atomically: the message leaves the queue and enters the DLQ, or neither happens. Reads the message
        only when the caller does not have it (the index holds no body). A `held` message is the caller's own
        claim (`receive_count` is the claim's), moved while it is in flight."""
        ref = MessageRef.of_live(key)
        old = old or self.ctx.store.get(key)
        if old is None or int(old["receive_count"]) != receive_count or (int(old["visible_at"]) > now and not held):
            return False
        dlq = moved_item(
            old,
            ref.dlq_key(self.space),
            now,
            receive_count=receive_count,
            first_received_at=old.get("first_received_at"),
            moved_at=now,
            dlq_id=new_token(),
            expires_at=max(int(old["expires_at"]), expires_s(now, self.settings.retention_seconds)),
        )
        try:
            leave = writes.leave_for_dlq(key, receive_count, None if held else now)
            self.ctx.store.transact_writes([leave, writes.store_new(dlq)])
        except TransactionCancelled:
            return False
        return True

    def move_to_dlq(self, ref: MessageRef, now: int) -> bool:
        key = ref.live_key(self.space)
        item = self.ctx.store.get(key)
        if item is None or is_expired(item, now):
            raise MessageNotFound(f"message {ref.message_id!r} not found")
        if not self._to_dlq(key, int(item["receive_count"]), now, item):
            raise ValidationError("the message is in flight; move it when it is visible again")
        return True

    def redrive(self, dlq_items: list[Item], now: int) -> int:
        return sum(self._redrive_item(item, now) for item in dlq_items)

    def _redrive_item(self, dlq_item: Item, now: int) -> bool:
        ref = MessageRef.of_live(dlq_item)
        if ref.shard >= self.settings.shards:
            ref = MessageRef(shard=random.randrange(self.settings.shards), sequence=ref.sequence, priority=ref.priority)
        live = moved_item(
            dlq_item,
            ref.live_key(self.space),
            now,
            visible_at=now,
            receive_count=0,
            expires_at=expires_s(now, self.settings.retention_seconds),
        )
        live["gsi1pk"] = live["pk"]
        live["gsi1sk"] = keys.message_index_sk(now, ref.sequence, ref.priority)
        try:
            dlq_key = {"pk": dlq_item["pk"], "sk": dlq_item["sk"]}
            self.ctx.store.transact_writes([writes.take_existing(dlq_key), writes.store_new(live)])
        except TransactionCancelled:
            return False
        self.announce([live])
        return True

    # Looking without claiming.
    def state(self, item: Item, now: int) -> str:
        if int(item["visible_at"]) <= now:
            return VISIBLE
        return IN_FLIGHT if item.get("in_flight") else DELAYED

    def peek(self, limit: int, now: int) -> list[Message]:
        found: list[Message] = []
        for priority, shard in [
            (p, s) for p in self.traffic.bands(self._read_bands) for s in range(self.settings.read_shards)
        ]:
            entries = self.ctx.store.due_all(self.partition_key(shard), now, max_items=limit * 2, priority=priority)
            pk = self.partition_key(shard)
            live = [{"pk": e["pk"], "sk": e["sk"]} for e in entries if e["pk"] == pk and not is_expired(e, now)]
            live = live[:limit]
            for start in range(0, len(live), 100):
                for item in self.ctx.store.batch_get(live[start : start + 100]):
                    if int(item["visible_at"]) <= now and not is_expired(item, now):
                        with contextlib.suppress(MessageBodyMissing):  # the next receive moves it to the DLQ
                            found.append(looked_at(item, self.ref_of(item), VISIBLE, self.ctx.bodies))
        found.sort(key=lambda message: (-message.priority, message.visible_at or 0, message.sequence))
        return found[:limit]

    def ref_of(self, item: Item) -> MessageRef:
        return MessageRef.of_live(item)

    def locate(self, ref: MessageRef, now: int) -> Message | None:
        live_key, dlq_key = ref.live_key(self.space), ref.dlq_key(self.space)
        found = {(item["pk"], item["sk"]): item for item in self.ctx.store.batch_get([live_key, dlq_key])}
        live, dead = found.get((live_key["pk"], live_key["sk"])), found.get((dlq_key["pk"], dlq_key["sk"]))
        if live and not is_expired(live, now):
            return looked_at(live, ref, self.state(live, now), self.ctx.bodies)
        if dead and not is_expired(dead, now):
            return looked_at(dead, ref, DLQ, self.ctx.bodies)
        return None

    def cancel(self, ref: MessageRef, now: int) -> bool:
        old = self.ctx.store.delete(ref.live_key(self.space))
        self.ctx.bodies.discard([old])
        return old is not None and not is_expired(old, now)

    def purge(self) -> int:
        return sum(self.ctx.delete_messages(self.partition_key(shard)) for shard in range(self.settings.read_shards))

    def stats(self, now: int) -> QueueStats:
        """Reads the shard's index entries (small: keys, expiry, flag), at most `STATS_SCAN_LIMIT` per shard."""
        total = QueueStats()
        for shard in range(self.settings.read_shards):
            counts = {VISIBLE: 0, IN_FLIGHT: 0, DELAYED: 0}
            by_priority: dict[str, dict[str, int]] = {}
            oldest: int | None = None
            read = 0
            for entry in self.ctx.store.query_all(
                self.partition_key(shard), index=True, max_items=limits.STATS_SCAN_LIMIT
            ):
                read += 1
                if is_expired(entry, now):
                    continue
                priority, visible_at_text, sequence = keys.message_index_parts(entry["gsi1sk"])
                state = VISIBLE if int(visible_at_text) <= now else IN_FLIGHT if entry.get("in_flight") else DELAYED
                counts[state] += 1
                band = by_priority.setdefault(str(priority), {VISIBLE: 0, IN_FLIGHT: 0, DELAYED: 0})
                band[state] += 1
                sent = sequence_ms(sequence)
                oldest = sent if oldest is None else min(oldest, sent)
            truncated = read >= limits.STATS_SCAN_LIMIT
            if truncated:
                oldest = self._oldest_sent(shard, now)
            age = None if oldest is None else max(0, (now - oldest) // 1000)
            figures = QueueStats(counts[VISIBLE], counts[IN_FLIGHT], counts[DELAYED], 0, age, truncated, by_priority)
            total = total + figures
        return total

    def sweep(self, now: int, report: SweepReport) -> bool:
        """Deletes expired messages and moves visible ones past the receive limit to the DLQ, from the index
        entries (bounded per shard). Whether shards past the current count still hold items is the sweep's to
        check (`sweep.old_shards_in_use`), against the very settings it prunes."""
        limit = self.settings.max_receive_count
        visible: list[Item] = []
        for shard in range(self.settings.read_shards):
            partition = self.partition_key(shard)
            entries = list(self.ctx.store.query_all(partition, index=True, max_items=limits.STATS_SCAN_LIMIT))
            report.items_read += len(entries)
            for entry in entries:
                if entry["pk"] != partition:
                    continue
                key = {"pk": entry["pk"], "sk": entry["sk"]}
                if is_expired(entry, now):
                    report.expired_deleted += self.delete_expired(key, now)
                elif keys.index_time(entry["gsi1sk"]) <= now and limit and int(entry.get("receive_count", 0)) >= limit:
                    report.moved_to_dlq += self._to_dlq(key, int(entry["receive_count"]), now)
                elif keys.index_time(entry["gsi1sk"]) <= now:
                    visible.append(entry)
        # The backstop of the ready set: a marker for every priority with visible messages (one write unit each).
        ready.announce(self.ctx, self.space, _due_pairs(visible, now))
        return False

    def _oldest_sent(self, shard: int, now: int) -> int | None:
        items, _, _ = self.ctx.store.query(self.partition_key(shard), limit=25, projection="sk, expires_at")
        live = [item for item in items if not is_expired(item, now)]
        return sequence_ms(live[0]["sk"]) if live else None


def _due_pairs(items: list[Item], now: int | None = None) -> set[tuple[int, int]]:
    """(priority, visible_at) of message items or index entries: the markers they need (`now`: due by now)."""
    pairs = set()
    for item in items:
        priority, at, _ = keys.message_index_parts(str(item["gsi1sk"]))
        pairs.add((priority, int(at) if now is None else now))
    return pairs


def _check_own_release(old: Item | None, release_id: str) -> None:
    """A give-back's failed condition: its own write repeated by the SDK after a lost answer (done), or not."""
    if old is None:
        raise MessageNotFound("the message no longer exists (deleted or expired)")
    if old.get("released_by") != release_id:
        raise ReceiptHandleStale("the message was received again since this receipt handle")


def _as_result(send: Any) -> SendResult | QueueError:
    try:
        return send()
    except QueueError as error:
        return error
