"""The MessageId an SQS client sees is a UUID (at most 80 characters of `A-Za-z0-9_-`, as batch entry ids must be),
the same on send, receive, the DLQ, a redrive (the core's, a move task's, to another queue) and a push event; unique
per message, also when a FIFO group's sequence starts again; answered again by a duplicate send. The library and
the REST API keep the queue's own ids. Stock boto3 against the SQS handler, on a fake clock."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from boto3.dynamodb.types import TypeDeserializer
from queue_core import QueueClient, push
from queue_core.bodies import item_size
from queue_core.push import InvokeAnswer
from queue_core.sqs_event import EventSource, record
from queue_core.sqs_ids import SQS_ID_ATTRIBUTE

from tests.conftest import FakeClock
from tests.sqs_in_process import queue_url, sqs_in_process

ARN = "arn:aws:sqs:us-east-1:000000000000:"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
ENTRY_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")
LONG_GROUP = "g" * 64 + "!#$%&'()*+,-./:;<=>?@[]^_`{|}~" + "x" * 34


@pytest.fixture
def core(client: QueueClient) -> QueueClient:
    admin = sqs_in_process(client, admin=True)
    for suffix in ("", ".fifo"):
        fifo = {"FifoQueue": "true", "ContentBasedDeduplication": "true"} if suffix else {}
        policy = {"deadLetterTargetArn": f"{ARN}jobs.dlq{suffix}", "maxReceiveCount": 1}
        admin.create_queue(QueueName=f"jobs{suffix}", Attributes={**fifo, "RedrivePolicy": json.dumps(policy)})
        admin.create_queue(QueueName=f"elsewhere{suffix}", Attributes=fifo)
    return client


@pytest.fixture
def sqs(core: QueueClient) -> Any:
    return sqs_in_process(core)


def _group(name: str) -> dict[str, str]:
    return {"MessageGroupId": LONG_GROUP} if name.endswith(".fifo") else {}


def _receive(sqs: Any, url: str, **extra: Any) -> list[dict[str, Any]]:
    return sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], **extra).get(
        "Messages", []
    )


def _ids(messages: list[dict[str, Any]]) -> dict[str, str]:
    return {message["Body"]: message["MessageId"] for message in messages}


def _dead_letter(core: QueueClient, clock: FakeClock, sqs: Any, name: str) -> None:
    """Every message of `name` received once and not deleted: the next receive moves each to the DLQ."""
    url = queue_url(sqs, name)
    while _receive(sqs, url, VisibilityTimeout=0):
        clock.advance(2)
    clock.advance(2)
    assert _receive(sqs, url) == []
    assert core.queue(name, "default").stats().dlq


@pytest.mark.parametrize("name", ["jobs", "jobs.fifo"])
def test_message_ids_are_uuids_that_batch_calls_take_as_entry_ids(sqs: Any, name: str) -> None:
    url = queue_url(sqs, name)
    one = sqs.send_message(QueueUrl=url, MessageBody="one", **_group(name))["MessageId"]
    batch = sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": f"e{n}", "MessageBody": f"batch {n}", **_group(name)} for n in range(3)]
    )
    sent = {"one": one, **{f"batch {n}": entry["MessageId"] for n, entry in enumerate(batch["Successful"])}}
    assert all(UUID.fullmatch(message_id) and ENTRY_ID.fullmatch(message_id) for message_id in sent.values())
    assert len(set(sent.values())) == 4

    received = _receive(sqs, url, VisibilityTimeout=60)
    assert _ids(received) == sent
    # What sqs-consumer's handleMessageBatch mode does: each message's id as its entry's id.
    entries = [{"Id": message["MessageId"], "ReceiptHandle": message["ReceiptHandle"]} for message in received]
    changed = sqs.change_message_visibility_batch(
        QueueUrl=url, Entries=[{**entry, "VisibilityTimeout": 30} for entry in entries]
    )
    assert {entry["Id"] for entry in changed["Successful"]} == set(sent.values()) and not changed["Failed"]
    deleted = sqs.delete_message_batch(QueueUrl=url, Entries=entries)
    assert {entry["Id"] for entry in deleted["Successful"]} == set(sent.values()) and not deleted["Failed"]


@pytest.mark.parametrize("name", ["jobs", "jobs.fifo"])
def test_the_id_stays_through_the_dlq_a_redrive_and_the_dlq_again(
    core: QueueClient, clock: FakeClock, sqs: Any, name: str
) -> None:
    url = queue_url(sqs, name)
    sent = {body: sqs.send_message(QueueUrl=url, MessageBody=body, **_group(name))["MessageId"] for body in ("a", "b")}
    _dead_letter(core, clock, sqs, name)
    dlq = queue_url(sqs, name.replace("jobs", "jobs.dlq"))
    dead = _receive(sqs, dlq, VisibilityTimeout=0)
    assert _ids(dead) == sent
    if name.endswith(".fifo"):  # as SQS: a FIFO dead letter's dedup id is its message id
        assert all(m["Attributes"]["MessageDeduplicationId"] == m["MessageId"] for m in dead)
    # The library's ids are the queue's own, as before; they reach the dead letters.
    library = core.queue(name, "default")
    assert all(library.get(message.message_id).state == "dlq" for message in library.dlq_list())

    sqs.start_message_move_task(SourceArn=f"{ARN}{name.replace('jobs', 'jobs.dlq')}")  # back to the source
    assert _ids(_receive(sqs, url, VisibilityTimeout=0)) == sent
    clock.advance(2)
    _dead_letter(core, clock, sqs, name)
    assert library.redrive() == 2
    assert _ids(_receive(sqs, url, VisibilityTimeout=0)) == sent
    clock.advance(2)
    _dead_letter(core, clock, sqs, name)
    assert _ids(_receive(sqs, dlq, VisibilityTimeout=0)) == sent


@pytest.mark.parametrize("suffix", ["", ".fifo"])
def test_a_dead_letter_moved_into_another_queue_keeps_its_id(
    core: QueueClient, clock: FakeClock, sqs: Any, suffix: str
) -> None:
    url = queue_url(sqs, f"jobs{suffix}")
    sent = sqs.send_message(QueueUrl=url, MessageBody="moved", **_group(suffix))["MessageId"]
    _dead_letter(core, clock, sqs, f"jobs{suffix}")
    sqs.start_message_move_task(SourceArn=f"{ARN}jobs.dlq{suffix}", DestinationArn=f"{ARN}elsewhere{suffix}")
    [moved] = _receive(sqs, queue_url(sqs, f"elsewhere{suffix}"))
    assert (moved["Body"], moved["MessageId"]) == ("moved", sent)


def test_a_fifo_group_whose_sequence_starts_again_gives_new_ids(core: QueueClient, clock: FakeClock, sqs: Any) -> None:
    """TTL removes a group item twice the retention after the group's last send; a send after that starts the
    group at sequence 1 again: the queue's id repeats, the SQS id does not."""
    url = queue_url(sqs, "elsewhere.fifo")
    first = sqs.send_message(QueueUrl=url, MessageBody="first", MessageGroupId="g")["MessageId"]
    library = core.queue("elsewhere.fifo", "default")
    [before] = library.peek(1)
    [held] = _receive(sqs, url)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=held["ReceiptHandle"])
    clock.advance(3 * core.get_queue("elsewhere.fifo").retention_seconds)
    _remove_group_items(core, "elsewhere.fifo")  # as TTL would

    again = sqs.send_message(QueueUrl=url, MessageBody="first", MessageGroupId="g")["MessageId"]
    [after] = library.peek(1)
    assert after.message_id == before.message_id, "the group's sequence started again"
    assert again != first
    assert _ids(_receive(sqs, url)) == {"first": again}


