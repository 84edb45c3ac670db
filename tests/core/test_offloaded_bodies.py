"""Offloaded bodies at the edges: removals that race with moves, bodies that look like Extended Client pointers,
and sends that fail after their objects were written."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.exceptions import ClientError
from queue_core import MessageTooLarge, QueueClient, limits
from queue_core.bodies import BODY, EXTENDED_CLIENT_POINTER, POINTER_CLASS

from bench.messages import random_bytes
from tests.conftest import FakeClock
from tests.core.conftest import OFFLOAD
from tests.core.test_large_messages import form, objects, stored


@contextmanager
def after_reading(dynamodb: Any, partition: str, action: Callable[[], None]) -> Iterator[list[int]]:
    """Runs `action` once, right after a query of a partition starting with `partition` answered with an offloaded
    message: as if another process acted between a reader's query and its writes."""
    ran: list[int] = []

    def hook(parsed: dict[str, Any], **_: Any) -> None:
        items = parsed.get("Items", [])
        if not ran and any(i["pk"]["S"].startswith(partition) and "bodyobj" in i for i in items):
            ran.append(1)
            action()

    dynamodb.meta.events.register("after-call.dynamodb.Query", hook, unique_id="after-reading")
    try:
        yield ran
    finally:
        dynamodb.meta.events.unregister("after-call.dynamodb.Query", unique_id="after-reading")


@pytest.mark.parametrize("name", ["race", "race.fifo"])
def test_a_message_moved_to_the_dlq_during_a_purge_keeps_its_offloaded_body(
    large: QueueClient, dynamodb: Any, s3: Any, clock: FakeClock, name: str
) -> None:
    large.create_queue(name, max_receive_count=1, visibility_timeout=0)
    jobs = large.queue(name, "c")
    body = random_bytes(OFFLOAD * 2)
    if name.endswith(".fifo"):
        sent = jobs.send(body, group_id="g")
        assert len(jobs.receive()) == 1
        clock.advance(2)  # past its receive limit: the next receive moves it to the DLQ

        def move() -> None:
            assert jobs.receive() == []

        partition = "G#"
    else:
        sent = jobs.send(body)

        def move() -> None:
            assert jobs.move_to_dlq(sent.message_id)

        partition = "M#"
    with after_reading(dynamodb, partition, move) as ran:
        assert jobs.purge() == 0
    assert ran == [1]
    moved = jobs.get(sent.message_id)
    assert (moved.state, moved.body) == ("dlq", body)
    assert len(objects(s3)) == 1
    assert jobs.redrive() == 1
    clock.advance(2)
    assert [message.body for message in jobs.receive()] == [body]


def pointer(
    bucket: str = "their-bucket", key: str = "a1b2c3d4-0000-4000-8000-000000000000", spaced: bool = False
) -> str:
    """A body as an SQS Extended Client writes it in place of one it offloaded (Java: compact; Python: spaced)."""
    separator = ", " if spaced else ","
    colon = ": " if spaced else ":"
    return f'["{POINTER_CLASS}"{separator}{{"s3BucketName"{colon}"{bucket}"{separator}"s3Key"{colon}"{key}"}}]'


def test_a_large_body_that_only_starts_like_an_extended_client_pointer_is_an_ordinary_body(
    large: QueueClient, client: QueueClient, dynamodb: Any, s3: Any
) -> None:
    large.create_queue("lookalike")
    jobs = large.queue("lookalike", "c")
    lookalike = f"{EXTENDED_CLIENT_POINTER}, {random_bytes(500_000)}]"
    sent = jobs.send(lookalike)
    outcome = jobs.send_batch([{"body": "small"}, {"body": lookalike}, {"body": random_bytes(OFFLOAD * 2)}])
    assert (len(outcome.successful), outcome.failed) == (3, [])
    assert len(objects(s3)) == 3
    assert jobs.get(sent.message_id).body == lookalike
    assert sorted(len(message.body) for message in jobs.receive(max_messages=10)) == sorted(
        [len(lookalike), 5, len(lookalike), OFFLOAD * 2]
    )
    # Without a bucket, the same body is too large for an item: that entry fails, the others are stored.
    client.create_queue("lookalike-no-bucket")
    plain = client.queue("lookalike-no-bucket", "c")
    outcome = plain.send_batch([{"body": "before"}, {"body": f"{EXTENDED_CLIENT_POINTER}, {random_bytes(900_000)}]"}])
    assert [entry["index"] for entry in outcome.successful] == [0]
    assert [(failure["index"], failure["code"]) for failure in outcome.failed] == [(1, "MessageTooLarge")]


