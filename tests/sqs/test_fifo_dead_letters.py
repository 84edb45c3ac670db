"""A FIFO DLQ read over SQS keeps its groups as a FIFO queue does: while any dead letter of a group is held, no other
receive is given any dead letter of that group, and a group is given in its order, from its oldest remaining dead
letter, once its holder gives it back or its hold runs out. The same at a FIFO queue other queues name as their
dead-letter target. Stock boto3 against the SQS handler, on a fake clock."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws
from queue_core import QueueClient

from dq.embedded_dynamodb import idempotent_transactions
from tests.conftest import FakeClock
from tests.core.answers import Interleave, LostAnswer, attached, expression_has
from tests.sqs_in_process import sqs_in_process

ARN = "arn:aws:sqs:us-east-1:000000000000:"
_STALE = "AWS.SimpleQueueService.MessageNotInflight"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def core(clock: FakeClock) -> Iterator[QueueClient]:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    idempotent_transactions()  # as DynamoDB answers a transaction repeated with its token after a lost answer
    with mock_aws():
        client = QueueClient("fifo-dead-letters", clock=clock)
        client.create_table()
        admin = sqs_in_process(client, admin=True)
        fifo = {"FifoQueue": "true", "ContentBasedDeduplication": "true"}
        policy = {"deadLetterTargetArn": f"{ARN}jobs.dlq.fifo", "maxReceiveCount": 1}
        admin.create_queue(QueueName="jobs.fifo", Attributes={**fifo, "RedrivePolicy": json.dumps(policy)})
        admin.create_queue(QueueName="target.fifo", Attributes=fifo)
        policy = {"deadLetterTargetArn": f"{ARN}target.fifo", "maxReceiveCount": 1}
        admin.create_queue(QueueName="source.fifo", Attributes={**fifo, "RedrivePolicy": json.dumps(policy)})
        yield client


@pytest.fixture
def sqs(core: QueueClient) -> Any:
    return sqs_in_process(core)


def _url(sqs: Any, name: str) -> str:
    return sqs.get_queue_url(QueueName=name)["QueueUrl"]


def _dead_letter(core: QueueClient, clock: FakeClock, sqs: Any, source: str, *sent: tuple[str, str]) -> None:
    """Sends each `(group, body)` to `source` and lets it fail once: with a receive limit of 1, the next receive
    moves it to the DLQ, in its group's order."""
    url = _url(sqs, source)
    for group, body in sent:
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=group)
    while _receive(sqs, url, VisibilityTimeout=0):
        clock.advance(2)
    clock.advance(2)
    assert _receive(sqs, url) == []
    assert core.queue(source, "default").stats().dlq == len(sent)


def _receive(sqs: Any, url: str, most: int = 10, **extra: Any) -> list[dict[str, Any]]:
    return sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=most, **extra).get("Messages", [])


def _bodies(messages: list[dict[str, Any]]) -> list[str]:
    return [message["Body"] for message in messages]


@pytest.fixture(params=["its-dlq", "dead-letter-target"])
def dead_letters(request: pytest.FixtureRequest, core: QueueClient, clock: FakeClock, sqs: Any) -> str:
    """Where the dead letters are read: `jobs.dlq.fifo`, the DLQ of `jobs.fifo`, or `target.fifo`, which
    `source.fifo` names as its dead-letter target. m1, m2, m3 of group g and h1 of group h, dead-lettered."""
    source, read_at = ("jobs.fifo", "jobs.dlq.fifo") if request.param == "its-dlq" else ("source.fifo", "target.fifo")
    _dead_letter(core, clock, sqs, source, ("g", "m1"), ("g", "m2"), ("h", "h1"), ("g", "m3"))
    return _url(sqs, read_at)


def test_fifo_dlq_gives_one_group_to_one_holder_at_a_time(sqs: Any, dead_letters: str) -> None:
    first = _receive(sqs, dead_letters, most=1, VisibilityTimeout=60)
    assert _bodies(first) == ["m1"]

    second = _receive(sqs, dead_letters, VisibilityTimeout=60)
    assert _bodies(second) == ["h1"], "g is held by the first receive: none of its dead letters is given"

    sqs.change_message_visibility(QueueUrl=dead_letters, ReceiptHandle=first[0]["ReceiptHandle"], VisibilityTimeout=0)
    third = _receive(sqs, dead_letters, VisibilityTimeout=60)
    assert _bodies(third) == ["m1", "m2", "m3"], "released, g comes back whole, in order"
    assert third[0]["MessageId"] == first[0]["MessageId"]


