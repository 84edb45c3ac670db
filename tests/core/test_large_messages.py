"""Large and chatty bodies: compression when it lowers write units, offload to S3 behind a pointer, and every path
giving back the body exactly as sent."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from queue_core import InternalError, MessageBodyMissing, MessageTooLarge, QueueClient, Throttled, limits
from queue_core.bodies import BODY, COMPRESSED, EXTENDED_CLIENT_POINTER, OFFLOADED

from bench.messages import event_log, random_bytes
from tests.conftest import TABLE, FakeClock
from tests.core.answers import LostAnswer, attached
from tests.core.conftest import BUCKET, OFFLOAD

UNICODE = 'naïve café — 東京 🚀 \u0000 \t\r\n "quoted" \\ '


def stored(dynamodb: Any, kind: str = "M") -> list[dict[str, Any]]:
    """The message items of a kind (M live standard, G live FIFO, D dead letters) as the table holds them."""
    items = dynamodb.scan(TableName=TABLE)["Items"]
    return [item for item in items if item["pk"]["S"].startswith(f"{kind}#")]


def form(item: dict[str, Any]) -> str:
    return next(name for name in (BODY, COMPRESSED, OFFLOADED) if name in item)


def objects(s3: Any) -> list[str]:
    return [entry["Key"] for entry in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


@pytest.mark.parametrize("name", ["zip", "zip.fifo"])
def test_a_chatty_body_is_stored_compressed_and_every_path_returns_it_as_sent(
    large: QueueClient, dynamodb, clock: FakeClock, name: str
) -> None:
    large.create_queue(name, max_receive_count=1, visibility_timeout=0)
    jobs = large.queue(name, "c")
    body = event_log(4096)
    group = {"group_id": "g"} if name.endswith(".fifo") else {}
    sent = jobs.send(body, **group)
    [item] = stored(dynamodb, "G" if group else "M")
    assert form(item) == COMPRESSED and len(item[COMPRESSED]["B"]) < 1024
    assert [message.body for message in jobs.peek()] == [body]
    assert jobs.get(sent.message_id).body == body
    [received] = jobs.receive()
    assert received.body == body
    clock.advance(2)  # a FIFO group stays locked for at least a second
    assert jobs.receive() == []  # past its receive limit: to the DLQ
    assert [message.body for message in jobs.dlq_list()] == [body]
    assert jobs.get(sent.message_id).state == "dlq" and jobs.get(sent.message_id).body == body
    assert jobs.redrive() == 1
    assert [message.body for message in jobs.receive()] == [body]


def test_compression_only_where_it_lowers_write_units(large: QueueClient, dynamodb) -> None:
    large.create_queue("units")
    jobs = large.queue("units", "c")
    # Below the minimum: never compressed. 900 bytes of JSON: a 2-unit item that compression makes 1 unit.
    # Random bytes as base64 compress by a quarter: 1500 of them stay above 1 KB, as many units either way.
    bodies = [event_log(limits.COMPRESS_MIN_BYTES - 1), event_log(900), random_bytes(1500)]
    jobs.send_batch([{"body": body} for body in bodies])
    forms = sorted((len(item.get(BODY, {}).get("S", "")), form(item)) for item in stored(dynamodb))
    assert forms == [(0, COMPRESSED), (limits.COMPRESS_MIN_BYTES - 1, BODY), (1500, BODY)]
    assert sorted(message.body for message in jobs.receive(max_messages=10)) == sorted(bodies)


@pytest.mark.parametrize(("delta", "offloaded"), [(1, False), (0, False), (-1, True)])
def test_offload_starts_above_the_threshold_one_byte_below_at_and_above(
    dynamodb, s3, clock: FakeClock, delta: int, offloaded: bool
) -> None:
    """The threshold counts the body as stored (compressed here): one byte below it, at it, one byte above."""
    body = random_bytes(3 * OFFLOAD)
    size = len(zlib.compress(body.encode(), 6))
    large = QueueClient(TABLE, dynamodb=dynamodb, clock=clock, s3=s3, bucket=BUCKET, offload_bytes=size + delta)
    large.create_table()
    large.create_queue("edge")
    jobs = large.queue("edge", "c")
    jobs.send(body)
    [item] = stored(dynamodb)
    assert form(item) == (OFFLOADED if offloaded else COMPRESSED)
    assert all(key.startswith("edge/c/") for key in objects(s3))  # queue and client first: an IAM prefix
    assert [message.body for message in jobs.receive()] == [body]


@pytest.mark.parametrize("name", ["big", "big.fifo"])
def test_the_largest_body_unicode_and_binary_safe_text_round_trip_offloaded(
    large: QueueClient, dynamodb, s3, name: str
) -> None:
    large.create_queue(name)
    jobs = large.queue(name, "c")
    group = {"group_id": "g"} if name.endswith(".fifo") else {}
    largest = random_bytes(limits.MAX_BODY_BYTES)
    chatty = (UNICODE * 5000)[:40_000]
    jobs.send_batch([{"body": largest, **group}, {"body": chatty, **group}, {"body": UNICODE, **group}])
    forms = sorted(form(item) for item in stored(dynamodb, "G" if group else "M"))
    assert forms == sorted([BODY, COMPRESSED, OFFLOADED])
    got = jobs.receive(max_messages=10)
    assert [message.body for message in got] == ([largest, chatty, UNICODE] if group else [m.body for m in got])
    assert sorted(message.body for message in got) == sorted([largest, chatty, UNICODE])


def test_without_a_bucket_bodies_stay_in_the_item_and_are_still_compressed(client: QueueClient, dynamodb) -> None:
    client.create_queue("plain")
    jobs = client.queue("plain", "c")
    jobs.send_batch([{"body": random_bytes(256 * 1024)}, {"body": event_log(limits.MAX_BODY_BYTES)}])
    assert sorted(form(item) for item in stored(dynamodb)) == [COMPRESSED, COMPRESSED]
    assert len(jobs.receive(max_messages=10)) == 2
    # A MiB of random bytes stays over 400 KB compressed: without a bucket it cannot be stored.
    with pytest.raises(MessageTooLarge):
        jobs.send(random_bytes(limits.MAX_BODY_BYTES))
    assert jobs.stats().visible == 0


def test_extended_client_pointers_pass_through_untouched(large: QueueClient, dynamodb, s3) -> None:
    large.create_queue("ext")
    jobs = large.queue("ext", "c")
    pointer = f'{EXTENDED_CLIENT_POINTER},{{"s3BucketName":"their-bucket","s3Key":"{"k" * 1024}"}}]'
    jobs.send(pointer, attributes={"ExtendedPayloadSize": "300000"})
    [item] = stored(dynamodb)
    assert item[BODY]["S"] == pointer and objects(s3) == []
    [message] = jobs.receive()
    assert (message.body, message.attributes) == (pointer, {"ExtendedPayloadSize": "300000"})


@pytest.mark.parametrize("name", ["gone", "gone.fifo"])
def test_a_body_gone_from_the_bucket_sends_the_message_to_the_dlq_with_a_clear_error(
    large: QueueClient, s3, name: str
) -> None:
    large.create_queue(name)
    jobs = large.queue(name, "c")
    group = {"group_id": "g"} if name.endswith(".fifo") else {}
    lost = jobs.send(random_bytes(OFFLOAD * 2), **group)
    kept = jobs.send("small", **group)
    [key] = objects(s3)
    s3.delete_object(Bucket=BUCKET, Key=key)
    assert [message.body for message in jobs.peek()] == ["small"]
    with pytest.raises(MessageBodyMissing) as missing:
        jobs.get(lost.message_id)
    assert missing.value.status == 410
    assert [message.message_id for message in jobs.receive(max_messages=10)] == [kept.message_id]
    assert jobs.stats().dlq == 1
    assert jobs.cancel(lost.message_id) is True and jobs.stats().dlq == 0


class FailingPuts:
    """S3 refuses every PutObject (an outage, or a denied grant)."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __call__(self, **_: Any) -> None:
        raise ClientError({"Error": {"Code": self.code, "Message": "no"}}, "PutObject")


