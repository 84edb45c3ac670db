"""Any queue as a dead-letter queue, as SQS code sets it up: a shared DLQ named by several sources' RedrivePolicy,
read, deleted from and redriven with stock boto3 and the AWS CLI against the local server."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from dq.local_server import LocalServer
from tests.sqs.test_clients import aws

ARN = "arn:aws:sqs:us-east-1:000000000000:"


def _policy(target: str, count: int = 1) -> str:
    return json.dumps({"deadLetterTargetArn": ARN + target, "maxReceiveCount": count})


def _create(sqs_admin: Any, name: str, **attributes: str) -> str:
    if name.endswith(".fifo"):
        attributes = {"FifoQueue": "true", "ContentBasedDeduplication": "true", **attributes}
    return sqs_admin.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]


def _dead_letter(sqs: Any, *sent: tuple[str, str]) -> None:
    """Sends each `(url, body)` and lets it fail once: with `maxReceiveCount` 1, the next receive moves it to the
    DLQ. A FIFO group's hold is kept to the second, so FIFO messages are received again a second later."""
    for url, body in sent:
        extra = {"MessageGroupId": "g"} if url.endswith(".fifo") else {}
        sqs.send_message(QueueUrl=url, MessageBody=body, **extra)
        [message] = sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)["Messages"]
        assert message["Body"] == body
    if any(url.endswith(".fifo") for url, _ in sent):
        time.sleep(1.1)
    for url, _ in sent:
        assert "Messages" not in sqs.receive_message(QueueUrl=url)


def _bodies(sqs: Any, url: str) -> dict[str, dict[str, Any]]:
    """What a receive answers, held for no time (a visibility of 0), so that the next receive sees it again; each
    handle deletes while no later receive took its message."""
    answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], VisibilityTimeout=0)
    return {message["Body"]: message for message in answer.get("Messages", [])}


@pytest.mark.parametrize("suffix", ["", ".fifo"])
def test_two_sources_share_one_dead_letter_queue(sqs_admin: Any, sqs: Any, suffix: str) -> None:
    shared = _create(sqs_admin, f"shared-dlq{suffix}")
    first = _create(sqs_admin, f"orders{suffix}", RedrivePolicy=_policy(f"shared-dlq{suffix}"))
    second = _create(sqs_admin, f"invoices{suffix}", RedrivePolicy=_policy(f"shared-dlq{suffix}"))
    policy = sqs.get_queue_attributes(QueueUrl=first, AttributeNames=["RedrivePolicy"])["Attributes"]
    assert json.loads(policy["RedrivePolicy"])["deadLetterTargetArn"] == f"{ARN}shared-dlq{suffix}"
    _dead_letter(sqs, (first, "order 1"), (second, "invoice 1"))
    extra = {"MessageGroupId": "own"} if suffix else {}
    sqs.send_message(QueueUrl=shared, MessageBody="its own", **extra)

    # The source's own DLQ still shows its dead letters, as the REST API does.
    own_dlq = sqs.get_queue_url(QueueName=f"orders.dlq{suffix}" if suffix else "orders.dlq")["QueueUrl"]
    assert set(_bodies(sqs, own_dlq)) == {"order 1"}

    read = _bodies(sqs, shared)
    assert set(read) == {"its own", "order 1", "invoice 1"}
    assert read["order 1"]["Attributes"]["DeadLetterQueueSourceArn"] == f"{ARN}orders{suffix}"
    assert read["invoice 1"]["Attributes"]["DeadLetterQueueSourceArn"] == f"{ARN}invoices{suffix}"
    assert "DeadLetterQueueSourceArn" not in read["its own"]["Attributes"]
    sources = sqs.list_dead_letter_source_queues(QueueUrl=shared)["queueUrls"]
    assert sorted(sources) == sorted([first, second])

    # A delete at the shared DLQ's URL removes what was read there, and nothing else.
    sqs.delete_message(QueueUrl=shared, ReceiptHandle=read["order 1"]["ReceiptHandle"])
    sqs.delete_message(QueueUrl=shared, ReceiptHandle=read["order 1"]["ReceiptHandle"])  # spent: no error
    sqs.delete_message(QueueUrl=shared, ReceiptHandle=read["its own"]["ReceiptHandle"])
    assert set(_bodies(sqs, shared)) == {"invoice 1"}
    assert set(_bodies(sqs, own_dlq)) == set()