def test_fifo_dlq_keeps_a_group_held_while_any_of_its_dead_letters_is(sqs: Any, dead_letters: str) -> None:
    held = _receive(sqs, dead_letters, VisibilityTimeout=60)
    assert _bodies(held) == ["m1", "m2", "m3", "h1"]
    by_body = {message["Body"]: message["ReceiptHandle"] for message in held}

    sqs.change_message_visibility(QueueUrl=dead_letters, ReceiptHandle=by_body["m1"], VisibilityTimeout=0)
    assert _receive(sqs, dead_letters) == [], "m2 and m3 are still held: m1 waits for them"
    sqs.delete_message(QueueUrl=dead_letters, ReceiptHandle=by_body["m2"])
    sqs.change_message_visibility(QueueUrl=dead_letters, ReceiptHandle=by_body["m3"], VisibilityTimeout=0)

    again = _receive(sqs, dead_letters, VisibilityTimeout=60)
    assert _bodies(again) == ["m1", "m3"], "the group's oldest remaining dead letter first"


def test_fifo_dlq_gives_a_group_again_from_its_oldest_dead_letter_once_its_hold_runs_out(
    clock: FakeClock, sqs: Any, dead_letters: str
) -> None:
    held = _receive(sqs, dead_letters, most=2, VisibilityTimeout=30)
    assert _bodies(held) == ["m1", "m2"]
    sqs.delete_message(QueueUrl=dead_letters, ReceiptHandle=held[0]["ReceiptHandle"])
    clock.advance(20)
    assert _bodies(_receive(sqs, dead_letters, VisibilityTimeout=30)) == ["h1"]

    clock.advance(11)
    later = _receive(sqs, dead_letters, VisibilityTimeout=30)
    assert _bodies(later) == ["m2", "m3"]
    code = "unset"
    try:
        sqs.change_message_visibility(
            QueueUrl=dead_letters, ReceiptHandle=held[1]["ReceiptHandle"], VisibilityTimeout=60
        )
    except sqs.exceptions.ClientError as error:
        code = error.response["Error"]["Code"]
    assert code == _STALE, "the first holder's handle is spent: it cannot take the group back"


def test_fifo_dlq_extends_a_group_by_any_of_its_held_dead_letters(
    clock: FakeClock, sqs: Any, dead_letters: str
) -> None:
    held = _receive(sqs, dead_letters, most=2, VisibilityTimeout=30)
    sqs.change_message_visibility(QueueUrl=dead_letters, ReceiptHandle=held[1]["ReceiptHandle"], VisibilityTimeout=300)
    clock.advance(60)  # past m1's 30 s, within m2's 300 s
    assert _bodies(_receive(sqs, dead_letters, VisibilityTimeout=30)) == ["h1"]

    for message in held:
        sqs.delete_message(QueueUrl=dead_letters, ReceiptHandle=message["ReceiptHandle"])
    assert _bodies(_receive(sqs, dead_letters, VisibilityTimeout=30)) == ["m3"]


