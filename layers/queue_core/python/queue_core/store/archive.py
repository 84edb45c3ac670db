"""The archive's writes and reads (see `queue_core.archive`): one put per acknowledged message, in the
transaction of its acknowledgement, and the bounded queries that list and find archived messages."""

from __future__ import annotations

from typing import Any

from . import Item, Store
from .write import Write, put_new


def keep(item: Item) -> Write:
    """An archived message, only under a key never used: the acknowledgement's own transaction writes it, so a
    repeat of that transaction (the SDK's after a lost answer, or ours with its client request token) never
    archives it twice, and a delete that finds its message gone archives nothing."""
    return put_new(item)


def page(store: Store, pk: str, low: str, high: str, forward: bool, limit: int) -> list[Item]:
    """One partition's archived messages whose sort key lies in [`low`, `high`], at most `limit`, in time order
    (newest first unless `forward`). One Query, strongly consistent."""
    values: dict[str, Any] = {":lo": low, ":hi": high}
    items, _, _ = store.query(
        pk, sk_condition="sk BETWEEN :lo AND :hi", values=values, limit=limit, forward=forward, consistent=True
    )
    return items


def by_id(store: Store, index_pk: str, message_id: str) -> list[Item]:
    """Every archived copy of one message (one for each time it was acknowledged): an index Query, then the items."""
    entries, _, _ = store.query(index_pk, index=True, sk_condition="gsi1sk = :id", values={":id": message_id})
    keys = [{"pk": entry["pk"], "sk": entry["sk"]} for entry in entries]
    return store.batch_get(keys) if keys else []
