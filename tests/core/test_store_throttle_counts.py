"""A throttle is counted once per refused attempt, however the refusal reaches the store: through the SDK's retry
loop (each attempt's answer passes the `needs-retry` handler, the last one is then raised) or before any request
is sent (a stub's answer, which no retry handler sees)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from moto import mock_aws
from queue_core import Throttled
from queue_core.store import Store

ATTEMPTS = 2


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


@pytest.fixture
def store() -> Iterator[Store]:
    with mock_aws():
        client = boto3.client(
            "dynamodb",
            region_name="us-east-1",
            config=Config(retries={"mode": "standard", "max_attempts": ATTEMPTS}),
        )
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield Store(client, "t")


def _refuse(sent: list[int]) -> Any:
    """A `before-send` handler: DynamoDB's answer to a key past its limit, for every attempt (inside the SDK's
    retry loop, as a real answer is)."""

    def refuse(request: Any, **_: Any) -> AWSResponse:
        sent.append(1)
        body = json.dumps({"__type": "ProvisionedThroughputExceededException", "message": "past the key's limit"})
        return AWSResponse(request.url, 400, {}, _Body(body.encode()))

    return refuse


def test_each_refused_attempt_of_the_sdks_retries_counts_once(store: Store) -> None:
    """Every attempt refused, the last one raised: as many throttles as attempts, not one more for the error."""
    sent: list[int] = []
    store.client.meta.events.register("before-send.dynamodb.PutItem", _refuse(sent))
    with pytest.raises(Throttled):
        store._call("put_item", TableName="t", Item={"pk": {"S": "a"}})
    assert sent and store.throttles == len(sent)


def test_a_refusal_given_before_the_request_is_sent_counts_once(store: Store) -> None:
    """A stub's answer (`before-call`) skips the SDK's retry loop: the error raised is the only sign of it."""

    def stub(**_: Any) -> tuple[Any, dict[str, Any]]:
        error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "past the key's limit"}}
        return AWSResponse("https://dynamodb", 400, {}, _Body(b"")), {**error, "ResponseMetadata": {}}

    store.client.meta.events.register("before-call.dynamodb.PutItem", stub)
    with pytest.raises(Throttled):
        store._call("put_item", TableName="t", Item={"pk": {"S": "a"}})
    assert store.throttles == 1