def test_fifo_dlq_writes_whose_answers_were_lost_hold_and_give_back_their_group_once(
    core: QueueClient, sqs: Any, dead_letters: str
) -> None:
    """DynamoDB applies each write and its answer is lost: the SDK's repeat finds the write done, and the receive,
    the extension and the release go on as if it had been answered."""
    dynamodb = core.dynamodb
    claim = LostAnswer("UpdateItem", expression_has("held_copies = :copies"), times=2)
    stamp = LostAnswer("UpdateItem", expression_has("SET dlq_tok = :tok"), times=2)
    with attached(dynamodb, claim), attached(dynamodb, stamp):
        held = _receive(sqs, dead_letters, VisibilityTimeout=60)
    assert (claim.lost, stamp.lost) == (2, 2)
    assert _bodies(held) == ["m1", "m2", "m3", "h1"]
    assert _receive(sqs, dead_letters) == []

    # Within the group's 60 s: the group's transaction is refused (held as long already), then the dead letter's own
    # write goes with a check of the group's claim, in a transaction the SDK repeats with its client request token.
    extension = LostAnswer(
        "TransactWriteItems", lambda body: "held_until" not in str(body) and "dlq_until" in str(body)
    )
    with attached(dynamodb, extension):
        sqs.change_message_visibility(
            QueueUrl=dead_letters, ReceiptHandle=held[1]["ReceiptHandle"], VisibilityTimeout=50
        )
    # A release gives its dead letter back and moves its end in one transaction, repeated with its token too.
    release = LostAnswer("TransactWriteItems", lambda body: "DELETE held_copies" in str(body), times=4)
    with attached(dynamodb, release):
        for message in held:
            sqs.change_message_visibility(
                QueueUrl=dead_letters, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
    assert (extension.lost, release.lost) == (1, 4)
    assert _bodies(_receive(sqs, dead_letters)) == ["m1", "m2", "m3", "h1"]


def test_a_handle_whose_dead_letter_is_gone_holds_its_group_no_longer(
    core: QueueClient, clock: FakeClock, sqs: Any
) -> None:
    """A claim holds m1 and m2 for 30 s; m2 leaves the DLQ without its claim's handle (a look's handle deletes
    it, as a move task takes it). m2's handle is stale: a change of visibility with it is refused and moves the
    group's time no later, so m1 comes back when its own time runs out, not after m2's asked-for 120 s."""
    _dead_letter(core, clock, sqs, "jobs.fifo", ("g", "m1"), ("g", "m2"), ("g", "m3"))
    url = _url(sqs, "jobs.dlq.fifo")
    held = _receive(sqs, url, most=2, VisibilityTimeout=30)
    assert _bodies(held) == ["m1", "m2"]
    source = core.queue("jobs.fifo", "default")
    look = next(dead for dead in source.dlq_read() if dead.message.body == "m2")
    assert source.dlq_delete(look.receipt_handle)

    code = "unset"
    try:
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=held[1]["ReceiptHandle"], VisibilityTimeout=120)
    except sqs.exceptions.ClientError as error:
        code = error.response["Error"]["Code"]
    assert code == _STALE
    clock.advance(31)
    assert _bodies(_receive(sqs, url, VisibilityTimeout=30)) == ["m1", "m3"], "the group is free after m1's 30 s"


# A receive repeated with its ReceiveRequestAttemptId.


def _handles(messages: list[dict[str, Any]]) -> list[str]:
    return [message["ReceiptHandle"] for message in messages]


def test_a_dead_letter_receive_repeated_with_its_attempt_id_answers_the_same_dead_letters_and_handles(
    core: QueueClient, sqs: Any, dead_letters: str
) -> None:
    first = _receive(sqs, dead_letters, most=2, VisibilityTimeout=60, ReceiveRequestAttemptId="a")
    assert _bodies(first) == ["m1", "m2"]
    again = _receive(sqs, dead_letters, most=2, VisibilityTimeout=60, ReceiveRequestAttemptId="a")
    assert _handles(again) == _handles(first) and _bodies(again) == ["m1", "m2"]
    assert _bodies(_receive(sqs, dead_letters, ReceiveRequestAttemptId="b")) == ["h1"], "g is still held"

    for message in again:
        sqs.delete_message(QueueUrl=dead_letters, ReceiptHandle=message["ReceiptHandle"])
    left = _receive(sqs, dead_letters, VisibilityTimeout=0)
    assert _bodies(left) == ["m3"], "both deleted by the handles of the repeat"


def test_a_dead_letter_receive_whose_answer_was_lost_is_answered_again_by_the_sdks_retry(
    core: QueueClient, dead_letters: str
) -> None:
    lost: list[str] = []

    def lose_first_receive(action: str) -> bool:
        if action == "ReceiveMessage" and not lost:
            lost.append(action)
            return True
        return False

    sqs = sqs_in_process(core, lose_answer=lose_first_receive, attempts=3)
    got = _receive(sqs, dead_letters, VisibilityTimeout=60, ReceiveRequestAttemptId="lost-once")
    assert lost == ["ReceiveMessage"]
    assert _bodies(got) == ["m1", "m2", "m3", "h1"]
    for message in got:
        sqs.delete_message(QueueUrl=dead_letters, ReceiptHandle=message["ReceiptHandle"])
    assert _receive(sqs, dead_letters, VisibilityTimeout=0) == [], "every dead letter answered and deleted"


def test_an_attempt_id_at_a_dlq_is_not_the_same_id_at_its_queue(core: QueueClient, clock: FakeClock, sqs: Any) -> None:
    _dead_letter(core, clock, sqs, "jobs.fifo", ("g", "dead"))
    jobs, dlq = _url(sqs, "jobs.fifo"), _url(sqs, "jobs.dlq.fifo")
    sqs.send_message(QueueUrl=jobs, MessageBody="alive", MessageGroupId="g")
    assert _bodies(_receive(sqs, jobs, ReceiveRequestAttemptId="same")) == ["alive"]
    assert _bodies(_receive(sqs, dlq, ReceiveRequestAttemptId="same")) == ["dead"]
    assert _bodies(_receive(sqs, jobs, ReceiveRequestAttemptId="same")) == ["alive"]
    assert _bodies(_receive(sqs, dlq, ReceiveRequestAttemptId="same")) == ["dead"]


