"""Large bodies through the functions: what API Gateway and Lambda can carry, and offloaded bodies end to end."""

from __future__ import annotations

import json

import boto3
import pytest
from queue_api.core_client import queue_client, reset_queue_client
from queue_api.payloads import API_GATEWAY_PAYLOAD_BYTES, LAMBDA_SYNC_PAYLOAD_BYTES
from queue_core import MessageTooLarge, QueueClient, limits

from bench.messages import random_bytes
from functions.dlq_redriver import handler as dlq_redriver
from functions.poller import handler as poller
from functions.producer import handler as producer
from functions.sqs import handler as sqs_function
from tests.events import FakeLambdaContext, api_event
from tests.functions.conftest import call, invoke

BUCKET = "handler-bodies"
BASE = "/queues/big/clients/c1"


@pytest.fixture
def core(monkeypatch: pytest.MonkeyPatch) -> QueueClient:
    """The functions' client with the stack's bucket of offloaded bodies."""
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
    monkeypatch.setenv("QUEUE_BUCKET", BUCKET)
    reset_queue_client()
    client = queue_client()
    client.create_queue("big", visibility_timeout=30, max_receive_count=0)
    return client


def test_the_largest_body_goes_through_http_and_invoke_both_ways(core: QueueClient) -> None:
    body = random_bytes(limits.MAX_BODY_BYTES)
    request = {"body": body}
    assert len(json.dumps(request)) < API_GATEWAY_PAYLOAD_BYTES
    assert call(producer, "POST", f"{BASE}/messages", request).status == 200
    event = {"action": "send", "queue": "big", "client": "c1", **request}
    assert len(json.dumps(event)) < LAMBDA_SYNC_PAYLOAD_BYTES
    assert "message_id" in invoke(producer, event)
    answer = call(poller, "POST", f"{BASE}/receive", {"max_messages": 1})
    assert [message["body"] for message in answer.body["messages"]] == [body]
    received = invoke(poller, {"action": "receive", "queue": "big", "client": "c1", "max_messages": 10})
    assert [message["body"] for message in received["messages"]] == [body]


