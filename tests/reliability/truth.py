"""What really happened in the table, seen from inside the embedded DynamoDB rather than through the client.

The client's view can be wrong on purpose (an answer lost after the write), so the checks compare it with this:
every `DeleteItem` that removed an item, recorded in the order DynamoDB applied them (moto's requests are
serialized, and the record is made inside the request), and raw reads of the table by a client without faults.
A message is known by its body, or by its `label` attribute when it has one (a body stored compressed or in S3 is
not readable in the item).

Raw reads find a sub-queue's items by the one part of the key format that is a contract (IAM confines a tenant
with it): every key of a sub-queue starts with `{kind}#{queue}#{client}#`. So they see every shard of every layout
a resharding left behind, and need no knowledge of shard counts or generations.
"""

from __future__ import annotations

import json
import threading
from collections import Counter, defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import boto3
from moto.dynamodb.responses import DynamoHandler
from queue_core.store import deserialize

from dq.embedded_dynamodb import _LOCK
from tests.conftest import TABLE

# Key kinds (the first part of a partition key): standard messages, FIFO messages (one partition per group), and
# dead letters.
STANDARD_MESSAGES, FIFO_MESSAGES, DEAD_LETTERS = "M", "G", "D"


@dataclass
class DeletedItem:
    pk: str
    sk: str
    queue: str
    body: str
    token: str | None


def label_of(item: dict[str, Any]) -> str:
    """What names a message in the checks: its `label` attribute, else its body as stored in the item."""
    return str(item.get("attrs", {}).get("label") or item.get("body", ""))


def sub_queue_of(pk: str) -> tuple[str, str, str]:
    """(kind, queue, client) of a sub-queue's partition key."""
    kind, queue, client, _ = pk.split("#", 3)
    return kind, queue, client


