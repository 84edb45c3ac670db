"""Leases: a place at most one holder has until a time, taken with one conditional write and no read.

The sweep holds one so that two sweeps never run over each other; a push consumer's dispatchers hold one of the
consumer's `max_concurrency` slots each. A lease that a crashed holder never gave back runs out by itself.
"""

from __future__ import annotations

import contextlib

from .receipts import new_token
from .store import ConditionFailed, Store
from .store import registry as writes


def take(store: Store, key: dict[str, str], now_ms: int, until_ms: int) -> str | None:
    """The new holder's token, or None while another holder's lease runs. Safe under the SDK's retry after a
    lost answer: the repeat fails its condition on our own lease, which the old item shows by its holder."""
    holder = new_token()
    try:
        store.write(writes.take_lease(key, holder, now_ms, until_ms))
    except ConditionFailed as failed:
        if failed.item is None or failed.item.get("holder") != holder:
            return None
    return holder


def take_keeping(store: Store, key: dict[str, str], now_ms: int, until_ms: int) -> tuple[str, dict] | None:
    """`take`, keeping what else the lease's item holds: the new holder's token and the item as taken, or None.
    After a lost answer the repeat fails its condition on our own lease, and the item it shows is the one taken."""
    holder = new_token()
    try:
        taken = store.write(writes.take_lease_keeping(key, holder, now_ms, until_ms))
    except ConditionFailed as failed:
        if failed.item is None or failed.item.get("holder") != holder:
            return None
        taken = failed.item
    return holder, taken or {}


def give_back_resuming(store: Store, key: dict[str, str], holder: str, resume: str) -> None:
    """Ends the holder's lease early and leaves `resume` on its item for the next holder; nothing once another
    holder has it (that holder's resume point stands)."""
    with contextlib.suppress(ConditionFailed):
        store.write(writes.release_lease_resuming(key, holder, resume))


def give_back(store: Store, key: dict[str, str], holder: str) -> None:
    """Ends the holder's lease early, only if it is still the holder's (a repeat finds it gone: nothing to do)."""
    with contextlib.suppress(ConditionFailed):
        store.write(writes.release_lease(key, holder))


def take_any(store: Store, places: list[dict[str, str]], now_ms: int, until_ms: int) -> tuple[int, str] | None:
    """The first free place of `places` (its position and the holder's token), None when all are held: one
    conditional write per place tried."""
    for position, key in enumerate(places):
        holder = take(store, key, now_ms, until_ms)
        if holder is not None:
            return position, holder
    return None
