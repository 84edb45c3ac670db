"""`dq local --consumer`: Powertools consumers imported from the working directory get what is sent over HTTP
as SQS events; failures come back, poison goes to the DLQ, FIFO groups stay in order."""

from __future__ import annotations

import importlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dq import local_server
from dq.local_server import LocalServer
from tests.integration.test_local_server import call

CONSUMERS = Path(__file__).resolve().parents[1] / "powertools_consumers.py"


@pytest.fixture(scope="module")
def pushing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalServer, object]]:
    workdir = tmp_path_factory.mktemp("app")
    (workdir / "shop_consumers.py").write_text(CONSUMERS.read_text())
    before, path = Path.cwd(), list(sys.path)
    try:
        os.chdir(workdir)
        options = [
            "orders/tenant-a=shop_consumers:lambda_handler",
            "orders.fifo/tenant-a=shop_consumers:fifo_handler",
        ]
        with LocalServer(port=0, table="push", sweep_interval=0.5, log=io.StringIO(), consumers=options) as server:
            yield server, importlib.import_module("shop_consumers")
    finally:
        os.chdir(before)
        sys.path[:] = path
        sys.modules.pop("shop_consumers", None)


def _eventually(condition: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_sent_messages_reach_the_function_failures_come_back_and_poison_goes_to_the_dlq(pushing) -> None:
    server, consumers = pushing
    assert call(server, "PUT", "/queues/orders", {"max_receive_count": 2})[0] == 201
    sent = {"messages": [{"body": "ok"}, {"body": "flaky"}, {"body": "fail-poison"}]}
    assert call(server, "POST", "/queues/orders/clients/tenant-a/messages", sent)[0] == 200

    def dlq() -> list[str]:
        return [m["body"] for m in call(server, "GET", "/queues/orders/clients/tenant-a/dlq")[1]["messages"]]

    _eventually(lambda: ("flaky", 2) in consumers.HANDLED and dlq() == ["fail-poison"])
    handled = [body for body, _ in consumers.HANDLED]
    assert handled.count("ok") == 1 and handled.count("fail-poison") == 2
    stats = call(server, "GET", "/queues/orders/clients/tenant-a/stats")[1]
    assert (stats["visible"], stats["in_flight"], stats["delayed"], stats["dlq"]) == (0, 0, 0, 1)


def test_a_fifo_consumer_keeps_each_group_in_order_across_a_failure(pushing) -> None:
    server, consumers = pushing
    assert call(server, "PUT", "/queues/orders.fifo", {"fifo": True, "max_receive_count": 5})[0] == 201
    bodies = ["g1", "flaky-g2", "g3"]
    entries = [{"body": body, "group_id": "g", "dedup_id": body} for body in bodies]
    assert call(server, "POST", "/queues/orders.fifo/clients/tenant-a/messages", {"messages": entries})[0] == 200
    _eventually(lambda: ("g3", 1) in consumers.HANDLED or ("g3", 2) in consumers.HANDLED)
    done = [body for body, count in consumers.HANDLED if body in bodies and not (body == "flaky-g2" and count == 1)]
    assert done == bodies


def test_a_consumer_that_cannot_be_imported_stops_the_start() -> None:
    with pytest.raises(local_server.LocalServerError, match="cannot import"):
        LocalServer(port=0, consumers=["q/c=no_such_module_here:handler"]).start()
    with pytest.raises(local_server.LocalServerError, match="QUEUE/CLIENT"):
        LocalServer(port=0, consumers=["just-a-queue"]).start()


def test_the_dq_local_consumer_option_pushes_to_a_function_in_the_working_directory(pushing, tmp_path: Path) -> None:
    """`dq local --consumer` as a user types it, in a process of its own on the first server's DynamoDB."""
    server, _ = pushing
    (tmp_path / "probe_consumer.py").write_text(
        "import json\n"
        "def handler(event, context):\n"
        "    with open('handled.jsonl', 'a') as out:\n"
        "        for record in event['Records']:\n"
        "            out.write(json.dumps([record['body'], context.function_name]) + '\\n')\n"
        "    return {'batchItemFailures': []}\n"
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    repo = Path(__file__).resolve().parents[2]
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo / "layers/queue_core/python"), str(repo)])}
    command = [sys.executable, "-c", "from dq.cli import main; main()", "local", "--port", str(port)]
    command += ["--dynamodb-endpoint", server.dynamodb_endpoint, "--table", "option-push", "--sweep-interval", "0"]
    command += ["--consumer", "events/probe=probe_consumer:handler"]
    process = subprocess.Popen(command, cwd=tmp_path, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout is not None and f"127.0.0.1:{port}".encode() in process.stdout.readline()
        base = f"http://127.0.0.1:{port}"
        for method, path, body in (
            ("PUT", "/queues/events", {}),
            ("POST", "/queues/events/clients/probe/messages", {"messages": [{"body": "one"}, {"body": "two"}]}),
        ):
            request = urllib.request.Request(
                base + path, data=json.dumps(body).encode(), method=method, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                assert response.status in (200, 201)
        handled = tmp_path / "handled.jsonl"

        def lines() -> list[list[str]]:
            return [json.loads(line) for line in handled.read_text().splitlines()] if handled.exists() else []

        _eventually(lambda: len(lines()) >= 2)
        assert sorted(body for body, _ in lines()) == ["one", "two"]
        assert all(name for _, name in lines())
        with urllib.request.urlopen(f"{base}/queues/events/clients/probe/stats", timeout=30) as response:
            stats = json.loads(response.read())
        assert (stats["visible"], stats["in_flight"]) == (0, 0)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def test_a_batch_whose_every_record_failed_logs_each_records_error(caplog: pytest.LogCaptureFixture) -> None:
    """Powertools raises `BatchProcessingError` when every record failed, saying the individual errors are "logged
    separately below": the local push log shows them, as Lambda's log would."""
    from dq.consumers import in_process_invoke
    from tests import powertools_consumers

    record = {
        "messageId": "m-1",
        "receiptHandle": "h-1",
        "body": "fail-always",
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1",
            "SenderId": "000000000000",
            "ApproximateFirstReceiveTimestamp": "1",
        },
        "messageAttributes": {},
        "md5OfBody": "0" * 32,
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:orders",
        "awsRegion": "us-east-1",
    }
    invoke = in_process_invoke(powertools_consumers.lambda_handler, "shop", timeout_seconds=10)
    with caplog.at_level("WARNING", logger="dq.consumers"):
        answer = invoke({"Records": [record]})
    assert answer.function_error == "BatchProcessingError"
    logged = "\n".join(entry.getMessage() for entry in caplog.records)
    assert "All records failed processing" in logged
    assert "ValueError: cannot process m-1" in logged, logged
