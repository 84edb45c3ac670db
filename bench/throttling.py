"""A DynamoDB that throttles as the service does, in front of moto (which never throttles), on a simulated clock.

Every request through a client this wraps is first admitted or refused, then, once moto answered, charged what it
consumed. The charge comes from the meter (`bench.meter`): DynamoDB's unit rules applied to the item images, 1 WU
per KB written, 1 RU per 4 KB read strongly consistent and half that eventually consistent, transactions twice,
each index entry a write changes charged to the index's partition key. Units go to token buckets, one per
partition key and kind (table keys and index keys apart) and one per table for the table and its indexes
together (DynamoDB's table-level quota covers both), refilled continuously on the simulated clock at the limits in
force: by default 1,000 WU and 3,000 RU per key per second, 40,000 of each per table (on-demand's default quota).

A request is refused while a bucket it draws on is empty: a write when its table key, an index key its item sits
under (as the meter last saw the item, and the new item of a put), or the table's write bucket is empty; a read
when its key's or the table's read bucket is. A refused request never reaches moto: the client raises the
`ClientError` DynamoDB would send (`ProvisionedThroughputExceededException` with a `KeyRangeThroughputExceeded`
throttling reason for a key, `ThrottlingException` with `AccountLimitExceeded` for the table), and nothing is
applied. A batch write has its refused items returned as `UnprocessedItems` (all refused: the exception); a
transaction with a refused item is cancelled with `ThrottlingError` reasons. An admitted request is charged after
it ran, by what it really consumed, so a bucket can go below zero, as DynamoDB's do: it learns a request's size
only by doing it. Buckets hold one second of their rate and no more: DynamoDB's partitions serve at most 3,000 RU
and 1,000 WU per second whatever they saved, and an on-demand table's quota is a ceiling, so no burst is modelled.

A provisioned table (`Limits.provisioned`) has capacity of its own for the table and for each index, read and
write apart, instead of the one quota for both: a request draws on the capacity of every space it touches (a write
that changes an index entry, the index's too), each bucket holding `burst_seconds` of its rate (DynamoDB keeps up
to five minutes of unused units as burst capacity), and a refusal is a `ProvisionedThroughputExceededException`
whose reason is `TableWriteProvisionedThroughputExceeded` (or the index's, or a read's). `bench.autoscaling` moves
these units as Application Auto Scaling does. The per-key limits apply in both modes.

Throttling is answered in `before-call`, before the SDK's retry loop, so a refused request surfaces at once and
its caller decides when to try again: in a simulation that advances its clock in ticks, a retry within the same
tick would only meet the same empty bucket. `Limits.scaled` divides every limit by a factor, for simulations that
carry a fraction of the load (see `bench/scenarios/load_step.py`).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Final

from botocore.awsrequest import AWSResponse

from .meter import Call, Meter, TableShape, _plain
from .sizes import item_size, write_units

KEY_WRITE_UNITS: Final = 1_000.0
KEY_READ_UNITS: Final = 3_000.0
TABLE_UNITS: Final = 40_000.0  # on-demand's default table-level quota, read and write alike
BUCKET_SECONDS: Final = 1.0
BURST_SECONDS: Final = 300.0  # unused provisioned units DynamoDB keeps for bursts
KEY_THROTTLE: Final = "ProvisionedThroughputExceededException"
TABLE_THROTTLE: Final = "ThrottlingException"
_REFUSED: Final = "bench.throttling.refused"
_WRITES: Final = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
_READS: Final = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"})


class SimClock:
    """Simulated epoch seconds: the throttler refills by it and the queue core reads it (`QueueClient(clock=)`).

    A thread that calls `enter()` lives a little ahead of the shared time: while `simulated_sleep()` is in force,
    its `time.sleep(s)` returns at once and moves its own time on by `s`. So a backoff inside the code under test
    (the core's retries of a refused batch) takes simulated time, as it takes real time against DynamoDB, instead
    of wall-clock time in which the simulation stands still. Other threads sleep as usual."""

    def __init__(self, start: float | None = None) -> None:
        self.now = time.time() if start is None else start
        self._local = threading.local()

    def __call__(self) -> float:
        return self.now + getattr(self._local, "ahead", 0.0)

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def enter(self) -> None:
        """This thread's time is the shared time from now on, and its sleeps are simulated."""
        self._local.ahead = 0.0
        self._local.simulated = True

    def leave(self) -> None:
        self._local.ahead = 0.0
        self._local.simulated = False

    @contextmanager
    def simulated_sleep(self) -> Iterator[None]:
        real = time.sleep

        def sleep(seconds: float) -> None:
            if getattr(self._local, "simulated", False):
                self._local.ahead = getattr(self._local, "ahead", 0.0) + max(seconds, 0.0)
            else:
                real(seconds)

        time.sleep = sleep
        try:
            yield
        finally:
            time.sleep = real


@dataclass(frozen=True)
class Provisioned:
    """A provisioned table's units a second: the table's and (each of) its indexes', read and write."""

    table_write: float
    table_read: float
    index_write: float
    index_read: float
    burst_seconds: float = BURST_SECONDS

    def units(self, space: str, kind: str) -> float:
        """The units a second of `space` (a table, or "table/index") for `kind` ("w" or "r")."""
        if "/" in space:
            return self.index_write if kind == "w" else self.index_read
        return self.table_write if kind == "w" else self.table_read


@dataclass(frozen=True)
class Limits:
    key_write: float = KEY_WRITE_UNITS
    key_read: float = KEY_READ_UNITS
    table_write: float = TABLE_UNITS
    table_read: float = TABLE_UNITS
    window: float = BUCKET_SECONDS  # seconds of its rate a bucket holds
    provisioned: Provisioned | None = None  # None: on demand, the table quota above covers table and indexes
    # What `scaled` divided the limits by, and the partition keys (by prefix) whose per-key limits a scaled run
    # keeps whole: those whose traffic follows the number of processes and shards, not of messages (see
    # `bench.scenarios.load_step`), meet the full limits as the same processes would at full scale.
    factor: float = 1.0
    unscaled_keys: tuple[str, ...] = ()

    def scaled(self, factor: float) -> Limits:
        """Every limit divided by `factor`: a simulation carrying 1/factor of the load meets them as the full load
        meets the real ones (units per key and per table scale with the load, the number of keys does not)."""
        rates = (self.key_write, self.key_read, self.table_write, self.table_read)
        provisioned = self.provisioned
        if provisioned is not None:
            units = (provisioned.table_write, provisioned.table_read, provisioned.index_write, provisioned.index_read)
            provisioned = Provisioned(*(unit / factor for unit in units), burst_seconds=provisioned.burst_seconds)
        return Limits(
            *(limit / factor for limit in rates),
            window=self.window,
            provisioned=provisioned,
            factor=self.factor * factor,
            unscaled_keys=self.unscaled_keys,
        )

    def with_table(self, units: float) -> Limits:
        """A raised (or lowered) table-level quota, read and write."""
        return replace(self, table_write=units, table_read=units)


class Bucket:
    """Units available now; refills at `rate` per simulated second up to `rate * window`."""

    __slots__ = ("level", "rate", "updated", "window")

    def __init__(self, rate: float, now: float, window: float = BUCKET_SECONDS) -> None:
        self.rate, self.window, self.level, self.updated = rate, window, rate * window, now

    def refill(self, now: float) -> float:
        if now > self.updated:
            self.level = min(self.rate * self.window, self.level + (now - self.updated) * self.rate)
            self.updated = now
        return self.level


@dataclass
class Stats:
    """What the throttler did: requests admitted and refused (by reason), units charged."""

    admitted: int = 0
    refused: Counter = field(default_factory=Counter)
    # Refusals by the kind of key that was empty: (space, first part of the key before "#", operation).
    refused_keys: Counter = field(default_factory=Counter)
    write_units: float = 0.0
    read_units: float = 0.0

    @property
    def throttled(self) -> int:
        return sum(self.refused.values())

    def fraction(self) -> float:
        total = self.admitted + self.throttled
        return self.throttled / total if total else 0.0

    def copy(self) -> Stats:
        return Stats(
            self.admitted, Counter(self.refused), Counter(self.refused_keys), self.write_units, self.read_units
        )

    def __sub__(self, other: Stats) -> Stats:
        return Stats(
            self.admitted - other.admitted,
            self.refused - other.refused,
            self.refused_keys - other.refused_keys,
            self.write_units - other.write_units,
            self.read_units - other.read_units,
        )


Slot = tuple[str, str, str]  # (space: table or "table/index", partition key or "" for the table, "w" or "r")


class Throttler:
    """Attach to a metered client: `Throttler(meter, clock, limits).attach(client)`."""

    def __init__(self, meter: Meter, clock: SimClock, limits: Limits | None = None) -> None:
        self.meter = meter
        self.clock = clock
        self.limits = limits or Limits()
        self.stats = Stats()
        # Every refusal: (simulated time, the empty slot, operation), for runs that judge which keys stayed hot.
        self.refusals: list[tuple[float, Slot, str]] = []
        self._buckets: dict[Slot, Bucket] = {}
        self._lock = threading.Lock()
        self._clients: list[Any] = []

    # Wiring.
    def attach(self, client: Any) -> Throttler:
        """After the meter's own hooks (attach the meter first), so that it records refused requests as throttles;
        a batch's refused items are added to its answer before the meter reads it."""
        client.meta.events.register("before-call.dynamodb", self._before_call)
        client.meta.events.register_first("after-call.dynamodb.BatchWriteItem", self._unprocessed)
        if self._charge not in self.meter.listeners:
            self.meter.listeners.append(self._charge)
        self._clients.append(client)
        return self

    def detach(self) -> None:
        for client in self._clients:
            client.meta.events.unregister("before-call.dynamodb", self._before_call)
            client.meta.events.unregister("after-call.dynamodb.BatchWriteItem", self._unprocessed)
        self._clients.clear()
        if self._charge in self.meter.listeners:
            self.meter.listeners.remove(self._charge)

    def set_limits(self, limits: Limits) -> None:
        """New limits from now on (a quota raised mid-run); buckets keep their level."""
        with self._lock:
            self.limits = limits
            for (space, key, kind), bucket in self._buckets.items():
                bucket.refill(self.clock())
                bucket.rate, bucket.window = self._rate(space, key, kind), self._window((space, key, kind))

    # Buckets.
    def _rate(self, space: str, key: str, kind: str) -> float:
        if key:
            whole = self.limits.factor if key.startswith(self.limits.unscaled_keys) else 1.0
            return (self.limits.key_write if kind == "w" else self.limits.key_read) * whole
        if self.limits.provisioned is not None:
            return self.limits.provisioned.units(space, kind)
        return self.limits.table_write if kind == "w" else self.limits.table_read

    def _window(self, slot: Slot) -> float:
        provisioned = self.limits.provisioned
        return provisioned.burst_seconds if provisioned is not None and not slot[1] else self.limits.window

    def _bucket(self, slot: Slot) -> Bucket:
        bucket = self._buckets.get(slot)
        if bucket is None:
            bucket = self._buckets[slot] = Bucket(self._rate(*slot), self.clock(), self._window(slot))
        return bucket

    @property
    def _provisioned(self) -> bool:
        return self.limits.provisioned is not None

    def _capacity(self, space: str, kind: str) -> Slot:
        """The capacity a request on `space` draws on: the space's own when provisioned, else the table's quota."""
        return (space if self.limits.provisioned is not None else space.split("/")[0], "", kind)

    def _empty(self, slots: list[Slot], drawn: Counter | None = None) -> Slot | None:
        """The first slot with nothing left (after what `drawn` will take), or None (called with the lock held)."""
        for slot in slots:
            if self._bucket(slot).refill(self.clock()) - (drawn[slot] if drawn else 0) <= 0:
                return slot
        return None

    def _charge(self, call: Call) -> None:
        with self._lock:
            for (space, key), (write, read) in call.partitions.items():
                for kind, units in (("w", write), ("r", read)):
                    if units:
                        self._bucket((space, key, kind)).level -= units
                        self._bucket(self._capacity(space, kind)).level -= units
                self.stats.write_units += write
                self.stats.read_units += read

    # What a request draws on.
    def _write_slots(self, table: str, shape: TableShape | None, key: dict[str, Any], new: dict | None) -> list[Slot]:
        if shape is None:
            return [(table, "", "w")]
        slots = [(table, _plain(key[shape.key[0]]), "w")]
        images = [image for image in (self.meter.item(table, key), new) if image]
        for index in shape.indexes:
            for image in images:
                if index.holds(image):
                    slots.append((f"{table}/{index.name}", _plain(image[index.key[0]]), "w"))
        return [*slots, *dict.fromkeys(self._capacity(space, "w") for space, _, _ in slots)]

    def _read_slots(self, table: str, shape: TableShape | None, request: dict[str, Any]) -> list[Slot]:
        index_name = request.get("IndexName", "")
        space = f"{table}/{index_name}" if index_name else table
        key_name = ""
        if shape is not None:
            index = next((i for i in shape.indexes if i.name == index_name), None)
            key_name = index.key[0] if index else shape.key[0]
        names = request.get("ExpressionAttributeNames", {})
        values = request.get("ExpressionAttributeValues", {})
        capacity = self._capacity(space, "r")
        if "Key" in request and shape is not None:
            return [(space, _plain(request["Key"][key_name]), "r"), capacity]
        for condition in request.get("KeyConditionExpression", "").split(" AND "):
            left, _, right = condition.partition("=")
            left, right = left.strip().strip("()"), right.strip().strip("()")
            if names.get(left, left) == key_name and right in values:
                return [(space, _plain(values[right]), "r"), capacity]
        return [capacity]

    def _item_slots(self, operation: str, spec: dict[str, Any]) -> list[Slot]:
        table = spec["TableName"]
        shape = self.meter.shape(table)
        if operation in _READS:
            return self._read_slots(table, shape, spec)
        item = spec.get("Item")
        key = spec.get("Key") or ({name: item[name] for name in shape.key} if shape and item else {})
        return self._write_slots(table, shape, key, item)

    # Hooks.
    def _before_call(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> Any:
        operation = model.name
        if operation not in _WRITES and operation not in _READS:
            return None
        request = json.loads(params.get("body") or b"{}")
        with self._lock:
            if operation == "BatchWriteItem":
                return self._batch_write(params, request, context)
            if operation == "TransactWriteItems":
                return self._transaction(request)
            if operation == "BatchGetItem":
                slots = [
                    slot
                    for table, spec in request["RequestItems"].items()
                    for key in spec["Keys"]
                    for slot in self._read_slots(table, self.meter.shape(table), {"Key": key})
                ]
            else:
                slots = self._item_slots(operation, request)
            empty = self._empty(slots)
            if empty is None:
                self.stats.admitted += 1
                return None
            self.stats.refused[_reason(empty, self._provisioned)] += 1
            self.stats.refused_keys[(empty[0], empty[1].split("#", 1)[0], operation)] += 1
            self.refusals.append((self.clock(), empty, operation))
        return _throttled(empty, self._provisioned)

    def _batch_write(self, params: dict[str, Any], request: dict[str, Any], context: dict[str, Any]) -> Any:
        kept: dict[str, list[Any]] = {}
        refused: dict[str, list[Any]] = {}
        last: Slot | None = None
        drawn: Counter = Counter()  # what the batch's admitted items will take from each bucket
        for table, writes in request["RequestItems"].items():
            for write in writes:
                spec = {"TableName": table, **(write.get("PutRequest") or write["DeleteRequest"])}
                slots = self._item_slots("PutItem" if "PutRequest" in write else "DeleteItem", spec)
                empty = self._empty(slots, drawn)
                (refused if empty else kept).setdefault(table, []).append(write)
                last = empty or last
                if empty:
                    self.refusals.append((self.clock(), empty, "BatchWriteItem"))
                else:
                    known = self.meter.item(table, spec.get("Key") or {}) if "Key" in spec else None
                    units = write_units(max(item_size(spec.get("Item")), item_size(known)))
                    drawn.update(dict.fromkeys(slots, units))
        if not kept:
            self.stats.refused[_reason(last, self._provisioned)] += 1
            return _throttled(last, self._provisioned)
        self.stats.admitted += 1
        if refused:
            self.stats.refused[_reason(last, self._provisioned) + " (items)"] += sum(map(len, refused.values()))
            params["body"] = json.dumps({**request, "RequestItems": kept}).encode()
            context[_REFUSED] = refused
        return None

    def _transaction(self, request: dict[str, Any]) -> Any:
        reasons, refused = [], None
        for action in request["TransactItems"]:
            ((kind, spec),) = action.items()
            empty = self._empty(self._item_slots("PutItem" if kind == "Put" else "UpdateItem", spec))
            refused = refused or empty
            if empty:
                self.refusals.append((self.clock(), empty, "TransactWriteItems"))
            reasons.append({"Code": "ThrottlingError" if empty else "None"})
        if refused is None:
            self.stats.admitted += 1
            return None
        self.stats.refused[_reason(refused, self._provisioned)] += 1
        parsed = {
            "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled: throttled"},
            "CancellationReasons": reasons,
            "ResponseMetadata": {"HTTPStatusCode": 400, "RetryAttempts": 0},
        }
        return AWSResponse("https://dynamodb.simulated", 400, {}, None), parsed

    def _unprocessed(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        refused = context.pop(_REFUSED, None)
        if refused and "Error" not in parsed:
            unprocessed = parsed.setdefault("UnprocessedItems", {})
            for table, writes in refused.items():
                unprocessed.setdefault(table, []).extend(_parsed(writes))

    def level(self, space: str, key: str, kind: str = "w") -> float:
        """A bucket's units now (for tests and plots)."""
        with self._lock:
            return self._bucket((space, key, kind)).refill(self.clock())


def _reason(slot: Slot | None, provisioned: bool) -> str:
    space, key, kind = slot or ("", "", "w")
    resource = "Index" if "/" in space else "Table"
    action = "Read" if kind == "r" else "Write"
    limit = "ProvisionedThroughputExceeded" if provisioned else "AccountLimitExceeded"
    return f"{resource}{action}{'KeyRangeThroughputExceeded' if key else limit}"


def _throttled(slot: Slot | None, provisioned: bool) -> tuple[AWSResponse, dict[str, Any]]:
    """The answer DynamoDB gives a throttled request, as botocore parses it."""
    space, key, _ = slot or ("", "", "w")
    code = KEY_THROTTLE if key or provisioned else TABLE_THROTTLE
    parsed = {
        "Error": {"Code": code, "Message": f"Throughput exceeds the current capacity for {space or 'the table'}"},
        "ThrottlingReasons": [{"reason": _reason(slot, provisioned), "resource": space}],
        "ResponseMetadata": {"HTTPStatusCode": 400, "RetryAttempts": 0},
    }
    return AWSResponse("https://dynamodb.simulated", 400, {}, None), parsed


def _parsed(value: Any) -> Any:
    """A request's wire JSON as botocore parses an answer: binary attribute values decoded from base64."""
    if isinstance(value, list):
        return [_parsed(part) for part in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((kind, data),) = value.items()
        if kind == "B" and isinstance(data, str):
            return {"B": base64.b64decode(data)}
        if kind == "BS" and isinstance(data, list):
            return {"BS": [base64.b64decode(part) for part in data]}
    return {name: _parsed(part) for name, part in value.items()}
