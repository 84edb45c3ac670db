"""FIFO group items: where a group is, and the bookkeeping every path on it shares.

A group has one *group item* (`pk = F#{queue}#{client}#{shard}`, `sk = {group}`); after a change of `shards` it may
still live at an old place until it is empty there (`Placement`). The item holds the group's lock (`tok`,
`available_at`), its sequence fence (`last_seq`) and its count. The writes here are the ones every other part
composes: unlocking (`finish_group`, whose token in `unlocked_by` tells a repeat from a second unlock) and counting
a removal once (`gone`, a set of sequences), so that each is safe when DynamoDB applied it and its answer was lost.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from . import keys, limits
from .engine import EngineBase
from .keys import MessageRef
from .store import ConditionFailed, Item, Write
from .store import groups as group_writes
from .store import messages as writes


class FifoGroups(EngineBase):
    """The identity of one `(queue, client)` of a FIFO queue and its groups' places and bookkeeping: the base of
    the FIFO engine's parts (`FifoQueue`)."""

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

    def _placement(self, group: str, now: int, settings_read: bool = False) -> Placement:
        """Where a send goes. Without a kept earlier layout: the group's shard, no read. With one: the old place
        while the group is active there (one read of the old places and the new one), else the new place, moving
        the group's sequence along and marking the old items moved (only if each is still empty and at the
        sequence read), so no late send can revive them and no sequence is handed out twice.

        A group that left every place these settings know of (an old place marked moved, none active, nothing of
        it at the new place) went where only newer settings place it: these are behind a later change of
        `shards` (a container thawed with old settings, a call that stalled). Placed by them, the send would
        start the group again at a place of its own, its sequence from the start; the settings are read again
        first (once)."""
        current = self._group_key(group, now=now)
        olds = self._old_group_keys(group, now)
        if not olds:
            return Placement(current, True)
        read = self.ctx.store.batch_get([*olds, current])
        at_current = [item for item in read if item["pk"] == current["pk"] and not item.get("moved")]
        read = [item for item in read if item["pk"] != current["pk"]]
        if not settings_read and not at_current and all(item.get("moved") for item in read) and read:
            self.settings = self.ctx.registry.get(self.queue, fresh=True)
            return self._placement(group, now, settings_read=True)
        found = [item for item in read if not item.get("moved")]
        active = [item for item in found if "gsi1sk" in item]
        if active:
            return Placement({"pk": active[0]["pk"], "sk": group}, False, known_last_seq=int(active[0]["last_seq"]))
        moves = [
            group_writes.move_away({"pk": item["pk"], "sk": group}, int(item["last_seq"]), self._group_expires_at(now))
            for item in found
            if "last_seq" in item
        ]
        base = max((int(item.get("last_seq", 0)) for item in found), default=0)
        return Placement(current, True, base, moves)

    def _group_expires_at(self, now: int) -> int:
        """Until when a group item written now lives (epoch seconds): its messages' retention, once more in the
        DLQ, and a dedup window; never less than items stored under an earlier, longer retention may live (a send
        after the retention was lowered would otherwise shorten the item's time below a message's, and the item,
        expired, would no longer fence the group's sequence nor keep its layout)."""
        lifetime = now // 1000 + 2 * self.settings.retention_seconds + limits.MAX_DEDUP_WINDOW_SECONDS
        return max(lifetime, -(-self.settings.items_live_until // 1000))

    def group_items(self, shard: int, max_items: int | None = None) -> Iterable[Item]:
        return self.ctx.store.query_all(self._group_pk(shard), consistent=True, max_items=max_items)

    def get_keys(self, ref: MessageRef) -> list[dict[str, str]]:
        """The message and every place its group item may be (more than one only after a change of `shards`)."""
        group = ref.group or ""
        now = self.ctx.now_ms()
        return [ref.live_key(self.space), self._group_key(group, now=now), *self._old_group_keys(group, now)]

    def finish_group(
        self,
        key: dict[str, str],
        token: str,
        available_at: int,
        empty_at: str = "",
        removed: int = 0,
        counted_once: str | None = None,
        removed_seq: str | None = None,
        redelivered: bool = False,
    ) -> bool:
        """Unlocks a group: out of the index when it is known to be empty (no send since `empty_at`), else
        available again at `available_at`. `removed` messages leave its count (`counted_once`: see
        `group_writes.ack`; `removed_seq`, `redelivered`: see `group_writes.unlock`). False when the lock had
        passed to another claim (nothing written). The unlock leaves its token in `unlocked_by`, so a repeat of it
        (an answer lost, the SDK's retry) is known for done and never counted twice."""
        if empty_at:
            try:
                self.ctx.store.write(group_writes.unlock_empty(key, token, int(empty_at)))
                return True
            except ConditionFailed as failed:
                if failed.item is None or failed.item.get("tok") != token:
                    return unlocked_by(failed.item, token)
        try:
            self.ctx.store.write(
                group_writes.unlock(key, token, available_at, removed, counted_once, removed_seq, redelivered)
            )
        except ConditionFailed as failed:
            if counted_once and holds_group(failed.item, token) and counted_once in failed.item.get("gone", set()):
                # The removal was counted already, by the call that made it: unlock without counting.
                return self.finish_group(key, token, available_at)
            if not unlocked_by(failed.item, token):
                return False
        # The group is available again: queue-wide receives must know when, whatever marker the client has.
        self.announce([(0, available_at, keys.shard_of(key["pk"]))])
        return True

    def _count_removed(
        self, group_key: dict[str, str], sequence: str, unless_a_holder_did: bool = False, in_order: bool = False
    ) -> bool:
        """Takes a message out of the group's count once, however often it is said, by whichever path (`gone` is
        a set, emptied when the group is empty; `unless_a_holder_did`, `in_order`: see
        `group_writes.count_removed`)."""
        try:
            self.ctx.store.write(group_writes.count_removed(group_key, sequence, unless_a_holder_did, in_order))
        except ConditionFailed as failed:
            return group_writes.counted(failed.item, sequence)
        return True

    def _remove_expired(self, item: Item, group_key: dict[str, str], now: int, in_order: bool = False) -> None:
        """Counted even when the delete finds nothing: it may have been this delete, its answer lost; a message
        another caller removed and counted is not counted twice (its sequence is in `gone`, or not above
        `counted_to`). `in_order`: the group's head, the claim having passed over nothing before it: the count
        moves `counted_to` up (see `group_writes.count_removed`)."""
        try:
            self.ctx.bodies.discard(
                [self.ctx.store.write(writes.delete_expired({"pk": item["pk"], "sk": item["sk"]}, now))]
            )
        except ConditionFailed as failed:
            if failed.item is not None:
                return
        self._count_removed(group_key, item["sk"], in_order=in_order)


@dataclass(frozen=True)
class Placement:
    """The group item a send updates; `current` is False for an old place the group is still active at."""

    key: dict[str, str]
    current: bool
    base: int = 0
    moves: list[Write] = field(default_factory=list)
    # The group's last sequence as read at an old place it is active at (the fence's first guess).
    known_last_seq: int | None = None


def holds_group(group_item: Item | None, token: str) -> bool:
    return group_item is not None and group_item.get("tok") == token


def unlocked_by(group_item: Item | None, token: str) -> bool:
    """Whether this claim's unlock was already applied (its answer lost): nobody holds the group and the last
    unlock was ours."""
    return group_item is not None and "tok" not in group_item and group_item.get("unlocked_by") == token