def test_another_clients_endpoint_sees_only_its_own_dead_letters(sqs_admin: Any, client_for: Callable) -> None:
    _create(sqs_admin, "tenant-dlq")
    _create(sqs_admin, "tenant-jobs", RedrivePolicy=_policy("tenant-dlq"))
    tenant_a, tenant_b = client_for("a"), client_for("b")
    jobs_a = tenant_a.get_queue_url(QueueName="tenant-jobs")["QueueUrl"]
    _dead_letter(tenant_a, (jobs_a, "a's job"))
    dlq_a = tenant_a.get_queue_url(QueueName="tenant-dlq")["QueueUrl"]
    dlq_b = tenant_b.get_queue_url(QueueName="tenant-dlq")["QueueUrl"]
    handle = _bodies(tenant_a, dlq_a)["a's job"]["ReceiptHandle"]
    assert _bodies(tenant_b, dlq_b) == {}
    with pytest.raises(tenant_b.exceptions.ReceiptHandleIsInvalid):
        tenant_b.delete_message(QueueUrl=dlq_b, ReceiptHandle=handle)
    assert set(_bodies(tenant_a, dlq_a)) == {"a's job"}


@pytest.mark.parametrize("suffix", ["", ".fifo"])
def test_two_workers_at_a_shared_target_hold_one_dead_letter_at_once(sqs_admin: Any, sqs: Any, suffix: str) -> None:
    """A receive hides the dead letters it answers for its visibility timeout, as SQS does; only the holder's
    handle moves that timeout or deletes, and a handle whose hold was taken over by a later receive is spent."""
    shared = _create(sqs_admin, f"held-dlq{suffix}")
    source = _create(sqs_admin, f"held-src{suffix}", RedrivePolicy=_policy(f"held-dlq{suffix}"))
    _dead_letter(sqs, (source, "dead"))
    [first] = sqs.receive_message(QueueUrl=shared, VisibilityTimeout=60)["Messages"]
    assert "Messages" not in sqs.receive_message(QueueUrl=shared, VisibilityTimeout=60)
    sqs.change_message_visibility(QueueUrl=shared, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)
    [second] = sqs.receive_message(QueueUrl=shared, VisibilityTimeout=60)["Messages"]
    assert second["MessageId"] == first["MessageId"] and second["ReceiptHandle"] != first["ReceiptHandle"]

    sqs.delete_message(QueueUrl=shared, ReceiptHandle=first["ReceiptHandle"])  # spent: no error, no effect
    with pytest.raises(sqs.exceptions.ClientError, match="MessageNotInflight"):
        sqs.change_message_visibility(QueueUrl=shared, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)
    assert "Messages" not in sqs.receive_message(QueueUrl=shared, VisibilityTimeout=0), "still held by the second"
    sqs.change_message_visibility(QueueUrl=shared, ReceiptHandle=second["ReceiptHandle"], VisibilityTimeout=0)
    sqs.delete_message(QueueUrl=shared, ReceiptHandle=second["ReceiptHandle"])
    assert _bodies(sqs, shared) == {}


def test_dead_letters_a_worker_cannot_handle_hide_the_others_at_a_shared_target(sqs_admin: Any, sqs: Any) -> None:
    """A worker that fails on ten dead letters of one source, deleting none, still reaches the next source's."""
    shared = _create(sqs_admin, "poison-dlq")
    poisoned = _create(sqs_admin, "poison-a", RedrivePolicy=_policy("poison-dlq"))
    healthy = _create(sqs_admin, "poison-b", RedrivePolicy=_policy("poison-dlq"))
    _dead_letter(sqs, *[(poisoned, f"poison {n}") for n in range(10)], (healthy, "good"))
    seen: list[str] = []
    for _ in range(3):
        answer = sqs.receive_message(QueueUrl=shared, MaxNumberOfMessages=10, VisibilityTimeout=60)
        seen += [message["Body"] for message in answer.get("Messages", [])]
    assert sorted(seen) == sorted([f"poison {n}" for n in range(10)] + ["good"])


def test_a_dead_letter_read_at_its_queues_dlq_is_held_until_its_timeout_runs_out(sqs_admin: Any, sqs: Any) -> None:
    """`{q}.dlq` claims as a shared target does: the dead letter comes back once its hold ends, with a new handle;
    the old one, spent by that receive, deletes nothing."""
    source = _create(sqs_admin, "own-held", RedrivePolicy=_policy("own-held.dlq"))
    dlq = sqs.get_queue_url(QueueName="own-held.dlq")["QueueUrl"]
    _dead_letter(sqs, (source, "dead"))
    [first] = sqs.receive_message(QueueUrl=dlq, VisibilityTimeout=1)["Messages"]
    assert "Messages" not in sqs.receive_message(QueueUrl=dlq)
    time.sleep(1.1)
    [second] = sqs.receive_message(QueueUrl=dlq, VisibilityTimeout=60)["Messages"]
    assert second["MessageId"] == first["MessageId"]

    sqs.delete_message(QueueUrl=dlq, ReceiptHandle=first["ReceiptHandle"])
    sqs.change_message_visibility(QueueUrl=dlq, ReceiptHandle=second["ReceiptHandle"], VisibilityTimeout=0)
    assert set(_bodies(sqs, dlq)) == {"dead"}, "the spent handle removed nothing"


