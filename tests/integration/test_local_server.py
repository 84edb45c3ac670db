"""The local server over real HTTP: the deployed handlers behind API Gateway-shaped events, on embedded moto."""

from __future__ import annotations

import http.client
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.error import HTTPError

import pytest
from queue_api import openapi
from queue_api.resolver import MAX_REQUEST_BYTES
from typer.testing import CliRunner

from dq import cli, local_server
from dq.local_server import LocalServer

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    log = io.StringIO()
    with LocalServer(port=0, table="integration", sweep_interval=0.3, log=log) as running:
        yield running


def call(server: LocalServer, method: str, path: str, body: Any = None, **options: Any) -> tuple[int, Any]:
    """One HTTP request with urllib; the answer's status and JSON body."""
    data = options.get("raw")
    if data is None and body is not None:
        data = json.dumps(body).encode()
    headers = {"Content-Type": options.get("content_type", "application/json")} if data is not None else {}
    request = urllib.request.Request(server.url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=options.get("timeout", 30)) as response:
            return response.status, json.loads(response.read() or b"null")
    except HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def test_send_receive_delete(server: LocalServer) -> None:
    assert call(server, "PUT", "/queues/orders", {"visibility_timeout": 30})[0] == 201
    status, sent = call(
        server, "POST", "/queues/orders/clients/c1/messages", {"body": "hello", "attributes": {"k": "v"}}
    )
    assert status == 200 and sent["failed"] == []

    status, received = call(server, "POST", "/queues/orders/clients/c1/receive", {"max_messages": 10})
    [message] = received["messages"]
    assert (message["message_id"], message["body"], message["attributes"]) == (sent["message_id"], "hello", {"k": "v"})
    assert call(server, "POST", "/queues/orders/clients/other/receive")[1] == {"messages": []}

    status, deleted = call(
        server, "POST", "/queues/orders/clients/c1/delete", {"receipt_handles": [message["receipt_handle"]]}
    )
    assert (status, deleted) == (200, {"successful": [{"index": 0}], "failed": []})
    stats = call(server, "GET", "/queues/orders/clients/c1/stats")[1]
    assert (stats["visible"], stats["in_flight"]) == (0, 0)


def test_fifo_group_is_delivered_in_order_one_at_a_time(server: LocalServer) -> None:
    call(server, "PUT", "/queues/jobs.fifo")
    batch = {"messages": [{"body": f"step-{n}", "group_id": "order-7"} for n in range(3)]}
    assert len(call(server, "POST", "/queues/jobs.fifo/clients/c1/messages", batch)[1]["successful"]) == 3

    seen = []
    for _ in range(3):
        [message] = call(server, "POST", "/queues/jobs.fifo/clients/c1/receive")[1]["messages"]
        assert call(server, "POST", "/queues/jobs.fifo/clients/c1/receive", {"max_messages": 10})[1] == {"messages": []}
        seen.append(message["body"])
        call(server, "POST", "/queues/jobs.fifo/clients/c1/delete", {"receipt_handles": [message["receipt_handle"]]})
    assert seen == ["step-0", "step-1", "step-2"]


def test_the_scheduled_sweep_moves_a_failing_message_to_the_dlq_and_redrive_brings_it_back(server: LocalServer) -> None:
    call(server, "PUT", "/queues/fragile", {"max_receive_count": 1})
    message_id = call(server, "POST", "/queues/fragile/clients/c1/messages", {"body": "poison"})[1]["message_id"]
    call(server, "POST", "/queues/fragile/clients/c1/receive", {"visibility_timeout": 0})

    deadline = time.monotonic() + 15
    dead: list[dict[str, Any]] = []
    while not dead and time.monotonic() < deadline:
        dead = call(server, "GET", "/queues/fragile/clients/c1/dlq")[1]["messages"]
        time.sleep(0.1)
    assert [message["message_id"] for message in dead] == [message_id]

    assert call(server, "POST", "/queues/fragile/clients/c1/dlq/redrive", {"message_ids": [message_id]}) == (
        200,
        {"redriven": 1},
    )
    [back] = call(server, "POST", "/queues/fragile/clients/c1/receive")[1]["messages"]
    assert back["message_id"] == message_id and back["receive_count"] == 1


