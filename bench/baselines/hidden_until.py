"""The hidden-until design (after godynamodb-queue's standard mode).

One partition key per (queue, client), sort key = send time in nanoseconds and a random suffix, no index. A
message is visible when `hidden_until <= now`. A receive queries the partition oldest first with a filter on
`hidden_until`, paging until it has as many candidates as it wants, then claims each candidate with a conditional
update that moves `hidden_until` past now (the condition: `hidden_until` still has the value the query saw). A
delete is conditional on the claim's owner token.

DynamoDB applies `Limit` before the filter and bills every item the query reads, so each receive reads every
message in flight or delayed that sorts before the first visible ones. The published design asks for
`Limit = messages still wanted` on every page; here pages after the first may read up to `DEEP_PAGE` items. That
reads the same items (and at most a page's worth more past the last candidate) in far fewer calls, which only
flatters the design's call count and wall clock.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any, Final

from ..messages import DELAY_SECONDS, VISIBILITY_SECONDS
from ..queues import Delivered, State, batch_put, wire

DEEP_PAGE: Final = 1000
RETENTION_SECONDS: Final = 345_600


class HiddenUntilQueue:
    label = "hidden_until filter"

    def __init__(
        self,
        client: Any,
        table: str,
        queue: str = "bench",
        tenant: str = "tenant-a",
        visibility_seconds: int = VISIBILITY_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._table = table
        self._pk = f"{queue}-{tenant}"
        self._visibility_ms = visibility_seconds * 1000
        self._clock = clock
        self._earliest_ns = time.time_ns()

    @classmethod
    def create(cls, client: Any, table: str, **options: Any) -> HiddenUntilQueue:
        client.create_table(
            TableName=table,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": "PK", "AttributeType": "S"},
                {"AttributeName": "SK", "AttributeType": "S"},
            ],
            KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        )
        return cls(client, table, **options)

    def consumer(self) -> HiddenUntilQueue:
        return self

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _item(self, body: str, hidden_until: int, owner: str = "", earlier: bool = False) -> dict[str, Any]:
        """`earlier`: sent before every message so far (a seeded backlog sorts ahead of what is visible)."""
        if earlier:
            self._earliest_ns -= 1
        sort_key = f"{self._earliest_ns if earlier else time.time_ns():020d}_{secrets.token_hex(4)}"
        return {
            "PK": self._pk,
            "SK": sort_key,
            "hidden_until": hidden_until,
            "owner": owner,
            "TTL": self._now_ms() // 1000 + RETENTION_SECONDS,
            "event": body,
        }

    def send(self, body: str) -> str:
        item = self._item(body, self._now_ms())
        self._client.put_item(TableName=self._table, Item=wire(item))
        return item["SK"]

    def send_batch(self, bodies: list[str]) -> None:
        for body in bodies:
            self.send(body)

    def receive(self, max_messages: int) -> list[Delivered]:
        now = self._now_ms()
        candidates: list[dict[str, Any]] = []
        start = None
        while len(candidates) < max_messages:
            wanted = max_messages - len(candidates)
            page: dict[str, Any] = {
                "TableName": self._table,
                "KeyConditionExpression": "PK = :pk",
                "FilterExpression": "hidden_until <= :now",
                "ProjectionExpression": "SK, hidden_until, event",
                "ExpressionAttributeValues": {":pk": {"S": self._pk}, ":now": {"N": str(now)}},
                "ScanIndexForward": True,
                "Limit": wanted if start is None else max(wanted, DEEP_PAGE),
            }
            if start:
                page["ExclusiveStartKey"] = start
            answer = self._client.query(**page)
            candidates += answer.get("Items", [])
            start = answer.get("LastEvaluatedKey")
            if not start:
                break
        got = []
        for item in candidates[:max_messages]:
            token = secrets.token_hex(16)
            if self._claim(item, token, now):
                sort_key = item["SK"]["S"]
                got.append(Delivered(sort_key, f"{sort_key}|{token}", item["event"]["S"]))
        return got

    def _claim(self, item: dict[str, Any], token: str, now: int) -> bool:
        try:
            self._client.update_item(
                TableName=self._table,
                Key={"PK": {"S": self._pk}, "SK": item["SK"]},
                UpdateExpression="SET hidden_until = :until, #owner = :owner",
                ConditionExpression="hidden_until = :seen",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={
                    ":until": {"N": str(now + self._visibility_ms)},
                    ":owner": {"S": token},
                    ":seen": item["hidden_until"],
                },
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def delete(self, handle: str) -> None:
        sort_key, token = handle.split("|")
        try:
            self._client.delete_item(
                TableName=self._table,
                Key={"PK": {"S": self._pk}, "SK": {"S": sort_key}},
                ConditionExpression="#owner = :owner",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":owner": {"S": token}},
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return

    def delete_batch(self, handles: list[str]) -> None:
        for handle in handles:
            self.delete(handle)

    def seed(self, count: int, state: State, body: str) -> None:
        now = self._now_ms()
        if state == "visible":
            hidden_until, owner = now, ""
        elif state == "delayed":
            hidden_until, owner = now + DELAY_SECONDS * 1000, ""
        else:
            hidden_until, owner = now + self._visibility_ms, secrets.token_hex(16)
        earlier = state != "visible"
        items = [self._item(body, hidden_until, owner, earlier) for _ in range(count)]
        batch_put(self._client, self._table, items)