@dataclass
class TableTruth:
    """Effective deletes as DynamoDB applied them, and raw reads through a client of its own."""

    table: str = TABLE
    raw: Any = None
    deleted: list[DeletedItem] = field(default_factory=list)
    deleted_by_sub_queue: Counter = field(default_factory=Counter)
    # Dead letters removed by a delete (a DLQ receipt handle), not by a move back to the queue (a transaction).
    dead_deleted: list[DeletedItem] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        if self.raw is None:
            self.raw = boto3.client("dynamodb", region_name="us-east-1")

    # Recording.
    def record_delete(self, answer: Any) -> None:
        self.record_removed(getattr(answer, "result", {}).get("Attributes"))

    def record_removed(self, attributes: dict[str, Any] | None) -> None:
        """An item DynamoDB removed, as its attributes were on the wire."""
        item = deserialize(attributes) if attributes else None
        if item is None:
            return
        dead = str(item["pk"]).startswith(f"{DEAD_LETTERS}#")
        if not dead and not str(item["pk"]).startswith((f"{STANDARD_MESSAGES}#", f"{FIFO_MESSAGES}#")):
            return
        _, queue, client = sub_queue_of(str(item["pk"]))
        deleted = DeletedItem(item["pk"], item["sk"], queue, label_of(item), item.get("tok"))
        with self._lock:
            if dead:
                self.dead_deleted.append(deleted)
            else:
                self.deleted.append(deleted)
            self.deleted_by_sub_queue[(queue, client)] += 1

    def deleted_bodies(self, queues: Collection[str] | None = None) -> Counter:
        """How many times each message (by `label_of`) was deleted, of the named queues only when `queues` is
        given."""
        with self._lock:
            return Counter(entry.body for entry in self.deleted if queues is None or entry.queue in queues)

    def dead_deleted_bodies(self, queues: Collection[str] | None = None) -> Counter:
        """How many times each message's dead letter was deleted (not moved back), as `deleted_bodies`."""
        with self._lock:
            return Counter(entry.body for entry in self.dead_deleted if queues is None or entry.queue in queues)

    # Raw reads.
    def by_sub_queue(self, kinds: Collection[str]) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """Every item of the given key kinds, by (queue, client), in one scan."""
        found: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        prefixes = {f":k{n}": f"{kind}#" for n, kind in enumerate(kinds)}
        for item in self._scan(" OR ".join(f"begins_with(pk, {name})" for name in prefixes), prefixes):
            _, queue, client = sub_queue_of(str(item["pk"]))
            found[(queue, client)].append(item)
        return found

    def dlq_items(self, queue: str, client: str) -> list[dict[str, Any]]:
        return self.by_sub_queue([DEAD_LETTERS]).get((queue, client), [])

    def live_messages(self, queue: str, client: str) -> list[dict[str, Any]]:
        """The messages of the sub-queue not deleted nor dead, whatever their shard, layout or group."""
        return self.by_sub_queue([STANDARD_MESSAGES, FIFO_MESSAGES]).get((queue, client), [])

    def _scan(self, condition: str, values: dict[str, str]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        start: dict[str, Any] | None = None
        while True:
            options: dict[str, Any] = {"ExclusiveStartKey": start} if start else {}
            answer = self.raw.scan(
                TableName=self.table,
                ConsistentRead=True,
                FilterExpression=condition,
                ExpressionAttributeValues={name: {"S": value} for name, value in values.items()},
                **options,
            )
            items += [item for item in map(deserialize, answer.get("Items", [])) if item is not None]
            start = answer.get("LastEvaluatedKey")
            if not start:
                return items

    def dead_letter_labels(self) -> dict[tuple[str, str], list[str]]:
        """The dead letters' labels (`label_of`) by (queue, client), as `by_sub_queue([DEAD_LETTERS])` finds them,
        read inside the embedded DynamoDB between two requests, not by a Scan: the stress run's driver asks every
        second, and moto's Scan sorts, sizes and copies every item of the table (each archived copy too) for each
        page it answers, so a run spent most of its time, ever more as the archives filled, in these reads."""
        found: dict[tuple[str, str], list[str]] = defaultdict(list)
        with _LOCK:
            table = embedded_table(self.table)
            for hash_key, partition in table.items.items():
                if str(hash_key.value).startswith(f"{DEAD_LETTERS}#"):
                    for item in partition.values():
                        attributes = deserialize(item.to_json()["Attributes"])
                        _, queue, client = sub_queue_of(str(hash_key.value))
                        found[(queue, client)].append(label_of(attributes or {}))
        return found

    def expire(self, now_ms: int) -> int:
        """Deletes what DynamoDB's TTL would have deleted by now (moto never does): dedup items past their window,
        above all, which would otherwise pile up and slow every later request. The items due are found inside the
        embedded DynamoDB (see `dead_letter_labels`) and deleted through the raw client, each under the condition
        that it is still due."""
        now_s = now_ms // 1000
        with _LOCK:
            table = embedded_table(self.table)
            due = [
                {"pk": item.hash_key.to_json(), "sk": item.range_key.to_json()}
                for item in type(table).all_items(table)
                if _due(item.attrs.get("expires_at"), now_s)
            ]
        expired = 0
        for key in due:
            try:
                self.raw.delete_item(
                    TableName=self.table,
                    Key=key,
                    ConditionExpression="expires_at <= :now",
                    ExpressionAttributeValues={":now": {"N": str(now_s)}},
                )
                expired += 1
            except self.raw.exceptions.ConditionalCheckFailedException:
                continue
        return expired

    def snapshot(self) -> frozenset[str]:
        """The whole table as comparable text: equal snapshots before and after a request mean it wrote nothing."""
        return frozenset(json.dumps(item, sort_keys=True, default=str) for item in self.scan())

    def scan(self) -> list[dict[str, Any]]:
        """Every item of the table (small tables only)."""
        items: list[dict[str, Any]] = []
        start: dict[str, Any] | None = None
        while True:
            options: dict[str, Any] = {"ExclusiveStartKey": start} if start else {}
            answer = self.raw.scan(TableName=self.table, ConsistentRead=True, **options)
            items += [deserialize(item) for item in answer.get("Items", [])]
            start = answer.get("LastEvaluatedKey")
            if not start:
                return items


def embedded_table(table: str) -> Any:
    """moto's model of the table, in the embedded DynamoDB of this process (whether reached in-process or through its
    server thread). Read it under `_LOCK`, between two requests."""
    from moto.dynamodb.models import dynamodb_backends

    found = [
        regions[region].tables[table]
        for regions in dynamodb_backends.values()
        for region in regions
        if table in regions[region].tables
    ]
    assert len(found) == 1, f"table {table} in {len(found)} embedded backends"
    return found[0]


def _due(expires_at: Any, now_s: int) -> bool:
    """Whether a TTL attribute (moto's value, or None) is a number no later than `now_s`, as the Scan's
    `expires_at <= :now` found it."""
    return expires_at is not None and expires_at.type == "N" and float(expires_at.value) <= now_s


def table_snapshot(table: str) -> frozenset[str]:
    """The whole table as comparable text, read straight from the embedded DynamoDB of this process (moto's
    backend, whether reached in-process or through its server thread): instant, and no request of its own.
    Equal snapshots before and after a request prove that it wrote nothing."""
    found = embedded_table(table)
    # The class's listing, never a view a query in flight was given (`dq.embedded_dynamodb.fast_queries`).
    items = type(found).all_items(found)
    return frozenset(json.dumps(item.to_json(), sort_keys=True, default=repr) for item in items)


class _HandlerTap:
    """Wraps one request method of moto's `DynamoHandler` while in use (`wrap` makes the wrapper)."""

    method = ""

    def __init__(self, truth: TableTruth) -> None:
        self._truth = truth
        self._original: Any = None

    def __enter__(self) -> TableTruth:
        self._original = getattr(DynamoHandler, self.method)
        setattr(DynamoHandler, self.method, self.wrap(self._original, self._truth))
        return self._truth

    def __exit__(self, *_exc: object) -> None:
        setattr(DynamoHandler, self.method, self._original)

    @staticmethod
    def wrap(original: Any, truth: TableTruth) -> Any:
        raise NotImplementedError


class DeleteTap(_HandlerTap):
    """Wraps moto's `DeleteItem` so that every effective delete is recorded inside the serialized request."""

    method = "delete_item"

    @staticmethod
    def wrap(original: Any, truth: TableTruth) -> Any:
        def delete_item(handler: Any) -> Any:
            answer = original(handler)
            truth.record_delete(answer)
            return answer

        return delete_item


class TransactionDeleteTap(_HandlerTap):
    """Wraps moto's `TransactWriteItems` so that a message a committed transaction removed without putting any
    message item (an ack committed with the caller's own writes, `delete_transact_items`) is recorded as a delete.
    A transaction that puts one moves a message (to the DLQ, back from it, into another queue): not a delete."""

    method = "transact_write_items"

    @staticmethod
    def wrap(original: Any, truth: TableTruth) -> Any:
        from moto.dynamodb.models.dynamo_type import DynamoType

        kinds = (f"{STANDARD_MESSAGES}#", f"{FIFO_MESSAGES}#", f"{DEAD_LETTERS}#")

        def transact_write_items(handler: Any) -> Any:
            actions = handler.body.get("TransactItems", [])
            put = [str(entry.get("Put", {}).get("Item", {}).get("pk", {}).get("S", "")) for entry in actions]
            named = []
            for entry in [] if any(pk.startswith(kinds) for pk in put) else actions:
                delete = entry.get("Delete")
                if delete is None:
                    continue
                table = handler.dynamodb_backend.get_table(delete["TableName"])
                key = delete["Key"]
                named.append((table, DynamoType(key[table.hash_key_attr]), DynamoType(key[table.range_key_attr])))
            before = [
                (table, hash_key, range_key, table.get_item(hash_key, range_key))
                for table, hash_key, range_key in named
            ]
            answer = original(handler)
            for table, hash_key, range_key, item in before:
                if item is not None and table.get_item(hash_key, range_key) is None:
                    truth.record_removed(item.to_json()["Attributes"])
            return answer

        return transact_write_items