def test_an_operator_lists_clients_reshards_and_moves_an_invalid_message_to_the_dlq(server: LocalServer) -> None:
    call(server, "PUT", "/queues/operated")
    invalid = call(server, "POST", "/queues/operated/clients/c1/messages", {"body": "invalid"})[1]["message_id"]
    call(server, "POST", "/queues/operated/clients/c2/messages", {"body": "fine"})
    assert call(server, "GET", "/queues/operated/clients") == (200, {"clients": ["c1", "c2"]})

    status, settings = call(server, "PATCH", "/queues/operated", {"shards": 3, "visibility_timeout": 45})
    assert (status, settings["shards"], settings["visibility_timeout"]) == (200, 3, 45)
    status, refused = call(server, "PATCH", "/queues/operated", {"fifo": True})
    assert status == 400 and "fifo cannot change" in refused["error"]["message"]

    assert call(server, "POST", f"/queues/operated/clients/c1/messages/{invalid}/dlq") == (200, {"moved": True})
    [dead] = call(server, "GET", "/queues/operated/clients/c1/dlq")[1]["messages"]
    assert dead["message_id"] == invalid
    assert call(server, "POST", "/queues/operated/clients/c1/receive")[1] == {"messages": []}
    [fine] = call(server, "POST", "/queues/operated/clients/c2/receive")[1]["messages"]
    assert fine["body"] == "fine"


def test_a_long_poll_returns_as_soon_as_another_client_sends(server: LocalServer) -> None:
    call(server, "PUT", "/queues/waiting")
    results: list[tuple[float, Any]] = []

    def long_poll() -> None:
        started = time.monotonic()
        answer = call(server, "POST", "/queues/waiting/clients/c1/receive", {"wait_seconds": 15})
        results.append((time.monotonic() - started, answer))

    poller = threading.Thread(target=long_poll)
    poller.start()
    time.sleep(1.0)
    assert not results, "the receive returned before anything was sent"
    call(server, "POST", "/queues/waiting/clients/c1/messages", {"body": "wake up"})
    poller.join(timeout=20)

    [(elapsed, (status, answer))] = results
    assert status == 200 and [message["body"] for message in answer["messages"]] == ["wake up"]
    assert elapsed < 8


def test_concurrent_long_polls_each_get_a_message(server: LocalServer) -> None:
    call(server, "PUT", "/queues/busy")
    answers: list[Any] = []
    lock = threading.Lock()

    def consume() -> None:
        answer = call(server, "POST", "/queues/busy/clients/c1/receive", {"wait_seconds": 15})[1]
        with lock:
            answers.extend(message["body"] for message in answer["messages"])

    consumers = [threading.Thread(target=consume) for _ in range(2)]
    for consumer in consumers:
        consumer.start()
    time.sleep(1.0)
    for body in ("first", "second"):
        call(server, "POST", "/queues/busy/clients/c1/messages", {"body": body})
        time.sleep(0.3)
    for consumer in consumers:
        consumer.join(timeout=25)
    assert sorted(answers) == ["first", "second"]


@pytest.mark.parametrize(
    ("method", "path", "options", "status", "code"),
    [
        ("PUT", "/queues/broken", {"raw": b"{not json"}, 400, "ValidationError"),
        ("PUT", "/queues/broken", {"body": {"shards": "2"}}, 400, "ValidationError"),
        ("PUT", "/queues/broken", {"body": {"colour": "red"}}, 400, "ValidationError"),
        ("PUT", "/queues/bad%20name", {}, 400, "ValidationError"),
        (
            "PUT",
            "/queues/broken",
            {"raw": b"{}", "content_type": "application/x-www-form-urlencoded"},
            400,
            "ValidationError",
        ),
        ("GET", "/queues/never-made", {}, 404, "QueueNotFound"),
        ("GET", "/no/such/route", {}, 404, "NotFound"),
        ("POST", "/queues/orders/clients/c1/messages", {"body": {"body": "x" * 1_048_577}}, 413, "MessageTooLarge"),
        ("POST", "/queues/orders/clients/c1/messages", {"raw": b"[" * (MAX_REQUEST_BYTES + 1)}, 413, "MessageTooLarge"),
    ],
)
def test_errors_have_the_contract_shape(
    server: LocalServer, method: str, path: str, options: dict[str, Any], status: int, code: str
) -> None:
    call(server, "PUT", "/queues/orders")
    request = dict(options)
    answer_status, answer = call(server, method, path, request.pop("body", None), **request)
    assert answer_status == status
    assert set(answer) == {"error"} and answer["error"]["code"] == code and answer["error"]["message"]


