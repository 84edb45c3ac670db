"""The small interface every design under test offers, and the queue core behind it.

Each design (ours and the two baselines) sends, receives up to `max_messages` as (id, handle, body) and deletes by
handle. `seed` fills a table fast for the backlog scenarios: visible and delayed messages go through the design's
own send path where that is quick enough; messages in flight are written in the design's own item layout with
`BatchWriteItem`, because claiming 10,000 messages one receive at a time would take moto many minutes.
"""

from __future__ import annotations

import random
import secrets
import time
from typing import Any, Final, Literal, NamedTuple, Protocol

from boto3.dynamodb.types import TypeSerializer
from queue_core import QueueClient
from queue_core.clock import SequenceSource, fixed_ms

from .messages import DELAY_SECONDS, VISIBILITY_SECONDS

State = Literal["visible", "in_flight", "delayed"]
BATCH_WRITE: Final = 25
_serializer = TypeSerializer()


class Delivered(NamedTuple):
    message_id: str
    handle: str
    body: str


class QueueUnderTest(Protocol):
    label: str

    def send(self, body: str) -> str: ...

    def send_batch(self, bodies: list[str]) -> None:
        """One call where the design has a batch send, one send per body where it has not."""

    def receive(self, max_messages: int) -> list[Delivered]: ...

    def delete(self, handle: str) -> None: ...

    def delete_batch(self, handles: list[str]) -> None: ...

    def seed(self, count: int, state: State, body: str) -> None: ...

    def consumer(self) -> QueueUnderTest:
        """Another consumer of the same queue, with its own state, as another Lambda instance would be."""


def batch_put(client: Any, table: str, items: list[dict[str, Any]]) -> None:
    """Unconditional puts, 25 a call (DynamoDB's limit), retrying what comes back unprocessed."""
    for start in range(0, len(items), BATCH_WRITE):
        pending = [{"PutRequest": {"Item": wire(item)}} for item in items[start : start + BATCH_WRITE]]
        while pending:
            answer = client.batch_write_item(RequestItems={table: pending})
            pending = answer.get("UnprocessedItems", {}).get(table, [])


def wire(item: dict[str, Any]) -> dict[str, Any]:
    """Plain Python values to DynamoDB's wire format."""
    return {name: _serializer.serialize(value) for name, value in item.items()}


class OursQueue:
    """A sub-queue of the queue core through its public API: standard, or FIFO when `groups` is set (messages
    then go to groups `g0`..`g{groups-1}` in turn)."""

    label = "ours"

    def __init__(self, client: Any, table: str, queue: str, tenant: str = "tenant-a", groups: int = 0) -> None:
        self._client = client
        self._table = table
        self._groups = groups
        self._sent = 0
        self.core = QueueClient(table, dynamodb=client)
        self.sub = self.core.queue(queue, tenant)
        self._sequences = SequenceSource()

    @classmethod
    def create(
        cls, client: Any, table: str, queue: str = "bench", shards: int = 1, groups: int = 0, **settings: Any
    ) -> OursQueue:
        core = QueueClient(table, dynamodb=client)
        core.create_table()
        core.create_queue(queue, fifo=groups > 0, visibility_timeout=VISIBILITY_SECONDS, shards=shards, **settings)
        return cls(client, table, queue, groups=groups)

    def consumer(self) -> OursQueue:
        return OursQueue(self._client, self._table, self.sub.queue, self.sub.client, self._groups)

    def warm(self) -> None:
        """Loads the queue's settings into this consumer's cache, as a warm Lambda instance has them."""
        _ = self.sub.settings

    def _entry(self, body: str, delay_seconds: int = 0) -> dict[str, Any]:
        entry: dict[str, Any] = {"body": body, "delay_seconds": delay_seconds}
        if self._groups:
            entry["group_id"] = f"g{self._sent % self._groups}"
        self._sent += 1
        return entry

    def send(self, body: str) -> str:
        return self.sub.send(**self._entry(body)).message_id

    def send_batch(self, bodies: list[str], delay_seconds: int = 0) -> None:
        for start in range(0, len(bodies), BATCH_WRITE):
            entries = [self._entry(body, delay_seconds) for body in bodies[start : start + BATCH_WRITE]]
            result = self.sub.send_batch(entries)
            if result.failed:
                raise RuntimeError(f"send_batch failed: {result.failed[:3]}")

    def receive(self, max_messages: int) -> list[Delivered]:
        return [Delivered(m.message_id, m.receipt_handle, m.body) for m in self.sub.receive(max_messages)]

    def delete(self, handle: str) -> None:
        self.sub.delete(handle)

    def delete_batch(self, handles: list[str]) -> None:
        for start in range(0, len(handles), BATCH_WRITE):
            result = self.sub.delete_batch(handles[start : start + BATCH_WRITE])
            if result.failed:
                raise RuntimeError(f"delete_batch failed: {result.failed[:3]}")

    def seed(self, count: int, state: State, body: str) -> None:
        if state == "in_flight":
            self._seed_in_flight(count, body)
        else:
            self.send_batch([body] * count, delay_seconds=DELAY_SECONDS if state == "delayed" else 0)

    def _seed_in_flight(self, count: int, body: str) -> None:
        """Messages as the core's claim leaves them: visible again only when the visibility timeout ends, a
        fresh claim token, received once (`tests/bench` checks that the core sees them as in flight)."""
        settings = self.sub.settings
        now = int(time.time() * 1000)
        until = now + VISIBILITY_SECONDS * 1000
        items = []
        for _ in range(count):
            pk = self.sub.space.message_pk(random.randrange(settings.shards))
            sequence = self._sequences.next(now)
            items.append(
                {
                    "pk": pk,
                    "sk": sequence,
                    "body": body,
                    "sent_at": now,
                    "visible_at": until,
                    "receive_count": 1,
                    "expires_at": now // 1000 + settings.retention_seconds,
                    "gsi1pk": pk,
                    "gsi1sk": f"{fixed_ms(until)}#{sequence}",
                    "tok": secrets.token_hex(16),
                    "in_flight": 1,
                    "first_received_at": now,
                }
            )
        batch_put(self._client, self._table, items)