@pytest.mark.parametrize(
    ("name", "code", "error"), [("fail", "AccessDenied", InternalError), ("fail.fifo", "SlowDown", Throttled)]
)
def test_an_s3_failure_during_send_stores_nothing_half_way(
    large: QueueClient, dynamodb, s3, name: str, code: str, error: type
) -> None:
    large.create_queue(name)
    jobs = large.queue(name, "c")
    group = {"group_id": "g"} if name.endswith(".fifo") else {}
    s3.meta.events.register("before-call.s3.PutObject", FailingPuts(code), unique_id="fail-puts")
    try:
        with pytest.raises(error):
            jobs.send(random_bytes(OFFLOAD * 2), **group)
        outcome = jobs.send_batch([{"body": random_bytes(OFFLOAD * 2), **group}, {"body": "small", **group}])
    finally:
        s3.meta.events.unregister("before-call.s3.PutObject", unique_id="fail-puts")
    if group:  # a FIFO chunk is one transaction: the small one waits for the big one, in order
        assert [failure["code"] for failure in outcome.failed] == [error.code, error.code]
    else:
        assert [failure["code"] for failure in outcome.failed] == [error.code]
        assert [entry["index"] for entry in outcome.successful] == [1]
    assert all(form(item) != OFFLOADED for item in stored(dynamodb, "G" if group else "M"))
    assert objects(s3) == []


