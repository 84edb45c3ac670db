"""Standard sub-queues: what every part of the engine shares, the message partitions of its shards.

A message is one item `pk = M#{queue}#{client}#{shard}`, `sk = {sequence}`; its index entry
`gsi1sk = {priority band}{visible_at}#{sequence}` says when it is visible.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import keys, limits, shard_marks
from .engine import EngineBase
from .store import Item


class StandardSpace(EngineBase):
    """The shards of one `(queue, client)` of a standard queue: the base of the standard engine's parts."""

    def partition_key(self, shard: int) -> str:
        return self.space.message_pk(shard)

    def shard_next_visible(self, shard: int, priority: int, now: int) -> int | None:
        """When `shard` next has a message of `priority`: one item read (more only past index entries of items
        outside the partition)."""
        pk = self.partition_key(shard)
        entries = self.ctx.store.earliest(pk, priority)
        if entries and entries[0]["pk"] != pk:
            entries = self.ctx.store.earliest(pk, priority, limit=limits.MAX_PEEK)
        own = [entry for entry in entries if entry["pk"] == pk]
        return keys.index_time(own[0]["gsi1sk"]) if own else None

    def mark_shards(self, placed: Iterable[tuple[int, int, int]], backstop: bool = False) -> None:
        """Shard marks for `(priority, visible_at, shard)` just written, after the write (see `shard_marks`)."""
        shard_marks.announce(self, placed, backstop)

    def mark_items(self, items: list[Item], now: int | None = None, backstop: bool = False) -> None:
        """Shard marks for message items or index entries just written (`now`: as due by now)."""
        self.mark_shards(shard_marks.placed(items, lambda item: keys.shard_of(str(item["pk"])), now), backstop)


def due_pairs(items: list[Item], now: int | None = None) -> set[tuple[int, int]]:
    """(priority, visible_at) of message items or index entries: the markers they need (`now`: due by now)."""
    pairs = set()
    for item in items:
        priority, at, _ = keys.message_index_parts(str(item["gsi1sk"]))
        pairs.add((priority, int(at) if now is None else now))
    return pairs
