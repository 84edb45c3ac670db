"""The limits `send` applies hold on every backend the product runs on: DynamoDB (400 KB items) and the embedded
DynamoDB of `make local`, `dq local` and these tests (moto: 405,000 bytes as it counts them). A message that send
accepts can be claimed, released, dead-lettered, redriven and deleted; one byte more is refused or offloaded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from queue_core import MessageTooLarge, QueueClient, limits
from queue_core.bodies import OFFLOADED, item_size
from queue_core.store import deserialize

from bench.messages import random_bytes
from tests.conftest import TABLE, FakeClock
from tests.core.conftest import BUCKET

# The longest names a queue and a client may have, and the longest group and dedup ids: the most key bytes an
# item carries, and (for FIFO) the most its DLQ copy's key adds.
QUEUE = "q" * 80
FIFO_QUEUE = "f" * 75 + ".fifo"
CLIENT = "c" * 80
GROUP = "g" * 128


def dedup(size: int, use: str = "sent") -> str:
    """The longest dedup id, one per size and use (a dedup id is kept for its window even once purged)."""
    return f"{use}-{size:07d}".rjust(128, "d")


ATTRIBUTES = {"kind": "edge", "n": "1"}


def largest(accepted: Callable[[int], bool], low: int, high: int) -> int:
    """The largest size in [low, high] that `accepted` takes, by bisection (it takes `low` and refuses `high`)."""
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if accepted(middle) else (low, middle)
    return low


def message_items(dynamodb: Any) -> list[dict[str, Any]]:
    items = [deserialize(item) for item in dynamodb.scan(TableName=TABLE)["Items"]]
    return [item for item in items if item and item["pk"][:2] in ("M#", "G#", "D#")]


class Life:
    """Walks one message through every write the queue may make to its item, and records the largest size its
    items reached as DynamoDB counts it."""

    def __init__(self, dynamodb: Any, clock: FakeClock, jobs: Any, fifo: bool) -> None:
        self.dynamodb, self.clock, self.jobs, self.fifo = dynamodb, clock, jobs, fifo
        self.largest = 0

    def measure(self) -> None:
        for item in message_items(self.dynamodb):
            self.largest = max(self.largest, item_size(item))

    def receive_one(self, body: str) -> Any:
        self.clock.advance(2)  # past the last claim (a FIFO group stays locked for at least a second)
        [message] = self.jobs.receive(visibility_timeout=60)
        assert message.body == body
        self.measure()
        return message

    def run(self, body: str, message_id: str) -> None:
        self.measure()
        first = self.receive_one(body)
        self.jobs.change_visibility(first.receipt_handle, 120)
        self.measure()
        self.jobs.release(first.receipt_handle, 0)
        self.measure()
        second = self.receive_one(body)
        assert second.receive_count == 2
        self.jobs.release(second.receipt_handle, 0)
        self.clock.advance(2)
        assert self.jobs.receive() == []  # past its receive limit: to the DLQ
        dead = self.jobs.get(message_id)
        assert (dead.state, dead.body) == ("dlq", body)
        self.measure()
        assert self.jobs.redrive() == 1
        self.measure()
        third = self.receive_one(body)
        self.jobs.delete(third.receipt_handle)
        assert self.jobs.stats().to_dict() | {"oldest_age_seconds": None} == {
            **self.jobs.stats().to_dict(),
            "visible": 0,
            "in_flight": 0,
            "delayed": 0,
            "dlq": 0,
            "oldest_age_seconds": None,
        }


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
@pytest.mark.parametrize("compress", [False, True], ids=["as-sent", "compressed"])
def test_the_largest_message_send_accepts_lives_its_whole_life_and_one_byte_more_is_refused(
    dynamodb: Any, clock: FakeClock, fifo: bool, compress: bool
) -> None:
    core = QueueClient(TABLE, dynamodb=dynamodb, clock=clock, compress=compress)
    core.create_table()
    name = FIFO_QUEUE if fifo else QUEUE
    core.create_queue(name, max_receive_count=2, retention_seconds=3600)
    jobs = core.queue(name, CLIENT)
    ids = {"group_id": GROUP} if fifo else {"priority": 9}

    def accepted(size: int) -> bool:
        try:
            jobs.send(random_bytes(size, seed=size), attributes=ATTRIBUTES, dedup_id=dedup(size, "probe"), **ids)
        except MessageTooLarge:
            return False
        jobs.purge()
        return True

    edge = largest(accepted, 300_000, limits.MAX_BODY_BYTES)
    body = random_bytes(edge, seed=edge)
    with pytest.raises(MessageTooLarge):
        jobs.send(random_bytes(edge + 1, seed=edge + 1), attributes=ATTRIBUTES, dedup_id=dedup(edge + 1), **ids)
    sent = jobs.send(body, attributes=ATTRIBUTES, dedup_id=dedup(edge), **ids)
    life = Life(dynamodb, clock, jobs, fifo)
    life.run(body, sent.message_id)
    assert life.largest <= 400 * 1024  # DynamoDB's limit, as DynamoDB counts


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_with_a_bucket_one_byte_past_what_an_item_holds_is_offloaded(
    dynamodb: Any, s3: Any, clock: FakeClock, fifo: bool
) -> None:
    """A bucket and an offload threshold above any item (and bodies stored as sent, so that sizes are exact): the
    body goes to S3 only when the item could not hold it through its whole life."""
    core = QueueClient(
        TABLE, dynamodb=dynamodb, clock=clock, s3=s3, bucket=BUCKET, offload_bytes=2 * 1024 * 1024, compress=False
    )
    core.create_table()
    name = FIFO_QUEUE if fifo else QUEUE
    core.create_queue(name, max_receive_count=2, retention_seconds=3600)
    jobs = core.queue(name, CLIENT)
    ids = {"group_id": GROUP} if fifo else {"priority": 9}

    def in_item(size: int) -> bool:
        jobs.send(random_bytes(size, seed=size), attributes=ATTRIBUTES, dedup_id=dedup(size, "probe"), **ids)
        [item] = message_items(dynamodb)
        jobs.purge()
        return OFFLOADED not in item

    edge = largest(in_item, 300_000, limits.MAX_BODY_BYTES)
    for size in (edge, edge + 1):
        body = random_bytes(size, seed=size)
        sent = jobs.send(body, attributes=ATTRIBUTES, dedup_id=dedup(size), **ids)
        [item] = message_items(dynamodb)
        assert (OFFLOADED in item) is (size > edge)
        Life(dynamodb, clock, jobs, fifo).run(body, sent.message_id)