@pytest.mark.parametrize("name", ["tidy", "tidy.fifo"])
def test_objects_go_with_deleted_cancelled_purged_and_expired_messages_and_stay_through_a_redrive(
    large: QueueClient, s3, clock: FakeClock, name: str
) -> None:
    large.create_queue(name, max_receive_count=1, visibility_timeout=0, retention_seconds=60)
    jobs = large.queue(name, "c")
    group = {"group_id": "g"} if name.endswith(".fifo") else {}

    def send() -> str:
        return jobs.send(random_bytes(OFFLOAD * 2, seed=len(objects(s3))), **group).message_id

    send()
    [message] = jobs.receive()
    jobs.delete(message.receipt_handle)
    assert objects(s3) == []
    large.queue(name, "c").cancel(send())
    assert objects(s3) == []
    send(), send()
    assert jobs.purge() == 2 and objects(s3) == []
    send()
    [message] = jobs.receive()
    clock.advance(2)  # a FIFO group stays locked for at least a second
    assert jobs.receive() == [] and jobs.stats().dlq == 1  # moved: its object moved with it
    [key] = objects(s3)
    assert jobs.redrive() == 1 and objects(s3) == [key]
    # A young object outlives the redriven message's new life (a minute here): it is not copied.
    assert "renewed" not in s3.head_object(Bucket=BUCKET, Key=key)["Metadata"]
    clock.advance(2)
    assert [message.body[:8] for message in jobs.receive()] != []
    clock.advance(61 * 3)
    large.sweep()
    assert jobs.stats().dlq == 0 and objects(s3) == []


@pytest.mark.parametrize("name", ["old", "old.fifo"])
def test_a_redrive_renews_an_object_that_would_expire_before_the_messages_new_life_ends(
    large: QueueClient, s3, clock: FakeClock, name: str
) -> None:
    """The lifecycle rule removes objects 29 days after their last write. A message of a 14-day queue first received
    (and failed) on day 13 waits in the DLQ until day 27; redriven on day 20, it may live until day 48 (queue, then
    DLQ): its object is copied onto itself, which restarts its age."""
    large.create_queue(name, max_receive_count=1, visibility_timeout=0, retention_seconds=limits.MAX_RETENTION_SECONDS)
    jobs = large.queue(name, "c")
    body = random_bytes(OFFLOAD * 2, seed=9)
    jobs.send(body, **({"group_id": "g"} if name.endswith(".fifo") else {}))
    [key] = objects(s3)
    written = s3.head_object(Bucket=BUCKET, Key=key)
    clock.advance(13 * 86_400)
    assert len(jobs.receive()) == 1
    clock.advance(2)
    assert jobs.receive() == [] and jobs.stats().dlq == 1
    clock.advance(7 * 86_400)
    assert jobs.redrive() == 1 and objects(s3) == [key]
    renewed = s3.head_object(Bucket=BUCKET, Key=key)
    assert renewed["Metadata"] == {"renewed": str(int(clock() * 1000))}
    assert renewed["LastModified"] >= written["LastModified"] and renewed["ContentLength"] == written["ContentLength"]
    assert [message.body for message in jobs.receive()] == [body]


