"""Hostile HTTP input against the local server (the real handlers behind API Gateway-shaped events).

Schemathesis generates requests for every route of the served OpenAPI document, both ones that fit it and ones
that do not, to random and to existing queues; then hand-written requests hit the limits the contract names.
Every answer must be below 500, every error must have the contract's shape, and a refused request must leave the
table exactly as it was.
"""

from __future__ import annotations

import io
import json
import logging
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.error import HTTPError

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from moto.dynamodb.responses import DynamoHandler
from queue_api.resolver import MAX_REQUEST_BYTES
from queue_core import limits
from schemathesis import Case, GenerationMode

from dq.local_server import LocalServer
from tests.conftest import stress_run
from tests.reliability.truth import table_snapshot

logger = logging.getLogger("tests.reliability")

TABLE = "hostile"
# `make test` sends about 780 requests, `--stress` over two thousand.
EXAMPLES_PER_STRATEGY = 13 if stress_run() else 5
MIN_REQUESTS = 1000 if stress_run() else 600
# moto's request methods that may write (a refused condition included): a request that calls none of them wrote
# nothing, and the table need not be read again to know it.
WRITE_METHODS = ("put_item", "update_item", "delete_item", "batch_write_item", "transact_write_items")
EXISTING = ({"q": "fuzz", "c": "c1"}, {"q": "fuzz.fifo", "c": "c1"})
# Pinning the path of these to an existing queue would delete it for every later request.
NOT_PINNED = frozenset({"DELETE /queues/{q}"})
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES_PER_STRATEGY,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer(port=0, table=TABLE, sweep_interval=0, log=io.StringIO()) as running:
        yield running


def snapshot() -> frozenset[str]:
    return table_snapshot(TABLE)


@contextmanager
def counted_writes() -> Iterator[list[int]]:
    """The number of write requests the embedded DynamoDB has served since (one counter, in a list), so that the
    table is read whole only after a request that may have written: reading it after every generated request took
    most of this test's time once its table had grown."""
    count = [0]
    originals = {name: getattr(DynamoHandler, name) for name in WRITE_METHODS}

    def counting(original: Any) -> Any:
        def write(handler: Any) -> Any:
            count[0] += 1
            return original(handler)

        return write

    for name, original in originals.items():
        setattr(DynamoHandler, name, counting(original))
    try:
        yield count
    finally:
        for name, original in originals.items():
            setattr(DynamoHandler, name, original)


@pytest.fixture(scope="module")
def existing_queues(server: LocalServer) -> None:
    """Queues the pinned requests reach, with a few messages, so that generated requests go past the 404s."""
    for path in EXISTING:
        assert call(server, "PUT", f"/queues/{path['q']}", {"max_receive_count": 2})[0] in (200, 201)
        for n in range(3):
            body = {"body": f"seed {n}", **({"group_id": "g"} if path["q"].endswith(".fifo") else {})}
            assert call(server, "POST", f"/queues/{path['q']}/clients/{path['c']}/messages", body)[0] == 200