def test_the_worst_escaping_body_with_attributes_as_bad_fits_one_lambda_answer_and_worse_is_a_413(
    core: QueueClient,
) -> None:
    """Control characters escape to 7 bytes each in an answer through API Gateway. The most of them a body may
    hold, with the most attributes of them, comes back within Lambda's 6 MB on both paths; one more is refused."""
    sub_queue = core.queue("big", "c1")
    worst = "\x01" * ((limits.MAX_ANSWERED_BODY_BYTES - 2) // 7 - 2)
    with pytest.raises(MessageTooLarge, match="control characters"):
        sub_queue.send(worst + "\x01" * 2)
    assert sub_queue.stats().visible == 0
    attributes = {f"a{i}": "\x01" * 6500 for i in range(10)}
    sub_queue.send(worst, attributes=attributes)
    proxied = poller.lambda_handler(api_event("POST", f"{BASE}/receive", {"max_messages": 10}), FakeLambdaContext())
    assert len(json.dumps(proxied)) < LAMBDA_SYNC_PAYLOAD_BYTES
    [message] = json.loads(proxied["body"])["messages"]
    assert message["body"] == worst and message["attributes"] == attributes
    sub_queue.change_visibility(message["receipt_handle"], 0)
    invoked = poller.lambda_handler({"action": "receive", "queue": "big", "client": "c1"}, FakeLambdaContext())
    assert len(json.dumps(invoked)) < LAMBDA_SYNC_PAYLOAD_BYTES and invoked["messages"][0]["body"] == worst


def test_a_receive_answers_only_what_lambda_can_return_and_gives_the_rest_back(core: QueueClient) -> None:
    """Ten bodies of 256 KiB that JSON escapes six bytes a character (\\u00e9): 7.5 MB of answer. The answer
    stays within Lambda's 6 MB; the messages left out are visible again at once and come with the next receive."""
    body = "é" * (128 * 1024)
    sub_queue = core.queue("big", "c1")
    sub_queue.send_batch([{"body": body} for _ in range(10)])
    event = {"action": "receive", "queue": "big", "client": "c1", "max_messages": 10}
    first = invoke(poller, event)
    assert len(json.dumps(first)) < LAMBDA_SYNC_PAYLOAD_BYTES
    kept = len(first["messages"])
    assert 1 <= kept < 10 and all(message["body"] == body for message in first["messages"])
    assert sub_queue.stats().visible == 10 - kept
    second = invoke(poller, event)
    assert len(second["messages"]) == 10 - kept


def test_a_queue_wide_receive_answers_only_what_lambda_can_return(core: QueueClient) -> None:
    body = "é" * (128 * 1024)
    for client_id in ("c1", "c2"):
        core.queue("big", client_id).send_batch([{"body": body} for _ in range(5)])
    event = {"action": "receive_any", "queue": "big", "max_messages": 10}
    first = invoke(poller, event)
    assert len(json.dumps(first)) < LAMBDA_SYNC_PAYLOAD_BYTES
    kept = len(first["messages"])
    assert 1 <= kept < 10 and all(message["body"] == body for message in first["messages"])
    assert core.queue_stats("big").visible == 10 - kept
    second = call(poller, "POST", "/queues/big/receive", {"max_messages": 10})
    assert len(second.body["messages"]) == 10 - kept


def test_a_body_gone_from_the_bucket_is_a_410_and_the_message_goes_to_the_dlq(core: QueueClient) -> None:
    sub_queue = core.queue("big", "c1")
    sent = sub_queue.send(random_bytes(64 * 1024))
    s3 = boto3.client("s3", region_name="us-east-1")
    [entry] = s3.list_objects_v2(Bucket=BUCKET)["Contents"]
    s3.delete_object(Bucket=BUCKET, Key=entry["Key"])
    answer = call(poller, "GET", f"{BASE}/messages/{sent.message_id}")
    assert answer.status == 410 and answer.body["error"]["code"] == "MessageBodyMissing"
    assert call(poller, "POST", f"{BASE}/receive").body == {"messages": []}
    assert sub_queue.stats().dlq == 1


def test_an_sqs_receive_answers_only_what_lambda_can_return_and_gives_the_rest_back(core: QueueClient) -> None:
    """The SQS function's answer crosses Lambda too: the same 7.5 MB of claimed bodies is cut under 6 MB, and the
    messages left out come with the next ReceiveMessage."""
    body = "é" * (128 * 1024)
    core.queue("big", "default").send_batch([{"body": body} for _ in range(10)])
    url = "https://abc123.execute-api.us-east-1.amazonaws.com/prod/123456789012/big"
    headers = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ReceiveMessage"}
    event = api_event("POST", "/", raw_body=json.dumps({"QueueUrl": url, "MaxNumberOfMessages": 10}), headers=headers)
    first = invoke(sqs_function, event)
    assert first["statusCode"] == 200 and len(json.dumps(first)) < LAMBDA_SYNC_PAYLOAD_BYTES
    kept = json.loads(first["body"])["Messages"]
    assert 1 <= len(kept) < 10 and all(message["Body"] == body for message in kept)
    second = json.loads(invoke(sqs_function, event)["body"])["Messages"]
    assert len(second) == 10 - len(kept)


def test_a_receive_over_http_answers_only_what_lambda_can_return(core: QueueClient) -> None:
    """Over API Gateway the answer's JSON is a string inside the proxy answer's JSON: escaped twice."""
    body = "é" * (128 * 1024)
    core.queue("big", "c1").send_batch([{"body": body} for _ in range(10)])
    event = api_event("POST", f"{BASE}/receive", {"max_messages": 10})
    first = invoke(poller, event)
    assert first["statusCode"] == 200 and len(json.dumps(first)) < LAMBDA_SYNC_PAYLOAD_BYTES
    kept = json.loads(first["body"])["messages"]
    assert 1 <= len(kept) < 10
    assert len(json.loads(invoke(poller, event)["body"])["messages"]) == 10 - len(kept)


def test_a_peek_and_a_dlq_listing_show_only_what_lambda_can_return(core: QueueClient) -> None:
    """Ten bodies of 256 KiB that JSON escapes six bytes a character: a look at all of them would be 7.5 MB of
    answer. Both looks show what one answer carries, oldest first, and change nothing."""
    body = "é" * (128 * 1024)
    sub_queue = core.queue("big", "c1")
    sub_queue.send_batch([{"body": body} for _ in range(10)])
    peeked = call(poller, "GET", f"{BASE}/messages", query={"limit": "10"})
    assert peeked.status == 200 and len(json.dumps(peeked.body)) < LAMBDA_SYNC_PAYLOAD_BYTES
    assert 1 <= len(peeked.body["messages"]) < 10 and sub_queue.stats().visible == 10
    for message in sub_queue.peek(10):
        sub_queue.move_to_dlq(message.message_id)
    listed = invoke(dlq_redriver, {"action": "list_dlq", "queue": "big", "client": "c1", "limit": 10})
    assert len(json.dumps(listed)) < LAMBDA_SYNC_PAYLOAD_BYTES
    assert 1 <= len(listed["messages"]) < 10 and sub_queue.stats().dlq == 10