def test_openapi_document_is_served(server: LocalServer) -> None:
    status, document = call(server, "GET", "/openapi.json")
    assert status == 200 and document["openapi"].startswith("3.") and document["paths"] == openapi.document()["paths"]


def test_each_request_is_logged_on_one_line(server: LocalServer) -> None:
    call(server, "GET", "/queues")
    # The line is written once the answer is sent, so the caller may read the answer first.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        lines = server.log.getvalue().splitlines()
        if any(line.endswith("producer") and " GET /queues 200 " in line for line in lines):
            return
        time.sleep(0.05)
    pytest.fail(f"no log line for GET /queues in {lines[-5:]}")


def test_the_banner_commands_work_as_printed(server: LocalServer) -> None:
    commands = [line.strip() for line in server.banner().splitlines() if line.strip().startswith("curl ")]
    assert len(commands) == 3
    outputs = [
        json.loads(subprocess.run(command, shell=True, check=True, capture_output=True).stdout) for command in commands
    ]
    assert outputs[0]["name"] == "demo"
    assert outputs[1]["successful"][0]["message_id"]
    assert [message["body"] for message in outputs[2]["messages"]] == ["hello"]


def test_a_taken_port_is_one_line_and_a_non_zero_exit(server: LocalServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert local_server.main(["--port", str(server.port)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"port {server.port}" in error and "in use" in error

    result = CliRunner().invoke(cli.app, ["local", "--port", str(server.port)])
    assert result.exit_code == 1 and "in use" in result.output


def test_ctrl_c_stops_a_server_on_a_given_dynamodb_cleanly(server: LocalServer) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "layers/queue_core/python"), str(REPO)])}
    environ["PYTHONFAULTHANDLER"] = "1"  # a server that does not stop is made to print where each thread is
    command = [sys.executable, "-m", "dq.local_server", "--port", str(port), "--sweep-interval", "0"]
    command += ["--dynamodb-endpoint", server.dynamodb_endpoint, "--table", "second-server"]
    # Started with Ctrl-C ignored, as a test runner's worker or a CI shell may start it: it must stop all the same.
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        banner = process.stdout.readline()
        assert f"http://127.0.0.1:{port}" in banner and f"at {server.dynamodb_endpoint}" in banner
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/queues", timeout=30) as response:
            assert json.loads(response.read()) == {"queues": []}, "its own table beside the first server's"
        process.send_signal(signal.SIGINT)
        try:
            out, err = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            out, err = process.communicate(timeout=20)
            raise AssertionError(f"not stopped 20 s after Ctrl-C; where its threads were:\n{err}") from None
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "Traceback" not in err and "stopping" in out


