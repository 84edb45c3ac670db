"""boto3's SQS client on the queue actions: create, find, list, attributes, tags, delete, purge, errors."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError


def test_create_is_idempotent_for_the_attributes_named_and_refuses_other_values(
    sqs_admin: Any, sqs: Any, server: Any
) -> None:
    url = sqs_admin.create_queue(QueueName="life", Attributes={"VisibilityTimeout": "40"}, tags={"team": "a"})[
        "QueueUrl"
    ]
    assert url == f"{server.url}/000000000000/life"
    assert sqs_admin.create_queue(QueueName="life", Attributes={"VisibilityTimeout": "40"})["QueueUrl"] == url
    assert sqs_admin.create_queue(QueueName="life")["QueueUrl"] == url
    with pytest.raises(sqs.exceptions.QueueNameExists) as refused:
        sqs_admin.create_queue(QueueName="life", Attributes={"VisibilityTimeout": "41"})
    assert refused.value.response["Error"]["Code"] == "QueueAlreadyExists"
    assert sqs.get_queue_url(QueueName="life")["QueueUrl"] == url
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "a"}


def test_attributes_read_and_set_as_sqs_names_them(sqs_admin: Any, sqs: Any) -> None:
    before = int(time.time())
    url = sqs_admin.create_queue(
        QueueName="described",
        Attributes={
            "DelaySeconds": "2",
            "MessageRetentionPeriod": "3600",
            "ReceiveMessageWaitTimeSeconds": "1",
            "MaximumMessageSize": "2048",
        },
    )["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert {key: attributes[key] for key in ("DelaySeconds", "MessageRetentionPeriod", "VisibilityTimeout")} == {
        "DelaySeconds": "2",
        "MessageRetentionPeriod": "3600",
        "VisibilityTimeout": "30",
    }
    assert (attributes["ReceiveMessageWaitTimeSeconds"], attributes["MaximumMessageSize"]) == ("1", "2048")
    assert attributes["QueueArn"] == "arn:aws:sqs:us-east-1:000000000000:described"
    assert abs(int(attributes["CreatedTimestamp"]) - before) <= 5 and "RedrivePolicy" not in attributes
    assert attributes["ApproximateNumberOfMessages"] == "0" and "FifoQueue" not in attributes
    dlq_arn = "arn:aws:sqs:us-east-1:000000000000:described.dlq"
    policy = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "4"})
    sqs_admin.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "60", "RedrivePolicy": policy})
    asked = ["VisibilityTimeout", "RedrivePolicy", "LastModifiedTimestamp"]
    changed = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=asked)["Attributes"]
    assert changed["VisibilityTimeout"] == "60"
    assert json.loads(changed["RedrivePolicy"]) == {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 4}
    assert set(changed) == set(asked)
    sqs_admin.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": ""})
    assert "RedrivePolicy" not in sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]


@pytest.mark.parametrize(
    ("attributes", "error"),
    [
        ({"VisibilityTimeout": "43201"}, "InvalidAttributeValue"),
        ({"MaximumMessageSize": "1023"}, "InvalidAttributeValue"),
        ({"DelaySeconds": "ten"}, "InvalidAttributeValue"),
        ({"Colour": "blue"}, "InvalidAttributeName"),
        ({"Policy": "{}"}, "InvalidAttributeValue"),
        ({"QueueArn": "x"}, "InvalidAttributeName"),
        ({"RedrivePolicy": '{"maxReceiveCount": 5, "deadLetterTargetArn": "arn:aws:sqs:us-east-1:1:x"}'},
         "InvalidAttributeValue"),
    ],
)  # fmt: skip
def test_bad_attributes_raise_the_modeled_errors_and_change_nothing(
    sqs_admin: Any, sqs: Any, attributes: dict, error: str
) -> None:
    url = sqs_admin.create_queue(QueueName="strict")["QueueUrl"]
    with pytest.raises(getattr(sqs.exceptions, error)):
        sqs_admin.set_queue_attributes(QueueUrl=url, Attributes=attributes)
    with pytest.raises(getattr(sqs.exceptions, error)):
        sqs_admin.create_queue(QueueName="strict-new", Attributes=attributes)
    assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])["Attributes"] == {
        "VisibilityTimeout": "30"
    }
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.get_queue_url(QueueName="strict-new")
    with pytest.raises(sqs.exceptions.InvalidAttributeName):
        sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Nope"])


def test_list_queues_by_prefix_and_page(sqs_admin: Any, sqs: Any, server: Any) -> None:
    for number in range(5):
        sqs_admin.create_queue(QueueName=f"paged-{number}")
    assert len(sqs_admin.list_queues(QueueNamePrefix="paged-")["QueueUrls"]) == 5
    first = sqs_admin.list_queues(QueueNamePrefix="paged-", MaxResults=2)
    assert first["QueueUrls"] == [f"{server.url}/000000000000/paged-{n}" for n in (0, 1)]
    rest = sqs_admin.list_queues(QueueNamePrefix="paged-", MaxResults=3, NextToken=first["NextToken"])
    assert [url.rsplit("/", 1)[1] for url in rest["QueueUrls"]] == ["paged-2", "paged-3", "paged-4"]
    assert "NextToken" not in rest
    assert "QueueUrls" not in sqs_admin.list_queues(QueueNamePrefix="nothing-")


@pytest.mark.parametrize("token", ["garbage", "cGFnZWQtMQ==", "YWZ0ZXI6cGFnZWQtMQ", "YWZ0ZXI6Lw==", "!!"])
def test_a_next_token_not_answered_by_list_queues_is_refused(sqs_admin: Any, token: str) -> None:
    """Whatever does not decode to a name this action answered (the bare name, a token without its padding, a
    name no queue can have) is refused, never read as a place to start."""
    sqs_admin.create_queue(QueueName="paged-token")
    with pytest.raises(ClientError) as refused:
        sqs_admin.list_queues(QueueNamePrefix="paged-", MaxResults=1, NextToken=token)
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_a_clients_endpoint_lists_only_the_queues_it_has_a_sub_queue_in(sqs_admin: Any, client_for: Any) -> None:
    sqs_admin.create_queue(QueueName="listed-mine")
    sqs_admin.create_queue(QueueName="listed-theirs", Attributes={"RedrivePolicy": _redrive("listed-theirs")})
    mine, theirs = client_for("lister-a"), client_for("lister-b")
    assert "QueueUrls" not in mine.list_queues(QueueNamePrefix="listed-")
    mine.send_message(QueueUrl=mine.get_queue_url(QueueName="listed-mine")["QueueUrl"], MessageBody="x")
    theirs.send_message(QueueUrl=theirs.get_queue_url(QueueName="listed-theirs")["QueueUrl"], MessageBody="y")

    assert [url.rsplit("/", 1)[1] for url in mine.list_queues(QueueNamePrefix="listed-")["QueueUrls"]] == [
        "listed-mine"
    ]
    assert [url.rsplit("/", 1)[1] for url in theirs.list_queues(QueueNamePrefix="listed-")["QueueUrls"]] == [
        "listed-theirs",
        "listed-theirs.dlq",
    ]
    assert len(sqs_admin.list_queues(QueueNamePrefix="listed-")["QueueUrls"]) == 3


def _redrive(name: str) -> str:
    return json.dumps({"deadLetterTargetArn": f"arn:aws:sqs:us-east-1:000000000000:{name}.dlq", "maxReceiveCount": 3})


def test_tags_are_added_changed_removed(sqs_admin: Any, sqs: Any) -> None:
    url = sqs_admin.create_queue(QueueName="tagged")["QueueUrl"]
    assert "Tags" not in sqs.list_queue_tags(QueueUrl=url)
    sqs_admin.tag_queue(QueueUrl=url, Tags={"a": "1", "b": "2"})
    sqs_admin.tag_queue(QueueUrl=url, Tags={"b": "3"})
    sqs_admin.untag_queue(QueueUrl=url, TagKeys=["a"])
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"b": "3"}


def test_delete_and_purge(sqs_admin: Any, sqs: Any) -> None:
    url = sqs_admin.create_queue(QueueName="short-lived")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="x")
    sqs.purge_queue(QueueUrl=url)
    assert "Messages" not in sqs.receive_message(QueueUrl=url)
    sqs_admin.delete_queue(QueueUrl=url)
    for action in (sqs.get_queue_url, sqs_admin.delete_queue):
        with pytest.raises(sqs.exceptions.QueueDoesNotExist):
            action(**({"QueueName": "short-lived"} if action == sqs.get_queue_url else {"QueueUrl": url}))


def test_fifo_queues_are_created_as_sqs_creates_them(sqs_admin: Any, sqs: Any) -> None:
    attributes = {"FifoQueue": "true", "ContentBasedDeduplication": "true"}
    url = sqs_admin.create_queue(QueueName="made.fifo", Attributes=attributes)["QueueUrl"]
    described = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["FifoQueue", "ContentBasedDeduplication"])
    assert described["Attributes"] == attributes
    for name, attributes in (("plain.fifo", {}), ("nofifo", {"FifoQueue": "true"})):
        with pytest.raises(ClientError) as refused:
            sqs_admin.create_queue(QueueName=name, Attributes=attributes)
        assert refused.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_unsupported_and_unknown_actions_are_sqs_errors(sqs_admin: Any, sqs: Any) -> None:
    url = sqs_admin.create_queue(QueueName="perm")["QueueUrl"]
    with pytest.raises(sqs.exceptions.UnsupportedOperation):
        sqs.add_permission(QueueUrl=url, Label="l", AWSAccountIds=["1"], Actions=["SendMessage"])
    with pytest.raises(sqs.exceptions.UnsupportedOperation):
        sqs.remove_permission(QueueUrl=url, Label="l")
