"""The dispatcher function: woken by a filtered stream batch or by the sweeper, it invokes the consumer through
the Lambda API with an SQS event, settles the batch and publishes per-consumer metrics; the sweeper wakes it for
sub-queues with visible messages. The Lambda API is botocore's Stubber on a real client: no function runs."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.parser.models import SqsModel
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from queue_api import dispatcher as dispatcher_api
from queue_core import QueueClient
from queue_core.sqs_event import payload_bytes

from functions.dispatcher import handler as dispatcher
from functions.visibility_sweeper import handler as sweeper
from infra.permissions import TABLE_ACTIONS
from tests.dynamo_calls import CallCounter
from tests.functions.conftest import invoke, metric_values

CONSUMER_ARN = "arn:aws:lambda:us-east-1:123456789012:function:orders-consumer"
DISPATCHER_ARN = "arn:aws:lambda:us-east-1:123456789012:function:dispatcher"
SPEC = {
    "queue": "orders",
    "client": "tenant-a",
    "function": CONSUMER_ARN,
    "visibility_timeout": 60,
    "timeout_seconds": 10,
}


@pytest.fixture
def lambda_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Stubber, list[dict[str, Any]]]]:
    monkeypatch.setenv("PUSH_CONSUMERS", json.dumps([SPEC]))
    monkeypatch.setenv("DISPATCHER_FUNCTION", DISPATCHER_ARN)
    dispatcher_api.consumers.cache_clear()
    client = boto3.client("lambda", region_name="us-east-1")
    sent: list[dict[str, Any]] = []
    client.meta.events.register("provide-client-params.lambda.Invoke", lambda params, **_: sent.append(params))
    monkeypatch.setattr(dispatcher_api, "lambda_client", lambda read_timeout: client)
    with Stubber(client) as stubber:
        yield stubber, sent
    dispatcher_api.consumers.cache_clear()


def _answer(stubber: Stubber, payload: dict[str, Any] | None, function_error: str | None = None) -> None:
    body = json.dumps(payload).encode()
    answer: dict[str, Any] = {"StatusCode": 200, "Payload": StreamingBody(io.BytesIO(body), len(body))}
    if function_error:
        answer["FunctionError"] = function_error
    stubber.add_response(
        "invoke", answer, {"FunctionName": CONSUMER_ARN, "InvocationType": "RequestResponse", "Payload": ANY}
    )


def _stream_event(pk: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "eventName": "INSERT",
                "eventSource": "aws:dynamodb",
                "dynamodb": {"Keys": {"pk": {"S": pk}, "sk": {"S": "1"}}},
            }
        ]
    }


def test_a_stream_insert_delivers_the_sub_queue_as_an_sqs_event(
    core: QueueClient, lambda_api, capsys: pytest.CaptureFixture[str]
) -> None:
    stubber, sent = lambda_api
    core.create_queue("orders", max_receive_count=5)
    queue = core.queue("orders", "tenant-a")
    queue.send("good")
    bad = queue.send("bad").message_id
    _answer(stubber, {"batchItemFailures": [{"itemIdentifier": bad}]})
    counter = CallCounter().attach(core.dynamodb)
    capsys.readouterr()

    answer = invoke(dispatcher, _stream_event(queue.space.message_pk(0)))

    counter.detach(core.dynamodb)
    (report,) = answer["dispatched"]
    assert (report["delivered"], report["failed"], report["released"]) == (1, 1, 1)
    event = SqsModel.model_validate(json.loads(sent[0]["Payload"]))
    assert [record.body for record in event.Records] == ["good", "bad"]
    # What is sent is what the split measured (`split_for_payload`), byte for byte.
    assert len(sent[0]["Payload"].encode()) == payload_bytes(json.loads(sent[0]["Payload"])["Records"])
    assert event.Records[0].eventSourceARN == "arn:aws:sqs:us-east-1:123456789012:orders:tenant-a"
    assert queue.stats().delayed == 1 and queue.stats().in_flight == 0
    output = capsys.readouterr().out
    assert metric_values(output, "PushDelivered") == [1] and metric_values(output, "PushFailed") == [1]
    assert metric_values(output, "PushOldestMessageAgeSeconds")
    assert {f"dynamodb:{call}" for call in counter.calls} <= set(TABLE_ACTIONS["dispatcher"])


@pytest.mark.parametrize(("max_receive_count", "moved"), [(5, 0), (1, 2)])
def test_a_function_error_releases_the_whole_batch_and_the_last_allowed_receive_sends_it_to_the_dlq(
    core: QueueClient, lambda_api, capsys: pytest.CaptureFixture[str], max_receive_count: int, moved: int
) -> None:
    stubber, _ = lambda_api
    core.create_queue("orders", max_receive_count=max_receive_count)
    queue = core.queue("orders", "tenant-a")
    queue.send_batch([{"body": "a"}, {"body": "b"}])
    _answer(stubber, {"errorMessage": "boom", "errorType": "RuntimeError"}, function_error="Unhandled")
    capsys.readouterr()

    (report,) = invoke(dispatcher, {"action": "dispatch", "queue": "orders", "client": "tenant-a"})["dispatched"]

    assert (report["delivered"], report["failed"], report["released"], report["moved_to_dlq"]) == (0, 2, 2, moved)
    assert queue.stats().in_flight == 0
    output = capsys.readouterr().out
    assert metric_values(output, "PushReleased") == [2] and metric_values(output, "PushMovedToDlq") == [moved]
    core.sweep()
    assert queue.stats().dlq == moved


def test_a_timed_out_invocation_leaves_its_batch_claimed_until_its_visibility(
    core: QueueClient, lambda_api, capsys: pytest.CaptureFixture[str]
) -> None:
    stubber, _ = lambda_api
    core.create_queue("orders", max_receive_count=5)
    queue = core.queue("orders", "tenant-a")
    sent = queue.send_batch([{"body": "a"}, {"body": "b"}])
    before = core.now_ms()
    _answer(stubber, {"errorMessage": "Task timed out", "errorType": "Sandbox.Timedout"}, function_error="Unhandled")
    capsys.readouterr()

    (report,) = invoke(dispatcher, {"action": "dispatch", "queue": "orders", "client": "tenant-a"})["dispatched"]

    assert (report["delivered"], report["failed"], report["released"], report["timed_out"]) == (0, 2, 0, 2)
    assert metric_values(capsys.readouterr().out, "PushFailed") == [2]
    # Not given back: each comes back when the claim taken for the invocation runs out, not before.
    for entry in sent.successful:
        message = queue.get(entry["message_id"])
        assert message.state == "in_flight" and message.visible_at >= before + SPEC["visibility_timeout"] * 1000


def test_an_event_for_no_consumer_does_nothing(core: QueueClient, lambda_api) -> None:
    core.create_queue("other")
    core.queue("other", "x").send("m")
    assert invoke(dispatcher, _stream_event(core.queue("other", "x").space.message_pk(0))) == {"dispatched": []}
    assert invoke(dispatcher, {"unexpected": True}) == {"dispatched": []}


def test_the_sweeper_wakes_dispatchers_of_sub_queues_with_visible_messages(core: QueueClient, lambda_api) -> None:
    stubber, sent = lambda_api
    core.create_queue("orders")
    core.queue("orders", "tenant-a").send("waiting")
    core.queue("orders", "tenant-b").send("no consumer here")
    stubber.add_response(
        "invoke", {"StatusCode": 202}, {"FunctionName": DISPATCHER_ARN, "InvocationType": "Event", "Payload": ANY}
    )

    invoke(sweeper, {"action": "sweep"})

    stubber.assert_no_pending_responses()
    assert [json.loads(params["Payload"]) for params in sent] == [
        {"action": "dispatch", "queue": "orders", "client": "tenant-a"}
    ]
