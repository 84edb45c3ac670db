"""The writes and reads of replay jobs (see `queue_core.replays`): one item per replay, whose `reached` is where
the replay stands in its selection. Every write that moves a replay on is conditional on it still running and on
`reached` being the place its writer read, so no place is passed twice, whoever writes (a repeat after a lost answer,
a second runner, a resumed one)."""

from __future__ import annotations

from typing import Any, Final

from . import Item, Store
from .write import Key, Write, put_new, update

RUNNING: Final = "running"
DONE: Final = "done"
CANCELLED: Final = "cancelled"

_STILL_AT: Final = "phase = :running AND reached = :from"


def start(item: Item) -> Write:
    """A new replay, under an id never used."""
    return put_new(item)


def advance(
    key: Key,
    since: str,
    at: str,
    replayed: int,
    skipped: int,
    failed: int,
    now: int,
    error: str | None = None,
    last: bool = False,
) -> Write:
    """The replay moves from `since` on to `at` (its selection's place of the last message it handled), counting
    what it did on the way. Conditional on the replay running and standing at `since` (a compare-and-set: two
    runners whose reads of the archive differed must not both pass): in the transaction of the new messages, a
    commit applied once is never applied again, and a cancel stops every commit after it. `last`: `at` ends the
    selection, and the replay is done in the same write (a runner that stops right after it leaves nothing
    running for the sweep to find)."""
    sets = ["reached = :at", "updated_at = :now"]
    values: dict[str, Any] = {":at": at, ":from": since, ":now": now, ":running": RUNNING}
    values.update({":r": replayed, ":s": skipped, ":f": failed})
    if error is not None:
        sets.append("last_error = :e")
        values[":e"] = error
    if last:
        sets += ["phase = :done", "finished_at = :now"]
        values[":done"] = DONE
    expression = f"SET {', '.join(sets)} ADD replayed :r, skipped :s, failed :f"
    return update(key, expression, values, condition=_STILL_AT)


def finish(key: Key, now: int) -> Write:
    """The selection is exhausted: done, once, only from running (a cancel that came first stands)."""
    return _ended(key, DONE, now)


def cancel(key: Key, now: int) -> Write:
    """Stops a running replay: every later commit of it fails its condition. Only from running."""
    return _ended(key, CANCELLED, now)


def _ended(key: Key, phase: str, now: int) -> Write:
    return update(
        key,
        "SET phase = :end, finished_at = :now, updated_at = :now",
        {":end": phase, ":now": now, ":running": RUNNING},
        condition="phase = :running",
        returns="ALL_NEW",
    )


def newest(store: Store, pk: str, limit: int) -> list[Item]:
    """A sub-queue's replays, newest first (their ids sort by start time). One Query."""
    items, _, _ = store.query(pk, limit=limit, forward=False, consistent=True)
    return items
