"""FIFO sub-queues: message groups.

Each non-empty group has one *group item* (`pk = F#{queue}#{client}#{shard}`, `sk = {group}`) whose index entry
`gsi1sk = {available_at}#{group}` says when the group can be received from; its messages live in their own
partition (`pk = G#{queue}#{client}#{group}`, `sk = {group sequence}`), read head first. A receive queries the index
for available groups, claims a group with a conditional update (which also locks it until the visibility timeout),
then reads the group's head. A group whose head is in flight sorts after now, so a receive never reads blocked
groups' backlogs. A group's sequence comes from its group item inside the send transaction (a condition on the
last sequence), so producers' clocks and retries can never reorder a group.

Every write here is safe when DynamoDB applied it, its answer was lost and the SDK sent it again: counts are kept
as sets of sequences (`acked`, `gone`) or guarded by a condition that the repeat fails, and a failed condition
whose old item shows the write already done (our token, our sequence in the set) counts as success.
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Final

from . import keys, limits, partial, ready
from .bodies import stored_form
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
from .store import groups as group_writes
from .store import messages as writes

_SEND_ATTEMPTS = 25
_CLAIM_ROUNDS = 3
_TIDY_LOCK_SECONDS = 30  # how long the sweep holds a stuck group while it tidies the group's head
_CHUNK = 45  # entries per transaction: one group update plus at most two actions an entry, within 100
# How long a group waits behind a head that can be neither delivered nor moved to the DLQ before a claim tries again.
STUCK_RETRY_SECONDS: Final = 300
logger = logging.getLogger("queue_core")


class FifoQueue:
    """The message operations of one `(queue, client)` of a FIFO queue."""

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

    def secret(self) -> str | None:
        return self.ctx.registry.client_secret(self.space)

    def _group_key(self, group: str, shard: int | None = None, now: int = 0) -> dict[str, str]:
        """The group item's key: at a known shard (from an index entry or a receipt), else where the group is
        placed now."""
        if shard is None:
            shard = keys.group_shard(group, self.settings.placement_shards(now or self.ctx.now_ms()))
        return self.space.group_key(group, shard)

    def _old_group_keys(self, group: str, now: int) -> list[dict[str, str]]:
        current = self._group_key(group, now=now)
        olds = [self._group_key(group, keys.group_shard(group, shards)) for shards in self.settings.old_layouts(now)]
        return [key for key in olds if key != current]

    def _group_pk(self, shard: int) -> str:
        return self.space.group_item_pk(shard)

    def _at_current_place(self, group_item: Item, now: int) -> bool:
        return keys.shard_of(group_item["pk"]) == keys.group_shard(
            group_item["sk"], self.settings.placement_shards(now)
        )

    # Send.
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
                self.ctx.store.transact_writes(actions + placement.moves + extra)
            except MessageTooLarge:
                if not any(entry.stored for entry in pending):  # refused: nothing was stored, its objects go
                    self.ctx.bodies.discard(write.item for write in actions)
                raise
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
                        results[entry.index] = duplicate_of(cancelled.reasons[position])
                pending = [entry for entry in pending if entry.index not in results]
                continue
            results.update({entry.index: SendResult(ref.message_id, ref.sequence) for entry, ref in refs})
            self.traffic.remember_last_seq(group, int(refs[-1][1].sequence))
            ready.announce(self.ctx, self.space, self.ready_pairs([entry for entry, _ in refs], now))
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
            ready=tuple(self.ready_pairs([entry], now)),
        )

    def send_committed(self, planned: SendWrites, now: int) -> None:
        ready.announce(self.ctx, self.space, planned.ready)

    def _placement(self, group: str, now: int) -> _Placement:
        """Where a send goes. Without a kept earlier layout: the group's shard, no read. With one: the old place
        while the group is active there (one read of the old places), else the new place, moving the group's
        sequence along and marking the old items moved (only if each is still empty and at the sequence read),
        so no late send can revive them and no sequence is handed out twice."""
        current = self._group_key(group, now=now)
        olds = self._old_group_keys(group, now)
        if not olds:
            return _Placement(current, True)
        found = [item for item in self.ctx.store.batch_get(olds) if not item.get("moved")]
        active = [item for item in found if "gsi1sk" in item]
        if active:
            return _Placement({"pk": active[0]["pk"], "sk": group}, False, known_last_seq=int(active[0]["last_seq"]))
        moves = [
            group_writes.move_away({"pk": item["pk"], "sk": group}, int(item["last_seq"]))
            for item in found
            if "last_seq" in item
        ]
        base = max((int(item.get("last_seq", 0)) for item in found), default=0)
        return _Placement(current, True, base, moves)

    def _append_actions(
        self, group: str, entries: list[Entry], expected: int | None, now: int, placement: _Placement
    ) -> tuple[list[Write], list[tuple[Entry, MessageRef]]]:
        """The group update (its condition fences the sequence) and a put per message, with dedup items."""
        retention = self.settings.retention_seconds
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
            expires_at=now // 1000 + 2 * retention + limits.MAX_DEDUP_WINDOW_SECONDS,
        )
        actions: list[Write] = [group_update]
        refs = []
        for offset, entry in enumerate(entries, start=1):
            ref = MessageRef(shard=0, sequence=keys.group_seq(last + offset), group=group)
            if entry.dedup_id is not None:
                actions.append(dedup_put(self.space, self.settings, entry.dedup_id, ref, now))
            item = new_item(
                ref.live_key(self.space),
                entry,
                now,
                entry.visible_from(now),
                expires_s(now, retention),
                self.ctx.bodies,
            )
            actions.append(writes.store_new(item))
            refs.append((entry, ref))
        return actions, refs

    def ready_pairs(self, entries: list[Entry], now: int) -> list[tuple[int, int]]:
        """The ready marker appended entries need (FIFO has one priority): when the first of them is visible."""
        return [(0, min(entry.visible_from(now) for entry in entries))]

    def priorities(self) -> list[int]:
        return [0]

    # Receive.
    def receive(self, want: int, visibility: int, order: str, now: int, secret: str) -> list[ReceivedMessage]:
        """After a throttle: what the receive holds, the throttle only when it holds nothing (see `partial`)."""
        try:
            return self.receive_priority(0, want, visibility, order, now, secret)[0]
        except Throttled as error:
            self.ctx.store.note_throttle()  # a claim's throttle was counted on the pool's thread, not the caller's
            return partial.answer(error, partial.received(error))

    def receive_priority(
        self, priority: int, want: int, visibility: int, order: str, now: int, secret: str
    ) -> tuple[list[ReceivedMessage], bool]:
        """Claims available groups' heads; also says whether any available group was seen."""
        seen = []

        def shard_receive(shard: int, need: int) -> tuple[list[ReceivedMessage], bool]:
            found, saw = self._receive_shard(shard, need, visibility, now, secret)
            seen.append(saw)
            return found, saw

        return visit(self.picker, want, shard_receive), any(seen)

    def next_visible(self, priority: int, now: int) -> int | None:
        """When a group is next available: the first group entry of each shard (locks sort at their end)."""
        times = []
        for shard in range(self.settings.read_shards):
            pk = self._group_pk(shard)
            own = [entry for entry in self.ctx.store.earliest(pk, limit=limits.MAX_PEEK) if entry["pk"] == pk]
            if own:
                times.append(keys.index_time(own[0]["gsi1sk"]))
        return min(times, default=None)

    def _receive_shard(
        self, shard: int, want: int, visibility: int, now: int, secret: str
    ) -> tuple[list[ReceivedMessage], bool]:
        got: list[ReceivedMessage] = []
        saw_candidates = False
        start = None
        partition = self._group_pk(shard)
        for _ in range(_CLAIM_ROUNDS):
            need = want - len(got)
            try:
                entries, start, _ = self.ctx.store.due(partition, now, self.gauge.window(need), start=start)
            except Throttled as error:
                raise partial.after(error, got) from error
            saw_candidates = saw_candidates or bool(entries)
            # An index entry of an item outside this partition is not ours, whatever its index key says.
            groups = [entry for entry in entries if entry["pk"] == partition]
            if self.gauge.contended:
                random.shuffle(groups)
            position = 0
            throttle: Throttled | None = None
            while len(got) < want and position < len(groups) and throttle is None:
                need = want - len(got)
                batch = groups[position : position + need]
                budgets = [need // len(batch) + (1 if i < need % len(batch) else 0) for i in range(len(batch))]
                conflicts = self.claim_conflicts
                outcomes = list(
                    self.ctx.pool.map(
                        lambda pair: self._claim_group_or_throttle(pair[0], pair[1], visibility, now, secret),
                        zip(batch, budgets, strict=True),
                    )
                )
                self.gauge.record(len(batch), self.claim_conflicts - conflicts)
                for messages in outcomes:
                    if isinstance(messages, Throttled):
                        throttle = throttle or messages
                    else:
                        got += messages
                position += len(batch)
            if throttle is not None:
                raise partial.after(throttle, got) from throttle
            if len(got) >= want or not start:
                break
        return got, saw_candidates

    def _claim_group_or_throttle(
        self, entry: Item, budget: int, visibility: int, now: int, secret: str
    ) -> list[ReceivedMessage] | Throttled:
        """`_claim_group`, its throttle returned instead of raised, so that the other groups' claims are kept. A
        lock whose answer was lost may have been applied: that group then waits for its lock to run out, as SQS
        leaves a message whose receive answer was lost."""
        try:
            return self._claim_group(entry, budget, visibility, now, secret)
        except Throttled as error:
            return error

    def _claim_group(
        self, entry: Item, budget: int, visibility: int, now: int, secret: str = ""
    ) -> list[ReceivedMessage]:
        """Locks an available group, then takes up to `budget` messages from its head, in order. With a budget
        of 0 it only tidies the head (expired and over-limit messages) and unlocks again."""
        key = {"pk": entry["pk"], "sk": entry["sk"]}
        token = new_token()
        until = now + max(visibility, 1) * 1000
        try:
            group_item = self.ctx.store.write(group_writes.lock(key, token, until, now))
        except ConditionFailed as failed:
            if failed.item is None or failed.item.get("tok") != token:
                self.claim_conflicts += 1
                return []
            group_item = failed.item  # our claim was applied and its answer lost: the SDK's retry found it locked
        assert group_item is not None
        group = group_item["group_id"]
        try:
            heads, more, _ = self.ctx.store.query(
                self.space.group_messages_pk(group), limit=budget + 1, consistent=True
            )
        except Throttled:
            with contextlib.suppress(QueueError):
                self.finish_group(key, token, now)  # nothing marked: the group need not wait for the lock
            raise
        taken, next_head, stuck = self._take_heads(key, token, heads, budget, now)
        if not taken:
            if stuck is not None:
                self._hold_stuck(key, token, stuck, now)
            elif next_head is not None:
                self.finish_group(key, token, max(now, int(next_head["visible_at"])))
            elif more:
                self.finish_group(key, token, now)
            else:
                self.finish_group(key, token, now, empty_at=str(group_item["last_seq"]))
            return []
        outcomes = list(self.ctx.inner_pool.map(lambda item: self._mark(item, key, token, now), taken))
        throttle = next((outcome for outcome in outcomes if isinstance(outcome, Throttled)), None)
        marked, stuck = _in_order(outcomes)
        marked, stuck_body = self._with_bodies(marked, key, token, now)
        stuck = stuck or stuck_body
        self._give_back_unseen([o for o in outcomes if isinstance(o, dict)], marked, now)
        if not marked:
            if stuck is not None:
                self._hold_stuck(key, token, stuck, now)
            else:
                self.finish_group(key, token, now)
            if throttle is not None:
                raise throttle
            return []
        whole = len(marked) == len(taken)
        last_seq = "" if (next_head is not None or more or not whole) else str(group_item["last_seq"])
        messages = []
        for item in marked:
            ref = MessageRef(shard=0, sequence=item["sk"], group=group)
            receipt = Receipt(
                self.queue,
                self.client,
                ref.message_id,
                token,
                int(item["receive_count"]),
                held=len(marked),
                last_seq=last_seq,
                group_shard=keys.shard_of(key["pk"]),
            )
            messages.append(received(item, ref, receipt.encode(secret), self.ctx.bodies, self.client))
        return messages

    def _with_bodies(
        self, marked: list[Item], group_key: dict[str, str], token: str, now: int
    ) -> tuple[list[Item], Item | None]:
        """The marked messages with their bodies as sent (offloaded ones fetched in parallel), up to the first
        that is stuck. One whose body is gone cannot be processed by anyone: it goes to the DLQ, as a message past
        its receive limit does, and the group moves on; if it cannot go there either, the group stops at it."""

        def resolve(item: Item) -> Item | _Stuck | None:
            try:
                return self.ctx.bodies.resolved(item)
            except MessageBodyMissing:
                logger.warning(
                    "message %s of group %s: its offloaded body is gone; moved to the DLQ", item["sk"], group_key["sk"]
                )
                return None if self._dead_letter(item, group_key, token, now) else _Stuck(item)

        def resolve_or_stop(item: Item) -> Item | _Stuck | Throttled | None:
            try:
                return resolve(item)
            except Throttled as error:  # the body store throttled: deliver those before it, give back the rest
                return error

        resolved: list[Item] = []
        for outcome in self.ctx.inner_pool.map(resolve_or_stop, marked):
            if isinstance(outcome, Throttled):
                return resolved, None
            if isinstance(outcome, _Stuck):
                return resolved, outcome.item
            if outcome is not None:
                resolved.append(outcome)
        return resolved, None

    def _give_back_unseen(self, marked: list[Item], delivered: list[Item], now: int) -> None:
        """Messages this claim marked but does not deliver (after a head it stopped at) get back the receive
        count they had: nobody saw them. Best effort: a later claim takes them either way, in order."""
        kept = {item["sk"] for item in delivered}
        for item in marked:
            if item["sk"] in kept:
                continue
            write = writes.unseen(
                {"pk": item["pk"], "sk": item["sk"]}, item["tok"], int(item["receive_count"]), new_token()
            )
            with contextlib.suppress(ConditionFailed, QueueError):
                self.ctx.store.write(write)

    def _dead_letter(self, item: Item, group_key: dict[str, str], token: str, now: int) -> bool:
        """`_to_dlq`, False also when DynamoDB refuses the DLQ copy (too large for the backend's item limit) or
        fails: the message then stays where it is."""
        try:
            return self._to_dlq(item, group_key, token, now)
        except QueueError:
            logger.warning("message %s of group %s could not be moved to the DLQ", item["sk"], group_key["sk"])
            return False

    def _hold_stuck(self, key: dict[str, str], token: str, item: Item, now: int) -> None:
        """A head that can be neither delivered nor moved to the DLQ is never dropped nor overtaken: it stays,
        holds its group (and only it) until `STUCK_RETRY_SECONDS` later, when a claim tries again, and is
        reported (this log line, `stuck` in stats, the sweeper's metric) until an operator cancels it."""
        logger.error(
            "message %s of group %s of %s/%s can be neither delivered nor moved to the DLQ: it stays and holds its "
            "group; cancel it to let the group go on",
            MessageRef(shard=0, sequence=item["sk"], group=key["sk"]).message_id,
            key["sk"],
            self.queue,
            self.client,
        )
        retry_at = now + STUCK_RETRY_SECONDS * 1000
        try:
            self.ctx.store.write(group_writes.hold_stuck(key, token, item["sk"], retry_at))
        except ConditionFailed as failed:
            if not _unlocked_by(failed.item, token):
                return  # the lock passed to another claim
        ready.announce(self.ctx, self.space, [(0, retry_at)])

    def _take_heads(
        self, group_key: dict[str, str], token: str, heads: list[Item], budget: int, now: int
    ) -> tuple[list[Item], Item | None, Item | None]:
        """The messages to deliver, the first one left behind (None when none is), and that one again when it is
        stuck: past its receive limit and not movable to the DLQ (nothing after it may go before it)."""
        taken: list[Item] = []
        limit = self.settings.max_receive_count
        for item in heads:
            if is_expired(item, now):
                self._remove_expired(item, group_key, now)
            elif limit and int(item["receive_count"]) >= limit:
                if not self._dead_letter(item, group_key, token, now):
                    return taken, item, item
            elif int(item["visible_at"]) > now or len(taken) >= budget:
                return taken, item, None
            else:
                taken.append(item)
        return taken, None, None

    def _mark(
        self, item: Item, group_key: dict[str, str], token: str, now: int
    ) -> Item | _Missed | _Stuck | Throttled | None:
        """The message marked as ours; None when it went to the DLQ instead; `MISSED` when another receive
        marked it first or it is gone (a claim whose lock ran out while it read the head: nothing after it may be
        delivered, see `_in_order`); `_Stuck` when it can be neither marked nor moved to the DLQ."""
        try:
            key = {"pk": item["pk"], "sk": item["sk"]}
            marks = int(item["marks"]) if "marks" in item else None
            return self.ctx.store.write(writes.mark(key, token, now, int(item["receive_count"]), marks))
        except ConditionFailed as failed:
            if failed.item is not None and failed.item.get("tok") == token:
                return failed.item  # applied, answer lost, the SDK's retry failed the condition: counted once
            return MISSED
        except Throttled as error:
            # Not delivered, and nothing after it (`_in_order`): the marks before it are. If its answer was lost
            # (it may be marked), the group's next claim marks it again, as after a lost receive answer.
            return error
        except MessageTooLarge:
            # Stored before sizes were checked, it cannot take a claim's attributes: to the DLQ, not in the way.
            return None if self._dead_letter(item, group_key, token, now) else _Stuck(item)

    def finish_group(
        self,
        key: dict[str, str],
        token: str,
        available_at: int,
        empty_at: str = "",
        removed: int = 0,
        counted_once: str | None = None,
    ) -> bool:
        """Unlocks a group: out of the index when it is known to be empty (no send since `empty_at`), else
        available again at `available_at`. `removed` messages leave its count (`counted_once`: see
        `group_writes.ack`). False when the lock had passed to another claim (nothing written). The unlock leaves
        its token in `unlocked_by`, so a repeat of it (an answer lost, the SDK's retry) is known for done and never
        counted twice."""
        if empty_at:
            try:
                self.ctx.store.write(group_writes.unlock_empty(key, token, int(empty_at)))
                return True
            except ConditionFailed as failed:
                if failed.item is None or failed.item.get("tok") != token:
                    return _unlocked_by(failed.item, token)
        try:
            self.ctx.store.write(group_writes.unlock(key, token, available_at, removed, counted_once))
        except ConditionFailed as failed:
            if counted_once and _holds(failed.item, token) and counted_once in failed.item.get("gone", set()):
                # The removal was counted already, by the call that made it: unlock without counting.
                return self.finish_group(key, token, available_at)
            if not _unlocked_by(failed.item, token):
                return False
        # The group is available again: queue-wide receives must know when, whatever marker the client has.
        ready.announce(self.ctx, self.space, [(0, available_at)])
        return True

    # Claimed messages.
    def delete(self, receipt: Receipt, now: int) -> None:
        """Idempotent: a message already gone counts as deleted (perhaps by this very call, its answer lost), and
        the group's bookkeeping is done again, which is safe to repeat; one claimed again since raises."""
        ref = MessageRef.parse(receipt.message_id)
        gone_before = maybe_own = False
        try:
            self.ctx.bodies.discard(
                [self.ctx.store.write(writes.fenced_delete(ref.live_key(self.space), receipt.token))]
            )
        except ConditionFailed as failed:
            if failed.item is not None:
                raise ReceiptHandleStale("the message was received again since this receipt handle") from None
            gone_before, maybe_own = True, failed.repeated
        self._ack(receipt, ref, now, removed=1, late_count=not gone_before, maybe_own=maybe_own)

    def delete_writes(self, receipt: Receipt, now: int, group_may_be_empty: bool = True) -> list[Write]:
        """The fenced delete and the group's part, conditional on the claim's lock: the last held message
        unlocks the group (out of the index when the claim saw nothing after it and no send came since, as
        `finish_group` does), one of several held is added to the done set (see `delete_committed`)."""
        ref = MessageRef.parse(receipt.message_id)
        key = self._group_key(ref.group or "", receipt.group_shard)
        if receipt.held > 1:
            group = group_writes.ack(key, receipt.token, ref.sequence, 1, None)
        elif receipt.last_seq and group_may_be_empty:
            group = group_writes.unlock_empty(key, receipt.token, int(receipt.last_seq))
        else:
            group = group_writes.unlock(key, receipt.token, now, 1)
        return [writes.fenced_delete(ref.live_key(self.space), receipt.token), group]

    def delete_committed(self, receipt: Receipt, now: int, group_may_be_empty: bool = True) -> None:
        """With several messages held, the one whose ack completes the done set unlocks the group (one read; an
        ack cannot read the set inside a transaction). Without this the group waits for its lock to run out.
        The last held message's ack unlocked the group in the transaction: when messages are left in it, its
        marker says so to queue-wide receives, as `finish_group` does after a plain delete."""
        if receipt.held <= 1:
            if not (receipt.last_seq and group_may_be_empty):  # else `delete_writes` took the group out, empty
                ready.announce(self.ctx, self.space, [(0, now)])
            return
        ref = MessageRef.parse(receipt.message_id)
        key = self._group_key(ref.group or "", receipt.group_shard)
        group = self.ctx.store.get(key)
        if group and group.get("tok") == receipt.token and len(group.get("acked", set())) >= receipt.held:
            self.finish_group(key, receipt.token, max(now, int(group.get("retry_at", 0))))

    def release(self, receipt: Receipt, available_at: int, now: int) -> int:
        ref = MessageRef.parse(receipt.message_id)
        release_id = new_token()
        self._give_back(writes.give_back(ref.live_key(self.space), receipt.token, release_id), release_id)
        self._ack(receipt, ref, available_at, removed=0)
        return available_at

    def return_unseen(self, receipt: Receipt, now: int) -> None:
        """The message gets back the receive count and first receive time it had before this claim; the group is
        given back as by a release with no delay (the last held message given back unlocks it)."""
        ref = MessageRef.parse(receipt.message_id)
        release_id = new_token()
        write = writes.unseen(ref.live_key(self.space), receipt.token, receipt.receive_count, release_id)
        self._give_back(write, release_id)
        self._ack(receipt, ref, now, removed=0)

    def _give_back(self, write: Write, release_id: str) -> None:
        """The holder's give-back of a message. A failed condition that finds this very call's `release_id` was
        this write, applied and its answer lost (the SDK's retry found it done): the group's part that follows is
        safe to repeat."""
        try:
            self.ctx.store.write(write)
        except ConditionFailed as failed:
            if failed.item is None:
                raise MessageNotFound("the message no longer exists (deleted or expired)") from None
            if failed.item.get("released_by") != release_id:
                raise ReceiptHandleStale("the message was received again since this receipt handle") from None

    def _ack(
        self,
        receipt: Receipt,
        ref: MessageRef,
        available_at: int,
        removed: int,
        late_count: bool = True,
        maybe_own: bool = False,
    ) -> None:
        """One held message is done; the last one done unlocks the group. Done messages are a set (`acked`), so
        an ack applied twice counts once and never unlocks the group while another held message is out. A
        message deleted after the group's lock passed to another claim (the holder's lock ran out, the message
        was not taken again) still leaves the group's count, by `gone`. A delete that found its message gone
        already (`late_count` False) did not remove it: the call that did counts it, or this one does, through
        `gone` (`counted_once`), never both; after the lock passed on, it counts nothing, unless the SDK sent the
        delete more than once (`maybe_own`): its first attempt, whose answer was lost, is then most likely what
        removed the message, and nobody else counted it. It counts through `gone`, so once with any removal
        counted there (another late delete, an expiry); a removal counted by its holder's unlock at the same
        moment as this repeat would be counted twice (stats one short until the group empties)."""
        key = self._group_key(ref.group or "", receipt.group_shard)
        counted_once = ref.sequence if removed and not late_count else None
        if receipt.held <= 1:
            finished = self.finish_group(
                key, receipt.token, available_at, receipt.last_seq if removed else "", removed, counted_once
            )
            if not finished and removed and (late_count or maybe_own):
                self._count_removed(key, ref.sequence)
            return
        # `retry_at` keeps the latest time any held message was given back for, so the group waits for it: the
        # ack sets it unless a later one is there, then acks without it.
        group: Item | None = None
        attempts = [(available_at, removed), (None, removed)]
        while attempts:
            retry_at, counting = attempts.pop(0)
            once = counting > 0 and counted_once is not None
            try:
                write = group_writes.ack(key, receipt.token, ref.sequence, counting, retry_at, counted_once=once)
                group = self.ctx.store.write(write)
                break
            except ConditionFailed as failed:
                old = failed.item
                if not _holds(old, receipt.token):
                    if removed and (late_count or maybe_own):
                        self._count_removed(key, ref.sequence)
                    return
                assert old is not None
                if ref.sequence in old.get("acked", set()):
                    group = old  # applied before, its answer lost
                    break
                if once and ref.sequence in old.get("gone", set()):
                    attempts = [(retry_at, 0), (None, 0)]  # counted by the call that removed it
        if group and len(group.get("acked", set())) >= receipt.held:
            self.finish_group(key, receipt.token, max(available_at, int(group.get("retry_at", 0))))

    def change_visibility(self, receipt: Receipt, visible_at: int, now: int) -> int:
        """Only while the handle's own message is held by it (SQS: `MessageNotInflight` otherwise): a handle of a
        message deleted, given back or taken by a later claim moves nothing, even while its claim holds the group.
        The group stays locked while any message of the claim is out: one of several given back now is released
        (the group waits for the others, then offers it first), one of several held longer makes the lock longer,
        never shorter. One transaction: the message's check and the group's lock."""
        if receipt.held > 1 and visible_at <= now:
            return self.release(receipt, visible_at, now)
        if not self.hold_again([receipt], visible_at, now):
            raise ReceiptHandleStale("the message is no longer held by this receipt handle (settled or received again)")
        # The group is available at the new time: queue-wide receives must know, whatever marker the client has.
        ready.announce(self.ctx, self.space, [(0, visible_at)])
        return visible_at

    def hold_again(self, receipts: list[Receipt], visible_at: int, now: int) -> bool:
        """Every receipt's message held by its claim until `visible_at`, all or none in one transaction (at most
        10 messages and their groups): False, nothing changed, when any of them is no longer held by its handle.
        A lock only ever grows while other messages of its claim are out (`receipt.held > 1`)."""
        checks, groups = [], {}
        tokens = {receipt.token for receipt in receipts}
        for receipt in receipts:
            ref = MessageRef.parse(receipt.message_id)
            checks.append(writes.held_by(ref.live_key(self.space), receipt.token))
            key = self._group_key(ref.group or "", receipt.group_shard)
            groups[(key["pk"], key["sk"])] = group_writes.extend(key, receipt.token, visible_at, receipt.held > 1)
        pending = list(groups.values())
        while True:
            try:
                self.ctx.store.transact_writes([*checks, *pending])
                return True
            except TransactionCancelled as cancelled:
                if any(code not in _PASSED for code, _ in cancelled.reasons[: len(checks)]):
                    return False
                outcomes = list(zip(cancelled.reasons[len(checks) :], pending, strict=True))
                # A lock may refuse to grow only when it is ours and later already: those need nothing more.
                if not all(code in _PASSED or _later(old, tokens, visible_at) for (code, old), _ in outcomes):
                    return False
                pending = [write for (code, _), write in outcomes if code in _PASSED]
                if not pending:
                    return True

    # Housekeeping.
    def _remove_expired(self, item: Item, group_key: dict[str, str], now: int) -> None:
        """Counted even when the delete finds nothing: it may have been this delete, its answer lost; the count
        is a set of sequences, so a message another caller removed is not counted twice."""
        try:
            self.ctx.bodies.discard(
                [self.ctx.store.write(writes.delete_expired({"pk": item["pk"], "sk": item["sk"]}, now))]
            )
        except ConditionFailed as failed:
            if failed.item is not None:
                return
        self._count_removed(group_key, item["sk"])

    def _count_removed(self, group_key: dict[str, str], sequence: str) -> bool:
        """Takes a message out of the group's count once, however often it is said, by whichever path (`gone` is
        a set, emptied when the group is empty)."""
        try:
            self.ctx.store.write(group_writes.count_removed(group_key, sequence))
        except ConditionFailed as failed:
            return group_writes.counted(failed.item, sequence)
        return True

    def move_to_dlq(self, ref: MessageRef, now: int) -> bool:
        item = self.ctx.store.get(ref.live_key(self.space))
        if item is None or is_expired(item, now):
            raise MessageNotFound(f"message {ref.message_id!r} not found")
        raise ValidationError("a FIFO message is moved to the DLQ by its receive limit only")

    def _to_dlq(self, item: Item, group_key: dict[str, str], token: str, now: int) -> bool:
        """Atomically out of the group and into the DLQ; the group then moves on to its next message."""
        ref = MessageRef(shard=0, sequence=item["sk"], group=group_key["sk"])
        dlq = moved_item(
            item,
            ref.dlq_key(self.space),
            now,
            receive_count=item["receive_count"],
            first_received_at=item.get("first_received_at"),
            moved_at=now,
            dlq_id=new_token(),
            expires_at=max(int(item["expires_at"]), expires_s(now, self.settings.retention_seconds)),
        )
        try:
            self.ctx.store.transact_writes(
                [
                    writes.leave_for_dlq({"pk": item["pk"], "sk": item["sk"]}, int(item["receive_count"])),
                    writes.store_new(dlq),
                    group_writes.dead_lettered(group_key, token),
                ]
            )
        except TransactionCancelled:
            return False
        return True

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
                        # The dedup id goes along as stored, not as the entry's: it is shown, not enforced again.
                        stored={**stored_form(item), **{k: item[k] for k in ("dedup_id",) if k in item}},
                    )
                    for i, item in enumerate(chunk)
                ]
                deletes = [writes.take_existing({"pk": item["pk"], "sk": item["sk"]}) for item in chunk]
                try:
                    moved += len(self.append(group, entries, now, extra=deletes))
                except QueueError:
                    continue
        return moved

    # Looking without claiming.
    def check_order(self, order: str) -> None:
        if order != "oldest":
            raise ValidationError("order 'newest' is only for standard queues: a FIFO queue keeps its groups' order")

    def locate(self, ref: MessageRef, now: int) -> Message | None:
        """The message, its DLQ copy and every place its group item may be, in one read: the group item says
        whether the message is held."""
        live_key, dlq_key = ref.live_key(self.space), ref.dlq_key(self.space)
        found = {(item["pk"], item["sk"]): item for item in self.ctx.store.batch_get([*self.get_keys(ref), dlq_key])}
        live, dead = found.pop((live_key["pk"], live_key["sk"]), None), found.pop((dlq_key["pk"], dlq_key["sk"]), None)
        if live and not is_expired(live, now):
            holders = [group for group in found.values() if group.get("tok") and group.get("tok") == live.get("tok")]
            return looked_at(live, ref, self.state(live, now, holders[0] if holders else None), self.ctx.bodies)
        if dead and not is_expired(dead, now):
            return looked_at(dead, ref, DLQ, self.ctx.bodies)
        return None

    def get_keys(self, ref: MessageRef) -> list[dict[str, str]]:
        """The message and every place its group item may be (more than one only after a change of `shards`)."""
        group = ref.group or ""
        now = self.ctx.now_ms()
        return [ref.live_key(self.space), self._group_key(group, now=now), *self._old_group_keys(group, now)]

    def state(self, item: Item, now: int, group_item: Item | None = None) -> str:
        if int(item["visible_at"]) > now:
            return DELAYED
        if (
            group_item
            and item.get("tok")
            and group_item.get("tok") == item.get("tok")
            and int(group_item.get("available_at", 0)) > now
        ):
            return IN_FLIGHT
        return VISIBLE

    def peek(self, limit: int, now: int) -> list[Message]:
        found: list[Message] = []
        for shard in range(self.settings.read_shards):
            groups = self.ctx.store.due_all(self._group_pk(shard), now, max_items=limit)
            for group_entry in groups:
                if group_entry["pk"] != self._group_pk(shard):
                    continue
                heads, _, _ = self.ctx.store.query(
                    self.space.group_messages_pk(group_entry["sk"]), limit=limit, consistent=True
                )
                for item in heads:
                    if is_expired(item, now):
                        continue
                    if int(item["visible_at"]) > now:
                        break
                    with contextlib.suppress(MessageBodyMissing):  # the next receive moves it to the DLQ
                        found.append(
                            looked_at(item, MessageRef(0, item["sk"], group_entry["sk"]), VISIBLE, self.ctx.bodies)
                        )
        found.sort(key=lambda message: (message.sent_at, message.sequence))
        return found[:limit]

    def cancel(self, ref: MessageRef, now: int) -> bool:
        old = self.ctx.store.delete(ref.live_key(self.space))
        self.ctx.bodies.discard([old])
        if old is None:
            return False
        for group_key in self.get_keys(ref)[1:]:
            if self._count_removed(group_key, ref.sequence):
                break
        return not is_expired(old, now)

    def group_items(self, shard: int, max_items: int | None = None) -> Iterable[Item]:
        return self.ctx.store.query_all(self._group_pk(shard), consistent=True, max_items=max_items)

    def purge(self) -> int:
        """Empties every group and takes it out of the index, unless a send landed meanwhile."""
        purged = 0
        for shard in range(self.settings.read_shards):
            for group_item in list(self.group_items(shard)):
                group = group_item["sk"]
                purged += self.ctx.delete_messages(self.space.group_messages_pk(group))
                try:
                    self.ctx.store.write(
                        group_writes.empty({"pk": group_item["pk"], "sk": group}, int(group_item.get("last_seq", 0)))
                    )
                except ConditionFailed:
                    continue
        return purged

    def stats(self, now: int) -> QueueStats:
        """From the group items alone (one per group, never the messages): a locked group counts one message
        in flight, the rest of its backlog as visible."""
        total = QueueStats()
        stuck: list[dict[str, str]] = []
        for shard in range(self.settings.read_shards):
            visible = in_flight = delayed = read = 0
            for group in self.group_items(shard, max_items=limits.STATS_SCAN_LIMIT):
                read += 1
                if group.get("stuck"):
                    stuck.append(MessageRef(0, str(group["stuck"]), group["sk"]).live_key(self.space))
                count = max(0, int(group.get("msg_count", 0)))
                if not count or "gsi1sk" not in group:
                    continue
                if int(group["available_at"]) <= now:
                    visible += count
                elif group.get("tok"):
                    in_flight += 1
                    visible += count - 1
                else:
                    delayed += count
            truncated = read >= limits.STATS_SCAN_LIMIT
            total = total + QueueStats(visible, in_flight, delayed, 0, None, truncated)
        # A group says which head held it; that head is still stuck unless it was cancelled since (one read).
        still = sum(len(self.ctx.store.batch_get(stuck[start : start + 100])) for start in range(0, len(stuck), 100))
        return replace(total, oldest_age_seconds=self._oldest_age(now), stuck=still)

    def _oldest_age(self, now: int) -> int | None:
        """The age of the oldest head among the groups that wait (bounded: at most 25 groups' heads read)."""
        oldest: int | None = None
        for shard in range(self.settings.read_shards):
            for group in list(self.group_items(shard, max_items=25)):
                if "gsi1sk" not in group:
                    continue
                heads, _, _ = self.ctx.store.query(self.space.group_messages_pk(group["sk"]), limit=1)
                for head in heads:
                    if not is_expired(head, now):
                        sent = int(head["sent_at"])
                        oldest = sent if oldest is None else min(oldest, sent)
        return None if oldest is None else max(0, (now - oldest) // 1000)

    def sweep(self, now: int, report: SweepReport) -> bool:
        freed, old_place_in_use = self.sweep_groups(now)
        report.groups_freed += freed
        return old_place_in_use

    def sweep_groups(self, now: int) -> tuple[int, bool]:
        """Groups whose lock expired (a consumer crashed) get their head tidied and are unlocked. Also tells
        whether any group item still lives at a place of an earlier shard layout (neither moved nor expired):
        until none does, the layout must be kept. Returns (groups freed, an old place in use)."""
        freed, old_place_in_use, available = 0, False, False
        for shard in range(self.settings.read_shards):
            for group in list(self.group_items(shard)):
                if group.get("tok") and "gsi1sk" in group and int(group["available_at"]) <= now:
                    self._claim_group(group, 0, _TIDY_LOCK_SECONDS, now)
                    freed += 1
                elif "gsi1sk" in group and int(group["available_at"]) <= now:
                    available = True
                if not group.get("moved") and not is_expired(group, now) and not self._at_current_place(group, now):
                    old_place_in_use = True
        if available:  # the backstop of the ready set (see `ready`)
            ready.announce(self.ctx, self.space, [(0, now)])
        return freed, old_place_in_use


@dataclass(frozen=True)
class _Placement:
    """The group item a send updates; `current` is False for an old place the group is still active at."""

    key: dict[str, str]
    current: bool
    base: int = 0
    moves: list[Write] = field(default_factory=list)
    # The group's last sequence as read at an old place it is active at (the fence's first guess).
    known_last_seq: int | None = None


class _Missed:
    """A head this claim could not mark."""


MISSED: Final = _Missed()


@dataclass(frozen=True)
class _Stuck:
    """A head that can be neither marked nor moved to the DLQ."""

    item: Item


def _in_order(outcomes: Iterable[Item | _Missed | _Stuck | Throttled | None]) -> tuple[list[Item], Item | None]:
    """The marked messages up to the first one missed or stuck (and that stuck one). Marks run in parallel: when
    a claim whose lock ran out races the next one for the same heads, each may mark some of them, and delivering
    a later message without an earlier one would break the group's order. The ones marked after the stop are
    given back uncounted (`_give_back_unseen`) and delivered by a later claim, in order."""
    marked: list[Item] = []
    for outcome in outcomes:
        if isinstance(outcome, _Missed | Throttled):
            return marked, None
        if isinstance(outcome, _Stuck):
            return marked, outcome.item
        if outcome is not None:
            marked.append(outcome)
    return marked, None


_PASSED: Final = ("None", "")


def _later(group_item: Item | None, tokens: set[str], visible_at: int) -> bool:
    """A group lock held by one of `tokens` until `visible_at` or later."""
    return group_item is not None and group_item.get("tok") in tokens and int(group_item["available_at"]) >= visible_at


def _holds(group_item: Item | None, token: str) -> bool:
    return group_item is not None and group_item.get("tok") == token


def _unlocked_by(group_item: Item | None, token: str) -> bool:
    """Whether this claim's unlock was already applied (its answer lost): nobody holds the group and the last
    unlock was ours."""
    return group_item is not None and "tok" not in group_item and group_item.get("unlocked_by") == token


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