@pytest.mark.parametrize(
    ("body", "is_pointer"),
    [
        pytest.param(pointer(), True, id="java"),
        pytest.param(pointer(spaced=True), True, id="python-spaced"),
        pytest.param(pointer(key="k" * 1024), True, id="longest-key"),
        pytest.param(pointer(key="ü" * 512), True, id="unicode-key"),
        pytest.param(pointer(bucket="Legacy_Bucket.Name"), True, id="legacy-bucket"),
        pytest.param(
            pointer()[:-1] + "  " * 2000 + "]", True, id="padded"
        ),  # whitespace JSON allows, within the pointer's size
        pytest.param(
            pointer()[:-1] + " " * limits.MAX_POINTER_BYTES + "]", False, id="too-long"
        ),  # longer than any pointer
        pytest.param(pointer(key="k" * 1025), False, id="key-too-long"),
        pytest.param(pointer(key=""), False, id="empty-key"),
        pytest.param(pointer(bucket="x"), False, id="short-bucket"),
        pytest.param(pointer(bucket="bad/bucket"), False, id="bad-bucket"),
        pytest.param(pointer().replace('"s3Key"', '"s3key"'), False, id="misspelt-field"),
        pytest.param(pointer().replace("}]", ', "extra": 1}]'), False, id="extra-field"),
        pytest.param(pointer() + " trailing", False, id="trailing-text"),
        pytest.param(pointer().replace(POINTER_CLASS, "com.example.Other"), False, id="other-class"),
    ],
)
def test_only_a_body_that_is_an_extended_client_pointer_is_stored_as_sent(
    large: QueueClient, dynamodb: Any, s3: Any, body: str, is_pointer: bool
) -> None:
    """A pointer is stored as sent, whatever its length; anything else of the same length, padded past the size
    where bodies are compressed, is stored compressed (or offloaded). Every one comes back as sent."""
    large.create_queue("pointers")
    jobs = large.queue("pointers", "c")
    padded = body if is_pointer or len(body) > limits.COMPRESS_MIN_BYTES * 4 else body + " " * 4096
    jobs.send(padded, attributes={"ExtendedPayloadSize": "300000"})
    [item] = stored(dynamodb)
    assert (form(item) == BODY) is is_pointer
    [message] = jobs.receive()
    assert (message.body, message.attributes) == (padded, {"ExtendedPayloadSize": "300000"})


def refuse_item_size(**_: Any) -> None:
    raise ClientError(
        {"Error": {"Code": "ValidationException", "Message": "Item size has exceeded the maximum allowed size"}},
        "BatchWriteItem",
    )


def test_a_batch_dynamodb_refuses_fails_entry_by_entry_and_leaves_no_object_behind(
    large: QueueClient, dynamodb: Any, s3: Any
) -> None:
    large.create_queue("refused")
    jobs = large.queue("refused", "c")
    entries = [{"body": random_bytes(OFFLOAD * 2, seed=1)}, {"body": "small"}, {"body": random_bytes(OFFLOAD * 3)}]
    dynamodb.meta.events.register("before-call.dynamodb.BatchWriteItem", refuse_item_size, unique_id="refuse")
    try:
        outcome = jobs.send_batch(entries)
        with pytest.raises(MessageTooLarge):
            jobs.send(random_bytes(OFFLOAD * 2, seed=2))
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb.BatchWriteItem", unique_id="refuse")
    assert outcome.successful == []
    assert [(failure["index"], failure["code"]) for failure in outcome.failed] == [
        (0, "MessageTooLarge"),
        (1, "MessageTooLarge"),
        (2, "MessageTooLarge"),
    ]
    assert objects(s3) == [] and stored(dynamodb) == []
    assert jobs.send_batch(entries).failed == [] and len(objects(s3)) == 2
