"""Counts what every DynamoDB call costs, with a botocore event hook on one client.

The hook sees each request (`before-call.dynamodb`) and its answer (`after-call.dynamodb`), so it works the same
against moto in-process or any endpoint, and it needs no help from the code under test. For each call it records
the operation, the partition keys touched (table and index partitions apart), items read (`ScannedCount`; items
returned for Get and BatchGet), items returned, failed conditions (`ConditionalCheckFailedException`, and each
`ConditionalCheckFailed` reason of a cancelled transaction), throttles (per attempt, from `needs-retry`), request
and item sizes, and write and read units.

Units are computed from item sizes by DynamoDB's published rules (`bench.sizes`), never taken from the backend
(moto's `ConsumedCapacity` is wrong). To know what a write did to the index, the meter keeps its own image of
every item it has seen written or read: the new image comes from the request (`Item`), from `ReturnValues` when
the caller asked, or from replaying the `UpdateExpression` (`bench.update_expression`). An index write is counted
per index entry: a new entry 1, a changed index key 2 (delete + put), a changed projected attribute 1, a removed
entry 1. Approximations: items the meter never saw are taken as new; a
query's items that a filter dropped are sized as the mean of the ones it returned (or of the partition's known
items); index entries are written at the standard rate, also after a transaction; a cancelled transaction is
charged its prepare phase only (one standard write per item it named, no index writes).
"""

from __future__ import annotations

import base64
import json
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .sizes import TRANSACTION_FACTOR, Item, item_size, read_units, write_units
from .update_expression import Unsupported, apply_update

THROTTLE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "ThrottlingError",
    }
)
_PENDING = "bench.meter.request"

Space = str  # a table's name, or "table/index"
PartitionKey = tuple[Space, str]


@dataclass(frozen=True)
class IndexShape:
    """What a global secondary index keys on and carries: enough to tell which writes touch it."""

    name: str
    key: tuple[str, ...]
    projection: str
    included: frozenset[str] = frozenset()

    def holds(self, item: Item | None) -> bool:
        """DynamoDB indexes only items that have every key attribute of the index (sparse indexes)."""
        return bool(item) and all(name in item for name in self.key)

    def entry(self, item: Item, table_key: tuple[str, ...]) -> Item:
        if self.projection == "ALL":
            return item
        kept = set(self.key) | set(table_key)
        if self.projection == "INCLUDE":
            kept |= self.included
        return {name: value for name, value in item.items() if name in kept}


@dataclass(frozen=True)
class TableShape:
    key: tuple[str, ...]
    indexes: tuple[IndexShape, ...] = ()

    @classmethod
    def from_definition(cls, definition: dict[str, Any]) -> TableShape:
        """From `CreateTable` arguments, as a request carries them."""
        indexes = []
        for index in definition.get("GlobalSecondaryIndexes", []):
            projection = index.get("Projection", {})
            indexes.append(
                IndexShape(
                    name=index["IndexName"],
                    key=_key_names(index["KeySchema"]),
                    projection=projection.get("ProjectionType", "ALL"),
                    included=frozenset(projection.get("NonKeyAttributes", [])),
                )
            )
        return cls(key=_key_names(definition["KeySchema"]), indexes=tuple(indexes))

    def key_of(self, item: Item) -> tuple[str, ...]:
        return tuple(json.dumps(item[name], sort_keys=True) for name in self.key)


def _key_names(schema: list[dict[str, str]]) -> tuple[str, ...]:
    ordered = sorted(schema, key=lambda part: part["KeyType"] != "HASH")
    return tuple(part["AttributeName"] for part in ordered)


