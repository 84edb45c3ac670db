"""Standard receives: claims of visible messages, and the heads that go to the DLQ instead.

A receive queries the index for entries at or before now, so it reads only visible messages whatever sits in
flight or delayed, and claims each candidate with a conditional update that moves it past now. Visibility is
exact: an expired claim is visible again by itself. A candidate past its receive limit, or whose body is gone,
leaves for the DLQ in one transaction instead of being delivered.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time

from . import keys, limits, partial, reasons, shard_marks
from .errors import MessageBodyMissing, MessageNotFound, MessageTooLarge, QueueError, Throttled, ValidationError
from .keys import MessageRef
from .messages import MOVE_TRIES, dead_letter, is_expired, leaving_for_dlq, read_again, received
from .models import ReceivedMessage
from .receipts import Receipt, new_token
from .shards import Seen
from .standard_space import StandardSpace
from .store import ConditionFailed, Item, TransactionCancelled
from .store import messages as writes

_CLAIM_ROUNDS = 3

logger = logging.getLogger("queue_core")


class StandardClaims(StandardSpace):
    """Receives of a standard sub-queue: claims, and moves to the DLQ by the receive limit."""

    def receive(self, want: int, visibility: int, order: str, now: int, secret: str) -> list[ReceivedMessage]:
        """The highest priority with visible messages first; a lower one only for what is still wanted. After a
        throttle it stops (the lower priorities share the throttled shards' partitions) and answers what it holds
        (see `partial`)."""
        got: list[ReceivedMessage] = []
        began = time.monotonic()
        bands = self._receive_bands(began)
        visited: set[int] = set()
        yielded: set[int] = set()  # each priority gives way once: a second visit goes on whatever it reads
        while bands:
            priority = bands.pop(0)
            visited.add(priority)
            try:
                found, _ = self.receive_priority(
                    priority, want - len(got), visibility, order, now, secret, began, yields=priority not in yielded
                )
            except shard_marks.HigherPriority as higher:
                # Its own read names a priority its plan lacked: that one first, then this one again, from the
                # names the read gave (the process's list may be replaced meanwhile by another receive's older read).
                visited.discard(priority)
                yielded.add(priority)
                bands = sorted({*bands, *higher.priorities, priority} - visited, reverse=True)
                continue
            except Throttled as error:
                return partial.answer(error, got + partial.received(error))
            got += found
            if len(got) >= want:
                return got
            # Marks read during this receive (its warm shard gave nothing, or the shards it listed) may name a
            # priority the list it began with did not: visited in its order among the rest.
            later = [priority for priority in self._later_bands(began) if priority not in visited]
            bands = sorted({*bands, *later}, reverse=True)
        return got

    def receive_priority(
        self,
        priority: int,
        want: int,
        visibility: int,
        order: str,
        now: int,
        secret: str,
        began: float | None = None,
        yields: bool = False,
    ) -> tuple[list[ReceivedMessage], bool]:
        """Claims from one priority; also says whether any candidate was seen (False: nothing visible). `began`:
        when the receive began (`time.monotonic()`), so that marks it read count as fresh; `yields`: a higher
        priority those marks name is raised (`shard_marks.visit`)."""
        seen = []

        def shard_receive(shard: int, need: int) -> tuple[list[ReceivedMessage], bool]:
            found, saw = self._receive_shard(shard, need, visibility, order, now, secret, priority)
            seen.append(saw)
            return found, saw

        got = shard_marks.visit(
            self.ctx,
            self.space,
            self.settings.read_shards,
            self.traffic.picker_for(priority),
            priority,
            want,
            shard_receive,
            self.first_at,
            began,
            hides=visibility > 0,
            returns_in=visibility * 1000,
            conflicts=lambda: self.claim_conflicts,
            yields=yields,
        )
        return got, any(seen)

    def priorities(self) -> list[int]:
        return self.traffic.bands(self._read_bands)

    def _later_bands(self, began: float) -> list[int]:
        """The priorities of the marks read during the receive that began at `began` (none read: none)."""
        if self.settings.read_shards <= 1:
            return []
        return shard_marks.priorities_read_since(self.ctx, self.space, began)

    def _receive_bands(self, began: float) -> list[int]:
        """The priorities a receive visits. A sub-queue of several shards takes them from its shard marks, which
        its receive reads anyway (the ready markers' query besides cost each receive a second or more after the
        last one a query more); one of one shard, or whose marks are throttled, from the ready markers."""
        if self.settings.read_shards > 1:
            marked = shard_marks.priorities(self.ctx, self.space, began)
            if marked is not None:
                return marked
        return self.priorities()

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
        times = [self.first_at(priority, shard) for shard in range(self.settings.read_shards)]
        return min((at for at in times if at is not None), default=None)

    def first_at(self, priority: int, shard: int) -> int | None:
        """When the shard's first entry of `priority` is due (visible, in flight or delayed); None: it has none."""
        pk = self.partition_key(shard)
        entries = self.ctx.store.earliest(pk, priority)
        if entries and entries[0]["pk"] != pk:
            entries = self.ctx.store.earliest(pk, priority, limit=limits.MAX_PEEK)
        own = [entry for entry in entries if entry["pk"] == pk]
        return keys.index_time(own[0]["gsi1sk"]) if own else None

    def _receive_shard(
        self, shard: int, want: int, visibility: int, order: str, now: int, secret: str, priority: int = 0
    ) -> tuple[list[ReceivedMessage], bool]:
        got: list[ReceivedMessage] = []
        saw_candidates = False
        start = None
        partition = self.partition_key(shard)
        tried: set[str] = set()  # a claim for no time moves its entry to now, where a later round would read it again
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
            own = [item for item in items if item["pk"] == partition and item["sk"] not in tried]
            tried |= {item["sk"] for item in own}
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
            if not start and got and len(candidates) <= need:
                return got, Seen.TAKEN  # every due entry read was tried, and the query read them all
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
            outcomes = self.ctx.store.map_counted(
                self.ctx.pool, lambda item: self._claim_or_throttle(item, visibility, now, secret), batch
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
                self._to_dlq(key, int(entry.get("receive_count", 0)), now, why="too large to be received")
            return None
        assert item is not None
        receipt = Receipt(self.queue, self.client, ref.message_id, token, int(item["receive_count"]))
        try:
            return received(item, ref, receipt.encode(secret), self.ctx.bodies, self.client)
        except MessageBodyMissing:
            # Nobody could process it: to the DLQ (where it can be looked at and cancelled), never delivered.
            logger.warning("message %s: its offloaded body is gone; moved to the DLQ", ref.message_id)
            self._to_dlq(key, int(item["receive_count"]), now, item, held=True, why="body missing")
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

    def delete_expired(self, key: dict[str, str], now: int) -> bool:
        try:
            self.ctx.bodies.discard([self.ctx.store.write(writes.delete_expired(key, now))])
        except ConditionFailed:
            return False
        return True

    def _to_dlq(
        self,
        key: dict[str, str],
        receive_count: int,
        now: int,
        old: Item | None = None,
        held: bool = False,
        why: str | None = None,
        too_large_raises: bool = False,
    ) -> bool:
        """Atomically: the message leaves the queue and enters the DLQ, or neither happens. A copy too large to
        store leaves the message where it is (False, logged), or raises `MessageTooLarge` (`too_large_raises`: an
        operator's move, told why). Reads the message
        only when the caller does not have it (the index holds no body). A `held` message is the caller's own
        claim (`receive_count` is the claim's), moved while it is in flight, its attempt ended by `why`. The copy
        carries the message's attempts and why it moved (`reasons`): when the holder of its last attempt, whose
        claim ran out, released it or noted why since it was read, the move is made again from the message as it
        is (`read_again`), so the copy carries that reason."""
        ref = MessageRef.of_live(key)
        current = old or self.ctx.store.get(key)
        settings = self.settings
        for _ in range(MOVE_TRIES):
            if current is None or int(current["receive_count"]) != receive_count:
                return False
            if int(current["visible_at"]) > now and not held:
                return False
            ended = reasons.entry(receive_count, reasons.FAILED, why, now) if held and why else None
            dlq = dead_letter(
                current,
                ref.dlq_key(self.space),
                now,
                settings.retention_seconds,
                settings.max_receive_count,
                ended,
                why,
            )
            try:
                leave = leaving_for_dlq(key, current, None if held else now)
                self.ctx.store.transact_writes([leave, writes.store_new(dlq)])
            except TransactionCancelled as cancelled:
                current = read_again(cancelled)  # a late holder's release or note since the read: moved as it is
                continue
            except MessageTooLarge:
                if too_large_raises:
                    raise
                if not held:
                    self._hold_stuck(key, current, now)
                return False
            return True
        return False

    def _hold_stuck(self, key: dict[str, str], item: Item, now: int) -> None:
        """A message past its receive limit whose DLQ copy (the message, its attempts and why it moved) DynamoDB
        refuses for its size is neither delivered nor dropped: it leaves sight until `limits.STUCK_RETRY_SECONDS`
        later, when a receive or the sweep tries the move again, and is reported (this log line, `stuck` in stats,
        the sweeper's metric) until it is cancelled or expires. Left visible, every receive that met it read it and
        sent the refused transaction again, and a few of them at a shard's front hid the messages behind them."""
        ref = MessageRef.of_live(key)
        logger.error(
            "message %s of %s/%s cannot be moved to the DLQ, its copy is too large: it stays out of sight, tried "
            "again every %d s, until it is cancelled or expires",
            ref.message_id,
            self.queue,
            self.client,
            limits.STUCK_RETRY_SECONDS,
        )
        retry_at = now + limits.STUCK_RETRY_SECONDS * 1000
        try:
            self.ctx.store.write(writes.hold_stuck(key, int(item["receive_count"]), now, retry_at, ref.priority))
        except ConditionFailed as failed:
            if failed.item is None or int(failed.item["visible_at"]) != retry_at:
                return  # received, moved or cancelled since it was read: not this hold's
        self.announce([(ref.priority, retry_at, ref.shard)])

    def move_to_dlq(self, ref: MessageRef, now: int) -> bool:
        key = ref.live_key(self.space)
        item = self.ctx.store.get(key)
        if item is None or is_expired(item, now):
            raise MessageNotFound(f"message {ref.message_id!r} not found")
        if not self._to_dlq(
            key, int(item["receive_count"]), now, item, why="moved by an operator", too_large_raises=True
        ):
            raise ValidationError("the message is in flight; move it when it is visible again")
        return True
