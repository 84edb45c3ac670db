"""The attributes infrastructure code sets by habit (encryption, FIFO throughput, policies) answer what the queue
really does: the true values are accepted and reported, the others refused with SQS's error code and the reason."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws
from queue_core import QueueClient

from tests.sqs_in_process import sqs_in_process


@pytest.fixture
def sqs_admin() -> Iterator[Any]:
    """The administration endpoint answered in-process, so that the stack's key (`DQ_KMS_KEY_ARN`, the
    SQS function's environment) can be set per test."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        core = QueueClient("truthful-attributes")
        core.create_table()
        yield sqs_in_process(core, admin=True)


KEY = "arn:aws:kms:us-east-1:000000000000:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def _refused(sqs_admin: Any, name: str, attributes: dict[str, str], code: str, reason: str) -> None:
    with pytest.raises(sqs_admin.exceptions.ClientError) as raised:
        sqs_admin.create_queue(QueueName=name, Attributes=attributes)
    assert raised.value.response["Error"]["Code"] == code
    assert reason in raised.value.response["Error"]["Message"]
    with pytest.raises(sqs_admin.exceptions.QueueDoesNotExist):
        sqs_admin.get_queue_url(QueueName=name)


def test_a_queue_reports_the_encryption_it_has(sqs_admin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DQ_KMS_KEY_ARN", raising=False)
    url = sqs_admin.create_queue(QueueName="sse", Attributes={"SqsManagedSseEnabled": "true"})["QueueUrl"]
    told = sqs_admin.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert told["SqsManagedSseEnabled"] == "true" and "KmsMasterKeyId" not in told
    _refused(sqs_admin, "sse-off", {"SqsManagedSseEnabled": "false"}, "InvalidAttributeValue", "aws/dynamodb")
    _refused(sqs_admin, "sse-kms", {"KmsMasterKeyId": "alias/aws/sqs"}, "InvalidAttributeValue", "encryption_key_arn")
    _refused(sqs_admin, "sse-reuse", {"KmsDataKeyReusePeriodSeconds": "60"}, "InvalidAttributeValue", "300 seconds")


def test_a_customer_key_is_accepted_when_it_is_the_stacks(sqs_admin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DQ_KMS_KEY_ARN", KEY)
    asked = {"KmsMasterKeyId": KEY.rsplit("/", 1)[-1], "KmsDataKeyReusePeriodSeconds": "300"}
    url = sqs_admin.create_queue(QueueName="kms", Attributes=asked)["QueueUrl"]
    told = sqs_admin.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (told["KmsMasterKeyId"], told["SqsManagedSseEnabled"]) == (KEY, "false")
    assert told["KmsDataKeyReusePeriodSeconds"] == "300"
    other = KEY.replace("1234abcd", "99999999")
    _refused(sqs_admin, "kms-other", {"KmsMasterKeyId": other}, "InvalidAttributeValue", f"stack's key {KEY}")
    _refused(sqs_admin, "kms-sse", {"SqsManagedSseEnabled": "true"}, "InvalidAttributeValue", KEY)


def test_fifo_throughput_attributes_say_dedup_is_per_queue_and_throughput_per_group(sqs_admin: Any) -> None:
    fifo = {"FifoQueue": "true", "DeduplicationScope": "queue", "FifoThroughputLimit": "perMessageGroupId"}
    url = sqs_admin.create_queue(QueueName="throughput.fifo", Attributes=fifo)["QueueUrl"]
    told = sqs_admin.get_queue_attributes(QueueUrl=url, AttributeNames=["DeduplicationScope", "FifoThroughputLimit"])
    assert told["Attributes"] == {"DeduplicationScope": "queue", "FifoThroughputLimit": "perMessageGroupId"}
    scope = {"FifoQueue": "true", "DeduplicationScope": "messageGroup"}
    _refused(sqs_admin, "scope.fifo", scope, "InvalidAttributeValue", "unique across every message group")
    limit = {"FifoQueue": "true", "FifoThroughputLimit": "perQueue"}
    _refused(sqs_admin, "limit.fifo", limit, "InvalidAttributeValue", "per message group")
    _refused(sqs_admin, "standard", {"DeduplicationScope": "queue"}, "InvalidAttributeName", "only for FIFO")
    with pytest.raises(sqs_admin.exceptions.InvalidAttributeValue, match="grant_sqs"):
        sqs_admin.set_queue_attributes(QueueUrl=url, Attributes={"Policy": '{"Version": "2012-10-17"}'})
