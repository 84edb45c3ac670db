"""The `dq` command line on both of its targets: the local server over HTTP, and a table through the core on
moto in this process. Each module gets one of each, in turn (a module-scoped parametrized fixture), so the two
never run at once: moto's in-process mock and the local server's embedded moto share moto's state."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws
from queue_core import QueueClient
from typer.testing import CliRunner, Result

from dq.cli import app
from dq.local_server import LocalServer

TABLE = "cli"
# The environment a user may have set must not leak into the tests' command lines.
CLEAN_ENV: dict[str, str | None] = {
    "DQ_ENDPOINT": None,
    "DQ_TABLE": None,
    "DQ_QUEUE": None,
    "DQ_CLIENT": None,
    "AWS_ENDPOINT_URL_DYNAMODB": None,
}


@dataclass
class Cli:
    """`dq` on one target: `run` returns the result, `json` the parsed answer of a command that succeeds."""

    kind: str
    target_args: list[str]
    # The local server's DynamoDB, for the core on the same table (HTTP only).
    dynamodb_endpoint: str | None = None

    def run(self, *args: str, input: str | None = None, env: dict[str, str | None] | None = None) -> Result:
        return CliRunner().invoke(app, [*self.target_args, *args], input=input, env={**CLEAN_ENV, **(env or {})})

    def json(self, *args: str, input: str | None = None) -> Any:
        result = self.run(*args, "--json", input=input)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def lines(self, *args: str, input: str | None = None) -> list[Any]:
        result = self.run(*args, "--json", input=input)
        assert result.exit_code == 0, result.output
        return [json.loads(line) for line in result.stdout.splitlines()]

    def queue(self, prefix: str = "q", **settings: Any) -> str:
        """A fresh queue, so tests sharing a target never see each other's messages."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        if prefix.endswith(".fifo"):
            name = f"{prefix.removesuffix('.fifo')}-{uuid.uuid4().hex[:8]}.fifo"
        options = [f"--{key.replace('_', '-')}={value}" for key, value in settings.items()]
        result = self.run("queues", "create", name, *options)
        assert result.exit_code == 0, result.output
        return name


def _http() -> Iterator[Cli]:
    with LocalServer(port=0, table=TABLE, sweep_interval=0, log=io.StringIO()) as server:
        yield Cli("http", ["--endpoint", server.url], server.dynamodb_endpoint)


def _core() -> Iterator[Cli]:
    from dq.embedded_dynamodb import fast_queries, fast_transactions, serialize_moto_requests

    serialize_moto_requests()
    fast_queries()
    fast_transactions()
    with mock_aws():
        QueueClient(TABLE, dynamodb=boto3.client("dynamodb", region_name="us-east-1")).create_table()
        yield Cli("core", ["--table", TABLE])


@pytest.fixture(scope="module", params=["http", "core"])
def cli(request: pytest.FixtureRequest) -> Iterator[Cli]:
    yield from _http() if request.param == "http" else _core()
