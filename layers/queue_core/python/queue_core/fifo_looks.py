"""FIFO looks and housekeeping: find, peek, count, cancel, purge and sweep, from the group items.

Counts come from the group items alone (one per group, never the messages); a sweep frees groups whose lock ran
out with nobody answering (the head tidied first) and tells whether any group still lives at an old place.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

from . import limits, ready, shard_marks
from .errors import MessageBodyMissing, ValidationError
from .fifo_groups import FifoGroups
from .keys import MessageRef
from .messages import DELAYED, DLQ, IN_FLIGHT, VISIBLE, is_expired, looked_at
from .models import Message, QueueStats, SweepReport, Swept
from .store import ConditionFailed, Item
from .store import groups as group_writes

# The groups per shard whose heads tell the oldest message's age in the stats (a bound on the reads it costs).
_OLDEST_AGE_GROUPS = 25
_TIDY_LOCK_SECONDS = 30  # how long the sweep holds a stuck group while it tidies the group's head


class FifoLooks(FifoGroups):
    """Looks without claiming, and the sweep's part, of a FIFO sub-queue."""

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
        firsts: list[Item] = []
        for shard in range(self.settings.read_shards):
            visible = in_flight = delayed = read = 0
            for group in self.group_items(shard, max_items=limits.STATS_SCAN_LIMIT):
                read += 1
                if read <= _OLDEST_AGE_GROUPS:
                    firsts.append(group)
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
        return replace(total, oldest_age_seconds=self._oldest_age(firsts, now), stuck=still)

    def _oldest_age(self, groups: list[Item], now: int) -> int | None:
        """The age of the oldest head among the groups that wait, of the first `_OLDEST_AGE_GROUPS` group items of
        each shard as the counting read them (bounded: at most that many heads read a shard)."""
        oldest: int | None = None
        for group in groups:
            if "gsi1sk" not in group:
                continue
            heads, _, _ = self.ctx.store.query(self.space.group_messages_pk(group["sk"]), limit=1)
            for head in heads:
                if not is_expired(head, now):
                    sent = int(head["sent_at"])
                    oldest = sent if oldest is None else min(oldest, sent)
        return None if oldest is None else max(0, (now - oldest) // 1000)

    def sweep(self, now: int, report: SweepReport) -> Swept:
        freed, old_place_in_use = self.sweep_groups(now)
        report.groups_freed += freed
        return Swept(old_place_in_use)

    def sweep_groups(self, now: int) -> tuple[int, bool]:
        """Groups whose lock expired (a consumer crashed) get their head tidied and are unlocked. Also tells
        whether any group item still lives at a place of an earlier shard layout (neither moved nor expired):
        until none does, the layout must be kept. Returns (groups freed, an old place in use)."""
        freed, old_place_in_use, available = 0, False, False
        firsts: dict[tuple[int, int], int] = {}
        for shard in range(self.settings.read_shards):
            for group in list(self.group_items(shard)):
                if "gsi1sk" in group:
                    at = int(group["available_at"])
                    firsts[(0, shard)] = min(firsts.get((0, shard), at), at)
                if group.get("tok") and "gsi1sk" in group and int(group["available_at"]) <= now:
                    self._claim_group(group, 0, _TIDY_LOCK_SECONDS, now)
                    freed += 1
                elif "gsi1sk" in group and int(group["available_at"]) <= now:
                    available = True
                if not group.get("moved") and not is_expired(group, now) and not self._at_current_place(group, now):
                    old_place_in_use = True
        if available:  # the backstop of the ready set (see `ready`)
            ready.announce(self.ctx, self.space, [(0, now)])
        shard_marks.backstop(self.ctx, self.space, firsts, self.settings.read_shards)
        return freed, old_place_in_use
