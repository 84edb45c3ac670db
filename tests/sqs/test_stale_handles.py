"""A handle acts only while its own message is held by it, and a repeated receive holds all of its first answer or
none of it: the promises several consumers with different views, and lost answers, rely on (SQS clients unchanged)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from queue_core import QueueClient

from tests.conftest import FakeClock
from tests.sqs_in_process import sqs_in_process
from tests.throttle_hooks import ThrottleOne, throttled

_STALE = {"AWS.SimpleQueueService.MessageNotInflight", "ReceiptHandleIsInvalid"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def core(clock: FakeClock) -> Iterator[QueueClient]:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        client = QueueClient("stale-handles", clock=clock)
        client.create_table()
        client.create_queue("jobs.fifo", content_based_dedup=True, visibility_timeout=30)
        yield client


@pytest.fixture
def sqs(core: QueueClient) -> Any:
    return sqs_in_process(core)


@pytest.fixture
def url(sqs: Any) -> str:
    return sqs.get_queue_url(QueueName="jobs.fifo")["QueueUrl"]


def _send(sqs: Any, url: str, group: str, *bodies: str) -> None:
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=group)


def _receive(sqs: Any, url: str, most: int = 10, **extra: Any) -> list[dict[str, Any]]:
    return sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=most, **extra).get("Messages", [])


def _code(call: Any) -> str:
    with pytest.raises(ClientError) as raised:
        call()
    return str(raised.value.response["Error"]["Code"])


def test_a_stale_fifo_handle_changes_nothing_and_never_frees_the_group(core: QueueClient, sqs: Any, url: str) -> None:
    _send(sqs, url, "g", "m1", "m2", "m3")
    held = _receive(sqs, url)
    assert [m["Body"] for m in held] == ["m1", "m2", "m3"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=held[0]["ReceiptHandle"])

    code = _code(
        lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=held[0]["ReceiptHandle"], VisibilityTimeout=0)
    )
    assert code in _STALE
    assert _receive(sqs, url) == []  # m2 and m3 are still held by the first consumer: one holder
    for message in held[1:]:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    stats = core.queue("jobs.fifo", "default").stats()
    assert (stats.visible, stats.in_flight) == (0, 0)


def test_a_visibility_of_zero_on_one_held_message_keeps_the_group_blocked_until_the_others_settle(
    sqs: Any, url: str
) -> None:
    _send(sqs, url, "g", "m1", "m2", "m3", "m4")
    held = _receive(sqs, url, most=3)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=held[0]["ReceiptHandle"], VisibilityTimeout=0)
    assert _receive(sqs, url) == []  # m2 and m3 are still out: the group waits for them
    for message in held[1:]:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    again = _receive(sqs, url)
    assert [m["Body"] for m in again] == ["m1", "m4"]  # the given-back head first, in the group's order
    assert again[0]["MessageId"] == held[0]["MessageId"]


def test_a_held_message_of_several_extends_the_group_and_a_spent_handle_then_fails(
    clock: FakeClock, sqs: Any, url: str
) -> None:
    _send(sqs, url, "g", "m1", "m2")
    held = _receive(sqs, url)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=held[1]["ReceiptHandle"], VisibilityTimeout=300)
    clock.advance(60)  # past the receive's 30 s, within m2's 300 s
    assert _receive(sqs, url) == []
    sqs.delete_message(QueueUrl=url, ReceiptHandle=held[1]["ReceiptHandle"])
    sqs.delete_message(QueueUrl=url, ReceiptHandle=held[0]["ReceiptHandle"])
    code = _code(
        lambda: sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=held[1]["ReceiptHandle"], VisibilityTimeout=300
        )
    )
    assert code in _STALE


def test_a_repeated_receive_holds_all_of_its_first_answer_or_none_of_it(
    core: QueueClient, clock: FakeClock, sqs: Any, url: str
) -> None:
    _send(sqs, url, "z", "z1")
    clock.advance(1)
    _send(sqs, url, "a", "a1")
    first = _receive(sqs, url, ReceiveRequestAttemptId="lost")  # its answer is lost: nobody holds these
    assert [m["Body"] for m in first] == ["z1", "a1"]
    clock.advance(31)  # both claims run out
    other = _receive(sqs, url, most=1)
    assert [m["Body"] for m in other] == ["a1"]

    repeat = _receive(sqs, url, ReceiveRequestAttemptId="lost")
    assert "a1" not in [m["Body"] for m in repeat]
    # Whatever the repeat answers is held by its consumer, and nothing else is held but the other consumer's a1.
    assert core.queue("jobs.fifo", "default").stats().in_flight == len(repeat) + 1
    assert [m["Body"] for m in repeat] == ["z1"]  # z1 is free again: the repeat is a new receive that takes it


def test_a_first_receive_that_fails_after_claiming_gives_its_claims_back(core: QueueClient, sqs: Any, url: str) -> None:
    """The attempt record's write is throttled after the claims: the client is told to retry (the SDK does, once),
    and its retry with the same attempt id is given the message, not an empty answer with the message hidden."""
    _send(sqs, url, "g", "m1")
    attempt_record = ThrottleOne("PutItem", lambda body: body.get("Item", {}).get("sk", {}).get("S") == "retry-me")
    with throttled(core.dynamodb, attempt_record):
        got = _receive(sqs, url, ReceiveRequestAttemptId="retry-me", AttributeNames=["All"])
    assert [m["Body"] for m in got] == ["m1"]
    assert got[0]["Attributes"]["ApproximateReceiveCount"] == "1"
    assert core.queue("jobs.fifo", "default").stats().in_flight == 1


def _lose_first(action_name: str) -> tuple[list[str], Any]:
    lost: list[str] = []

    def lose(action: str) -> bool:
        if action == action_name and not lost:
            lost.append(action)
            return True
        return False

    return lost, lose


@pytest.mark.parametrize("held", [1, 2])
def test_a_visibility_of_zero_whose_answer_was_lost_succeeds_when_the_sdk_sends_it_again(
    core: QueueClient, url: str, held: int
) -> None:
    lost, lose = _lose_first("ChangeMessageVisibility")
    retrying = sqs_in_process(core, lose_answer=lose, attempts=3)
    _send(retrying, url, "g", *[f"m{n}" for n in range(held)])
    messages = _receive(retrying, url)
    retrying.change_message_visibility(QueueUrl=url, ReceiptHandle=messages[0]["ReceiptHandle"], VisibilityTimeout=0)
    assert lost == ["ChangeMessageVisibility"]


def test_a_handle_given_back_with_visibility_zero_still_deletes_until_its_message_is_received_again(
    core: QueueClient, clock: FakeClock, sqs: Any, url: str
) -> None:
    """SQS keeps a handle valid until its message is received again, also for one of several of one group."""
    _send(sqs, url, "g", "m1", "m2")
    held = _receive(sqs, url)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=held[0]["ReceiptHandle"], VisibilityTimeout=0)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=held[0]["ReceiptHandle"])
    sqs.delete_message(QueueUrl=url, ReceiptHandle=held[1]["ReceiptHandle"])
    clock.advance(1)
    assert _receive(sqs, url) == []
    stats = core.queue("jobs.fifo", "default").stats()
    assert (stats.visible, stats.in_flight) == (0, 0)


def test_a_repeat_after_the_holder_changed_a_visibility_is_a_new_receive_and_never_shortens_the_hold(
    clock: FakeClock, sqs: Any, url: str
) -> None:
    """SQS answers a repeat only while none of its messages was modified (deleted or its visibility changed)."""
    _send(sqs, url, "g", "m1")
    first = _receive(sqs, url, ReceiveRequestAttemptId="poll-1")
    handle = first[0]["ReceiptHandle"]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=300)
    repeat = _receive(sqs, url, ReceiveRequestAttemptId="poll-1")
    assert repeat == []  # a new receive: the group is held by the first consumer
    clock.advance(31)
    assert _receive(sqs, url) == [], "a second holder while the first holds m1 for 300 s"


def test_a_repeat_of_a_receive_cut_to_the_answer_budget_answers_the_same_messages(core: QueueClient, url: str) -> None:
    """The messages a receive's 6 MB answer leaves out go back before its answer is kept: the SDK's retry after a
    lost answer gets what the first answer carried, and the rest are free for the next receive."""
    lost, lose = _lose_first("ReceiveMessage")
    retrying = sqs_in_process(core, lose_answer=lose, attempts=3)
    body = "x" * 1_000_000
    for n in range(7):
        retrying.send_message(QueueUrl=url, MessageBody=f"{n}{body}", MessageGroupId="g")
    got = _receive(retrying, url, ReceiveRequestAttemptId="big")
    assert lost == ["ReceiveMessage"]
    assert [m["Body"][0] for m in got] == ["0", "1", "2", "3", "4"]
    for message in got:
        retrying.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert [m["Body"][0] for m in _receive(retrying, url)] == ["5", "6"]


def test_the_last_message_out_of_a_claim_may_shorten_its_visibility(clock: FakeClock, sqs: Any, url: str) -> None:
    _send(sqs, url, "g", "m1", "m2")
    held = _receive(sqs, url)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=held[1]["ReceiptHandle"], VisibilityTimeout=300)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=held[0]["ReceiptHandle"])
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=held[1]["ReceiptHandle"], VisibilityTimeout=10)
    clock.advance(11)
    assert [m["Body"] for m in _receive(sqs, url)] == ["m2"]


def test_a_throttled_visibility_of_zero_on_one_of_several_changes_nothing_and_its_retry_frees_the_group_in_time(
    core: QueueClient, clock: FakeClock, sqs: Any, url: str
) -> None:
    """The give-back and the group's ack are one transaction: a throttle applies neither, the SDK's retry both."""
    _send(sqs, url, "g", "m1", "m2")
    held = _receive(sqs, url)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=held[1]["ReceiptHandle"], VisibilityTimeout=3600)
    settle = ThrottleOne("TransactWriteItems", lambda body: "acked" in json.dumps(body))
    with throttled(core.dynamodb, settle):
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=held[0]["ReceiptHandle"], VisibilityTimeout=0)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=held[1]["ReceiptHandle"])
    clock.advance(1)
    assert [m["Body"] for m in _receive(sqs, url)] == ["m1"]