def test_large_bodies_are_offloaded_to_the_embedded_s3_and_come_back_as_sent(server: LocalServer) -> None:
    import boto3

    from bench.messages import event_log, random_bytes

    s3 = boto3.client(
        "s3",
        endpoint_url=server.dynamodb_endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    assert call(server, "PUT", "/queues/large")[0] in (200, 201)
    bodies = [random_bytes(200_000), event_log(200_000), "småll ✓"]
    status, sent = call(
        server, "POST", "/queues/large/clients/c1/messages", {"messages": [{"body": b} for b in bodies]}
    )
    assert status == 200 and sent["failed"] == []
    keys = [entry["Key"] for entry in s3.list_objects_v2(Bucket=local_server.LOCAL_BUCKET).get("Contents", [])]
    assert len(keys) == 2 and all(key.startswith("large/c1/") for key in keys)  # the small one stays in its item
    status, received = call(server, "POST", "/queues/large/clients/c1/receive", {"max_messages": 10})
    assert sorted(message["body"] for message in received["messages"]) == sorted(bodies)
    handles = [message["receipt_handle"] for message in received["messages"]]
    call(server, "POST", "/queues/large/clients/c1/delete", {"receipt_handles": handles})
    assert s3.list_objects_v2(Bucket=local_server.LOCAL_BUCKET).get("Contents", []) == []


def test_a_client_that_leaves_a_long_poll_is_one_quiet_log_line(
    server: LocalServer, capfd: pytest.CaptureFixture[str]
) -> None:
    """A long-polling client that goes away (Ctrl-C, a timeout of its own) leaves a line in the log, not a
    BrokenPipeError traceback on the console."""
    import socket
    import struct

    assert call(server, "PUT", "/queues/leaving")[0] in (200, 201)
    body = json.dumps({"wait_seconds": 1}).encode()
    request = (
        f"POST /queues/leaving/clients/c/receive HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection(("127.0.0.1", server.port)) as client:
        client.sendall(request)
        time.sleep(0.2)
        # Closing with a reset, as a killed process's socket does: the server's answer meets a closed connection.
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    log = server.log
    deadline = time.monotonic() + 10
    while "the client left before the answer" not in log.getvalue():  # type: ignore[union-attr]
        assert time.monotonic() < deadline, log.getvalue()  # type: ignore[union-attr]
        time.sleep(0.05)
    assert "Traceback" not in capfd.readouterr().err


def test_the_banners_export_line_points_boto3_at_the_servers_dynamodb(server: LocalServer) -> None:
    """The line `make local` prints for another terminal: pasted as is, boto3 (and so the library) reaches the
    embedded DynamoDB with no other setting."""
    [line] = [line.strip() for line in server.banner().splitlines() if line.strip().startswith("export ")]
    pasted = dict(pair.split("=", 1) for pair in line.removeprefix("export ").split())
    assert set(pasted) == {
        "AWS_ENDPOINT_URL_DYNAMODB",
        "AWS_DEFAULT_REGION",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
    }
    program = "import boto3; print(boto3.client('dynamodb').list_tables()['TableNames'])"
    environment = {
        **{name: value for name, value in os.environ.items() if not name.startswith("AWS_")},
        **pasted,
    }
    answer = subprocess.run(
        [sys.executable, "-c", program], env=environment, capture_output=True, text=True, timeout=60, check=True
    )
    assert "integration" in answer.stdout


def test_the_embedded_dynamodbs_own_address_in_the_environment_means_the_embedded_one() -> None:
    """After pasting the export line, `dq local` started again in that terminal serves its embedded DynamoDB on
    the same stable port instead of trying to reach itself."""
    assert local_server.DEFAULT_DYNAMODB_PORT == 8081
    assert local_server.embedded_address("http://127.0.0.1:8081", 8081) is None
    assert local_server.embedded_address("http://localhost:8081/", 8081) is None
    assert local_server.embedded_address("http://localhost:8000", 8081) == "http://localhost:8000"
    assert local_server.embedded_address(None, 8081) is None


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("TRACE", "/queues/orders", "DELETE, GET, PATCH, PUT"),
        ("POST", "/queues/orders/clients/c1/stats", "GET"),
        ("PUT", "/queues/orders/clients/c1/messages/S0.1", "DELETE, GET"),
        ("BREW", "/queues", "GET"),
        ("GET", "/sqs/c1", "POST"),
    ],
)
def test_a_method_no_route_takes_at_a_routes_path_is_a_405_that_names_the_ones_it_takes(
    server: LocalServer, method: str, path: str, allowed: str
) -> None:
    """As the deployed API answers before any function runs: 405 with `Allow`, in the API's error shape (not
    http.server's 501 page in HTML)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        answer = json.loads(response.read())
    finally:
        connection.close()
    assert response.status == 405 and response.getheader("Allow") == allowed
    assert answer["error"]["code"] == "MethodNotAllowed" and method in answer["error"]["message"]
