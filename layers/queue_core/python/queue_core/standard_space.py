"""Standard sub-queues: what every part of the engine shares, the message partitions of its shards.

A message is one item `pk = M#{queue}#{client}#{shard}`, `sk = {sequence}`; its index entry
`gsi1sk = {priority band}{visible_at}#{sequence}` says when it is visible.
"""

from __future__ import annotations

from . import keys
from .engine import EngineBase
from .store import Item


class StandardSpace(EngineBase):
    """The shards of one `(queue, client)` of a standard queue: the base of the standard engine's parts."""

    def partition_key(self, shard: int) -> str:
        return self.space.message_pk(shard)


def due_of(items: list[Item]) -> set[tuple[int, int, int]]:
    """(priority, visible_at, shard) of message items: the marks they need (`EngineBase.announce`)."""
    return {(*pair, keys.shard_of(str(item["pk"]))) for item in items for pair in due_pairs([item])}


def due_pairs(items: list[Item], now: int | None = None) -> set[tuple[int, int]]:
    """(priority, visible_at) of message items or index entries: the markers they need (`now`: due by now)."""
    pairs = set()
    for item in items:
        priority, at, _ = keys.message_index_parts(str(item["gsi1sk"]))
        pairs.add((priority, int(at) if now is None else now))
    return pairs