@pytest.fixture
def mixed(core: QueueClient, clock: FakeClock, sqs: Any) -> tuple[str, list[dict[str, Any]]]:
    """`target.fifo` with its own message and a dead letter of `source.fifo`, both answered by a receive under
    the attempt id "x" for 30 s: the target's URL and that answer."""
    _dead_letter(core, clock, sqs, "source.fifo", ("g", "dead"))
    target = _url(sqs, "target.fifo")
    sqs.send_message(QueueUrl=target, MessageBody="own", MessageGroupId="own")
    first = _receive(sqs, target, VisibilityTimeout=30, ReceiveRequestAttemptId="x")
    assert _bodies(first) == ["own", "dead"]
    return target, first


@pytest.mark.parametrize("settled", ["own", "dead"])
def test_a_repeat_whose_kept_message_was_settled_holds_none_of_its_first_answer_again(
    clock: FakeClock, sqs: Any, mixed: tuple[str, list[dict[str, Any]]], settled: str
) -> None:
    target, first = mixed
    by_body = {message["Body"]: message["ReceiptHandle"] for message in first}
    sqs.delete_message(QueueUrl=target, ReceiptHandle=by_body[settled])
    clock.advance(20)
    assert _receive(sqs, target, VisibilityTimeout=30, ReceiveRequestAttemptId="x") == [], "a new receive"

    clock.advance(11)  # past the first answer's 30 s: nothing of it was held again
    left = "dead" if settled == "own" else "own"
    assert _bodies(_receive(sqs, target, VisibilityTimeout=30, ReceiveRequestAttemptId="y")) == [left]


def test_a_repeat_that_finds_a_dead_letter_taken_after_its_check_gives_back_what_it_held_again(
    core: QueueClient, sqs: Any, mixed: tuple[str, list[dict[str, Any]]]
) -> None:
    """The dead letter is deleted by its handle between the repeat's check and its hold: the own message, held
    again by then, is given back, and the repeat is a new receive that takes it, not an answer of nothing with the
    message hidden."""
    target, first = mixed
    dead = next(message for message in first if message["Body"] == "dead")
    other = sqs_in_process(core)

    def delete_the_dead_letter() -> None:
        other.delete_message(QueueUrl=target, ReceiptHandle=dead["ReceiptHandle"])

    holds_its_group = Interleave("TransactWriteItems", delete_the_dead_letter, lambda body: "held_until" in str(body))
    with attached(core.dynamodb, holds_its_group):
        repeat = _receive(sqs, target, VisibilityTimeout=30, ReceiveRequestAttemptId="x")
    assert _bodies(repeat) == ["own"]
    assert _handles(repeat) != [first[0]["ReceiptHandle"]], "a new receive's claim"
    sqs.delete_message(QueueUrl=target, ReceiptHandle=repeat[0]["ReceiptHandle"])
    assert _receive(sqs, target, VisibilityTimeout=0) == []


def test_fifo_dlq_group_is_free_once_every_dead_letter_its_claim_held_has_left_the_dlq(
    core: QueueClient, clock: FakeClock, sqs: Any, dead_letters: str
) -> None:
    """A move task takes dead letters whether held or not; the group's claim then holds nothing: the group's next
    dead letters are given at once, not after the claim's time."""
    assert _bodies(_receive(sqs, dead_letters, most=1, VisibilityTimeout=600)) == ["m1"]
    sqs.start_message_move_task(SourceArn=ARN + dead_letters.rsplit("/", 1)[-1])
    assert _receive(sqs, dead_letters, VisibilityTimeout=0) == []

    source = _url(sqs, "jobs.fifo" if dead_letters.endswith("jobs.dlq.fifo") else "source.fifo")
    while _receive(sqs, source, VisibilityTimeout=0):
        clock.advance(2)
    clock.advance(2)
    assert _receive(sqs, source) == [], "dead-lettered again"
    assert _bodies(_receive(sqs, dead_letters, VisibilityTimeout=60)) == ["m1", "m2", "m3", "h1"]
