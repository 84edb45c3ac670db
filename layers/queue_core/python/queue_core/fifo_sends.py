"""FIFO sends: appending to a group's tail.

A group's sequence comes from its group item inside the send transaction (a condition on the last sequence), so
producers' clocks and retries can never reorder a group; after a change of `shards` a group moves to its new place
only once it is empty at the old one, carrying its sequence along and marking the old item moved (no late send can
revive it, no sequence is handed out twice). A redrive appends dead letters to their groups' tails the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import keys, reasons
from .bodies import stored_form
from .dedup import dedup_put, duplicate_of
from .engine import SendWrites
from .errors import MessageTooLarge, QueueError, Throttled
from .fifo_groups import FifoGroups, Placement
from .keys import MessageRef
from .messages import Entry, expires_s, new_item, sent
from .models import SendResult
from .sqs_ids import sqs_id_of
from .store import Item, Overdue, TransactionCancelled, Write
from .store import groups as group_writes
from .store import messages as writes

_SEND_ATTEMPTS = 25
_CHUNK = 45  # entries per transaction: one group update plus at most two actions an entry, within 100


class FifoSends(FifoGroups):
    """Sends and redrives of a FIFO sub-queue."""

    def send(self, entries: list[Entry], now: int) -> list[SendResult | QueueError]:
        """One transaction per group and chunk, entries of a group in the order given."""
        results: dict[int, SendResult | QueueError] = {}
        groups: dict[str, list[Entry]] = {}
        for entry in entries:
            groups.setdefault(entry.group_id or "", []).append(entry)
        for group, members in groups.items():
            for start in range(0, len(members), _CHUNK):
                chunk = members[start : start + _CHUNK]
                try:
                    results.update(self.append(group, chunk, now))
                except QueueError as error:
                    results.update({entry.index: error for entry in chunk})
        return [results[entry.index] for entry in entries]

    def append(self, group: str, entries: list[Entry], now: int, extra: Iterable[Write] = ()) -> dict[int, SendResult]:
        """Appends entries to a group's tail in one transaction (with `extra` actions, e.g. DLQ deletes).

        The expected last sequence starts as a guess (a new group); a wrong guess fails the condition, the group
        item as it was tells the right one and the transaction is tried again: no read before the write. After a
        change of `shards`, the group stays where it is while it has messages and moves once it is empty."""
        results: dict[int, SendResult] = {}
        pending = list(entries)
        extra = list(extra)
        placement = self._placement(group, now)
        expected = placement.known_last_seq if placement.known_last_seq is not None else self.traffic.last_seq(group)
        if placement.moves:
            expected = None
        for _ in range(_SEND_ATTEMPTS):
            if not pending:
                return results
            # Each transaction's own time: a dedup item's window counts from its commit, however long the
            # batch's earlier transactions took.
            now = max(now, self.ctx.now_ms())
            actions, refs = self._append_actions(group, pending, expected, now, placement)
            try:
                with self.sending(), self.ctx.store.at_old_place(0.0 if placement.current else 1.0):
                    self.ctx.store.transact_writes(actions + placement.moves + extra)
            except MessageTooLarge:
                if not any(entry.stored for entry in pending):  # refused: nothing was stored, its objects go
                    self.ctx.bodies.discard(write.item for write in actions)
                raise
            except Overdue:
                # Not sent: the settings it was placed by may be behind a change another process acts on now.
                if not any(entry.stored for entry in pending):
                    self.ctx.bodies.discard(write.item for write in actions)
                self.read_afresh()
                now = max(now, self.ctx.now_ms())
                placement = self._placement(group, now)
                expected = None if placement.moves else placement.known_last_seq
                continue
            except TransactionCancelled as cancelled:
                if not any(entry.stored for entry in pending):  # a redrive's objects belong to its DLQ items
                    self.ctx.bodies.discard_unstored(actions, cancelled.reasons)
                code, old = cancelled.reasons[0]
                moved_meanwhile = any(
                    reason == "ConditionalCheckFailed"
                    for reason, _ in cancelled.reasons[len(actions) : len(actions) + len(placement.moves)]
                )
                if code == "ConditionalCheckFailed" and old and old.get("moved"):
                    # The group left this place: this sender stalled past the change of placement, or its
                    # settings are behind a change of `shards`. Place it again as of now, by fresh settings.
                    self.settings = self.ctx.registry.get(self.queue, fresh=True)
                    now = max(now, self.ctx.now_ms())
                if (code == "ConditionalCheckFailed" and old and old.get("moved")) or moved_meanwhile:
                    placement = self._placement(group, now)
                    expected = None if placement.moves else placement.known_last_seq
                    continue
                if code == "ConditionalCheckFailed":
                    expected = int(old["last_seq"]) if old and "last_seq" in old else None
                extra_reasons = cancelled.reasons[len(actions) + len(placement.moves) :]
                if any(reason == "ConditionalCheckFailed" for reason, _ in extra_reasons):
                    raise Throttled("the messages to move changed meanwhile; retry") from None
                for position in cancelled.failed():
                    entry = _dedup_owner(actions, pending, position)
                    if entry is not None:
                        results[entry.index] = duplicate_of(cancelled.reasons[position], self.settings)
                if results:  # a first send stored with every answer lost never put its mark
                    self.announce(self.ready_pairs(pending, now, placement.key))
                pending = [entry for entry in pending if entry.index not in results]
                continue
            except QueueError:
                self.announce(self.ready_pairs(pending, now, placement.key))  # stored perhaps: then found
                raise
            results.update({entry.index: sent(ref, item) for entry, ref, item in refs})
            self.traffic.remember_last_seq(group, int(refs[-1][1].sequence))
            self.announce(self.ready_pairs([entry for entry, _, _ in refs], now, placement.key))
            return results
        raise Throttled("too many concurrent sends to this group; retry")

    def send_writes(self, entry: Entry, now: int, last_seq: int | None = None) -> SendWrites:
        """The group's update (its sequence fence), the dedup item, the message, and the marks of the group's old
        places when a change of `shards` moves it: the actions `append` runs for one entry. The fence is the
        `last_seq` given, else the group's last sequence as known here or read now (one read), so that a caller's
        transaction is rarely cancelled by a stale guess."""
        group = entry.group_id or ""
        placement = self._placement(group, now)
        if placement.moves:
            expected = None
        elif last_seq is not None:
            expected = last_seq
        elif placement.known_last_seq is not None:
            expected = placement.known_last_seq
        else:
            found = self.ctx.store.get(placement.key)
            expected = int(found["last_seq"]) if found and "last_seq" in found and not found.get("moved") else None
        actions, refs = self._append_actions(group, [entry], expected, now, placement)
        return SendWrites(
            refs[0][1],
            actions + placement.moves,
            dedup=1 if entry.dedup_id is not None else None,
            fence=0,
            ready=tuple(self.ready_pairs([entry], now, placement.key)),
            sqs_id=sqs_id_of(refs[0][2], refs[0][1].message_id),
        )

    def send_committed(self, planned: SendWrites, now: int) -> None:
        self.announce(planned.ready)

    def _append_actions(
        self, group: str, entries: list[Entry], expected: int | None, now: int, placement: Placement
    ) -> tuple[list[Write], list[tuple[Entry, MessageRef, Item]]]:
        """The group update (its condition fences the sequence) and a put per message, with dedup items."""
        retention = self.settings.message_retention(now)
        last = placement.base if expected is None else expected
        group_update = group_writes.append(
            placement.key,
            group,
            count=len(entries),
            last_seq=last,
            fence=expected,
            moving_in=bool(placement.moves),
            first_visible=entries[0].visible_from(now),
            now=now,
            expires_at=self._group_expires_at(now),
        )
        actions: list[Write] = [group_update]
        refs = []
        for offset, entry in enumerate(entries, start=1):
            ref = MessageRef(shard=0, sequence=keys.group_seq(last + offset), group=group)
            item = new_item(
                ref.live_key(self.space),
                entry,
                now,
                entry.visible_from(now),
                expires_s(now, retention),
                self.ctx.bodies,
            )
            if entry.dedup_id is not None:
                sqs_id = sqs_id_of(item, ref.message_id)
                actions.append(dedup_put(self.space, self.settings, entry.dedup_id, ref, now, sqs_id))
            actions.append(writes.store_new(item))
            refs.append((entry, ref, item))
        return actions, refs

    def ready_pairs(self, entries: list[Entry], now: int, group_key: dict[str, str]) -> list[tuple[int, int, int]]:
        """The marks appended entries need (FIFO has one priority): when the first of them is visible, at their
        group's place."""
        return [(0, min(entry.visible_from(now) for entry in entries), keys.shard_of(group_key["pk"]))]

    def priorities(self) -> list[int]:
        return [0]

    def redrive(self, dlq_items: list[Item], now: int) -> int:
        """Moves DLQ messages back to the tails of their groups, each group's in their original order."""
        moved = 0
        by_group: dict[str, list[Item]] = {}
        for item in dlq_items:
            by_group.setdefault(item["group_id"], []).append(item)
        for group, items in by_group.items():
            items.sort(key=lambda item: item["sk"])
            for start in range(0, len(items), _CHUNK):
                chunk = items[start : start + _CHUNK]
                entries = [
                    Entry(
                        index=i,
                        body="",
                        attributes=dict(item.get("attrs", {})),
                        attribute_types=dict(item.get("attr_types", {})),
                        group_id=group,
                        sent_at=int(item["sent_at"]),
                        # A new sequence is a new queue id: the SQS id it had goes along.
                        sqs_id=sqs_id_of(item, MessageRef.from_dlq_sk(item["sk"], 0, True).message_id),
                        # The dedup id goes along as stored, not as the entry's: it is shown, not enforced again.
                        stored={
                            **stored_form(item),
                            **{k: item[k] for k in ("dedup_id",) if k in item},
                            **reasons.kept(item),
                        },
                    )
                    for i, item in enumerate(chunk)
                ]
                deletes = [writes.take_existing({"pk": item["pk"], "sk": item["sk"]}) for item in chunk]
                try:
                    moved += len(self.append(group, entries, now, extra=deletes))
                except QueueError:
                    continue
        return moved


def _dedup_owner(actions: list[Write], entries: list[Entry], position: int) -> Entry | None:
    """The entry whose dedup item is action `position` (actions: group update, then per entry [dedup], put)."""
    index = 1
    for entry in entries:
        if entry.dedup_id is not None:
            if index == position:
                return entry
            index += 1
        index += 1
    return None
