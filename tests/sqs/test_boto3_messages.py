"""boto3's SQS client on the message actions: typed attributes with their digests checked by an independent
implementation, batches and their per-entry answers, visibility, FIFO, long poll, endpoints, the DLQ."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from typing import Any

import boto3
import pytest
from moto.sqs.models import Message as MotoMessage

from dq.local_server import LOCAL_BUCKET, LocalServer
from tests.sqs.conftest import CREDENTIALS

ATTRIBUTES = {
    "text": {"DataType": "String", "StringValue": "héllo"},
    "label": {"DataType": "String.custom", "StringValue": "x"},
    "count": {"DataType": "Number", "StringValue": "-12.5"},
    "ratio": {"DataType": "Number.float", "StringValue": "0.25"},
    "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xffraw"},
    "image": {"DataType": "Binary.gif", "BinaryValue": b"GIF89a"},
}


def moto_md5(attributes: dict[str, dict[str, Any]]) -> str:
    """MD5OfMessageAttributes by moto's own implementation of SQS's algorithm."""
    message = MotoMessage("id", "body")
    message.message_attributes = attributes
    return message.attribute_md5


def test_typed_attributes_round_trip_with_sqs_digests(sqs_admin: Any, sqs: Any) -> None:
    url = sqs_admin.create_queue(QueueName="typed")["QueueUrl"]
    sent = sqs.send_message(QueueUrl=url, MessageBody="body ✓", MessageAttributes=ATTRIBUTES)
    assert sent["MD5OfMessageBody"] == hashlib.md5("body ✓".encode()).hexdigest()
    assert sent["MD5OfMessageAttributes"] == moto_md5(ATTRIBUTES)
    [message] = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
    assert message["MessageAttributes"] == ATTRIBUTES
    assert (message["MD5OfBody"], message["MD5OfMessageAttributes"]) == (
        sent["MD5OfMessageBody"],
        sent["MD5OfMessageAttributes"],
    )
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    [again] = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["count", "b.*", "image"])["Messages"]
    subset = {name: ATTRIBUTES[name] for name in ("count", "image")}
    assert again["MessageAttributes"] == subset and again["MD5OfMessageAttributes"] == moto_md5(subset)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=again["ReceiptHandle"])
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


@pytest.mark.parametrize(
    "attributes",
    [
        {"n": {"DataType": "Number", "StringValue": "many"}},
        {"b": {"DataType": "Binary", "StringValue": "x"}},
        {"AWS.reserved": {"DataType": "String", "StringValue": "x"}},
        {"bad name!": {"DataType": "String", "StringValue": "x"}},
        {"e": {"DataType": "String", "StringValue": ""}},
        {"t": {"DataType": "Text", "StringValue": "x"}},
        {f"a{n}": {"DataType": "String", "StringValue": "x"} for n in range(11)},
    ],
)
def test_bad_message_attributes_are_invalid_parameter_values_and_write_nothing(
    sqs_admin: Any, sqs: Any, attributes: dict
) -> None:
    url = sqs_admin.create_queue(QueueName="refusing")["QueueUrl"]
    with pytest.raises(sqs.exceptions.ClientError) as refused:
        sqs.send_message(QueueUrl=url, MessageBody="x", MessageAttributes=attributes)
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_size_limits_count_body_and_attributes(sqs_admin: Any, sqs: Any) -> None:
    url = sqs_admin.create_queue(QueueName="small", Attributes={"MaximumMessageSize": "1024"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="x" * 1024)
    with pytest.raises(sqs.exceptions.ClientError):
        sqs.send_message(
            QueueUrl=url,
            MessageBody="x" * 1000,
            MessageAttributes={"a": {"DataType": "String", "StringValue": "y" * 30}},
        )
    with pytest.raises(sqs.exceptions.InvalidMessageContents):
        sqs.send_message(QueueUrl=url, MessageBody="bell \x07")
    with pytest.raises(sqs.exceptions.ClientError):
        sqs.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=901)


def test_batches_answer_per_entry_and_refuse_malformed_batches(sqs_admin: Any, sqs: Any) -> None:
    url = sqs_admin.create_queue(QueueName="batched")["QueueUrl"]
    entries = [{"Id": f"m{n}", "MessageBody": f"body {n}"} for n in range(9)]
    bad = {"Id": "bad", "MessageBody": "x", "MessageAttributes": {"n": {"DataType": "Number", "StringValue": "z"}}}
    sent = sqs.send_message_batch(QueueUrl=url, Entries=[*entries, bad])
    assert sorted(entry["Id"] for entry in sent["Successful"]) == sorted(entry["Id"] for entry in entries)
    assert [(f["Id"], f["Code"], f["SenderFault"]) for f in sent["Failed"]] == [("bad", "InvalidParameterValue", True)]
    assert all(entry["MD5OfMessageBody"] == hashlib.md5(f"body {entry['Id'][1:]}".encode()).hexdigest()
               for entry in sent["Successful"])  # fmt: skip
    for wrong, error in (
        ([], "EmptyBatchRequest"),
        ([{"Id": f"m{n}", "MessageBody": "x"} for n in range(11)], "TooManyEntriesInBatchRequest"),
        ([{"Id": "same", "MessageBody": "x"}, {"Id": "same", "MessageBody": "y"}], "BatchEntryIdsNotDistinct"),
        ([{"Id": "not ok!", "MessageBody": "x"}], "InvalidBatchEntryId"),
        ([{"Id": f"m{n}", "MessageBody": "x" * 400_000} for n in range(3)], "BatchRequestTooLong"),
    ):
        with pytest.raises(getattr(sqs.exceptions, error)):
            sqs.send_message_batch(QueueUrl=url, Entries=wrong)
    received = []
    while len(received) < 9:
        received += sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    handles = [{"Id": f"h{n}", "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(received)]
    changed = sqs.change_message_visibility_batch(
        QueueUrl=url,
        Entries=[{**handle, "VisibilityTimeout": 60} for handle in handles[:2]]
        + [{"Id": "forged", "ReceiptHandle": "forged", "VisibilityTimeout": 5}],
    )
    assert (len(changed["Successful"]), changed["Failed"][0]["Code"]) == (2, "ReceiptHandleIsInvalid")
    deleted = sqs.delete_message_batch(QueueUrl=url, Entries=[*handles, {"Id": "forged", "ReceiptHandle": "x"}])
    assert len(deleted["Successful"]) == 9 and [f["Code"] for f in deleted["Failed"]] == ["ReceiptHandleIsInvalid"]
    with pytest.raises(sqs.exceptions.TooManyEntriesInBatchRequest):
        sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": f"d{n}", "ReceiptHandle": "x"} for n in range(11)])


def test_visibility_and_receipt_handles(sqs_admin: Any, sqs: Any) -> None:
    url = sqs_admin.create_queue(QueueName="visible", Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="once")
    [first] = sqs.receive_message(QueueUrl=url, AttributeNames=["All"])["Messages"]
    assert first["Attributes"]["ApproximateReceiveCount"] == "1" and "Messages" not in sqs.receive_message(QueueUrl=url)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)
    [second] = sqs.receive_message(QueueUrl=url, MessageSystemAttributeNames=["ApproximateReceiveCount"])["Messages"]
    assert second["Attributes"] == {"ApproximateReceiveCount": "2"}
    with pytest.raises(sqs.exceptions.MessageNotInflight):
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=5)
    with pytest.raises(sqs.exceptions.ReceiptHandleIsInvalid):
        sqs.delete_message(QueueUrl=url, ReceiptHandle="forged")
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])  # stale: SQS answers success
    sqs.delete_message(QueueUrl=url, ReceiptHandle=second["ReceiptHandle"])
    sqs.delete_message(QueueUrl=url, ReceiptHandle=second["ReceiptHandle"])  # already deleted: success too


def test_fifo_groups_dedup_and_sequence_numbers(sqs_admin: Any, sqs: Any) -> None:
    url = sqs_admin.create_queue(QueueName="ordered.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    sequences = []
    for number in range(3):
        sent = sqs.send_message(
            QueueUrl=url, MessageBody=f"a{number}", MessageGroupId="a", MessageDeduplicationId=f"a{number}"
        )
        sequences.append(sent["SequenceNumber"])
    again = sqs.send_message(QueueUrl=url, MessageBody="a0", MessageGroupId="a", MessageDeduplicationId="a0")
    assert sequences == sorted(sequences) and len(set(sequences)) == 3
    sqs.send_message(QueueUrl=url, MessageBody="b0", MessageGroupId="b", MessageDeduplicationId="b0")
    with pytest.raises(sqs.exceptions.ClientError):
        sqs.send_message(QueueUrl=url, MessageBody="no dedup id", MessageGroupId="a")
    with pytest.raises(sqs.exceptions.ClientError):
        sqs.send_message(QueueUrl=url, MessageBody="no group", MessageDeduplicationId="z")
    names = ["MessageGroupId", "SequenceNumber"]
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=names)["Messages"]
    by_group: dict[str, list[str]] = {}
    for message in messages:
        by_group.setdefault(message["Attributes"]["MessageGroupId"], []).append(message["Body"])
    assert by_group == {"a": ["a0", "a1", "a2"], "b": ["b0"]}
    first_a = next(m for m in messages if m["Body"] == "a0")
    assert first_a["MessageId"] == again["MessageId"] and first_a["Attributes"]["SequenceNumber"] == sequences[0]
    assert "MessageDeduplicationId" not in first_a["Attributes"], "only the attributes asked for"
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_a_fifo_message_answers_the_dedup_id_it_was_sent_with_or_its_content_hash(sqs_admin: Any, sqs: Any) -> None:
    explicit = sqs_admin.create_queue(QueueName="explicit.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    hashed = sqs_admin.create_queue(
        QueueName="hashed.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"}
    )["QueueUrl"]
    sqs.send_message(QueueUrl=explicit, MessageBody="one", MessageGroupId="g", MessageDeduplicationId="order-17")
    sqs.send_message(QueueUrl=hashed, MessageBody="two", MessageGroupId="g")
    answers = [
        sqs.receive_message(QueueUrl=url, MessageSystemAttributeNames=["MessageDeduplicationId"])["Messages"][0]
        for url in (explicit, hashed)
    ]
    assert [answer["Attributes"] for answer in answers] == [
        {"MessageDeduplicationId": "order-17"},
        {"MessageDeduplicationId": hashlib.sha256(b"two").hexdigest()},
    ]


def test_long_poll_returns_when_a_message_arrives(sqs_admin: Any, sqs: Any) -> None:
    url = sqs_admin.create_queue(QueueName="polled")["QueueUrl"]
    sent_at: list[float] = []

    def send_late() -> None:
        sqs.send_message(QueueUrl=url, MessageBody="late")
        sent_at.append(time.monotonic())

    timer = threading.Timer(1.0, send_late)
    timer.start()
    answer = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20)
    returned_at = time.monotonic()
    timer.join()
    assert [message["Body"] for message in answer["Messages"]] == ["late"]
    assert returned_at - sent_at[0] < 3, "the long poll answered soon after the message arrived"


def test_each_client_endpoint_has_its_own_sub_queues_and_refuses_anothers_urls(
    sqs_admin: Any, sqs: Any, client_for: Any
) -> None:
    tenant = client_for("tenant-a")
    root_url = sqs_admin.create_queue(QueueName="shared")["QueueUrl"]
    tenant_url = tenant.create_queue(QueueName="shared")["QueueUrl"]
    assert tenant_url.endswith("/sqs/tenant-a/000000000000/shared") and root_url != tenant_url
    tenant.send_message(QueueUrl=tenant_url, MessageBody="for a")
    assert "Messages" not in sqs.receive_message(QueueUrl=root_url)
    for foreign, url in ((sqs, tenant_url), (tenant, root_url), (client_for("tenant-b"), tenant_url)):
        with pytest.raises(foreign.exceptions.InvalidAddress):
            foreign.receive_message(QueueUrl=url)
    with_slash = client_for("tenant-a/")
    assert [m["Body"] for m in with_slash.receive_message(QueueUrl=tenant_url)["Messages"]] == ["for a"]


@pytest.mark.parametrize("client", ["tenant-c", None], ids=["named-client", "root-endpoint-default"])
def test_a_client_endpoint_uses_shared_queues_but_never_creates_changes_tags_or_deletes_them(
    sqs_admin: Any, sqs: Any, client_for: Any, client: str | None
) -> None:
    """The client `default` at the root endpoint is a tenant like any other: administration has its own endpoint."""
    root_url = sqs_admin.create_queue(QueueName="tenants", Attributes={"VisibilityTimeout": "40"})["QueueUrl"]
    tenant = client_for(client)
    url = tenant.create_queue(QueueName="tenants", Attributes={"VisibilityTimeout": "40"})["QueueUrl"]
    refused = [
        lambda: tenant.create_queue(QueueName="tenants-new"),
        lambda: tenant.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "5"}),
        lambda: tenant.tag_queue(QueueUrl=url, Tags={"team": "c"}),
        lambda: tenant.untag_queue(QueueUrl=url, TagKeys=["team"]),
        lambda: tenant.delete_queue(QueueUrl=url),
    ]
    for call in refused:
        with pytest.raises(tenant.exceptions.ClientError) as caught:
            call()
        assert caught.value.response["Error"]["Code"] == "AccessDenied"
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    with pytest.raises(tenant.exceptions.QueueNameExists):
        tenant.create_queue(QueueName="tenants", Attributes={"VisibilityTimeout": "41"})
    attributes = sqs.get_queue_attributes(QueueUrl=root_url, AttributeNames=["VisibilityTimeout"])["Attributes"]
    assert attributes == {"VisibilityTimeout": "40"} and sqs.list_queue_tags(QueueUrl=root_url).get("Tags") is None
    assert "tenants-new" not in str(sqs.list_queues().get("QueueUrls"))
    tenant.send_message(QueueUrl=url, MessageBody="still there")
    assert [m["Body"] for m in tenant.receive_message(QueueUrl=url)["Messages"]] == ["still there"]


def test_dead_letters_read_listed_and_moved_back(sqs_admin: Any, sqs: Any) -> None:
    arn = "arn:aws:sqs:us-east-1:000000000000:"
    policy = json.dumps({"deadLetterTargetArn": f"{arn}poison.dlq", "maxReceiveCount": 1})
    url = sqs_admin.create_queue(QueueName="poison", Attributes={"RedrivePolicy": policy})["QueueUrl"]
    dlq_url = sqs_admin.create_queue(QueueName="poison.dlq")["QueueUrl"]
    assert dlq_url in sqs_admin.list_queues(QueueNamePrefix="poison")["QueueUrls"]
    assert sqs.list_dead_letter_source_queues(QueueUrl=dlq_url)["queueUrls"] == [url]
    sqs.send_message(QueueUrl=url, MessageBody="bad", MessageAttributes={"k": ATTRIBUTES["count"]})
    sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)
    assert "Messages" not in sqs.receive_message(QueueUrl=url)
    counts = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"])
    assert counts["Attributes"] == {"ApproximateNumberOfMessages": "1"}
    [dead] = sqs.receive_message(QueueUrl=dlq_url, MessageAttributeNames=["All"], AttributeNames=["All"])["Messages"]
    assert dead["Body"] == "bad" and dead["Attributes"]["DeadLetterQueueSourceArn"] == f"{arn}poison"
    task = sqs.start_message_move_task(SourceArn=f"{arn}poison.dlq", DestinationArn=f"{arn}poison")
    assert task["TaskHandle"] and sqs.list_message_move_tasks(SourceArn=f"{arn}poison.dlq")["Results"] == []
    [back] = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
    assert back["Body"] == "bad" and back["MessageAttributes"] == {"k": ATTRIBUTES["count"]}
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=back["ReceiptHandle"], VisibilityTimeout=0)
    sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)
    [dead] = sqs.receive_message(QueueUrl=dlq_url)["Messages"]
    sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=dead["ReceiptHandle"])
    assert "Messages" not in sqs.receive_message(QueueUrl=dlq_url)
    with pytest.raises(sqs.exceptions.ResourceNotFoundException):
        sqs.cancel_message_move_task(TaskHandle=task["TaskHandle"])
    with pytest.raises(sqs.exceptions.ClientError):
        sqs.start_message_move_task(SourceArn=f"{arn}poison")


def test_the_administration_endpoint_serves_no_clients_messages(sqs_admin: Any, sqs: Any) -> None:
    url = sqs_admin.create_queue(QueueName="administered")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="for default")
    refused = [
        lambda: sqs_admin.send_message(QueueUrl=url, MessageBody="x"),
        lambda: sqs_admin.receive_message(QueueUrl=url),
        lambda: sqs_admin.purge_queue(QueueUrl=url),
        lambda: sqs_admin.start_message_move_task(SourceArn="arn:aws:sqs:us-east-1:000000000000:administered.dlq"),
    ]
    for call in refused:
        with pytest.raises(sqs_admin.exceptions.ClientError) as caught:
            call()
        assert caught.value.response["Error"]["Code"] == "AccessDenied"
    counts = sqs_admin.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    assert counts["Attributes"] == {"ApproximateNumberOfMessages": "1"}, "summed over the queue's clients"
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=url)["Messages"]] == ["for default"]


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"MessageSystemAttributes": {"SenderId": {"DataType": "String", "StringValue": "x"}}}, "unknown name"),
        ({"MessageSystemAttributes": {"AWSTraceHeader": {"DataType": "Number", "StringValue": "1"}}}, "not String"),
        ({"MessageGroupId": "g" * 129}, "group id over 128 characters"),
        ({"MessageGroupId": "with space"}, "group id with a space"),
    ],
)
def test_sends_sqs_refuses_are_refused_on_a_standard_queue(sqs_admin: Any, sqs: Any, extra: dict, reason: str) -> None:
    url = sqs_admin.create_queue(QueueName="standard-refusing")["QueueUrl"]
    with pytest.raises(sqs.exceptions.ClientError) as refused:
        sqs.send_message(QueueUrl=url, MessageBody="x", **extra)
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValue", reason
    answer = sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "e", "MessageBody": "x", **extra}])
    assert [failed["Code"] for failed in answer["Failed"]] == ["InvalidParameterValue"], reason
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_a_trace_header_and_a_fair_queue_group_id_are_accepted_on_a_standard_queue(sqs_admin: Any, sqs: Any) -> None:
    url = sqs_admin.create_queue(QueueName="standard-traced")["QueueUrl"]
    trace = {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-5759e988-bd862e3fe1be46a994272793"}}
    sqs.send_message(QueueUrl=url, MessageBody="x", MessageSystemAttributes=trace, MessageGroupId="g" * 128)
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=url)["Messages"]] == ["x"]


def test_binary_digest_uses_raw_bytes(sqs_admin: Any, sqs: Any) -> None:
    url = sqs_admin.create_queue(QueueName="binary")["QueueUrl"]
    raw = bytes(range(256))
    attributes = {"raw": {"DataType": "Binary", "BinaryValue": raw}}
    sent = sqs.send_message(QueueUrl=url, MessageBody="b", MessageAttributes=attributes)
    assert sent["MD5OfMessageAttributes"] == moto_md5(attributes)
    [message] = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["raw"])["Messages"]
    assert message["MessageAttributes"]["raw"]["BinaryValue"] == raw
    assert base64.b64encode(raw)  # botocore decoded the base64 blob into the raw bytes compared above


def test_system_attributes_and_counts_say_who_sent_when_and_what_waits(sqs_admin: Any, sqs: Any) -> None:
    url = sqs_admin.create_queue(QueueName="system-attributes")["QueueUrl"]
    before = int(time.time() * 1000)
    sqs.send_message(QueueUrl=url, MessageBody="now")
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=600)
    counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (
        counts["ApproximateNumberOfMessages"],
        counts["ApproximateNumberOfMessagesNotVisible"],
        counts["ApproximateNumberOfMessagesDelayed"],
    ) == ("1", "0", "1")
    # ReceiveRequestAttemptId is accepted (SQS uses it on FIFO queues only) and does not change the answer.
    [first] = sqs.receive_message(
        QueueUrl=url, MessageSystemAttributeNames=["All"], ReceiveRequestAttemptId="attempt-1", VisibilityTimeout=0
    )["Messages"]
    received = int(time.time() * 1000)
    attributes = first["Attributes"]
    assert attributes["SenderId"] == url.split("/")[-2] == "000000000000"
    assert before <= int(attributes["SentTimestamp"]) <= received
    assert int(attributes["SentTimestamp"]) <= int(attributes["ApproximateFirstReceiveTimestamp"]) <= received
    assert attributes["ApproximateReceiveCount"] == "1"
    [second] = sqs.receive_message(QueueUrl=url, AttributeNames=["ApproximateFirstReceiveTimestamp", "SenderId"])[
        "Messages"
    ]
    # The first receive's time stays; only the names asked for are answered.
    assert second["Attributes"] == {
        "ApproximateFirstReceiveTimestamp": attributes["ApproximateFirstReceiveTimestamp"],
        "SenderId": "000000000000",
    }
    counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (counts["ApproximateNumberOfMessages"], counts["ApproximateNumberOfMessagesNotVisible"]) == ("0", "1")
    with pytest.raises(sqs.exceptions.ClientError) as refused:
        sqs.receive_message(QueueUrl=url, ReceiveRequestAttemptId="x" * 129)
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_large_bodies_offloaded_to_the_bucket_and_extended_client_pointers_come_back_as_sent(
    sqs_admin: Any, sqs: Any, server: LocalServer
) -> None:
    """The local server offloads to its embedded S3: what SQS's clients see is the body they sent, its MD5 the
    original's; a body SQS's Extended Client already offloaded passes through with its typed size attribute."""
    url = sqs_admin.create_queue(QueueName="large-bodies")["QueueUrl"]
    chatty = json.dumps([{"event": "order.placed", "id": i, "note": "é✓"} for i in range(6000)])
    noisy = base64.b64encode(hashlib.sha512(b"seed").digest() * 4000).decode()
    pointer = json.dumps(
        ["software.amazon.payloadoffloading.PayloadS3Pointer", {"s3BucketName": "theirs", "s3Key": "k/1"}]
    )
    size = {"ExtendedPayloadSize": {"DataType": "Number", "StringValue": "2000000"}}
    sent = {
        body: sqs.send_message(
            QueueUrl=url, MessageBody=body, **({"MessageAttributes": size} if body == pointer else {})
        )
        for body in (chatty, noisy, pointer)
    }
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"])["Messages"]
    assert sorted(message["Body"] for message in got) == sorted(sent)
    for message in got:
        assert message["MD5OfBody"] == hashlib.md5(message["Body"].encode()).hexdigest()
        assert message["MD5OfBody"] == sent[message["Body"]]["MD5OfMessageBody"]
    [extended] = [message for message in got if message["Body"] == pointer]
    assert extended["MessageAttributes"] == size
    assert len(chatty.encode()) > 300 * 1024 and len(noisy) > 300 * 1024
    s3 = boto3.client("s3", endpoint_url=server.dynamodb_endpoint, **CREDENTIALS)
    stored = s3.list_objects_v2(Bucket=LOCAL_BUCKET, Prefix="large-bodies/").get("KeyCount", 0)
    # The chatty body compresses into its item; the incompressible one is offloaded; the pointer is an item's body.
    assert stored == 1