def _wire(value: Any) -> str:
    """Binary values as the request carried them (base64), to compare parsed answers with requests."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    raise TypeError(f"not serializable: {type(value).__name__}")


def _plain(value: dict[str, Any]) -> str:
    ((_, data),) = value.items()
    return data if isinstance(data, str) else json.dumps(data, sort_keys=True, default=str)


@dataclass
class Call:
    """One DynamoDB call and what it cost. Write units are split between the table and its indexes."""

    operation: str
    table: str = ""
    index: str = ""
    error: str = ""
    items_read: int = 0
    items_returned: int = 0
    condition_failures: int = 0
    throttles: int = 0
    request_bytes: int = 0
    item_bytes: int = 0
    largest_item: int = 0
    write_units: float = 0.0
    index_write_units: float = 0.0
    index_writes: int = 0
    read_units: float = 0.0
    partitions: dict[PartitionKey, list[float]] = field(default_factory=dict)

    def charge(self, space: Space, key: str, write: float = 0.0, read: float = 0.0) -> None:
        """Adds units to one partition key: `partitions[(space, key)] = [write units, read units]`."""
        units = self.partitions.setdefault((space, key), [0.0, 0.0])
        units[0] += write
        units[1] += read


@dataclass
class Totals:
    """Calls summed: what a step, a scenario or a message cost."""

    calls: Counter = field(default_factory=Counter)
    items_read: int = 0
    items_returned: int = 0
    condition_failures: int = 0
    throttles: int = 0
    request_bytes: int = 0
    item_bytes: int = 0
    largest_item: int = 0
    write_units: float = 0.0
    index_write_units: float = 0.0
    index_writes: int = 0
    read_units: float = 0.0
    empty_queries: int = 0
    partitions: dict[PartitionKey, list[float]] = field(default_factory=lambda: defaultdict(lambda: [0.0, 0.0]))

    @classmethod
    def of(cls, calls: list[Call]) -> Totals:
        totals = cls()
        for call in calls:
            totals.calls[call.operation] += 1
            totals.items_read += call.items_read
            totals.items_returned += call.items_returned
            totals.condition_failures += call.condition_failures
            totals.throttles += call.throttles
            totals.request_bytes += call.request_bytes
            totals.item_bytes += call.item_bytes
            totals.largest_item = max(totals.largest_item, call.largest_item)
            totals.write_units += call.write_units
            totals.index_write_units += call.index_write_units
            totals.index_writes += call.index_writes
            totals.read_units += call.read_units
            totals.empty_queries += call.operation == "Query" and call.items_read == 0
            for key, (write, read) in call.partitions.items():
                totals.partitions[key][0] += write
                totals.partitions[key][1] += read
        return totals

    def __add__(self, other: Totals) -> Totals:
        merged = Totals()
        for name, value in self.__dict__.items():
            if name == "partitions":
                for key, (write, read) in [*value.items(), *other.partitions.items()]:
                    merged.partitions[key][0] += write
                    merged.partitions[key][1] += read
            elif name == "largest_item":
                merged.largest_item = max(value, other.largest_item)
            else:
                setattr(merged, name, value + getattr(other, name))
        return merged

    @property
    def api_calls(self) -> int:
        return sum(self.calls.values())

    @property
    def all_write_units(self) -> float:
        return self.write_units + self.index_write_units

    def per(self, count: int) -> dict[str, float]:
        """The figures that matter per message, for `count` messages."""
        count = max(count, 1)
        return {
            "api_calls": self.api_calls / count,
            "write_units": self.all_write_units / count,
            "table_write_units": self.write_units / count,
            "index_write_units": self.index_write_units / count,
            "read_units": self.read_units / count,
            "items_read": self.items_read / count,
            "condition_failures": self.condition_failures / count,
        }


class Meter:
    """Attach to a boto3 DynamoDB client; every call through it is recorded until detached."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: list[Call] = []
        self._tables: dict[str, TableShape] = {}
        self._items: dict[tuple[str, tuple[str, ...]], Item] = {}
        # Known bytes and items per partition (table or index), to size what a query's filter dropped.
        self._partition_bytes: dict[PartitionKey, list[int]] = defaultdict(lambda: [0, 0])
        self._paused = False
        # Called with every accounted call, recorded or paused (`bench.throttling` charges its units to the keys).
        self.listeners: list[Callable[[Call], None]] = []

    # Wiring.
    def attach(self, client: Any) -> Meter:
        client.meta.events.register("before-call.dynamodb", self._before_call)
        client.meta.events.register("after-call.dynamodb", self._after_call)
        client.meta.events.register("needs-retry.dynamodb", self._needs_retry)
        return self

    def detach(self, client: Any) -> None:
        client.meta.events.unregister("before-call.dynamodb", self._before_call)
        client.meta.events.unregister("after-call.dynamodb", self._after_call)
        client.meta.events.unregister("needs-retry.dynamodb", self._needs_retry)

    def register_table(self, definition: dict[str, Any]) -> None:
        """For tables created before the meter was attached (`CreateTable` arguments)."""
        with self._lock:
            self._tables[definition["TableName"]] = TableShape.from_definition(definition)

    # Reading the record.
    def mark(self) -> int:
        with self._lock:
            return len(self.calls)

    def since(self, mark: int) -> Totals:
        with self._lock:
            return Totals.of(self.calls[mark:])

    def totals(self) -> Totals:
        return self.since(0)

    @contextmanager
    def window(self) -> Iterator[Totals]:
        """`with meter.window() as cost:` fills `cost` with what the block's calls cost."""
        start = self.mark()
        totals = Totals()
        yield totals
        totals.__dict__.update(self.since(start).__dict__)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Calls in the block are not recorded (seeding is not what a scenario measures), but the meter still
        learns the items they write, so that later queries are sized right. For one thread at a time."""
        self._paused = True
        try:
            yield
        finally:
            self._paused = False

    def reset(self) -> None:
        """Forgets the calls, keeps the item images (they are still what the table holds)."""
        with self._lock:
            self.calls.clear()

    def item(self, table: str, key: Item) -> Item | None:
        with self._lock:
            shape = self._tables.get(table)
            return None if shape is None else self._items.get((table, shape.key_of(key)))

    # Hooks.
    def _before_call(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        body = params.get("body") or b"{}"
        request = json.loads(body)
        context[_PENDING] = Call(operation=model.name, request_bytes=len(body)), request, not self._paused
        if model.name == "CreateTable":
            self.register_table(request)

    def _needs_retry(self, response: Any = None, request_dict: Any = None, **_: Any) -> None:
        if not response or not request_dict:
            return
        code = response[1].get("Error", {}).get("Code", "")
        pending = request_dict.get("context", {}).get(_PENDING)
        if pending and code in THROTTLE_CODES:
            pending[0].throttles += 1

    def _after_call(self, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        pending = context.pop(_PENDING, None)
        if pending is None:
            return
        call, request, recorded = pending
        call.error = parsed.get("Error", {}).get("Code", "")
        if call.error in THROTTLE_CODES:
            call.throttles += 1
        account = getattr(self, f"_account_{model.name}", None)
        with self._lock:
            if account is not None:
                account(call, request, parsed)
            if recorded:
                self.calls.append(call)
        for listener in self.listeners:
            listener(call)

    def shape(self, table: str) -> TableShape | None:
        """The keys and indexes of a table the meter saw created or was told of."""
        with self._lock:
            return self._tables.get(table)

    # Item images (called with the lock held).
    def _shape(self, table: str) -> TableShape | None:
        return self._tables.get(table)

    def _known(self, table: str, key: Item) -> Item | None:
        shape = self._shape(table)
        return None if shape is None else self._items.get((table, shape.key_of(key)))

    def _remember(self, table: str, key: Item, image: Item | None) -> None:
        shape = self._shape(table)
        if shape is None:
            return
        slot = (table, shape.key_of(key))
        self._count_bytes(table, shape, self._items.get(slot), -1)
        if image is None:
            self._items.pop(slot, None)
        else:
            self._items[slot] = image
            self._count_bytes(table, shape, image, 1)

    def _count_bytes(self, table: str, shape: TableShape, image: Item | None, sign: int) -> None:
        if image is None:
            return
        entry = self._partition_bytes[(table, _plain(image[shape.key[0]]))]
        entry[0] += sign * item_size(image)
        entry[1] += sign
        for index in shape.indexes:
            if index.holds(image):
                space = f"{table}/{index.name}"
                entry = self._partition_bytes[(space, _plain(image[index.key[0]]))]
                entry[0] += sign * item_size(index.entry(image, shape.key))
                entry[1] += sign

    def _mean_bytes(self, space: Space, key: str) -> float:
        total, count = self._partition_bytes.get((space, key), (0, 0))
        return total / count if count > 0 else 0.0

    # Writes.
    def _write(self, call: Call, table: str, key: Item, old: Item | None, new: Item | None, factor: int = 1) -> None:
        """A write that happened: table units by the larger image, then each index entry it changed."""
        shape = self._shape(table)
        size = max(item_size(old), item_size(new))
        units = write_units(size) * factor
        call.item_bytes += size
        call.largest_item = max(call.largest_item, size)
        call.write_units += units
        partition = _plain(key[shape.key[0]]) if shape else ""
        call.charge(table, partition, write=units)
        if shape is not None:
            for index in shape.indexes:
                self._index_write(call, table, shape, index, old, new)
        self._remember(table, key, new)

    def _index_write(
        self,
        call: Call,
        table: str,
        shape: TableShape,
        index: IndexShape,
        old: Item | None,
        new: Item | None,
    ) -> None:
        """Index entries follow a write once, at the standard rate, also after a transaction (DynamoDB propagates
        a committed transaction to its indexes afterwards)."""
        space = f"{table}/{index.name}"
        before = index.entry(old, shape.key) if index.holds(old) else None
        after = index.entry(new, shape.key) if index.holds(new) else None
        if before is None and after is None:
            return
        same_key = before is not None and after is not None and all(before[k] == after[k] for k in index.key)
        if same_key and before == after:
            return
        changes = []
        if same_key:
            changes.append((after, "put"))
        else:
            changes += [(entry, kind) for entry, kind in ((before, "delete"), (after, "put")) if entry is not None]
        for entry, _ in changes:
            units = write_units(item_size(entry))
            call.index_writes += 1
            call.index_write_units += units
            call.charge(space, _plain(entry[index.key[0]]), write=units)

    def _failed_write(self, call: Call, table: str, key: Item, old: Item | None, new: Item | None) -> None:
        """A write whose condition failed: DynamoDB still charges the write, by the larger image."""
        shape = self._shape(table)
        units = write_units(max(item_size(old), item_size(new)))
        call.write_units += units
        call.condition_failures += 1
        call.charge(table, _plain(key[shape.key[0]]) if shape else "", write=units)
        if old is not None:
            self._remember(table, key, old)

    def _updated(self, table: str, key: Item, request: dict[str, Any], old: Item | None) -> Item | None:
        try:
            return apply_update(
                old or dict(key),
                request["UpdateExpression"],
                request.get("ExpressionAttributeNames", {}),
                request.get("ExpressionAttributeValues", {}),
            )
        except (Unsupported, KeyError):
            return old

    def _account_PutItem(self, call: Call, request: dict[str, Any], parsed: dict[str, Any]) -> None:
        table, new = request["TableName"], request["Item"]
        call.table = table
        shape = self._shape(table)
        key = {name: new[name] for name in shape.key} if shape else new
        if call.error == "ConditionalCheckFailedException":
            self._failed_write(call, table, key, parsed.get("Item") or self._known(table, key), new)
            return
        if not call.error:
            old = parsed.get("Attributes") or self._known(table, key)
            self._write(call, table, key, old, new)

    def _account_UpdateItem(self, call: Call, request: dict[str, Any], parsed: dict[str, Any]) -> None:
        table, key = request["TableName"], request["Key"]
        call.table = table
        known = self._known(table, key)
        if call.error == "ConditionalCheckFailedException":
            self._failed_write(call, table, key, parsed.get("Item") or known, None)
            return
        if call.error:
            return
        returns = request.get("ReturnValues", "NONE")
        answer = parsed.get("Attributes")
        old = answer if returns == "ALL_OLD" and answer else known
        if returns == "ALL_NEW" and answer:
            new = answer
        elif returns == "UPDATED_NEW" and answer and old is not None:
            new = {**old, **answer}
        else:
            new = self._updated(table, key, request, old)
        self._write(call, table, key, old, new)

    def _account_DeleteItem(self, call: Call, request: dict[str, Any], parsed: dict[str, Any]) -> None:
        table, key = request["TableName"], request["Key"]
        call.table = table
        known = self._known(table, key)
        if call.error == "ConditionalCheckFailedException":
            self._failed_write(call, table, key, parsed.get("Item") or known, None)
            return
        if not call.error:
            self._write(call, table, key, parsed.get("Attributes") or known, None)

    def _account_BatchWriteItem(self, call: Call, request: dict[str, Any], parsed: dict[str, Any]) -> None:
        if call.error:
            return
        for table, writes in request["RequestItems"].items():
            call.table = table
            shape = self._shape(table)
            unprocessed = parsed.get("UnprocessedItems", {}).get(table, [])
            left = {json.dumps(w, sort_keys=True, default=_wire) for w in unprocessed}
            for write in writes:
                if json.dumps(write, sort_keys=True) in left:
                    continue
                if "PutRequest" in write:
                    new = write["PutRequest"]["Item"]
                    key = {name: new[name] for name in shape.key} if shape else new
                    self._write(call, table, key, self._known(table, key), new)
                else:
                    key = write["DeleteRequest"]["Key"]
                    self._write(call, table, key, self._known(table, key), None)

    def _account_TransactWriteItems(self, call: Call, request: dict[str, Any], parsed: dict[str, Any]) -> None:
        if call.error and call.error != "TransactionCanceledException":
            return
        reasons = parsed.get("CancellationReasons") or []
        if any(reason.get("Code") in THROTTLE_CODES for reason in reasons):
            call.throttles += 1  # refused before its prepare phase: nothing charged
            return
        for position, action in enumerate(request["TransactItems"]):
            ((kind, spec),) = action.items()
            table = spec["TableName"]
            call.table = table
            shape = self._shape(table)
            key = spec.get("Key") or {name: spec["Item"][name] for name in (shape.key if shape else ())}
            old = self._known(table, key)
            if kind == "Put":
                new = spec["Item"]
            elif kind == "Update":
                new = self._updated(table, key, spec, old)
            elif kind == "Delete":
                new = None
            else:
                new = old
            if not call.error:
                if kind == "ConditionCheck":
                    units = write_units(item_size(old)) * TRANSACTION_FACTOR
                    call.write_units += units
                    call.charge(table, _plain(key[shape.key[0]]) if shape else "", write=units)
                else:
                    self._write(call, table, key, old, new, factor=TRANSACTION_FACTOR)
                continue
            reason = reasons[position] if position < len(reasons) else {}
            if reason.get("Code") == "ConditionalCheckFailed":
                call.condition_failures += 1
                if reason.get("Item"):
                    self._remember(table, key, reason["Item"])
            units = write_units(max(item_size(old), item_size(new)))
            call.write_units += units
            call.charge(table, _plain(key[shape.key[0]]) if shape else "", write=units)

    # Reads.
    def _account_GetItem(self, call: Call, request: dict[str, Any], parsed: dict[str, Any]) -> None:
        table, key = request["TableName"], request["Key"]
        call.table = table
        if call.error:
            return
        found = parsed.get("Item")
        full = found if found and "ProjectionExpression" not in request else self._known(table, key) or found
        call.items_read = call.items_returned = 1 if found else 0
        call.read_units = read_units(item_size(full) if found else 0, request.get("ConsistentRead", False))
        shape = self._shape(table)
        call.charge(table, _plain(key[shape.key[0]]) if shape else "", read=call.read_units)
        if found and "ProjectionExpression" not in request:
            self._remember(table, key, found)

    def _account_BatchGetItem(self, call: Call, request: dict[str, Any], parsed: dict[str, Any]) -> None:
        if call.error:
            return
        for table, spec in request["RequestItems"].items():
            call.table = table
            shape = self._shape(table)
            consistent = spec.get("ConsistentRead", False)
            found = parsed.get("Responses", {}).get(table, [])
            unprocessed = len(parsed.get("UnprocessedKeys", {}).get(table, {}).get("Keys", []))
            call.items_read += len(found)
            call.items_returned += len(found)
            for item in found:
                units = read_units(item_size(item), consistent)
                call.read_units += units
                call.charge(table, _plain(item[shape.key[0]]) if shape else "", read=units)
                if shape and "ProjectionExpression" not in spec:
                    self._remember(table, {name: item[name] for name in shape.key}, item)
            call.read_units += read_units(0, consistent) * max(0, len(spec["Keys"]) - len(found) - unprocessed)

    def _account_Query(self, call: Call, request: dict[str, Any], parsed: dict[str, Any]) -> None:
        table, index_name = request["TableName"], request.get("IndexName", "")
        call.table, call.index = table, index_name
        if call.error:
            return
        shape = self._shape(table)
        index = next((i for i in shape.indexes if i.name == index_name), None) if shape else None
        space = f"{table}/{index_name}" if index_name else table
        partition = self._queried_partition(request, shape, index)
        items = parsed.get("Items", [])
        call.items_read = int(parsed.get("ScannedCount", len(items)))
        call.items_returned = int(parsed.get("Count", len(items)))
        sizes = [self._read_size(table, shape, index, item, request) for item in items]
        dropped = call.items_read - len(sizes)
        mean = sum(sizes) / len(sizes) if sizes else self._mean_bytes(space, partition)
        size = sum(sizes) + max(dropped, 0) * mean
        consistent = request.get("ConsistentRead", False) and not index_name
        call.read_units = read_units(int(size), consistent)
        call.charge(space, partition, read=call.read_units)
        if shape and not index_name and "ProjectionExpression" not in request:
            for item in items:
                self._remember(table, {name: item[name] for name in shape.key}, item)

    def _read_size(
        self, table: str, shape: TableShape | None, index: IndexShape | None, item: Item, request: dict[str, Any]
    ) -> int:
        """What reading this item costs: the whole item (or index entry), whatever a projection returned."""
        if shape is None or "ProjectionExpression" not in request:
            return item_size(item)
        known = self._items.get((table, shape.key_of(item))) if all(k in item for k in shape.key) else None
        if known is None:
            return item_size(item)
        return item_size(index.entry(known, shape.key) if index else known)

    def _queried_partition(self, request: dict[str, Any], shape: TableShape | None, index: IndexShape | None) -> str:
        key_name = index.key[0] if index else (shape.key[0] if shape else "")
        names = request.get("ExpressionAttributeNames", {})
        values = request.get("ExpressionAttributeValues", {})
        for condition in request.get("KeyConditionExpression", "").split(" AND "):
            left, _, right = condition.partition("=")
            left, right = left.strip().strip("()"), right.strip().strip("()")
            if names.get(left, left) == key_name and right in values:
                return _plain(values[right])
        return ""

    def _account_DeleteTable(self, call: Call, request: dict[str, Any], parsed: dict[str, Any]) -> None:
        table = request["TableName"]
        call.table = table
        if not call.error:
            self._tables.pop(table, None)
            for slot in [slot for slot in self._items if slot[0] == table]:
                del self._items[slot]
            for key in [key for key in self._partition_bytes if key[0].split("/")[0] == table]:
                del self._partition_bytes[key]
