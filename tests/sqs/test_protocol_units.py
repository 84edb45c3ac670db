"""The adapter's own pieces, without a server: errors as botocore reads them, endpoints and queue URLs behind
API Gateway's stage."""

from __future__ import annotations

import json

import pytest
from botocore.parsers import create_parser
from queue_core import Throttled
from sqs_api.endpoints import Endpoint
from sqs_api.errors import SqsError, from_core
from sqs_api.gateway import endpoint_of

from tests.events import api_event


def parsed_error(error: SqsError) -> dict:
    status, headers, body = error.answer()
    response = {"status_code": status, "headers": headers, "body": body}
    return create_parser("json").parse(response, None)["Error"]


def test_our_throttling_is_sqs_request_throttled_with_the_query_error_header() -> None:
    error = from_core(Throttled("DynamoDB kept throttling"))
    assert (error.code, error.status) == ("RequestThrottled", 400)
    assert parsed_error(error) == {
        "Code": "RequestThrottled",
        "Message": "DynamoDB kept throttling",
        "QueryErrorCode": "RequestThrottled",
        "Type": "Sender",
    }


def test_a_modeled_error_keeps_sqs_legacy_code_and_its_shape_name() -> None:
    error = parsed_error(SqsError("QueueDoesNotExist", "gone"))
    assert (error["Code"], error["QueryErrorCode"]) == ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
    status, _, body = SqsError("InternalFailure", "x", 500).answer()
    assert status == 500 and json.loads(body)["__type"] == "com.amazonaws.sqs#InternalFailure"


def test_the_endpoint_is_rebuilt_from_api_gateways_event_with_its_stage() -> None:
    root = endpoint_of(api_event("POST", "/"), {"host": "abc.execute-api.us-east-1.amazonaws.com"})
    assert (root.url, root.client, root.account) == (
        "https://abc.execute-api.us-east-1.amazonaws.com/prod",
        "default",
        "123456789012",
    )
    event = api_event("POST", "/sqs/tenant-a")
    event["pathParameters"] = {"client": "tenant-a"}
    tenant = endpoint_of(event, {"host": "abc.execute-api.us-east-1.amazonaws.com"})
    assert tenant.url == "https://abc.execute-api.us-east-1.amazonaws.com/prod/sqs/tenant-a"
    assert tenant.queue_of_url(tenant.queue_url("jobs.fifo")) == "jobs.fifo"


@pytest.mark.parametrize(
    "url",
    [
        "https://h/prod/123456789012/q",
        "https://h/prod/sqs/tenant-b/123456789012/q",
        "https://h/prod/sqs/tenant-a/000000000000/q",
        "https://h/q",
        "",
        None,
    ],
)
def test_queue_urls_of_another_client_or_account_are_invalid_addresses(url: object) -> None:
    endpoint = Endpoint("https://h/prod/sqs/tenant-a", client="tenant-a", account="123456789012")
    with pytest.raises(SqsError) as refused:
        endpoint.queue_of_url(url)
    assert refused.value.code == "InvalidAddress"
