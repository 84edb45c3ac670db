"""Named writes on shard marks (formats in `keys.Space.shard_mark`; the rules in `shard_marks`).

A mark's `put_at` only ever rises: a put lands only where no mark is or where the one there was put earlier, so
the SDK's repeat of a put, or a put delayed behind a later one, never makes a mark look older than the newest
write that relies on it. A drop lands only on a mark put before its cutoff, the time before which every write
the mark announced shows in the index the dropping receive read.
"""

from __future__ import annotations

from typing import Any

from .write import Key, Write, delete, put


def mark(item: dict[str, Any]) -> Write:
    return put(item, condition="attribute_not_exists(pk) OR put_at < :put", values={":put": item["put_at"]})


def drop(key: Key, cutoff: int) -> Write:
    return delete(key, condition="put_at <= :cutoff", values={":cutoff": cutoff})