def call(server: LocalServer, method: str, path: str, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    headers = {"Content-Type": "application/json"} if data is not None else {}
    request = urllib.request.Request(server.url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def error_shape_problem(status: int, answer: Any) -> str | None:
    """What is wrong with an error answer, or None when it has the contract's shape."""
    if status >= 500:
        return f"status {status}"
    if status < 400:
        return None
    if not isinstance(answer, dict) or set(answer) != {"error"} or not isinstance(answer["error"], dict):
        return f"not the error shape: {answer!r}"[:300]
    error = answer["error"]
    if set(error) != {"code", "message"} or not all(isinstance(error[k], str) and error[k] for k in error):
        return f"not the error shape: {answer!r}"[:300]
    return None


def _no_long_polls(case: Case) -> Case:
    """A receive that waits would wait in real time on an empty queue, and a replay started or run for
    `run_seconds` (`seconds`) runs that long; a queue whose `receive_wait_seconds` is set makes every later receive
    without a wait of its own wait that long: generated waits are made zero. A queue given hundreds of shards makes
    every later receive and stats read each of them (a second a request here; runs took 14 to 88 s by the shard
    counts drawn): generated counts are kept to at most 4, in order."""
    body = case.body
    for name in ("wait_seconds", "run_seconds", "seconds", "receive_wait_seconds"):
        if isinstance(body, dict) and isinstance(body.get(name), int | float) and body[name] > 0:
            body[name] = 0
    for name in ("shards", "min_shards", "max_shards"):
        value = body.get(name) if isinstance(body, dict) else None
        if type(value) in (int, float) and 4 < value <= limits.MAX_SHARDS and value == int(value):
            body[name] = type(value)(4)
    return case


@pytest.mark.usefixtures("existing_queues")
def test_generated_requests_to_every_route_get_no_5xx_errors_in_shape_and_refusals_write_nothing(
    server: LocalServer,
) -> None:
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    statuses: Counter = Counter()
    problems: list[str] = []
    before = [snapshot()]
    writes_seen = [0]
    written = [0]
    with counted_writes() as writes:
        for operation in operations:
            path_names = {parameter.name for parameter in operation.path_parameters}
            pins: list[dict[str, str] | None] = [None]
            if path_names and operation.label not in NOT_PINNED:
                pins += [{name: value for name, value in pin.items() if name in path_names} for pin in EXISTING]
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                for pin in pins:
                    # A request with nothing left to break (no body or query, the path pinned) has no negative form.
                    breakable = bool(operation.body or operation.query or (path_names and pin is None))
                    if mode is GenerationMode.NEGATIVE and not breakable:
                        continue
                    strategy = operation.as_strategy(generation_mode=mode, path_parameters=pin).map(_no_long_polls)

                    @FUZZ_SETTINGS
                    @given(case=strategy)
                    def send(case: Case) -> None:
                        response = case.call(base_url=server.url, timeout=60)
                        try:
                            answer = response.json()
                        except ValueError:
                            answer = response.text
                        statuses[(case.operation.label, response.status_code)] += 1
                        problem = error_shape_problem(response.status_code, answer)
                        # The table read again only when the request reached a write (counted by `writes`).
                        after = snapshot() if writes[0] != written[0] else before[0]
                        written[0] = writes[0]
                        if response.status_code >= 400 and after != before[0]:
                            problem = problem or f"a refused request wrote: {sorted(after ^ before[0])[:2]}"
                        writes_seen[0] += after != before[0]
                        before[0] = after
                        if problem:
                            problems.append(f"{case.method} {case.formatted_path} {case.body!r:.120}: {problem}")

                    send()

    total = sum(statuses.values())
    by_status = Counter(status for _, status in statuses.elements())
    logger.info("schemathesis: %d requests over %d operations, by status %s", total, len(operations), dict(by_status))
    assert not problems, "\n".join(problems[:15])
    assert total >= MIN_REQUESTS
    assert writes_seen[0] > 0, "the snapshots see what accepted requests write"
    assert {label for label, _ in statuses} == {operation.label for operation in operations}


OVER_1_MIB = "x" * (1024 * 1024 + 1)
SUB_QUEUE = "/queues/fuzz/clients/c1"


@pytest.mark.usefixtures("existing_queues")
@pytest.mark.parametrize(
    ("method", "path", "body", "raw", "status", "code"),
    [
        ("POST", f"{SUB_QUEUE}/messages", {"body": OVER_1_MIB}, None, 413, "MessageTooLarge"),
        ("POST", f"{SUB_QUEUE}/messages", {"body": "é" * (512 * 1024 + 1)}, None, 413, "MessageTooLarge"),
        ("POST", f"{SUB_QUEUE}/messages", None, b"[" * (MAX_REQUEST_BYTES + 1), 413, "MessageTooLarge"),
        ("POST", f"{SUB_QUEUE}/messages", {"body": "a", "attributes": {f"k{n}": "v" for n in range(11)}}, None, 400,
         "ValidationError"),
        ("POST", f"{SUB_QUEUE}/messages", {"body": "a", "attributes": {"": "v"}}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/messages", {"body": "a", "attributes": {"k" * 257: "v"}}, None, 400,
         "ValidationError"),
        ("POST", f"{SUB_QUEUE}/messages", {"body": "a", "attributes": {"k": 7}}, None, 400, "ValidationError"),
        # Past the longest retention: the generated requests before may have set the queue's own to any length.
        ("POST", f"{SUB_QUEUE}/messages", {"body": "a", "delay_seconds": 1_209_601}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/messages", {"body": "a", "delay_seconds": -1}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/messages", {"body": "a", "delay_seconds": "5"}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/messages", {"body": ""}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/messages", None, b'{"body": "\\ud800"}', 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/messages", None, b'{"body": "\xff\xfe\x00"}', 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/messages", None, b"\x80\x81\x82", 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/messages", None, b'{"body": "a"', 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/messages", {"messages": [{"body": "a"}] * 26}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/messages", {"messages": []}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/messages", {"body": "a", "group_id": "g"}, None, 400, "ValidationError"),
        ("POST", "/queues/fuzz.fifo/clients/c1/messages", {"body": "a"}, None, 400, "ValidationError"),
        ("POST", "/queues/fuzz.fifo/clients/c1/messages", {"body": "a", "group_id": "é"}, None, 400,
         "ValidationError"),
        ("POST", "/queues/bad%20name/clients/c1/messages", {"body": "a"}, None, 400, "ValidationError"),
        ("POST", "/queues/fuzz/clients/c%2Cd/messages", {"body": "a"}, None, 400, "ValidationError"),
        ("POST", "/queues/bad%23name/clients/c1/messages", {"body": "a"}, None, 404, "NotFound"),
        ("POST", f"/queues/{'q' * 81}/clients/c1/messages", {"body": "a"}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/receive", {"max_messages": 11}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/receive", {"max_messages": 0}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/receive", {"wait_seconds": 21}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/receive", {"visibility_timeout": 43_201}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/receive", {"visibility_timeout": 10**30}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/receive", {"max_messages": True}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/receive", {"order": "random"}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/delete", {"receipt_handles": ["h"] * 26}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/visibility", {"receipt_handle": "forged.handle", "visibility_timeout": 5}, None, 400,
         "ValidationError"),
        ("POST", f"{SUB_QUEUE}/release", {"receipt_handle": "x", "delay_seconds": 43_201}, None, 400,
         "ValidationError"),
        ("POST", f"{SUB_QUEUE}/dlq/redrive", {"message_ids": ["S0.1"] * 101}, None, 400, "ValidationError"),
        ("POST", f"{SUB_QUEUE}/dlq/redrive", {"max_messages": 0}, None, 400, "ValidationError"),
        ("GET", f"{SUB_QUEUE}/messages?limit=101", None, None, 400, "ValidationError"),
        ("GET", f"{SUB_QUEUE}/messages?limit=abc", None, None, 400, "ValidationError"),
        ("GET", f"{SUB_QUEUE}/messages/not-an-id", None, None, 400, "ValidationError"),
        ("PUT", "/queues/fuzz", {"visibility_timeout": 43_201}, None, 400, "ValidationError"),
        ("PUT", "/queues/fuzz", {"shards": limits.MAX_SHARDS + 1}, None, 400, "ValidationError"),
        ("PUT", "/queues/fuzz", {"visibility_timeout": 7}, None, 409, "QueueExists"),
        ("PUT", "/queues/new-queue", {"retention_seconds": 59}, None, 400, "ValidationError"),
        ("PUT", "/queues/new-queue", {"content_based_dedup": True}, None, 400, "ValidationError"),
    ],
)  # fmt: skip
def test_a_request_past_a_limit_is_refused_with_its_code_and_writes_nothing(
    server: LocalServer,
    method: str,
    path: str,
    body: Any,
    raw: bytes | None,
    status: int,
    code: str,
) -> None:
    before = snapshot()
    answer_status, answer = call(server, method, path, body, raw)
    assert (answer_status, error_shape_problem(answer_status, answer)) == (status, None), answer
    assert answer["error"]["code"] == code
    assert snapshot() == before


@pytest.mark.usefixtures("existing_queues")
@given(payload=st.binary(min_size=1, max_size=64).filter(lambda data: not _is_utf8(data)))
@settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_bytes_that_are_not_utf8_are_a_400_on_every_body_route(server: LocalServer, payload: bytes) -> None:
    before = snapshot()
    for path in ("/queues/fuzz", f"{SUB_QUEUE}/messages", f"{SUB_QUEUE}/receive", f"{SUB_QUEUE}/dlq/redrive"):
        status, answer = call(server, "PUT" if path == "/queues/fuzz" else "POST", path, raw=payload)
        assert (status, error_shape_problem(status, answer)) == (400, None), (path, answer)
    assert snapshot() == before


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# Amazon SQS's protocol at `POST /` and `POST /sqs/{client}`: generated and hand-written hostile requests.

SQS_QUEUE_URL = "/000000000000/fuzz"
# Generated requests go to the root endpoint and to a client's (where the root's queue URLs are foreign).
SQS_PATHS = ("/", "/sqs/tenant-f")
# Pinned to the existing queue, these would delete or empty it, or make its receives wait, for later requests.
SQS_NOT_PINNED = frozenset({"DeleteQueue", "PurgeQueue", "SetQueueAttributes"})


def sqs_call(server: LocalServer, target: str | None, raw: bytes, path: str = "/") -> tuple[int, dict, Any]:
    headers = {"Content-Type": "application/x-amz-json-1.0"}
    if target is not None:
        headers["X-Amz-Target"] = target
    request = urllib.request.Request(server.url + path, data=raw, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), json.loads(response.read() or b"null")
    except HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read() or b"null")


def sqs_error_problem(status: int, headers: dict, answer: Any) -> str | None:
    """What is wrong with an SQS answer, or None when it is a success or SQS's error shape."""
    if status >= 500:
        return f"status {status}: {answer!r:.200}"
    if status < 400:
        return None
    if not isinstance(answer, dict) or set(answer) != {"__type", "message"}:
        return f"not SQS's error shape: {answer!r:.200}"
    if not str(answer["__type"]).startswith("com.amazonaws.sqs#") or ";Sender" not in headers.get(
        "x-amzn-query-error", ""
    ):
        return f"no modeled type or query error header: {answer!r:.200} {headers!r:.200}"
    return None


def _sqs_value(server: LocalServer, pinnable: bool) -> st.SearchStrategy[Any]:
    urls = st.sampled_from(
        [f"{server.url}/sqs/other{SQS_QUEUE_URL}", "not a url", *([server.url + SQS_QUEUE_URL] if pinnable else [])]
    )
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.text(max_size=20), urls)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=12) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=12,
    )


