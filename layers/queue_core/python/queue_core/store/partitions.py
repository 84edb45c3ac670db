"""Which partitions a request acts on, as far as a throttle it met says anything of the shard count.

A throttle met on a partition no shard count splits (`keys.split_by_shards`: a FIFO group's own messages, one
partition per group; the shard marks, one per sub-queue; dedup buckets, ready markers, load reports, the settings,
dead letters) is one more shards cannot relieve: the store counts it apart (`Store.unsharded_throttles`), never as
a key's. Counted as a key's, a hot group's claims met one at each message they marked and refused mark puts one at
each send, and either grew a queue of 4 shards to 16 for nothing (and more shards put more marks).

Read only when a throttle is counted, never on a request that went through. Never raises: it reads whatever a
caller put in a transaction, a malformed entry included (the SDK refuses that).
"""

from __future__ import annotations

from typing import Any

from ..keys import split_by_shards


def off_shards(request: dict[str, Any], refused: list[int] | None = None) -> bool:
    """Whether a throttle of `request` (the keyword arguments of its call) is one more shards cannot relieve: none
    of the items it acts on is on a shard's key. `refused`: the positions of a cancelled transaction's throttled
    parts, the only ones that count (any not among its parts: a key's, as before)."""
    parts = _parts(request)
    if refused is not None:
        if any(position >= len(parts) for position in refused):
            return False
        parts = [parts[position] for position in refused]
    return not any(_on_a_shard(part) for part in parts)


def _on_a_shard(request: Any) -> bool:
    """Whether a request of one item, a query (`Store.query`'s `:qpk`), or one part of a transaction or a batch (the
    `Put`, `Update`, `Delete`, `ConditionCheck`, `PutRequest` or `DeleteRequest` itself) acts on a shard's key."""
    if not isinstance(request, dict):
        return False
    values = request.get("ExpressionAttributeValues") or {}
    key = request.get("Key") or request.get("Item") or {"pk": values.get(":qpk") if isinstance(values, dict) else None}
    pk = key.get("pk") if isinstance(key, dict) else None
    return isinstance(pk, dict) and split_by_shards(str(pk.get("S", "")))


def _parts(request: dict[str, Any]) -> list[Any]:
    """The items a request acts on, each as `_on_a_shard` reads one: a transaction's and a batch's one by one."""
    if "TransactItems" in request:
        return [_inner(part) for part in _listed(request["TransactItems"])]
    if "RequestItems" not in request:
        return [request]
    asked = request["RequestItems"]
    parts: list[Any] = []
    for each in asked.values() if isinstance(asked, dict) else []:
        if isinstance(each, dict):  # a BatchGetItem's table: its keys
            parts += [{"Key": key} for key in _listed(each.get("Keys"))]
        else:  # a BatchWriteItem's table: its put and delete requests
            parts += [_inner(entry) for entry in _listed(each)]
    return parts


def _listed(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _inner(entry: Any) -> Any:
    """What a transaction's or a batch's entry (`{"Put": {...}}`) holds; None when it is not such an entry."""
    return next(iter(entry.values()), None) if isinstance(entry, dict) else None
