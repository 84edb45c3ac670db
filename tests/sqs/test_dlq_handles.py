"""Receipt handles read from a dead-letter queue over SQS: each removes only the DLQ copy it was read from, is as
unforgeable as a live handle, and never reaches the live queue (the message an operator moved back and a worker
now holds, or any message of the queue named by its id)."""

from __future__ import annotations

import json
from typing import Any

import pytest

ARN = "arn:aws:sqs:us-east-1:000000000000:"


def _poisoned(admin: Any, sqs: Any, name: str, bodies: tuple[str, ...] = ("bad",)) -> tuple[str, str]:
    """A queue that dead-letters at the first receive, with `bodies` in its DLQ; its URL and its DLQ's URL."""
    policy = json.dumps({"deadLetterTargetArn": f"{ARN}{name}.dlq", "maxReceiveCount": 1})
    admin.create_queue(QueueName=name, Attributes={"RedrivePolicy": policy})
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body)
    sqs.receive_message(QueueUrl=url, VisibilityTimeout=0, MaxNumberOfMessages=10)
    assert "Messages" not in sqs.receive_message(QueueUrl=url), "past its receive limit, into the DLQ"
    return url, sqs.get_queue_url(QueueName=f"{name}.dlq")["QueueUrl"]


def _counts(sqs: Any, url: str) -> tuple[int, int]:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return int(attributes[names[0]]), int(attributes[names[1]])


def _redrive(sqs: Any, name: str) -> None:
    sqs.start_message_move_task(SourceArn=f"{ARN}{name}.dlq", DestinationArn=f"{ARN}{name}")


def test_a_late_delete_with_a_dlq_handle_leaves_the_redriven_message_with_its_worker(sqs_admin: Any, sqs: Any) -> None:
    url, dlq_url = _poisoned(sqs_admin, sqs, "late-dlq-delete")
    [dead] = sqs.receive_message(QueueUrl=dlq_url)["Messages"]
    _redrive(sqs, "late-dlq-delete")
    [held] = sqs.receive_message(QueueUrl=url, VisibilityTimeout=300)["Messages"]
    assert held["MessageId"] == dead["MessageId"]

    sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=dead["ReceiptHandle"])

    assert _counts(sqs, url) == (0, 1), "the worker still holds its message"
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=held["ReceiptHandle"], VisibilityTimeout=600)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=held["ReceiptHandle"])
    assert _counts(sqs, url) == (0, 0) and _counts(sqs, dlq_url) == (0, 0)


@pytest.mark.parametrize("in_flight", [True, False], ids=["in-flight", "waiting"])
def test_a_forged_dlq_handle_naming_a_message_id_removes_nothing(sqs_admin: Any, sqs: Any, in_flight: bool) -> None:
    name = f"forged-dlq-{'held' if in_flight else 'waiting'}"
    url, dlq_url = _poisoned(sqs_admin, sqs, name, bodies=("dead",))
    live = sqs.send_message(QueueUrl=url, MessageBody="alive")["MessageId"]
    if in_flight:
        sqs.receive_message(QueueUrl=url, VisibilityTimeout=300)
    [dead] = sqs.receive_message(QueueUrl=dlq_url)["Messages"]
    before = _counts(sqs, url)

    for handle in (f"dlq:{live}", f"dlq:{dead['MessageId']}", dead["ReceiptHandle"] + "x"):
        with pytest.raises(sqs.exceptions.ReceiptHandleIsInvalid):
            sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=handle)
        with pytest.raises(sqs.exceptions.ReceiptHandleIsInvalid):
            sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=handle, VisibilityTimeout=0)
    answer = sqs.delete_message_batch(QueueUrl=dlq_url, Entries=[{"Id": "live", "ReceiptHandle": f"dlq:{live}"}])
    assert [(failed["Id"], failed["Code"]) for failed in answer["Failed"]] == [("live", "ReceiptHandleIsInvalid")]

    assert _counts(sqs, url) == before
    assert _counts(sqs, dlq_url) == (1, 0)


def test_a_delete_by_dlq_handle_removes_that_dlq_copy_only(sqs_admin: Any, sqs: Any) -> None:
    url, dlq_url = _poisoned(sqs_admin, sqs, "dlq-delete", bodies=("one", "two"))
    dead = {
        message["Body"]: message
        for message in sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10)["Messages"]
    }
    live = sqs.send_message(QueueUrl=url, MessageBody="alive")

    sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=dead["one"]["ReceiptHandle"])
    sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=dead["one"]["ReceiptHandle"])  # again: no error, no effect
    sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=dead["two"]["ReceiptHandle"], VisibilityTimeout=0)

    assert [m["Body"] for m in sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10)["Messages"]] == ["two"]
    [alive] = sqs.receive_message(QueueUrl=url)["Messages"]
    assert alive["MessageId"] == live["MessageId"]