@pytest.mark.usefixtures("existing_queues")
def test_generated_sqs_requests_get_sqs_errors_below_500_and_refusals_write_nothing(server: LocalServer) -> None:
    import botocore.session

    model = botocore.session.get_session().get_service_model("sqs")
    problems: list[str] = []
    statuses: Counter = Counter()
    before = [snapshot()]
    for action in model.operation_names:
        members = list(model.operation_model(action).input_shape.members)
        value = _sqs_value(server, pinnable=action not in SQS_NOT_PINNED)
        body = st.fixed_dictionaries({}, optional={name: value for name in members})
        if "QueueUrl" in members and action not in SQS_NOT_PINNED:
            body = st.one_of(body, body.map(lambda params: {**params, "QueueUrl": server.url + SQS_QUEUE_URL}))

        @FUZZ_SETTINGS
        @given(params=body, action=st.just(action), path=st.sampled_from(SQS_PATHS))
        def send(params: dict[str, Any], action: str, path: str) -> None:
            if action == "ReceiveMessage" or isinstance(params.get("WaitTimeSeconds"), int):
                params["WaitTimeSeconds"] = 0
            status, headers, answer = sqs_call(server, f"AmazonSQS.{action}", json.dumps(params).encode(), path)
            statuses[(action, status)] += 1
            problem = sqs_error_problem(status, headers, answer)
            after = snapshot()
            if status >= 400 and after != before[0]:
                problem = problem or f"a refused request wrote: {sorted(after ^ before[0])[:2]}"
            before[0] = after
            if problem:
                problems.append(f"{action} {params!r:.150}: {problem}")

        send()
    logger.info("sqs: %d generated requests, by status %s", sum(statuses.values()), dict(Counter(
        status for _, status in statuses.elements())))  # fmt: skip
    assert not problems, "\n".join(problems[:15])
    assert {action for action, _ in statuses} == set(model.operation_names)


