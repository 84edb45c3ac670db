"""What really happened in the table, seen from inside the embedded DynamoDB rather than through the client.

The client's view can be wrong on purpose (an answer lost after the write), so the checks compare it with this:
every `DeleteItem` that removed an item, recorded in the order DynamoDB applied them (moto's requests are
serialized, and the record is made inside the request), and raw reads of the table by a client without faults.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
from moto.dynamodb.responses import DynamoHandler
from queue_core import keys
from queue_core.store import deserialize

from tests.conftest import TABLE


@dataclass
class DeletedItem:
    pk: str
    sk: str
    body: str
    token: str | None


@dataclass
class TableTruth:
    """Effective deletes as DynamoDB applied them, and raw reads through a client of its own."""

    table: str = TABLE
    raw: Any = None
    deleted: list[DeletedItem] = field(default_factory=list)
    deleted_by_sub_queue: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        if self.raw is None:
            self.raw = boto3.client("dynamodb", region_name="us-east-1")

    # Recording.
    def record_delete(self, answer: Any) -> None:
        attributes = getattr(answer, "result", {}).get("Attributes")
        item = deserialize(attributes) if attributes else None
        if item is None or not str(item["pk"]).startswith(("M#", "G#")):
            return
        _, queue, client, _ = str(item["pk"]).split("#", 3)
        with self._lock:
            self.deleted.append(DeletedItem(item["pk"], item["sk"], item.get("body", ""), item.get("tok")))
            self.deleted_by_sub_queue[(queue, client)] += 1

    def deleted_bodies(self) -> Counter:
        with self._lock:
            return Counter(entry.body for entry in self.deleted)

    # Raw reads.
    def partition(self, pk: str) -> Iterator[dict[str, Any]]:
        start: dict[str, Any] | None = None
        while True:
            options: dict[str, Any] = {"ExclusiveStartKey": start} if start else {}
            answer = self.raw.query(
                TableName=self.table,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": pk}},
                ConsistentRead=True,
                **options,
            )
            for item in answer.get("Items", []):
                found = deserialize(item)
                assert found is not None
                yield found
            start = answer.get("LastEvaluatedKey")
            if not start:
                return

    def space(self, queue: str, client: str) -> keys.Space:
        """The sub-queue's keys in the queue's current generation, read from its settings item."""
        key = {name: {"S": value} for name, value in keys.settings_key(queue).items()}
        answer = self.raw.get_item(TableName=self.table, Key=key, ConsistentRead=True)
        return keys.Space(queue, client, answer["Item"]["generation"]["S"])

    def dlq_items(self, queue: str, client: str, shards: int) -> list[dict[str, Any]]:
        space = self.space(queue, client)
        return [item for shard in range(shards) for item in self.partition(space.dlq_pk(shard))]

    def live_messages(self, queue: str, client: str, shards: int, groups: list[str]) -> list[dict[str, Any]]:
        """Standard messages of every shard, or FIFO messages of the named groups."""
        space = self.space(queue, client)
        if groups:
            return [item for group in groups for item in self.partition(space.group_messages_pk(group))]
        return [item for shard in range(shards) for item in self.partition(space.message_pk(shard))]

    def expire(self, now_ms: int) -> int:
        """Deletes what DynamoDB's TTL would have deleted by now (moto never does): dedup items past their window,
        above all, which would otherwise pile up and slow every later request."""
        now_s = now_ms // 1000
        expired = 0
        start: dict[str, Any] | None = None
        while True:
            options: dict[str, Any] = {"ExclusiveStartKey": start} if start else {}
            answer = self.raw.scan(
                TableName=self.table,
                FilterExpression="expires_at <= :now",
                ExpressionAttributeValues={":now": {"N": str(now_s)}},
                ProjectionExpression="pk, sk",
                **options,
            )
            for key in answer.get("Items", []):
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
            start = answer.get("LastEvaluatedKey")
            if not start:
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


def table_snapshot(table: str) -> frozenset[str]:
    """The whole table as comparable text, read straight from the embedded DynamoDB of this process (moto's
    backend, whether reached in-process or through its server thread): instant, and no request of its own.
    Equal snapshots before and after a request prove that it wrote nothing."""
    from moto.dynamodb.models import dynamodb_backends

    found = [
        regions[region].tables[table]
        for regions in dynamodb_backends.values()
        for region in regions
        if table in regions[region].tables
    ]
    assert len(found) == 1, f"table {table} in {len(found)} embedded backends"
    return frozenset(json.dumps(item.to_json(), sort_keys=True) for item in found[0].all_items())


class DeleteTap:
    """Wraps moto's `DeleteItem` so that every effective delete is recorded inside the serialized request."""

    def __init__(self, truth: TableTruth) -> None:
        self._truth = truth
        self._original: Any = None

    def __enter__(self) -> TableTruth:
        original = DynamoHandler.delete_item
        truth = self._truth

        def delete_item(handler: Any) -> Any:
            answer = original(handler)
            truth.record_delete(answer)
            return answer

        self._original = original
        DynamoHandler.delete_item = delete_item  # type: ignore[method-assign]
        return truth

    def __exit__(self, *_exc: object) -> None:
        DynamoHandler.delete_item = self._original  # type: ignore[method-assign]
