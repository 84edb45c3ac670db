"""Standard sends and redrives: one item a message, spread over the shards, with its ready markers.

A send with a dedup id writes the message and its dedup item in one transaction; a redrive puts a dead letter back
with its receive count reset, in one transaction with the removal of that very DLQ copy.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from . import keys, reasons
from .dedup import dedup_put, duplicate_of
from .engine import SendWrites
from .errors import MessageTooLarge, QueueError, Throttled
from .keys import MessageRef
from .messages import Entry, expires_s, moved_item, new_item, sent
from .models import SendResult
from .sqs_ids import sqs_id_kept, sqs_id_of
from .standard_space import StandardSpace, due_of
from .store import Item, Overdue, TransactionCancelled
from .store import messages as writes

logger = logging.getLogger("queue_core")


class StandardSends(StandardSpace):
    """Sends and redrives of a standard sub-queue."""

    def build(self, entry: Entry, now: int) -> tuple[MessageRef, Item]:
        shard = self.traffic.rotation.next(now)
        ref = MessageRef(shard=shard, sequence=self.ctx.sequences.next(now), priority=entry.priority)
        visible_at = entry.visible_from(now)
        item = new_item(
            ref.live_key(self.space),
            entry,
            now,
            visible_at,
            expires_s(now, self.settings.message_retention(now)),
            self.ctx.bodies,
        )
        item["gsi1pk"] = item["pk"]
        item["gsi1sk"] = keys.message_index_sk(visible_at, ref.sequence, entry.priority)
        return ref, item

    def announce_items(self, items: list[Item]) -> None:
        if items:
            self.traffic.note_bands(int(item.get("priority", 0)) for item in items)
            self.announce(due_of(items))

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
            results.update(self._send_chunk(built[start : start + 25], now))
        for entry in entries:
            if entry.dedup_id is not None:
                results[entry.index] = _as_result(lambda entry=entry: self._send_dedup(entry, now))
        return [results[entry.index] for entry in entries]

    def _send_chunk(
        self, chunk: list[tuple[Entry, MessageRef, Item]], now: int, again: bool = True
    ) -> dict[int, SendResult | QueueError]:
        """One batch write of up to 25 entries; each fails alone, not the call. Held back before anything of it was
        sent (its settings too old: `Overdue`), it is built again once from settings read afresh (their shard count,
        their retention) and written."""
        try:
            with self.sending():
                left = set(self.ctx.store.batch_write(puts=[item for _, _, item in chunk]))
        except Overdue as error:
            self.ctx.bodies.discard(item for _, _, item in chunk)  # not sent: nothing was stored
            if not again:
                return {entry.index: error for entry, _, _ in chunk}
            try:
                self.read_afresh()
            except QueueError as unread:  # nothing of the batch is stored: each entry fails, not the call
                return {entry.index: unread for entry, _, _ in chunk}
            now = max(now, self.ctx.now_ms())
            rebuilt, failed = [], {}
            for entry, _, _ in chunk:
                try:
                    rebuilt.append((entry, *self.build(entry, now)))
                except QueueError as error:  # its body could not be offloaded: nothing of it is stored
                    failed[entry.index] = error
            return failed | (self._send_chunk(rebuilt, now, again=False) if rebuilt else {})
        except QueueError as error:
            # A refusal (DynamoDB applies none of a request it refuses) stored none of them: their objects go.
            # Any other outcome is unknown, and keeps them.
            if isinstance(error, MessageTooLarge):
                self.ctx.bodies.discard(item for _, _, item in chunk)
            else:  # stored perhaps: then found
                self.announce_items([item for _, _, item in chunk])
            return {entry.index: error for entry, _, _ in chunk}
        self.announce_items([item for position, (_, _, item) in enumerate(chunk) if position not in left])
        return {
            entry.index: Throttled(
                "DynamoDB did not confirm this entry (throttled, or its answer was lost): it may not be "
                "stored; send it again, with a dedup id if it must be stored once"
            )
            if position in left
            else sent(ref, item)
            for position, (entry, ref, item) in enumerate(chunk)
        }

    def _send_dedup(self, entry: Entry, now: int, again: bool = True) -> SendResult:
        """With a fresh time: the dedup window counts from this transaction, not from the start of the batch. Held
        back (`Overdue`: nothing sent), it is built again once from settings read afresh."""
        now = max(now, self.ctx.now_ms())
        planned = self.send_writes(entry, now)
        try:
            with self.sending():
                self.ctx.store.transact_writes(planned.writes)
        except Overdue:
            self.ctx.bodies.discard(write.item for write in planned.writes)  # not sent: nothing was stored
            if not again:
                raise
            self.read_afresh()
            return self._send_dedup(entry, now, again=False)
        except TransactionCancelled as cancelled:
            self.ctx.bodies.discard_unstored(planned.writes, cancelled.reasons)
            duplicate = duplicate_of(cancelled.reasons[0], self.settings)
            # The first send may have been stored with every answer lost, its mark never put: put it now.
            original = MessageRef.parse(duplicate.message_id)
            self.announce([(original.priority, now, original.shard)])
            return duplicate
        except MessageTooLarge:
            self.ctx.bodies.discard(write.item for write in planned.writes)  # refused: nothing was stored
            raise
        except QueueError:
            self.send_committed(planned, now)  # its outcome unknown: stored perhaps, and then found
            raise
        self.send_committed(planned, now)
        return SendResult(planned.ref.message_id, planned.ref.sequence, sqs_message_id=planned.sqs_id)

    def send_writes(self, entry: Entry, now: int, last_seq: int | None = None) -> SendWrites:
        """The dedup item first (when the entry has a dedup id), then the message, conditional on a new key."""
        ref, item = self.build(entry, now)
        due = tuple(due_of([item]))
        sqs_id = sqs_id_of(item, ref.message_id)
        if entry.dedup_id is None:
            return SendWrites(ref, [writes.store_new(item)], ready=due, sqs_id=sqs_id)
        dedup = dedup_put(self.space, self.settings, entry.dedup_id, ref, now, sqs_id)
        return SendWrites(ref, [dedup, writes.store_new(item)], dedup=0, ready=due, sqs_id=sqs_id)

    def send_committed(self, planned: SendWrites, now: int) -> None:
        self.traffic.note_bands(priority for priority, _, _ in planned.ready)
        self.announce(planned.ready)

    def redrive(self, dlq_items: list[Item], now: int) -> int:
        """One transaction a dead letter. A long redrive outlives its settings' deadline: the rest goes by settings
        read afresh (its shard and retention built again), as a FIFO redrive's do."""
        moved = 0
        for item in dlq_items:
            try:
                moved += self._redrive_item(item, now)
            except Overdue:  # not sent: nothing of it was applied
                self.read_afresh()
                moved += self._redrive_item(item, max(now, self.ctx.now_ms()))
        return moved

    def _redrive_item(self, dlq_item: Item, now: int) -> bool:
        ref = was = MessageRef.of_live(dlq_item)
        if ref.shard >= self.settings.shards:
            ref = MessageRef(shard=random.randrange(self.settings.shards), sequence=ref.sequence, priority=ref.priority)
        # In another shard it has another queue id: the SQS id it had goes along.
        carried = sqs_id_kept(dlq_item, was.message_id) if ref != was else {}
        live = moved_item(
            dlq_item,
            ref.live_key(self.space),
            now,
            visible_at=now,
            receive_count=0,
            **carried,
            expires_at=expires_s(now, self.settings.message_retention(now)),
            **reasons.kept(dlq_item),
        )
        live["gsi1pk"] = live["pk"]
        live["gsi1sk"] = keys.message_index_sk(now, ref.sequence, ref.priority)
        try:
            dlq_key = {"pk": dlq_item["pk"], "sk": dlq_item["sk"]}
            with self.sending():
                self.ctx.store.transact_writes([writes.take_existing(dlq_key), writes.store_new(live)])
        except TransactionCancelled:
            return False
        except Overdue:
            raise
        except QueueError:
            self.announce_items([live])  # its outcome unknown: moved perhaps, and then found
            raise
        self.announce_items([live])
        return True


def _as_result(send: Any) -> SendResult | QueueError:
    try:
        return send()
    except QueueError as error:
        return error