@pytest.mark.parametrize("suffix", ["", ".fifo"])
def test_a_move_task_returns_each_dead_letter_to_its_source(sqs_admin: Any, sqs: Any, suffix: str) -> None:
    shared = _create(sqs_admin, f"back-dlq{suffix}")
    first = _create(sqs_admin, f"back-a{suffix}", RedrivePolicy=_policy(f"back-dlq{suffix}"))
    second = _create(sqs_admin, f"back-b{suffix}", RedrivePolicy=_policy(f"back-dlq{suffix}"))
    _dead_letter(sqs, (first, "from a"), (second, "from b"))
    assert set(_bodies(sqs, shared)) == {"from a", "from b"}
    sqs.start_message_move_task(SourceArn=f"{ARN}back-dlq{suffix}")
    assert _bodies(sqs, shared) == {}
    assert set(_bodies(sqs, first)) == {"from a"}
    assert set(_bodies(sqs, second)) == {"from b"}


def test_a_move_task_with_a_destination_moves_every_dead_letter_there(sqs_admin: Any, sqs: Any) -> None:
    shared = _create(sqs_admin, "to-dlq")
    source = _create(sqs_admin, "to-source", RedrivePolicy=_policy("to-dlq"))
    destination = _create(sqs_admin, "to-destination")
    _dead_letter(sqs, (source, "one"), (source, "two"))
    assert set(_bodies(sqs, shared)) == {"one", "two"}
    sqs.start_message_move_task(SourceArn=f"{ARN}to-dlq", DestinationArn=f"{ARN}to-destination")
    sqs.start_message_move_task(SourceArn=f"{ARN}to-dlq", DestinationArn=f"{ARN}to-destination")  # a repeat
    assert _bodies(sqs, shared) == {}
    moved = _bodies(sqs, destination)
    assert set(moved) == {"one", "two"} and moved["one"]["Attributes"]["ApproximateReceiveCount"] == "1"
    assert _bodies(sqs, source) == {}
    with pytest.raises(sqs.exceptions.ClientError, match="same type"):
        _create(sqs_admin, "to-fifo.fifo")
        sqs.start_message_move_task(SourceArn=f"{ARN}to-dlq", DestinationArn=f"{ARN}to-fifo.fifo")
    with pytest.raises(sqs.exceptions.ClientError, match="Dead Letter Queue"):
        sqs.start_message_move_task(SourceArn=f"{ARN}to-destination")


def test_a_redrive_policy_follows_sqs_rules(sqs_admin: Any) -> None:
    _create(sqs_admin, "rules-dlq")
    _create(sqs_admin, "rules-dlq.fifo")
    errors = sqs_admin.exceptions
    with pytest.raises(errors.InvalidAttributeValue, match="does not exist"):
        _create(sqs_admin, "rules-a", RedrivePolicy=_policy("no-such-queue"))
    with pytest.raises(errors.InvalidAttributeValue, match="same type"):
        _create(sqs_admin, "rules-a", RedrivePolicy=_policy("rules-dlq.fifo"))
    with pytest.raises(errors.InvalidAttributeValue, match="same type"):
        _create(sqs_admin, "rules-a.fifo", RedrivePolicy=_policy("rules-dlq"))
    url = _create(sqs_admin, "rules-a")
    with pytest.raises(errors.InvalidAttributeValue, match="own dead-letter target"):
        sqs_admin.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": _policy("rules-a")})
    assert "RedrivePolicy" not in sqs_admin.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]


def test_a_create_again_compares_the_dead_letter_attributes_it_names(sqs_admin: Any) -> None:
    allow = {"RedriveAllowPolicy": json.dumps({"redrivePermission": "allowAll"})}
    _create(sqs_admin, "again-dlq", **allow)
    _create(sqs_admin, "again-dlq", **allow)
    with pytest.raises(sqs_admin.exceptions.QueueNameExists):
        _create(sqs_admin, "again-dlq", RedriveAllowPolicy=json.dumps({"redrivePermission": "denyAll"}))