def test_an_old_dlq_handle_does_not_remove_a_later_dlq_copy_of_the_same_message(sqs_admin: Any, sqs: Any) -> None:
    url, dlq_url = _poisoned(sqs_admin, sqs, "dlq-second-copy")
    [first] = sqs.receive_message(QueueUrl=dlq_url)["Messages"]
    _redrive(sqs, "dlq-second-copy")
    sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)
    assert "Messages" not in sqs.receive_message(QueueUrl=url), "dead-lettered a second time"
    [second] = sqs.receive_message(QueueUrl=dlq_url)["Messages"]
    assert second["MessageId"] == first["MessageId"] and second["ReceiptHandle"] != first["ReceiptHandle"]

    answer = sqs.delete_message_batch(
        QueueUrl=dlq_url, Entries=[{"Id": "old", "ReceiptHandle": first["ReceiptHandle"]}]
    )

    assert [entry["Id"] for entry in answer["Successful"]] == ["old"], "a used-up handle is no error, as in SQS"
    assert _counts(sqs, dlq_url) == (1, 0)
    sqs.delete_message_batch(QueueUrl=dlq_url, Entries=[{"Id": "new", "ReceiptHandle": second["ReceiptHandle"]}])
    assert _counts(sqs, dlq_url) == (0, 0)


def test_handles_of_a_queue_and_of_its_dlq_are_not_interchangeable(sqs_admin: Any, sqs: Any) -> None:
    url, dlq_url = _poisoned(sqs_admin, sqs, "dlq-crossed")
    sqs.send_message(QueueUrl=url, MessageBody="alive")
    [held] = sqs.receive_message(QueueUrl=url, VisibilityTimeout=300)["Messages"]
    [dead] = sqs.receive_message(QueueUrl=dlq_url)["Messages"]

    with pytest.raises(sqs.exceptions.ReceiptHandleIsInvalid):
        sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=held["ReceiptHandle"])
    with pytest.raises(sqs.exceptions.ReceiptHandleIsInvalid):
        sqs.delete_message(QueueUrl=url, ReceiptHandle=dead["ReceiptHandle"])
    sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=dead["ReceiptHandle"], VisibilityTimeout=0)

    assert _counts(sqs, url) == (0, 1) and _counts(sqs, dlq_url) == (1, 0)


def test_a_dlq_handle_of_another_clients_sub_queue_is_refused(sqs_admin: Any, sqs: Any, client_for: Any) -> None:
    _, dlq_url = _poisoned(sqs_admin, sqs, "dlq-tenants")
    tenant = client_for("tenant-dlq")
    tenant_url = tenant.get_queue_url(QueueName="dlq-tenants")["QueueUrl"]
    tenant.send_message(QueueUrl=tenant_url, MessageBody="theirs")
    tenant.receive_message(QueueUrl=tenant_url, VisibilityTimeout=0)
    tenant.receive_message(QueueUrl=tenant_url)
    tenant_dlq = tenant.get_queue_url(QueueName="dlq-tenants.dlq")["QueueUrl"]
    [theirs] = tenant.receive_message(QueueUrl=tenant_dlq)["Messages"]

    with pytest.raises(sqs.exceptions.ReceiptHandleIsInvalid):
        sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=theirs["ReceiptHandle"])

    assert _counts(tenant, tenant_dlq) == (1, 0) and _counts(sqs, dlq_url) == (1, 0)


def test_messages_cut_from_an_answer_over_6_mb_come_back_uncounted(sqs_admin: Any, sqs: Any) -> None:
    """An answer leaves through Lambda's 6 MB: the messages it cannot carry are given back as never received, so
    with a receive limit of 1 they are delivered next time instead of going to the DLQ unseen."""
    url, dlq_url = _poisoned(sqs_admin, sqs, "cut-answer", bodies=())
    for number in range(8):
        sqs.send_message(QueueUrl=url, MessageBody=f"{number}" * 1_000_000)
    first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=300)["Messages"]
    assert 0 < len(first) < 8

    rest = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=300)["Messages"]

    assert len(first) + len(rest) == 8 and _counts(sqs, dlq_url) == (0, 0)
    assert {m["Body"][0] for m in first + rest} == {str(number) for number in range(8)}