def _remove_group_items(core: QueueClient, queue: str) -> None:
    dynamodb, table = core.dynamodb, core.table_name
    for item in dynamodb.scan(TableName=table)["Items"]:
        if item["pk"]["S"].startswith(f"F#{queue}#"):
            dynamodb.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})


def test_a_send_repeated_by_the_sdk_after_a_lost_answer_answers_the_first_messages_id(core: QueueClient) -> None:
    lost = iter([True])
    sqs = sqs_in_process(core, lose_answer=lambda action: action == "SendMessage" and next(lost, False), attempts=2)
    url = queue_url(sqs, "jobs.fifo")
    answer = sqs.send_message(QueueUrl=url, MessageBody="once", MessageGroupId="g")
    again = sqs.send_message(QueueUrl=url, MessageBody="once", MessageGroupId="g", MessageDeduplicationId="d")
    repeat = sqs.send_message(QueueUrl=url, MessageBody="other", MessageGroupId="g", MessageDeduplicationId="d")
    assert repeat["MessageId"] == again["MessageId"] != answer["MessageId"]
    received = _receive(sqs, url)
    assert [(message["Body"], message["MessageId"]) for message in received] == [
        ("once", answer["MessageId"]),
        ("once", again["MessageId"]),
    ]


def test_the_library_and_rest_answers_keep_the_queues_own_ids(core: QueueClient) -> None:
    queue = core.queue("jobs", "default")
    sent = queue.send("hello")
    assert sent.message_id.startswith("S") and UUID.fullmatch(sent.sqs_message_id)
    assert "sqs_message_id" not in sent.to_dict()
    assert "sqs_message_ids" not in queue.send_batch([{"body": "x"}]).to_dict()
    [message] = queue.receive()
    assert message.message_id == sent.message_id and message.sqs_message_id == sent.sqs_message_id
    assert "sqs_message_id" not in message.to_dict()
    assert "sqs_message_id" not in json.dumps(queue.browse().to_dict())


