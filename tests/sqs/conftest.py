"""SQS's protocol driven by real clients against the local server (the deployed handlers over HTTP)."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config

from dq.local_server import LocalServer

CREDENTIALS = {"aws_access_key_id": "key", "aws_secret_access_key": "secret", "region_name": "us-east-1"}


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer(port=0, table="sqs-protocol", sweep_interval=0, log=io.StringIO()) as running:
        yield running


@pytest.fixture(scope="module")
def client_for(server: LocalServer) -> Callable[..., Any]:
    """A stock boto3 SQS client on the local server: the root endpoint (client `default`) or a client's."""

    def build(client: str | None = None, **config: Any) -> Any:
        endpoint = server.url if client is None else f"{server.url}/sqs/{client}"
        retries = Config(retries={"max_attempts": 1}, read_timeout=30, **config)
        return boto3.client("sqs", endpoint_url=endpoint, config=retries, **CREDENTIALS)

    return build


@pytest.fixture(scope="module")
def sqs(client_for: Callable[..., Any]) -> Any:
    return client_for()


@pytest.fixture(scope="module")
def sqs_admin(server: LocalServer) -> Any:
    """A stock boto3 SQS client on the administration endpoint: it creates, changes, tags and deletes queues and
    answers the root endpoint's queue URLs."""
    retries = Config(retries={"max_attempts": 1}, read_timeout=30)
    return boto3.client("sqs", endpoint_url=f"{server.url}/sqs-admin", config=retries, **CREDENTIALS)