HUGE_BATCH = [{"Id": f"m{n}", "MessageBody": "x"} for n in range(1000)]


@pytest.mark.usefixtures("existing_queues")
@pytest.mark.parametrize(
    ("target", "path", "raw", "code"),
    [
        ("AmazonSQS.SendMessage", "/", b'{"QueueUrl": ', "InvalidParameterValue"),
        ("AmazonSQS.SendMessage", "/", b"\xff\xfe", "InvalidParameterValue"),
        ("AmazonSQS.SendMessage", "/", b"[1, 2]", "InvalidParameterValue"),
        ("AmazonSQS.SendMessage", "/", b'{"QueueUrl": 5, "MessageBody": "x"}', "InvalidParameterValue"),
        ("AmazonSQS.SendMessage", "/", b'{"QueueUrl": "URL", "MessageBody": 7}', "InvalidParameterValue"),
        ("AmazonSQS.SendMessage", "/", b'{"QueueUrl": "URL"}', "MissingParameter"),
        ("AmazonSQS.SendMessage", "/", b'{"QueueUrl": "URL", "MessageBody": "x", "DelaySeconds": "5"}',
         "InvalidParameterValue"),
        ("AmazonSQS.SendMessage", "/", b'{"QueueUrl": "URL", "MessageBody": "x", "DelaySeconds": true}',
         "InvalidParameterValue"),
        ("AmazonSQS.SendMessage", "/sqs/other", b'{"QueueUrl": "URL", "MessageBody": "x"}', "InvalidAddress"),
        ("AmazonSQS.SendMessage", "/", b'{"QueueUrl": "http://x/123456789012/fuzz", "MessageBody": "x"}',
         "InvalidAddress"),
        ("AmazonSQS.SendMessageBatch", "/", json.dumps({"QueueUrl": "URL", "Entries": HUGE_BATCH}).encode(),
         "TooManyEntriesInBatchRequest"),
        ("AmazonSQS.DeleteMessageBatch", "/", json.dumps({"QueueUrl": "URL", "Entries": [
            {"Id": f"m{n}", "ReceiptHandle": "h"} for n in range(1000)]}).encode(), "TooManyEntriesInBatchRequest"),
        ("AmazonSQS.SendMessageBatch", "/", b'{"QueueUrl": "URL", "Entries": [{"Id": "a", "MessageBody": "' +
         b"x" * (1100 * 1024) + b'"}]}', "BatchRequestTooLong"),
        ("AmazonSQS.ReceiveMessage", "/", b'{"QueueUrl": "URL", "MaxNumberOfMessages": 11}', "InvalidParameterValue"),
        ("AmazonSQS.ReceiveMessage", "/", b'{"QueueUrl": "URL", "WaitTimeSeconds": 21}', "InvalidParameterValue"),
        ("AmazonSQS.CreateQueue", "/", b'{"QueueName": "bad name"}', "InvalidParameterValue"),
        ("AmazonSQS.CreateQueue", "/", b'{"QueueName": "fuzz", "Attributes": {"VisibilityTimeout": 5}}',
         "InvalidParameterValue"),
        ("AmazonSQS.Explode", "/", b"{}", "InvalidAddress"),
        ("Other.SendMessage", "/", b"{}", "InvalidAddress"),
        (None, "/", b"{}", "InvalidAddress"),
        ("AmazonSQS.AddPermission", "/", b'{"QueueUrl": "URL", "Label": "l", "AWSAccountIds": ["1"], '
         b'"Actions": ["SendMessage"]}', "UnsupportedOperation"),
        ("AmazonSQS.DeleteQueue", "/sqs-admin", b'{"QueueUrl": "URL/../../other"}', "InvalidAddress"),
        ("AmazonSQS.DeleteQueue", "/", b'{"QueueUrl": "URL"}', "AccessDenied"),
        ("AmazonSQS.SendMessage", "/sqs/bad%20client", b'{"QueueUrl": "URL", "MessageBody": "x"}', "InvalidAddress"),
    ],
)  # fmt: skip
def test_hostile_sqs_requests_are_refused_in_sqs_shape_and_write_nothing(
    server: LocalServer, target: str | None, path: str, raw: bytes, code: str
) -> None:
    before = snapshot()
    status, headers, answer = sqs_call(server, target, raw.replace(b"URL", (server.url + SQS_QUEUE_URL).encode()), path)
    expected = 403 if code == "AccessDenied" else 400
    assert (status, sqs_error_problem(status, headers, answer)) == (expected, None), answer
    assert answer["__type"] == f"com.amazonaws.sqs#{code}"
    assert snapshot() == before
