"""A global secondary index that lags behind its table, as DynamoDB's does.

moto answers a query on a global secondary index from the table as it is now: every write is in the index the
moment it is acknowledged. DynamoDB propagates writes to a global secondary index asynchronously (usually well
under a second, with no bound promised), and an index cannot be read consistently: a query may miss an item just
written, and may still return an entry that was removed or changed since, with its old key and its old projected
attributes.

While an `IndexLag` is active, every write request that changes an item's entry in a lagged index is recorded
(the time, the item's key, its entry before and after); a query on that index is answered from the index as it
was `lag` ago: the table now, with every recorded change younger than that undone. Nothing is re-read from the
table, so a projected attribute is as stale as the key that carries it. Time is the given clock (the tests' fake
clock, in seconds) or, without one, the count of index changes recorded: `IndexLag(3)` hides the last three.

Only the test process's in-process moto is lagged (requests are serialized, see `dq.embedded_dynamodb`); the
patch is a no-op while no lag is active.
"""

from __future__ import annotations

import copy
import functools
import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from queue_core.table import INDEX_NAME

from dq.embedded_dynamodb import _LOCK, MOTO_VERSIONS, require_moto_version

_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
_active: IndexLag | None = None


@dataclass(frozen=True)
class _Change:
    at: float
    key: tuple[Any, Any]
    old: Any  # the projected entry before the write, None when the item was not in the index


class IndexLag:
    """Index queries see the index as it was `lag` ago (seconds on `clock`, or index changes without one)."""

    def __init__(self, lag: float, clock: Callable[[], float] | None = None, index: str = INDEX_NAME) -> None:
        self.lag = lag
        self.index = index
        self._ticks = itertools.count(1)
        self._tick = 0.0
        self._clock = clock
        self._history: dict[str, list[_Change]] = {}
        self._settled = 0
        # What the lag did, for the runs to report: queries answered, and those that differed from the table now.
        self.queries = 0
        self.stale_answers = 0

    def now(self) -> float:
        return self._clock() if self._clock is not None else self._tick

    def __enter__(self) -> IndexLag:
        global _active
        _lag_index_queries()
        if _active is not None:
            raise RuntimeError("an index lag is already active")
        _active = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _active
        _active = None

    @contextmanager
    def settled(self) -> Iterator[None]:
        """Queries inside see the index caught up with the table: what a reader sees after a quiet while."""
        self._settled += 1
        try:
            yield
        finally:
            self._settled -= 1

    # Called under the request lock by the patched handler.
    def _entries(self, table: Any, keys: list[tuple[Any, Any]]) -> dict[tuple[Any, Any], Any]:
        index = table.get_index(self.index)
        return {key: _entry(table, index, key) for key in keys}

    def _record(self, table: Any, before: dict[tuple[Any, Any], Any], after: dict[tuple[Any, Any], Any]) -> None:
        changed = [key for key in before if _attrs(before[key]) != _attrs(after[key])]
        if not changed:
            return
        self._tick = float(next(self._ticks))
        now = self.now()
        history = self._history.setdefault(table.name, [])
        history[:] = [change for change in history if change.at > now - self.lag]
        history += [_Change(now, key, before[key]) for key in changed]

    def _lagged_items(self, table: Any) -> list[Any] | None:
        """The table's items as the index saw them `lag` ago, or None when that is the table now."""
        if self._settled:
            return None
        horizon = self.now() - self.lag
        then: dict[tuple[Any, Any], Any] = {}
        for change in self._history.get(table.name, []):
            if change.at > horizon and change.key not in then:
                then[change.key] = change.old
        if not then:
            return None
        items = [item for item in table.all_items() if (item.hash_key, item.range_key) not in then]
        return items + [old for old in then.values() if old is not None]


def _entry(table: Any, index: Any, key: tuple[Any, Any]) -> Any:
    """The item's entry in the index (a projected copy), or None when the item is not in it."""
    item = table.get_item(*key)
    if item is None or any(item.attrs.get(attribute) is None for attribute in index.schema_key_attrs):
        return None
    return index.project(copy.deepcopy(item))


def _attrs(entry: Any) -> Any:
    return None if entry is None else entry.to_json()["Attributes"]


def _keys_of(action: str, body: dict[str, Any], backend: Any) -> dict[str, list[tuple[Any, Any]]]:
    """The keys a write request names, per table."""
    named: list[tuple[str, dict[str, Any]]] = []
    if action in ("PutItem", "UpdateItem", "DeleteItem"):
        named.append((body["TableName"], body.get("Key") or body["Item"]))
    elif action == "BatchWriteItem":
        for table_name, requests in body.get("RequestItems", {}).items():
            for request in requests:
                for kind in request.values():
                    named.append((table_name, kind.get("Key") or kind["Item"]))
    else:
        for entry in body.get("TransactItems", []):
            for kind in entry.values():
                if "TableName" in kind and ("Key" in kind or "Item" in kind):
                    named.append((kind["TableName"], kind.get("Key") or kind["Item"]))
    from moto.dynamodb.models.dynamo_type import DynamoType

    keys: dict[str, list[tuple[Any, Any]]] = {}
    for table_name, key in named:
        try:
            table = backend.get_table(table_name)
            hash_key = DynamoType(key[table.hash_key_attr])
            range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
        except Exception:  # a malformed request, or no such table: moto answers it with its own error
            continue
        keys.setdefault(table_name, []).append((hash_key, range_key))
    return keys


def _lag_index_queries() -> None:
    """Idempotent: wraps moto's DynamoDB request dispatch so that an active `IndexLag` records writes and answers
    index queries."""
    require_moto_version("index_lag", MOTO_VERSIONS)
    from moto.dynamodb.responses import DynamoHandler

    if getattr(DynamoHandler.call_action, "_index_lag", False):
        return
    original = DynamoHandler.call_action

    @functools.wraps(original)
    def call_action(self: Any) -> Any:
        lag = _active
        if lag is None:
            return original(self)
        with _LOCK:
            action = self._get_action()
            body = getattr(self, "params", None) or {}
            if action in _WRITES:
                return _write(self, original, lag, action, body)
            if action == "Query" and body.get("IndexName") == lag.index:
                return _query(self, original, lag, body)
            return original(self)

    call_action._index_lag = True  # type: ignore[attr-defined]
    DynamoHandler.call_action = call_action  # type: ignore[method-assign]


def _write(handler: Any, original: Callable[[Any], Any], lag: IndexLag, action: str, body: dict[str, Any]) -> Any:
    backend = handler.dynamodb_backend
    named = _keys_of(action, body, backend)
    tables = {name: backend.get_table(name) for name in named}
    before = {name: lag._entries(tables[name], keys) for name, keys in named.items()}
    try:
        return original(handler)
    finally:
        for name, keys in named.items():
            lag._record(tables[name], before[name], lag._entries(tables[name], keys))


def _query(handler: Any, original: Callable[[Any], Any], lag: IndexLag, body: dict[str, Any]) -> Any:
    table = handler.dynamodb_backend.get_table(body["TableName"])
    items = lag._lagged_items(table)
    lag.queries += 1
    if items is None:
        return original(handler)
    lag.stale_answers += 1
    table.all_items = lambda: items
    try:
        return original(handler)
    finally:
        del table.all_items