@pytest.mark.parametrize("name", ["kept", "kept.fifo"])
def test_an_archived_copy_keeps_its_offloaded_body_past_the_lifecycle_rule(
    large: QueueClient, s3, clock: FakeClock, name: str
) -> None:
    """An acknowledged message's archived copy names its object and may live 90 days; the lifecycle rule removes
    objects 29 days after their last write. Acknowledged on day 10 with a 90-day archive, the object is copied
    onto itself then (its age restarts); one whose archive ends before the rule's age is left as it is."""
    short = "short.fifo" if name.endswith(".fifo") else "short"
    for queue, days in ((name, 90), (short, 1)):
        large.create_queue(queue, archive_days=days, retention_seconds=limits.MAX_RETENTION_SECONDS)
    for queue, renewed in ((name, True), (short, False)):
        jobs = large.queue(queue, "c")
        body = random_bytes(OFFLOAD * 2, seed=11)
        jobs.send(body, **({"group_id": "g"} if queue.endswith(".fifo") else {}))
        [key] = [key for key in objects(s3) if key.startswith(f"{queue}/")]
        clock.advance(10 * 86_400)
        [message] = jobs.receive()
        jobs.delete(message.receipt_handle)
        metadata = s3.head_object(Bucket=BUCKET, Key=key)["Metadata"]
        assert (metadata == {"renewed": str(int(clock() * 1000))}) is renewed, queue
        [copy] = jobs.archive_get(message.message_id)
        assert copy.body == body


def test_deleting_a_queue_removes_every_object_under_its_prefix(large: QueueClient, s3) -> None:
    large.create_queue("gone-queue")
    for client in ("a", "b"):
        large.queue("gone-queue", client).send(random_bytes(OFFLOAD * 2))
    large.create_queue("other")
    large.queue("other", "a").send(random_bytes(OFFLOAD * 2))
    large.delete_queue("gone-queue")
    assert [key.split("/")[0] for key in objects(s3)] == ["other"]


def test_a_duplicate_send_leaves_no_object_behind(large: QueueClient, s3) -> None:
    large.create_queue("dup")
    jobs = large.queue("dup", "c")
    first = jobs.send(random_bytes(OFFLOAD * 2), dedup_id="d")
    again = jobs.send(random_bytes(OFFLOAD * 2, seed=9), dedup_id="d")
    assert again.duplicate and again.message_id == first.message_id and len(objects(s3)) == 1


def test_a_lost_answer_on_an_offloaded_send_keeps_the_object_of_the_stored_item(
    large: QueueClient, dynamodb, s3
) -> None:
    """The batch's answer is lost after DynamoDB stored it: the item is there, so its object must stay."""
    large.create_queue("lost")
    jobs = large.queue("lost", "c")
    body = random_bytes(OFFLOAD * 2)
    with attached(dynamodb, LostAnswer("BatchWriteItem")) as lost:
        jobs.send_batch([{"body": body}])
    assert lost.lost == 1
    assert [message.body for message in jobs.receive()] == [body]


@pytest.fixture
def no_s3_calls(s3: Any) -> Iterator[list[str]]:
    calls: list[str] = []

    def record(model: Any, **_: Any) -> None:
        calls.append(model.name)

    s3.meta.events.register("before-call.s3", record, unique_id="record-s3")
    yield calls
    s3.meta.events.unregister("before-call.s3", unique_id="record-s3")


def test_small_messages_never_touch_s3(large: QueueClient, no_s3_calls: list[str]) -> None:
    large.create_queue("small")
    jobs = large.queue("small", "c")
    jobs.send(event_log(4096))
    [message] = jobs.receive()
    jobs.delete(message.receipt_handle)
    assert no_s3_calls == []


@pytest.mark.parametrize("name", ["limit", "limit.fifo"])
def test_the_default_limit_is_one_mib_one_byte_below_at_and_above(large: QueueClient, s3, name: str) -> None:
    settings = large.create_queue(name)
    assert settings.max_message_bytes == limits.MAX_BODY_BYTES == 1024 * 1024
    jobs = large.queue(name, "c")
    group = {"group_id": "g"} if name.endswith(".fifo") else {}
    sizes = (limits.MAX_BODY_BYTES - 1, limits.MAX_BODY_BYTES, limits.MAX_BODY_BYTES + 1)
    outcome = jobs.send_batch([{"body": random_bytes(size, seed=size), **group} for size in sizes])
    assert [entry["index"] for entry in outcome.successful] == [0, 1]
    assert [(failure["index"], failure["code"]) for failure in outcome.failed] == [(2, "MessageTooLarge")]
    assert len(objects(s3)) == 2
    assert sorted(len(message.body) for message in jobs.receive(max_messages=10)) == list(sizes[:2])
