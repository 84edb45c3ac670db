"""A FIFO receive repeated with its ReceiveRequestAttemptId after a lost answer gets the same messages with the
same handles, as SQS promises for five minutes, instead of finding their groups held until the visibility ends."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws
from queue_core import QueueClient

from tests.sqs_in_process import sqs_in_process


@pytest.fixture
def core() -> Iterator[QueueClient]:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        client = QueueClient("receive-attempts")
        client.create_table()
        client.create_queue("jobs.fifo", content_based_dedup=True)
        yield client


def _send(sqs: Any, url: str, *bodies: str) -> None:
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId="g")


def test_a_receive_whose_answer_was_lost_is_answered_again_by_the_sdks_retry(core: QueueClient) -> None:
    lost: list[str] = []

    def lose_first_receive(action: str) -> bool:
        if action == "ReceiveMessage" and not lost:
            lost.append(action)
            return True
        return False

    sqs = sqs_in_process(core, lose_answer=lose_first_receive, attempts=3)
    url = sqs.get_queue_url(QueueName="jobs.fifo")["QueueUrl"]
    _send(sqs, url, "first", "second")
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, ReceiveRequestAttemptId="attempt-1")
    assert lost == ["ReceiveMessage"]  # the first answer was lost; the SDK sent the same request again
    assert [message["Body"] for message in got["Messages"]] == ["first", "second"]
    for message in got["Messages"]:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert core.queue("jobs.fifo", "default").stats().in_flight == 0


def test_a_repeat_answers_the_same_handles_and_a_new_id_waits_for_the_group(core: QueueClient) -> None:
    sqs = sqs_in_process(core)
    url = sqs.get_queue_url(QueueName="jobs.fifo")["QueueUrl"]
    _send(sqs, url, "only")
    first = sqs.receive_message(QueueUrl=url, ReceiveRequestAttemptId="a")["Messages"]
    again = sqs.receive_message(QueueUrl=url, ReceiveRequestAttemptId="a")["Messages"]
    assert [m["ReceiptHandle"] for m in again] == [m["ReceiptHandle"] for m in first]
    assert "Messages" not in sqs.receive_message(QueueUrl=url, ReceiveRequestAttemptId="b")
    # Once a message of the attempt is deleted, the attempt is spent: a repeat is a new receive.
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first[0]["ReceiptHandle"])
    _send(sqs, url, "next")
    after = sqs.receive_message(QueueUrl=url, ReceiveRequestAttemptId="a")["Messages"]
    assert [m["Body"] for m in after] == ["next"]


def test_a_repeat_sent_while_the_first_receive_still_runs_answers_that_receives_messages(core: QueueClient) -> None:
    """A gateway answers its timeout while the function still runs, and the SDK sends the receive again at once:
    the repeat finds the group held by the first receive's claim, and answers the first's messages once it kept
    them, not nothing until their visibility ends."""
    sqs = sqs_in_process(core)
    url = sqs.get_queue_url(QueueName="jobs.fifo")["QueueUrl"]
    _send(sqs, url, "m")
    first_claimed, repeat_looked = threading.Event(), threading.Event()

    def hold_the_first_answer(params: dict[str, Any], **_: Any) -> None:
        # The first receive has claimed the message and is about to keep its answer: the repeat looks first.
        if threading.current_thread().name == "first" and "slow" in json.dumps(params.get("Item", {})):
            first_claimed.set()
            assert repeat_looked.wait(10)

    def mark_the_repeats_look(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if threading.current_thread().name == "repeat" and "slow" in json.dumps(params.get("Key", {})):
            context["repeat_look"] = True

    def after_the_repeats_look(context: dict[str, Any], **_: Any) -> None:
        if context.get("repeat_look"):
            repeat_looked.set()

    events = core.dynamodb.meta.events
    events.register("provide-client-params.dynamodb.PutItem", hold_the_first_answer)
    events.register("before-parameter-build.dynamodb.GetItem", mark_the_repeats_look)
    events.register("after-call.dynamodb.GetItem", after_the_repeats_look)
    answers: dict[str, Any] = {}

    def receive(name: str, wait: int) -> None:
        answers[name] = sqs_in_process(core).receive_message(
            QueueUrl=url, ReceiveRequestAttemptId="slow", WaitTimeSeconds=wait
        )

    first = threading.Thread(target=receive, args=("first", 0), name="first")
    repeat = threading.Thread(target=receive, args=("repeat", 1), name="repeat")
    first.start()
    assert first_claimed.wait(10)
    repeat.start()
    first.join()
    repeat.join()
    handles = [message["ReceiptHandle"] for message in answers["first"]["Messages"]]
    assert len(handles) == 1
    assert [message["ReceiptHandle"] for message in answers["repeat"].get("Messages", [])] == handles
