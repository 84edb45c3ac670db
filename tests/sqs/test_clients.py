"""Clients built on SQS, unchanged: the AWS CLI, a Celery 5 worker with the SQS broker, and the library's
`sqs_client` helper that signs for API Gateway."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker
from queue_core import sqs_client

from dq.local_server import LocalServer
from tests.sqs.conftest import CREDENTIALS

AWS_CLI = Path(sys.executable).with_name("aws")


def aws(server: LocalServer, *arguments: str, endpoint: str = "") -> Any:
    environment = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "key",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
    command = [str(AWS_CLI), "sqs", *arguments, "--endpoint-url", server.url + endpoint, "--output", "json"]
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def test_the_aws_cli_creates_sends_receives_and_deletes(server: LocalServer) -> None:
    url = aws(server, "create-queue", "--queue-name", "cli", endpoint="/sqs-admin")["QueueUrl"]
    assert url == f"{server.url}/000000000000/cli"
    attributes = '{"kind": {"DataType": "String", "StringValue": "cli"}}'
    sent = aws(server, "send-message", "--queue-url", url, "--message-body", "from the cli",
               "--message-attributes", attributes)  # fmt: skip
    assert sent["MD5OfMessageBody"] == hashlib.md5(b"from the cli").hexdigest()
    received = aws(server, "receive-message", "--queue-url", url, "--message-attribute-names", "All",
                   "--wait-time-seconds", "1")  # fmt: skip
    [message] = received["Messages"]
    assert (message["Body"], message["MessageAttributes"]["kind"]["StringValue"]) == ("from the cli", "cli")
    aws(server, "delete-message", "--queue-url", url, "--receipt-handle", message["ReceiptHandle"])
    sqs = sqs_client(server.url, **CREDENTIALS)
    assert "Messages" not in sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)


def test_the_helper_signs_for_execute_api(server: LocalServer) -> None:
    sqs_client(f"{server.url}/sqs-admin", **CREDENTIALS).create_queue(QueueName="signed")
    client = sqs_client(f"{server.url}/sqs/signed/", **CREDENTIALS)
    seen: list[str] = []
    client.meta.events.register("before-send.sqs", lambda request, **_: seen.append(request.headers["Authorization"]))
    client.create_queue(QueueName="signed")
    scope = seen[0].decode() if isinstance(seen[0], bytes) else seen[0]
    assert "/us-east-1/execute-api/aws4_request" in scope
    assert client.get_queue_url(QueueName="signed")["QueueUrl"].endswith("/sqs/signed/000000000000/signed")


def celery_app(server: LocalServer) -> Celery:
    app = Celery("sqs-tasks", broker=f"sqs://key:secret@127.0.0.1:{server.port}", backend="cache+memory://")
    app.conf.update(
        broker_transport_options={
            "is_secure": False,
            "region": "us-east-1",
            "wait_time_seconds": 1,
            "polling_interval": 0.1,
            "visibility_timeout": 30,
        },
        task_default_queue="celery-tasks",
        broker_connection_retry_on_startup=False,
        worker_hijack_root_logger=False,
    )
    return app


def test_a_celery_worker_runs_tasks_sent_by_a_celery_producer(server: LocalServer) -> None:
    app = celery_app(server)
    # Kombu creates its queue at start with the visibility it was given: a client's endpoint answers that call for
    # a queue that exists as asked, and the operator creates it first.
    admin = sqs_client(f"{server.url}/sqs-admin", **CREDENTIALS)
    admin.create_queue(QueueName="celery-tasks", Attributes={"VisibilityTimeout": "30"})
    attempts: dict[str, int] = {}

    @app.task(name="add")
    def add(x: int, y: int) -> int:
        return x + y

    @app.task(name="flaky", bind=True, max_retries=3, acks_late=True)
    def flaky(task: Any, key: str) -> str:
        attempts[key] = attempts.get(key, 0) + 1
        if attempts[key] < 3:
            raise task.retry(countdown=1)
        return f"{key} after {attempts[key]}"

    @app.task(name="late", acks_late=True)
    def late(value: str) -> str:
        return value.upper()

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10, loglevel="WARNING"):
        results = [add.delay(2, 3), flaky.delay("job"), late.delay("acked")]
        assert [result.get(timeout=30) for result in results] == [5, "job after 3", "ACKED"]
    assert attempts == {"job": 3}
    sqs = sqs_client(server.url, **CREDENTIALS)
    url = sqs.get_queue_url(QueueName="celery-tasks")["QueueUrl"]
    deadline = time.monotonic() + 10
    while True:
        counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        left = [counts[name] for name in ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")]
        if left == ["0", "0"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert left == ["0", "0"], "every task's message was acknowledged (deleted)"


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
