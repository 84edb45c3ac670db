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
        store._call("put_item", TableName="t", Item={"pk": {"S": "M#q#c#0#3"}})
    assert sent and store.throttles == len(sent)


def test_a_refusal_given_before_the_request_is_sent_counts_once(store: Store) -> None:
    """A stub's answer (`before-call`) skips the SDK's retry loop: the error raised is the only sign of it."""

    def stub(**_: Any) -> tuple[Any, dict[str, Any]]:
        error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "past the key's limit"}}
        return AWSResponse("https://dynamodb", 400, {}, _Body(b"")), {**error, "ResponseMetadata": {}}

    store.client.meta.events.register("before-call.dynamodb.PutItem", stub)
    with pytest.raises(Throttled):
        store._call("put_item", TableName="t", Item={"pk": {"S": "M#q#c#0#3"}})
    assert store.throttles == 1


def test_each_refused_attempt_on_an_unsharded_partition_counts_apart(store: Store) -> None:
    """The same retries of a write to a FIFO group's messages (`G#…`, one partition per group at any shard count):
    counted apart, never as a key's; the next call, on a shard's key, counts as a key's again."""
    sent: list[int] = []
    store.client.meta.events.register("before-send.dynamodb.PutItem", _refuse(sent))
    with pytest.raises(Throttled):
        store._call("put_item", TableName="t", Item={"pk": {"S": "G#q#c#0#group"}})
    assert sent and (store.unsharded_throttles, store.throttles) == (len(sent), 0)
    with pytest.raises(Throttled):
        store._call("put_item", TableName="t", Item={"pk": {"S": "F#q#c#0#3"}})
    assert (store.unsharded_throttles, store.throttles) == (len(sent) / 2, len(sent) / 2)


def _answers(*parsed: dict[str, Any]) -> Any:
    """A `before-call` stub giving `parsed` answers in turn (no request reaches moto)."""
    left = list(parsed)

    def answer(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        given = left.pop(0)
        return AWSResponse("https://dynamodb", 400 if "Error" in given else 200, {}, _Body(b"")), {
            **given,
            "ResponseMetadata": {},
        }

    return answer


def _deletes(pk: str) -> list[dict[str, Any]]:
    return [{"DeleteRequest": {"Key": {"pk": {"S": pk}, "sk": {"S": f"{n:020d}"}}}} for n in range(3)]


@pytest.mark.parametrize(("pk", "counted"), [("G#q#c#0#group", (1, 0)), ("M#q#c#0#3", (0, 1))])
def test_items_of_a_batch_left_unprocessed_count_where_they_are(
    store: Store, pk: str, counted: tuple[int, int]
) -> None:
    """A batch's items left unprocessed: on a group's own partition, apart; on a shard's key, as a key's."""
    left = _deletes(pk)
    store.client.meta.events.register(
        "before-call.dynamodb.BatchWriteItem", _answers({"UnprocessedItems": {"t": left}}, {"UnprocessedItems": {}})
    )
    assert store.batch_write(deletes=[{"pk": pk, "sk": f"{n:020d}"} for n in range(3)]) == []
    assert (store.unsharded_throttles, store.throttles) == counted


@pytest.mark.parametrize(("pk", "counted"), [("G#q#c#0#group", (1, 0)), ("M#q#c#0#3", (0, 1))])
def test_a_batch_refused_whole_counts_where_its_items_are(store: Store, pk: str, counted: tuple[int, int]) -> None:
    refused = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "past the key's limit"}}
    store.client.meta.events.register("before-call.dynamodb.BatchWriteItem", _answers(refused))
    with pytest.raises(Throttled):
        store._call("batch_write_item", RequestItems={"t": _deletes(pk)})
    assert (store.unsharded_throttles, store.throttles) == counted