def test_a_push_event_carries_the_sqs_id_and_a_failure_names_it_back(core: QueueClient) -> None:
    queue = core.queue("jobs", "default")
    ids = {body: queue.send(body) for body in ("ok", "fails", "fails too")}
    messages = queue.receive(max_messages=10)
    source = EventSource("us-east-1", "000000000000", "jobs", "default")
    records = {message.body: record(message, source, 0) for message in messages}
    assert {body: shaped["messageId"] for body, shaped in records.items()} == {
        body: sent.sqs_message_id for body, sent in ids.items()
    }
    # By the event's messageId, or by the queue's own id (what releases before these ids put in the event).
    answer = InvokeAnswer(
        json.dumps(
            {
                "batchItemFailures": [
                    {"itemIdentifier": records["fails"]["messageId"]},
                    {"itemIdentifier": ids["fails too"].message_id},
                ]
            }
        )
    )
    failed = push.item_failures(answer, push.identifiers(messages))
    assert failed == {ids["fails"].message_id, ids["fails too"].message_id}
    unknown = InvokeAnswer(json.dumps({"batchItemFailures": [{"itemIdentifier": "no-such-id"}]}))
    assert push.item_failures(unknown, push.identifiers(messages)) is None


def test_a_send_adds_no_byte_to_its_message_item_and_42_to_its_dedup_item(core: QueueClient, sqs: Any) -> None:
    """The item-size cost of SQS ids, as DynamoDB counts it: none on the message, the id on the dedup item."""
    sqs.send_message(QueueUrl=queue_url(sqs, "jobs.fifo"), MessageBody="sized", MessageGroupId="g")
    sqs.send_message(QueueUrl=queue_url(sqs, "jobs"), MessageBody="sized")
    deserializer = TypeDeserializer()
    items = [
        {name: deserializer.deserialize(value) for name, value in item.items()}
        for item in core.dynamodb.scan(TableName=core.table_name)["Items"]
    ]
    messages = [item for item in items if item["pk"][:2] in ("M#", "G#")]
    assert len(messages) == 2 and not any(SQS_ID_ATTRIBUTE in item for item in messages)
    [dedup] = [item for item in items if item["pk"].startswith("X#")]
    without = {name: value for name, value in dedup.items() if name != SQS_ID_ATTRIBUTE}
    assert item_size(dedup) - item_size(without) == 42
