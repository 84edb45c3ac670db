"""Messages written by a release before SQS message ids (`fixtures/layout2.json`) get them with no change to the
table: over SQS each has a UUID, the same on every receive, in the DLQ and after a redrive, and a duplicate of a
send made then answers the id its message is received with; the ids that release handed out (the queue's own)
still work wherever an id is taken: get, cancel, a redrive by id, a push consumer's batchItemFailures."""

from __future__ import annotations

import json
import re
from typing import Any

from queue_core import push
from queue_core.push import InvokeAnswer

from tests.release.test_migrate import restored
from tests.sqs_in_process import sqs_in_process

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def _receive(sqs: Any, url: str) -> dict[str, str]:
    answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    return {message["Body"]: message["MessageId"] for message in answer.get("Messages", [])}


def test_messages_of_an_earlier_release_have_stable_sqs_ids_and_keep_their_own(dynamodb: Any) -> None:
    client, clock, dump = restored(dynamodb, "layout2")
    client.migrate()
    sqs = sqs_in_process(client, "tenant-a")
    [head] = dump["handles"]["events.fifo/tenant-a"]
    events = client.queue("events.fifo", "tenant-a")
    events.delete(head["handle"])  # the group's head, held by a receive of that release
    url = sqs.get_queue_url(QueueName="events.fifo")["QueueUrl"]

    # A duplicate of a send made then (its dedup item has no SQS id) answers the id its message is received with.
    duplicate = sqs.send_message(QueueUrl=url, MessageBody="again", MessageGroupId="g1", MessageDeduplicationId="g1-2")
    first = _receive(sqs, url)
    assert first["events/tenant-a/g1/2"] == duplicate["MessageId"]
    assert all(UUID.fullmatch(message_id) for message_id in first.values()) and len(set(first.values())) == len(first)
    clock.advance(1)
    assert _receive(sqs, url) == first

    # The ids that release answered are the queue's own: taken as they always were.
    orders = client.queue("orders", "tenant-a")
    given = dump["handles"]["orders/tenant-a"][0]
    assert orders.get(given["message_id"]).body == given["body"]
    assert orders.cancel(given["message_id"])
    messages = orders.receive(max_messages=10)
    failed = InvokeAnswer(json.dumps({"batchItemFailures": [{"itemIdentifier": messages[0].message_id}]}))
    assert push.item_failures(failed, push.identifiers(messages)) == {messages[0].message_id}

    # A dead letter of that release: one id in the DLQ and after a redrive by its own id.
    poisoned = client.queue("events.fifo", "tenant-c")
    sqs_c = sqs_in_process(client, "tenant-c")
    dead = _receive(sqs_c, sqs_c.get_queue_url(QueueName="events.dlq.fifo")["QueueUrl"])
    [dead_letter] = poisoned.dlq_list()
    assert poisoned.redrive(message_ids=[dead_letter.message_id]) == 1
    assert set(dead) == {"events/tenant-c/poison"}
    assert _receive(sqs_c, url.replace("tenant-a", "tenant-c")) == dead
