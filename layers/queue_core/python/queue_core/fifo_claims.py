"""FIFO receives: claiming groups.

A receive queries the index for available groups (a group whose head is in flight sorts after now, so blocked
groups' backlogs are never read), locks each with a conditional update until the visibility timeout, then reads
the group's head and marks the messages it takes with the claim's token. A mark is fenced on the message's receive
count, its marks and the time of the lock that last marked it, so a claimer that stalled past its lock never takes
a message from the group's next holder; marks run in parallel and only an unbroken run from the head is delivered.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable
from typing import Final

from . import keys, limits, partial, shard_marks
from .errors import MessageTooLarge, QueueError, Throttled
from .fifo_groups import FifoGroups
from .fifo_heads import Stuck
from .keys import MessageRef
from .messages import received
from .models import ReceivedMessage
from .receipts import Receipt, new_token
from .shards import Seen
from .store import ConditionFailed, Item
from .store import groups as group_writes
from .store import messages as writes

_CLAIM_ROUNDS = 3
logger = logging.getLogger("queue_core")


class _Missed:
    """A head this claim could not mark."""


class FifoClaims(FifoGroups):
    """Receives of a FIFO sub-queue: group locks and the marks of the messages they deliver."""

    def receive(self, want: int, visibility: int, order: str, now: int, secret: str) -> list[ReceivedMessage]:
        """After a throttle: what the receive holds, the throttle only when it holds nothing (see `partial`); and
        the throttle also when a group it locked could not be given back (`_let_go`): an answer would leave that
        group held by nobody behind a success, so the receive gives back what it claimed elsewhere and fails, as
        a receive may that leaves a claim in flight until its lock ends; its caller retries."""
        try:
            return self.receive_priority(0, want, visibility, order, now, secret)[0]
        except Throttled as error:
            if partial.left_locked(error):
                self._give_back_claimed(partial.received(error), secret)
                raise partial.original(error) from None
            return partial.answer(error, partial.received(error))

    def _give_back_claimed(self, got: list[ReceivedMessage], secret: str) -> None:
        """A failed receive's claims, each given back unseen (a group's last message first, so none is delivered
        after a later one); one that cannot be is held until its visibility ends, as a failed receive may hold."""
        for message in reversed(got):
            try:
                self.return_unseen(Receipt.decode(message.receipt_handle, secret), self.ctx.now_ms())
            except QueueError as error:
                logger.warning("message %s stays held until its visibility ends: %s", message.message_id, error.message)

    def receive_priority(
        self, priority: int, want: int, visibility: int, order: str, now: int, secret: str
    ) -> tuple[list[ReceivedMessage], bool]:
        """Claims available groups' heads; also says whether any available group was seen."""
        seen = []

        def shard_receive(shard: int, need: int) -> tuple[list[ReceivedMessage], bool]:
            found, saw = self._receive_shard(shard, need, visibility, now, secret)
            seen.append(saw)
            return found, saw

        got = shard_marks.visit(
            self.ctx,
            self.space,
            self.settings.read_shards,
            self.picker,
            0,
            want,
            shard_receive,
            self.first_at,
            hides=visibility > 0,
            returns_in=visibility * 1000,
            conflicts=lambda: self.claim_conflicts,
        )
        return got, any(seen)

    def next_visible(self, priority: int, now: int) -> int | None:
        """When a group is next available: the first group entry of each shard (locks sort at their end)."""
        times = [self.first_at(priority, shard) for shard in range(self.settings.read_shards)]
        return min((at for at in times if at is not None), default=None)

    def first_at(self, priority: int, shard: int) -> int | None:
        """When the shard's first group is available (or its lock ends); None: no group waits there."""
        pk = self._group_pk(shard)
        own = [entry for entry in self.ctx.store.earliest(pk, limit=limits.MAX_PEEK) if entry["pk"] == pk]
        return keys.index_time(own[0]["gsi1sk"]) if own else None

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
            # A partition that still holds groups an earlier count placed here carries that count's load: the part
            # of its throttles their share of its due groups stands for says nothing of the current count, whichever
            # group's claim meets them; an old group's own claim is all the old count's (`autoshard`).
            old = [not self._at_current_place(entry, now) for entry in groups]
            share = sum(old) / len(old) if old else 0.0
            shares = {entry["sk"]: 1.0 if at_old else share for entry, at_old in zip(groups, old, strict=True)}
            if self.gauge.contended:
                random.shuffle(groups)
            position = 0
            throttle: Throttled | None = None
            while len(got) < want and position < len(groups) and throttle is None:
                need = want - len(got)
                batch = groups[position : position + need]
                budgets = [need // len(batch) + (1 if i < need % len(batch) else 0) for i in range(len(batch))]
                conflicts = self.claim_conflicts
                outcomes = self.ctx.store.map_counted(
                    self.ctx.pool,
                    lambda pair, shares=shares: self._claim_group_or_throttle(
                        pair[0], pair[1], visibility, now, secret, shares[pair[0]["sk"]]
                    ),
                    zip(batch, budgets, strict=True),
                )
                self.gauge.record(len(batch), self.claim_conflicts - conflicts)
                for messages in outcomes:
                    if isinstance(messages, Throttled):
                        throttle = partial.kept(throttle, messages)
                    else:
                        got += messages
                position += len(batch)
            if throttle is not None:
                raise partial.after(throttle, got) from throttle
            if not start and got and position >= len(groups):
                return got, Seen.TAKEN  # every available group read was claimed, and the query read them all
            if len(got) >= want or not start:
                break
        return got, saw_candidates

    def _claim_group_or_throttle(
        self, entry: Item, budget: int, visibility: int, now: int, secret: str, at_old_place: float
    ) -> list[ReceivedMessage] | Throttled:
        """`_claim_group`, its throttle returned instead of raised, so that the other groups' claims are kept. A
        lock whose answer was lost may have been applied: that group then waits for its lock to run out, as SQS
        leaves a message whose receive answer was lost. `at_old_place`: the part of its partition's load an
        earlier count's placement puts there (see `Store.at_old_place`)."""
        try:
            with self.ctx.store.at_old_place(at_old_place):
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
            taken, next_head, stuck = self._take_heads(key, token, heads, budget, now)
        except Throttled as error:
            # Nothing marked: the group need not wait for the lock.
            self._let_go(key, lambda: self.finish_group(key, token, now), error)
            raise
        if not taken:
            if stuck is not None:
                self._let_go(key, lambda: self._hold_stuck(key, token, stuck, now))
            elif next_head is not None:
                self._let_go(key, lambda: self.finish_group(key, token, max(now, int(next_head["visible_at"]))))
            elif more:
                self._let_go(key, lambda: self.finish_group(key, token, now))
            else:
                self._let_go(key, lambda: self.finish_group(key, token, now, empty_at=str(group_item["last_seq"])))
            return []
        outcomes = self.ctx.store.map_counted(
            self.ctx.inner_pool, lambda item: self._mark(item, key, token, now), taken
        )
        throttle = next((outcome for outcome in outcomes if isinstance(outcome, Throttled)), None)
        marked, stuck = _in_order(outcomes)
        marked, stuck_body = self._with_bodies(marked, key, token, now)
        stuck = stuck or stuck_body
        self._give_back_unseen([o for o in outcomes if isinstance(o, dict)], marked, now)
        if not marked:
            if stuck is not None:
                self._let_go(key, lambda: self._hold_stuck(key, token, stuck, now), throttle)
            else:
                self._let_go(key, lambda: self.finish_group(key, token, now), throttle)
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

    def _let_go(self, key: dict[str, str], unlock: Callable[[], object], met: Throttled | None = None) -> None:
        """Gives back a group this claim locked and delivers nothing of, by `unlock`. When that fails too, the
        group stays locked for nobody until the lock ends: said in a log line, and raised as a throttle that
        says so (`partial.left_locked`: the receive then fails rather than answer beside it), after the throttle
        `met` that stopped the claim, if any."""
        try:
            unlock()
        except Throttled as error:
            logger.warning(
                "group %s of %s/%s stays locked until its lock ends: %s", key["sk"], self.queue, self.client, error
            )
            raise partial.Interrupted(met or error, [], left_locked=True) from error

    def _mark(
        self, item: Item, group_key: dict[str, str], token: str, now: int
    ) -> Item | _Missed | Stuck | Throttled | None:
        """The message marked as ours; None when it went to the DLQ instead; `MISSED` when another receive
        marked it first or it is gone (a claim whose lock ran out while it read the head: nothing after it may be
        delivered, see `_in_order`); `Stuck` when it can be neither marked nor moved to the DLQ."""
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
            try:
                return None if self._dead_letter(item, group_key, token, now) else Stuck(item)
            except Throttled as error:
                return error


MISSED: Final = _Missed()


def _in_order(outcomes: Iterable[Item | _Missed | Stuck | Throttled | None]) -> tuple[list[Item], Item | None]:
    """The marked messages up to the first one missed or stuck (and that stuck one). Marks run in parallel: when
    a claim whose lock ran out races the next one for the same heads, each may mark some of them, and delivering
    a later message without an earlier one would break the group's order. The ones marked after the stop are
    given back uncounted (`_give_back_unseen`) and delivered by a later claim, in order."""
    marked: list[Item] = []
    for outcome in outcomes:
        if isinstance(outcome, _Missed | Throttled):
            return marked, None
        if isinstance(outcome, Stuck):
            return marked, outcome.item
        if outcome is not None:
            marked.append(outcome)
    return marked, None