@pytest.mark.parametrize(
    ("allow", "refused"),
    [
        ({"redrivePermission": "denyAll"}, True),
        ({"redrivePermission": "byQueue", "sourceQueueArns": [ARN + "allowed-source"]}, True),
        ({"redrivePermission": "byQueue", "sourceQueueArns": [ARN + "allow-source"]}, False),
        ({"redrivePermission": "allowAll"}, False),
    ],
)
def test_a_redrive_allow_policy_decides_which_sources_may_name_the_queue(
    sqs_admin: Any, allow: dict[str, Any], refused: bool
) -> None:
    dlq = _create(sqs_admin, "allow-dlq")
    sqs_admin.set_queue_attributes(QueueUrl=dlq, Attributes={"RedriveAllowPolicy": json.dumps(allow)})
    told = sqs_admin.get_queue_attributes(QueueUrl=dlq, AttributeNames=["RedriveAllowPolicy"])["Attributes"]
    assert json.loads(told["RedriveAllowPolicy"]) == allow
    source = _create(sqs_admin, "allow-source")
    ask = {"RedrivePolicy": _policy("allow-dlq")}
    if refused:
        with pytest.raises(sqs_admin.exceptions.InvalidAttributeValue, match="RedriveAllowPolicy"):
            sqs_admin.set_queue_attributes(QueueUrl=source, Attributes=ask)
    else:
        sqs_admin.set_queue_attributes(QueueUrl=source, Attributes=ask)
        sqs_admin.set_queue_attributes(QueueUrl=source, Attributes={"RedrivePolicy": ""})


@pytest.mark.parametrize(
    "allow",
    [
        "not json",
        '{"redrivePermission": "some"}',
        '{"redrivePermission": "byQueue"}',
        json.dumps({"redrivePermission": "byQueue", "sourceQueueArns": [f"{ARN}q{n}" for n in range(11)]}),
        json.dumps({"redrivePermission": "allowAll", "sourceQueueArns": [f"{ARN}q"]}),
        json.dumps({"redrivePermission": "byQueue", "sourceQueueArns": ["arn:aws:sqs:eu-west-1:1:q"]}),
        json.dumps({"redrivePermission": "byQueue", "sourceQueueArns": [f"{ARN}not a name"]}),
        json.dumps({"redrivePermission": "byQueue", "sourceQueueArns": [f"{ARN}{'q' * 81}"]}),
    ],
)
def test_a_bad_redrive_allow_policy_is_refused(sqs_admin: Any, allow: str) -> None:
    url = _create(sqs_admin, "bad-allow")
    with pytest.raises(sqs_admin.exceptions.InvalidAttributeValue):
        sqs_admin.set_queue_attributes(QueueUrl=url, Attributes={"RedriveAllowPolicy": allow})
    assert (
        "RedriveAllowPolicy" not in sqs_admin.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    )


def test_the_aws_cli_lists_the_sources_of_a_shared_dead_letter_queue(server: LocalServer, sqs_admin: Any) -> None:
    dlq = _create(sqs_admin, "cli-shared-dlq")
    _create(sqs_admin, "cli-source-1", RedrivePolicy=_policy("cli-shared-dlq", 3))
    attributes = json.dumps({"RedrivePolicy": _policy("cli-shared-dlq", 3)})
    aws(server, "create-queue", "--queue-name", "cli-source-2", "--attributes", attributes, endpoint="/sqs-admin")
    listed = aws(server, "list-dead-letter-source-queues", "--queue-url", dlq)["queueUrls"]
    assert [url.rsplit("/", 1)[-1] for url in listed] == ["cli-source-1", "cli-source-2"]


def test_dead_letters_a_receive_has_no_room_for_are_not_held(sqs_admin: Any, sqs: Any) -> None:
    """The target's own message fills a receive of one: the dead letter read beside it is released at once, not
    hidden for the visibility timeout with nobody holding it."""
    shared = _create(sqs_admin, "room-dlq")
    source = _create(sqs_admin, "room-src", RedrivePolicy=_policy("room-dlq"))
    _dead_letter(sqs, (source, "dead"))
    sqs.send_message(QueueUrl=shared, MessageBody="own")
    first = sqs.receive_message(QueueUrl=shared, MaxNumberOfMessages=1, VisibilityTimeout=600)
    assert [message["Body"] for message in first["Messages"]] == ["own"]
    second = sqs.receive_message(QueueUrl=shared, MaxNumberOfMessages=10, VisibilityTimeout=0)
    assert [message["Body"] for message in second.get("Messages", [])] == ["dead"]
