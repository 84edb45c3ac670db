"""Named writes on shard marks, the set of shards other than the home one that may hold visible messages.

A mark is put without a condition, as a ready marker is (a drain's reminder excepted): besides its keys it carries
`put_at` (when it was put, read after the write it announces) and `covers` (up to when the process that put it
may store more messages in that shard without putting it again), and it has no index entry, so a put costs one
write unit and the SDK's repeat of it is harmless. A mark leaves only through `drop`, on the condition that it was
not put again since it was read; the caller then looks at the shard again (see `shard_marks`).
"""

from __future__ import annotations

from typing import Any

from .write import Key, Write, delete, put, update


def mark(item: dict[str, Any]) -> Write:
    return put(item)


def drop(key: Key, put_at: int) -> Write:
    """The mark as read leaves, answering it as it was (its `covers`); a mark put again since stays, and a repeat
    finds it gone."""
    return delete(key, condition="put_at = :put", values={":put": put_at})


def remind(key: Key, put_at: int) -> Write:
    """A mark for a later time, written where none is; one already there (a send's, another drain's reminder)
    serves as well and keeps what it covers (its `covers`). No condition: a repeat writes nothing new."""
    values = {":put": put_at}
    return update(key, "SET put_at = if_not_exists(put_at, :put), covers = if_not_exists(covers, :put)", values)
