"""Handler tests: each test gets a fresh moto DynamoDB with the table, and a fresh shared client."""

from __future__ import annotations

import io
import json
import warnings
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
from moto import mock_aws
from queue_api.core_client import queue_client, reset_queue_client
from queue_core import QueueClient

from dq.embedded_dynamodb import serialize_moto_requests
from tests.events import FakeLambdaContext, HttpAnswer, api_event, http_answer

TABLE = "queue-handlers"


@pytest.fixture(autouse=True)
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TABLE_NAME", TABLE)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    serialize_moto_requests()
    # Reads publish no metric; Powertools warns about it, and pytest resets the filter the layer installs.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    with mock_aws():
        reset_queue_client()
        queue_client().create_table()
        yield
    reset_queue_client()


@pytest.fixture
def core() -> QueueClient:
    """The handlers' own client, for arranging and checking state through the core's public API."""
    return queue_client()


@pytest.fixture
def logged(monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[dict[str, Any]]]:
    """The JSON lines the functions' logger writes from now on."""
    from queue_api.observability import logger

    buffer = io.StringIO()
    monkeypatch.setattr(logger.registered_handler, "stream", buffer)
    return lambda: [json.loads(line) for line in buffer.getvalue().splitlines()]


def call(handler: ModuleType, method: str, path: str, body: Any = None, **options: Any) -> HttpAnswer:
    """`method path` through API Gateway to `handler`."""
    return http_answer(handler.lambda_handler(api_event(method, path, body, **options), FakeLambdaContext()))


def invoke(handler: ModuleType, event: Any, context: FakeLambdaContext | None = None) -> Any:
    """A direct invoke, with its answer passed through JSON as the Lambda service would."""
    return json.loads(json.dumps(handler.lambda_handler(event, context or FakeLambdaContext())))


def emf_records(output: str) -> list[dict[str, Any]]:
    """The CloudWatch EMF records among a function's output lines."""
    records = []
    for line in output.splitlines():
        if line.startswith('{"_aws"'):
            records.append(json.loads(line))
    return records


def metric_values(output: str, name: str) -> list[float]:
    values: list[float] = []
    for record in emf_records(output):
        if name in record:
            value = record[name]
            values.extend(value if isinstance(value, list) else [value])
    return values
