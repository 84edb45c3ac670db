"""The status-index design (after dynamomq's published table design).

One item per message keyed by its id; one global secondary index keyed on a queue-type constant (`STANDARD`) and
sorted by the time the message joined the queue, projecting every attribute. A message is `READY` or `PROCESSING`; a
receive queries the index oldest first, filtering on the status (and, for delay and expired claims, on
`visible_at`), pages of 250 as published (a scenario may ask for bigger pages: the same items read in fewer calls,
so that moto, which sorts the whole table for every page, gets through large backlogs in time). Every write reads
the item first (`GetItem`), then writes conditionally on the version it read: a send checks the id is new, a claim
and a delete check the version.

All queues and clients share the one index partition `STANDARD`, and every message in flight or delayed sorts before
newer visible ones, so each receive reads them all again.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any, Final

from ..messages import DELAY_SECONDS, VISIBILITY_SECONDS
from ..queues import Delivered, State, batch_put, wire

INDEX: Final = "dynamo-mq-index-queue_type-queue_add_timestamp"
PAGE: Final = 250
READY: Final = "READY"
PROCESSING: Final = "PROCESSING"
_FILTER = "visible_at <= :now AND (#status = :ready OR #status = :processing)"


def _timestamp(epoch_ns: int) -> str:
    """Fixed-width UTC time with nanoseconds, so that the index sorts in time order."""
    seconds, nanos = divmod(epoch_ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{nanos:09d}Z"


class StatusIndexQueue:
    label = "status index"

    def __init__(
        self,
        client: Any,
        table: str,
        visibility_seconds: int = VISIBILITY_SECONDS,
        clock: Callable[[], float] = time.time,
        page: int = PAGE,
    ) -> None:
        self._client = client
        self._table = table
        self._visibility_ms = visibility_seconds * 1000
        self._clock = clock
        self._page = page
        self._earliest_ns = time.time_ns()

    @classmethod
    def create(cls, client: Any, table: str, **options: Any) -> StatusIndexQueue:
        client.create_table(
            TableName=table,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": "id", "AttributeType": "S"},
                {"AttributeName": "queue_type", "AttributeType": "S"},
                {"AttributeName": "queue_add_timestamp", "AttributeType": "S"},
            ],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": INDEX,
                    "KeySchema": [
                        {"AttributeName": "queue_type", "KeyType": "HASH"},
                        {"AttributeName": "queue_add_timestamp", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        )
        return cls(client, table, **options)

    def consumer(self) -> StatusIndexQueue:
        return self

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _item(self, body: str, status: str, visible_at: int, earlier: bool = False) -> dict[str, Any]:
        """`earlier`: joined the queue before every message so far (a seeded backlog sorts ahead)."""
        if earlier:
            self._earliest_ns -= 1
        stamp = _timestamp(self._earliest_ns if earlier else time.time_ns())
        return {
            "id": secrets.token_hex(16),
            "data": body,
            "status": status,
            "receive_count": 0 if status == READY else 1,
            "queue_type": "STANDARD",
            "version": 1,
            "creation_timestamp": stamp,
            "last_updated_timestamp": stamp,
            "queue_add_timestamp": stamp,
            "queue_peek_timestamp": "",
            "visible_at": visible_at,
        }

    def _get(self, message_id: str) -> dict[str, Any] | None:
        answer = self._client.get_item(TableName=self._table, Key={"id": {"S": message_id}}, ConsistentRead=True)
        return answer.get("Item")

    def send(self, body: str) -> str:
        item = self._item(body, READY, self._now_ms())
        if self._get(item["id"]) is not None:
            raise RuntimeError("message id already used")
        self._client.put_item(TableName=self._table, Item=wire(item), ConditionExpression="attribute_not_exists(id)")
        return item["id"]

    def send_batch(self, bodies: list[str]) -> None:
        for body in bodies:
            self.send(body)

    def receive(self, max_messages: int) -> list[Delivered]:
        now = self._now_ms()
        candidates: list[dict[str, Any]] = []
        start = None
        while len(candidates) < max_messages:
            page: dict[str, Any] = {
                "TableName": self._table,
                "IndexName": INDEX,
                "KeyConditionExpression": "queue_type = :type",
                "FilterExpression": _FILTER,
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {
                    ":type": {"S": "STANDARD"},
                    ":now": {"N": str(now)},
                    ":ready": {"S": READY},
                    ":processing": {"S": PROCESSING},
                },
                "ScanIndexForward": True,
                "Limit": self._page,
            }
            if start:
                page["ExclusiveStartKey"] = start
            answer = self._client.query(**page)
            candidates += answer.get("Items", [])
            start = answer.get("LastEvaluatedKey")
            if not start:
                break
        got = []
        for candidate in candidates:
            if len(got) >= max_messages:
                break
            claimed = self._claim(candidate["id"]["S"], now)
            if claimed is not None:
                got.append(claimed)
        return got

    def _claim(self, message_id: str, now: int) -> Delivered | None:
        current = self._get(message_id)
        if current is None or int(current["visible_at"]["N"]) > now:
            return None
        version = int(current["version"]["N"])
        stamp = _timestamp(time.time_ns())
        try:
            self._client.update_item(
                TableName=self._table,
                Key={"id": {"S": message_id}},
                UpdateExpression="SET #status = :processing, visible_at = :until, queue_peek_timestamp = :stamp, "
                "last_updated_timestamp = :stamp ADD version :one, receive_count :one",
                ConditionExpression="version = :version",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":processing": {"S": PROCESSING},
                    ":until": {"N": str(now + self._visibility_ms)},
                    ":stamp": {"S": stamp},
                    ":one": {"N": "1"},
                    ":version": {"N": str(version)},
                },
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return None
        return Delivered(message_id, f"{message_id}|{version + 1}", current["data"]["S"])

    def delete(self, handle: str) -> None:
        message_id, version = handle.split("|")
        if self._get(message_id) is None:
            return
        try:
            self._client.delete_item(
                TableName=self._table,
                Key={"id": {"S": message_id}},
                ConditionExpression="version = :version",
                ExpressionAttributeValues={":version": {"N": version}},
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return

    def delete_batch(self, handles: list[str]) -> None:
        for handle in handles:
            self.delete(handle)

    def seed(self, count: int, state: State, body: str) -> None:
        now = self._now_ms()
        if state == "visible":
            items = [self._item(body, READY, now) for _ in range(count)]
        elif state == "delayed":
            items = [self._item(body, READY, now + DELAY_SECONDS * 1000, earlier=True) for _ in range(count)]
        else:
            items = [self._item(body, PROCESSING, now + self._visibility_ms, earlier=True) for _ in range(count)]
        batch_put(self._client, self._table, items)
