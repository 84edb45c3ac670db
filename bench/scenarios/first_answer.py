"""Cold start to first answer: a fresh interpreter imports a function's handler and answers one event, against a
bare Powertools handler doing the same kind of first answer in the same run, for every route of every HTTP
function (a well-formed request of each, what it needs put in place first: a message to get, a handle to settle),
the SQS protocol's main actions, the sweeper's scheduled pass and the dispatcher's stream event.

A handler's import time alone says little: work left for the first request (the resolver and its validation, the
models, the core, the tracing SDK, the boto3 client) is paid before the first caller gets an answer. So each run
is a new `python -c` that starts a clock, imports the handler, answers one event and stops the clock; DynamoDB is
moto's server on this machine (reached over HTTP, as Lambda reaches DynamoDB), and a push consumer's Lambda invoke
goes to a small local HTTP endpoint that accepts every batch. The interpreter's own start is not in the figure (it
is the same for every handler), nor is the Lambda runtime's.

The floor is what any Powertools handler on boto3 pays for the same kind of answer: for an API Gateway event,
boto3, `APIGatewayRestResolver`, a `Logger`, one route and one DynamoDB `Query`; for the other events (schedule,
stream), boto3, a `Logger` and one `Query`. Floors and functions run in turns, repeat after repeat, so the load
of the machine weighs on both alike; the ratio of medians is the figure. The ratio of the median CPU times (the
interpreter's own, so not moto's) is given beside it: it moves less when other work shares the machine. Each
function runs with the environment the stack gives it by default (`infra/function_environment.py`), in Lambda's
`LAMBDA_TASK_ROOT`, and once more with tracing on, for what that costs.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

from infra.function_environment import DEFAULT_TRACING, function_environment

NAME: Final = "first_answer"
ROOT: Final = Path(__file__).resolve().parents[2]
LAYER: Final = ROOT / "layers" / "queue_core" / "python"
TABLE: Final = "first-answer"
QUEUE: Final = "orders"
READER: Final = "reader"
PUSHED: Final = "pushed"
WIDE: Final = "wide"
ACCOUNT: Final = "123456789012"
TARGET_RATIO: Final = 1.3
SWEEPER_TARGET_RATIO: Final = 1.5
REPEATS: Final = 7
BYTECODE_REPEATS: Final = 3
# What the figures replaced and what remains (recorded on 2026-11-25 on 2 cores shared with other work, where the
# wall-clock floor took 2.6 s for 0.3 s of CPU: the CPU ratios are the steadier figures of that run).
NOTES: Final = (
    "Before, at the previous commit and with tracing on as it was then deployed (the X-Ray SDK was also loaded "
    "with tracing off), the same run measured ÷ floor (CPU ÷ floor's CPU): producer 2.20 (1.67), poller 2.19 "
    "(1.65), dlq_redriver 1.93 (1.60), visibility_sweeper 2.64 (1.85), sqs 1.41 (1.14), dispatcher 2.00 (1.44). "
    "Then, before the fast routes (`queue_api.fast_routes`: a well-formed send, receive or listing, and a "
    "scheduled sweep, answered without loading pydantic, Powertools' OpenAPI validation and the models), CPU ÷ "
    "floor's CPU in three runs alternating with the same runs of the fast routes: producer 1.49-1.51 -> "
    "1.18-1.21, poller 1.51-1.54 -> 1.20-1.24, dlq_redriver 1.45-1.57 -> 1.18, visibility_sweeper 1.65-1.71 -> "
    "1.36-1.40. The sweeper's first answer is a whole sweep (a lease taken and given back, deleted queues, the "
    "listing, each sub-queue's messages and DLQ read twice, load reports, a fresh settings read: 19 DynamoDB "
    "calls, about 33 ms of CPU in a fresh process) where its floor makes one query; the dispatcher also builds a "
    "Lambda client and invokes the consumer. What the others still pay beyond the floor is mostly `queue_core`'s "
    "import, about 30-45 ms, most of it Python 3.11 creating dataclasses (3.13 and later do that faster; the "
    "functions run 3.14). "
    "Every route listed (2026-11-28): the routes the fast routes did not take loaded pydantic on their first "
    "answer, at CPU 1.43-1.80x the floor's (GET .../stats 1.48). With fast routes for stats, purge, delete, "
    "change visibility and release (of a client and of a queue), the queue-wide receive, get, cancel and move "
    "by id, a queue's clients and its deletion, two runs side by side (the commit before and this one, 5 "
    "interpreters each, on a machine shared with other work), CPU ÷ floor's CPU (wall ÷ floor's wall): stats "
    "1.48 (1.49) -> 1.23 (1.22), delete 1.55 (1.58) -> 1.16 (0.98), change_visibility 1.49 (1.55) -> 1.16 "
    "(1.04), release 1.48 (1.56) -> 1.22 (1.18), receive_any 1.51 (1.87) -> 1.21 (1.40), get 1.46 (1.65) -> "
    "1.19 (0.97), cancel 1.43 (1.70) -> 1.17 (1.28), purge 1.58 (1.79) -> 1.18 (0.98), move_to_dlq 1.50 "
    "(1.54) -> 1.15 (1.10), list_clients 1.48 (1.42) -> 1.24 (1.29), delete_queue 1.49 (1.45) -> 1.22 "
    "(1.30); unchanged, send 1.20 -> 1.22, receive 1.21 -> 1.22. Then (2026-11-29) GET /queues and GET "
    "/queues/{q} through the fast routes too, CPU ÷ floor's CPU 1.24 and 1.28 (stats 1.25 and a queue's "
    "clients 1.26 in the same run, 5 interpreters each, one core busy with other work). Then (2026-11-29) "
    "creating and changing a queue, browse, the archive's routes (of a client, of a queue, by id) and the OpenAPI "
    "document (served as the resolver writes it, from the copy `make openapi` generates into the layer) through "
    "the fast routes too, and no fast route's first answer imports Powertools' event handler any more (about 25 "
    "ms of CPU): three runs of these routes side by side with the commit before (5 interpreters each, the "
    "machine shared with other work; the archive's routes now look at a queue that keeps an archive, with one "
    "message acknowledged: archive_get's subject named no message before and was answered as the listing), CPU "
    "÷ floor's CPU, the fast routes alone (two runs) and then without the event handler: openapi 1.93-2.03 -> "
    "0.91 -> 0.80, create_queue 1.55-1.62 -> 1.23-1.24 -> 1.14, update_queue 1.55-1.63 -> 1.21-1.24 -> 1.12, "
    "browse 1.57-1.67 -> 1.26-1.27 -> 1.11, archive_list 1.59-1.67 -> 1.30-1.34 -> 1.15, archive_get 1.58-1.65 "
    "-> 1.24 -> 1.11, archive_list_any 1.64-1.70 -> 1.30-1.35 -> 1.15 (it reads the client list and 8 archive "
    "partitions where the floor makes one query); in the third run, routes fast before: stats 1.28 -> 1.09, "
    "list_clients 1.27 -> 1.09, send 1.29 -> 1.14, receive 1.29 -> 1.12. Then every route side by side with the "
    "commit before (5 interpreters each, the machine loaded: the floors took 1.1 s of wall clock for 0.23 s of "
    "CPU): the 27 routes the fast routes answer 1.07-1.27 (those fast before 1.26-1.37 -> 1.07-1.19, the seven "
    "added 1.61-2.08 -> 0.83-1.27), the SQS protocol 1.11-1.24 (1.23-1.30). Then redrive, the DLQ's reasons "
    "and the replays (start, run, cancel, list) through the fast routes too, so that the common requests of "
    "every HTTP route load no pydantic: side by side with the commit before, CPU ÷ floor's CPU redrive "
    "1.53-1.57 -> 1.10-1.12, dlq_reasons 1.52-1.54 -> 1.12-1.13, replay_start 1.56 -> 1.07, replay_list 1.52 "
    "-> 1.11, replay_run 1.60 -> 1.16, replay_cancel 1.53 -> 1.10 (stats 1.26-1.28 -> 1.08-1.11 in the same "
    "runs). Every route once more, side by side with the commit before all of these (5 interpreters each): the "
    "13 routes that loaded pydantic 1.46-1.79 -> 0.83-1.26, those fast before 1.15-1.26 -> 1.14-1.23, and the "
    "SQS protocol, whose code did not change, 1.10-1.14 -> 1.21-1.29: two runs side by side differ by about "
    "0.1 on this machine (the event handler's import alone, timed in the same interpreter after a first answer, "
    "is 24-27 ms of CPU, 0.11 of the floor's). The sweeper's first pass (a whole sweep) 1.2-1.5 before, 2.2-2.3 "
    "in both runs of every route on this loaded machine, before and after."
)
# A trace header as Lambda sets it for a sampled invocation with active tracing.
TRACE_HEADER: Final = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"

_CHILD = """\
import time
_start, _cpu = time.perf_counter(), time.process_time()
import json, sys
event, kind = json.loads(sys.argv[1]), sys.argv[2]


class Context:
    function_name = "first-answer"
    memory_limit_in_mb = 512
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:first-answer"
    aws_request_id = "11111111-2222-3333-4444-555555555555"
    log_group_name = "/aws/lambda/first-answer"
    log_stream_name = "2026/01/01/[$LATEST]0"

    def get_remaining_time_in_millis(self):
        return 30_000


if kind == "function":
    import importlib

    handler = importlib.import_module(sys.argv[3]).lambda_handler
else:
    import boto3
    from aws_lambda_powertools import Logger

    logger = Logger(service="floor")
    dynamodb = boto3.client("dynamodb")

    def first_query():
        return dynamodb.query(
            TableName=sys.argv[3],
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": "floor"}},
            Limit=10,
        )["Items"]

    if kind == "floor-http":
        from aws_lambda_powertools.event_handler import APIGatewayRestResolver
        from aws_lambda_powertools.logging import correlation_paths

        app = APIGatewayRestResolver()
        rule = event["resource"].replace("{", "<").replace("}", ">")

        @app.route(rule, event["httpMethod"])
        def route(**parameters):
            return {"items": len(first_query())}

        @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
        def handler(event, context):
            return app.resolve(event, context)

    else:

        @logger.inject_lambda_context
        def handler(event, context):
            return {"items": len(first_query())}

answer = handler(event, Context())
seconds, cpu = time.perf_counter() - _start, time.process_time() - _cpu
status = answer.get("statusCode", 200) if isinstance(answer, dict) else 200
loaded = [name for name in ("aws_xray_sdk.core", "pydantic", "queue_core") if name in sys.modules]
print(json.dumps({"seconds": seconds, "cpu": cpu, "status": status, "loaded": loaded}))
"""


@dataclass(frozen=True)
class Subject:
    """One function's first answer to one route (or action): `prepare` puts in place what the event finds and
    returns the names the event needs (a message id, a receipt handle, a queue to delete)."""

    name: str  # the function
    event: Callable[[Mapping[str, str]], dict[str, Any]]
    floor: str  # "floor-http" or "floor-event"
    prepare: Callable[[Any], Mapping[str, str]] = lambda core: {}
    expected_status: int = 200
    route: str = ""  # the operation, SQS action or event it answers
    traced_too: bool = False  # measured once more with tracing on

    @property
    def label(self) -> str:
        return f"{self.name} {self.route}"


@dataclass
class Samples:
    """Wall-clock and CPU seconds of each fresh interpreter, and the modules any of them loaded."""

    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    loaded: set[str] = field(default_factory=set)

    def add(self, answer: dict[str, Any]) -> None:
        self.seconds.append(float(answer["seconds"]))
        self.cpu.append(float(answer["cpu"]))
        self.loaded.update(answer["loaded"])

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)


def api_event(method: str, path: str, resource: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
    """An API Gateway REST proxy event as the stage sends it."""
    names = [part.strip("{}") for part in resource.split("/") if part.startswith("{")]
    values = [part for part, template in zip(path.split("/"), resource.split("/"), strict=True) if template[:1] == "{"]
    all_headers = {"Host": "abc123.execute-api.us-east-1.amazonaws.com", "Content-Type": "application/json"}
    all_headers.update(headers or {})
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": all_headers,
        "multiValueHeaders": {name: [value] for name, value in all_headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": dict(zip(names, values, strict=True)) or None,
        "stageVariables": None,
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": "abc123",
            "httpMethod": method,
            "identity": {"sourceIp": "203.0.113.7"},
            "path": f"/v1{path}",
            "protocol": "HTTP/1.1",
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "resourcePath": resource,
            "stage": "v1",
        },
        "body": json.dumps(body) if body is not None else None,
        "isBase64Encoded": False,
    }


def _sub_queue(client: str) -> str:
    return f"/queues/{QUEUE}/clients/{client}"


def _stream_event(_names: Mapping[str, str]) -> dict[str, Any]:
    from queue_core import keys

    prefix = keys.message_partition_prefixes(QUEUE, PUSHED)[0]
    return {
        "Records": [
            {"eventName": "INSERT", "eventSource": "aws:dynamodb", "dynamodb": {"Keys": {"pk": {"S": f"{prefix}0"}}}}
        ]
    }


def _send_one(client: str) -> Callable[[Any], Mapping[str, str]]:
    """A message waiting in `client`'s sub-queue; its id for a route that names one."""
    return lambda core: {"id": core.queue(QUEUE, client).send("a first message").message_id}


def _received(core: Any) -> Mapping[str, str]:
    """A message held by a receive of the reader's sub-queue; its handle for a route that settles it."""
    sub_queue = core.queue(QUEUE, READER)
    sub_queue.send("a first message")
    return {"handle": sub_queue.receive()[0].receipt_handle}


def _received_queue_wide(core: Any) -> Mapping[str, str]:
    core.queue(WIDE, READER).send("a first message")
    return {"handle": core.queue_wide(WIDE).receive()[0].receipt_handle}


def _throwaway_queue(core: Any) -> Mapping[str, str]:
    name = f"gone-{uuid.uuid4().hex[:12]}"
    core.create_queue(name)
    return {"q": name}


def _replayed_queue(core: Any) -> Mapping[str, str]:
    """A queue that keeps an archive, with a replay started (nothing archived: it ends at its first page)."""
    name = f"kept-{uuid.uuid4().hex[:12]}"
    core.create_queue(name, archive_days=1)
    return {"q": name, "replay": core.queue(name, READER).replay_start().replay_id}


def _archived(core: Any) -> Mapping[str, str]:
    """A queue that keeps an archive, with one message acknowledged (archived); its name and the message's id."""
    name = f"kept-{uuid.uuid4().hex[:12]}"
    core.create_queue(name, archive_days=1)
    sub_queue = core.queue(name, READER)
    sent = sub_queue.send("a first message").message_id
    sub_queue.delete(sub_queue.receive()[0].receipt_handle)
    return {"q": name, "id": sent}


def _fresh_name(_core: Any) -> Mapping[str, str]:
    return {"q": f"new-{uuid.uuid4().hex[:12]}"}


# Each HTTP route's first request: a well-formed one, as a client sends it, its body by operation (None: no body),
# what is put in place first, and the queue its path names (`q` from `prepare` wins).
_ROUTE_BODIES: Final[dict[str, Callable[[Mapping[str, str]], Any]]] = {
    "create_queue": lambda names: {},
    "update_queue": lambda names: {"visibility_timeout": 30},
    "send": lambda names: {"body": "hello"},
    "receive": lambda names: {},
    "delete": lambda names: {"receipt_handles": [names["handle"]]},
    "change_visibility": lambda names: {"receipt_handle": names["handle"], "visibility_timeout": 10},
    "release": lambda names: {"receipt_handle": names["handle"]},
    "receive_any": lambda names: {},
    "delete_any": lambda names: {"receipt_handles": [names["handle"]]},
    "change_visibility_any": lambda names: {"receipt_handle": names["handle"], "visibility_timeout": 10},
    "release_any": lambda names: {"receipt_handle": names["handle"]},
    "redrive": lambda names: {},
    "replay_start": lambda names: {},
    "replay_run": lambda names: {"replay_id": names["replay"], "seconds": 1},
    "replay_cancel": lambda names: {"replay_id": names["replay"]},
}
_ROUTE_PREPARES: Final[dict[str, Callable[[Any], Mapping[str, str]]]] = {
    "create_queue": _fresh_name,
    "delete_queue": _throwaway_queue,
    "receive": _send_one(READER),
    "delete": _received,
    "change_visibility": _received,
    "release": _received,
    "receive_any": lambda core: {"id": core.queue(WIDE, READER).send("a first message").message_id},
    "delete_any": _received_queue_wide,
    "change_visibility_any": _received_queue_wide,
    "release_any": _received_queue_wide,
    "get": _send_one(READER),
    "cancel": _send_one(READER),
    "move_to_dlq": _send_one(READER),
    "archive_list": _archived,
    "archive_get": _archived,
    "archive_list_any": _archived,
    "replay_start": _replayed_queue,
    "replay_list": _replayed_queue,
    "replay_run": _replayed_queue,
    "replay_cancel": _replayed_queue,
}
_ROUTE_QUEUES: Final = {"receive_any": WIDE, "delete_any": WIDE, "change_visibility_any": WIDE, "release_any": WIDE}
# The route each function's first answer took before every route was listed: also measured with tracing on.
_TRACED_ROUTES: Final = frozenset({"send", "receive", "list_dlq"})


def _route_subject(operation: Any) -> Subject:
    body = _ROUTE_BODIES.get(operation.name)

    def event(names: Mapping[str, str]) -> dict[str, Any]:
        queue = names.get("q", _ROUTE_QUEUES.get(operation.name, QUEUE))
        path = operation.path_for(q=queue, c=READER, id=names.get("id", ""))
        return api_event(operation.method, path, operation.path, None if body is None else body(names))

    return Subject(
        operation.function,
        event,
        "floor-http",
        prepare=_ROUTE_PREPARES.get(operation.name, lambda core: {}),
        expected_status=201 if operation.name == "create_queue" else 200,
        route=operation.name,
        traced_too=operation.name in _TRACED_ROUTES,
    )


def _sqs_event(action: str, params: Callable[[Mapping[str, str]], dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    url = f"https://abc123.execute-api.us-east-1.amazonaws.com/v1/{ACCOUNT}/{QUEUE}"
    headers = {"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": "application/x-amz-json-1.0"}
    return lambda names: api_event("POST", "/", "/", {"QueueUrl": url, **params(names)}, headers)


def _sqs_received(core: Any) -> Mapping[str, str]:
    sub_queue = core.queue(QUEUE, "default")
    sub_queue.send("a first message")
    return {"handle": sub_queue.receive()[0].receipt_handle}


def _sqs_subjects() -> tuple[Subject, ...]:
    """The SQS protocol's one route, by the actions a worker makes most."""
    return (
        Subject(
            "sqs",
            _sqs_event("SendMessage", lambda names: {"MessageBody": "x"}),
            "floor-http",
            route="SendMessage",
            traced_too=True,
        ),
        Subject(
            "sqs",
            _sqs_event("ReceiveMessage", lambda names: {}),
            "floor-http",
            prepare=lambda core: {"id": core.queue(QUEUE, "default").send("x").message_id},
            route="ReceiveMessage",
        ),
        Subject(
            "sqs",
            _sqs_event("DeleteMessage", lambda names: {"ReceiptHandle": names["handle"]}),
            "floor-http",
            prepare=_sqs_received,
            route="DeleteMessage",
        ),
        Subject(
            "sqs",
            _sqs_event("GetQueueAttributes", lambda names: {"AttributeNames": ["All"]}),
            "floor-http",
            route="GetQueueAttributes",
        ),
    )


def _subjects() -> tuple[Subject, ...]:
    from queue_api.operations import ROUTES

    routes = tuple(_route_subject(operation) for operation in ROUTES)
    events = (
        Subject("visibility_sweeper", lambda names: {"action": "sweep"}, "floor-event", route="sweep", traced_too=True),
        Subject("dispatcher", _stream_event, "floor-event", prepare=_send_one(PUSHED), route="stream", traced_too=True),
    )
    return routes + _sqs_subjects() + events


SUBJECTS: Final = _subjects()
# The first answer each function was measured by before every route was listed.
MAIN_SUBJECTS: Final = tuple(subject for subject in SUBJECTS if subject.traced_too)


class _AcceptingLambda(BaseHTTPRequestHandler):
    """Lambda's Invoke API, answering every push batch as fully processed."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"batchItemFailures": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


@contextmanager
def _local_lambda() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AcceptingLambda)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _environment(dynamodb: str, lambda_endpoint: str, traced: bool) -> dict[str, str]:
    """A deployed function's environment (the stack's settings, Lambda's own variables), local endpoints."""
    from queue_core.push import ConsumerSpec

    environment = dict(os.environ)
    for name in ("PYTHONDONTWRITEBYTECODE", "AWS_PROFILE", "_X_AMZN_TRACE_ID"):
        environment.pop(name, None)
    consumer = ConsumerSpec(queue=QUEUE, client=PUSHED, function="consumer", batch_size=1)
    environment.update(
        {
            "PYTHONPATH": os.pathsep.join([str(LAYER), str(ROOT)]),
            "LAMBDA_TASK_ROOT": str(ROOT),
            "AWS_LAMBDA_FUNCTION_NAME": "first-answer",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_ENDPOINT_URL_DYNAMODB": dynamodb,
            "AWS_ENDPOINT_URL_LAMBDA": lambda_endpoint,
            "TABLE_NAME": TABLE,
            "POWERTOOLS_SERVICE_NAME": "dynamo-queue",
            "POWERTOOLS_METRICS_NAMESPACE": "DynamoQueue",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
            "LOG_LEVEL": "WARNING",
            "PUSH_CONSUMERS": json.dumps([consumer.to_dict()]),
            **function_environment(traced),
        }
    )
    if traced:
        # What Lambda sets for a traced invocation; the daemon address takes UDP datagrams nobody reads.
        environment.update({"_X_AMZN_TRACE_ID": TRACE_HEADER, "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000"})
    return environment


def _answer(environment: dict[str, str], event: dict[str, Any], kind: str, target: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(event), kind, target],
        capture_output=True,
        text=True,
        env=environment,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith('{"seconds"')]
    if done.returncode or not lines:
        raise RuntimeError(f"{kind} {target} failed: {done.stderr[-2000:]}")
    return json.loads(lines[-1])


@contextmanager
def _backend() -> Iterator[tuple[str, Any]]:
    """moto's server on a table of two queues, three sub-queues and a message each, fresh: moto keeps its tables in
    this process from one server to the next, and the sweeper's first pass sweeps whatever an earlier part made."""
    from moto.dynamodb.models import dynamodb_backends

    from dq.embedded_dynamodb import EmbeddedDynamoDB

    for account in list(dynamodb_backends.values()):
        account.reset()
    for name, value in (("AWS_ACCESS_KEY_ID", "bench"), ("AWS_SECRET_ACCESS_KEY", "bench")):
        os.environ.setdefault(name, value)
    with EmbeddedDynamoDB() as server:
        import boto3
        from queue_core import QueueClient

        dynamodb = boto3.client("dynamodb", endpoint_url=server.endpoint_url, region_name="us-east-1")
        core = QueueClient(TABLE, dynamodb=dynamodb)
        core.create_table()
        core.create_queue(QUEUE)
        core.create_queue(WIDE, queue_wide=True)
        for client in (READER, PUSHED):
            core.queue(QUEUE, client).send("registers the client")
        yield server.endpoint_url, core


def measure(subjects: tuple[Subject, ...], repeats: int, traced_too: bool = True) -> dict[str, Any]:
    """Medians of `repeats` fresh interpreters per subject and per floor, run in turns; ratios to the floor.

    Each subject runs with the stack's default environment ("deployed") and, with `traced_too`, the subjects that
    ask for it also with tracing on.
    """
    floors = sorted({subject.floor for subject in subjects})
    by_floor: dict[str, Samples] = {floor: Samples() for floor in floors}
    variants = {"deployed": DEFAULT_TRACING, **({"traced": True} if traced_too else {})}
    measured = {
        subject: ["deployed", *(["traced"] if traced_too and subject.traced_too else [])] for subject in subjects
    }
    samples = {(variant, subject.label): Samples() for subject in subjects for variant in measured[subject]}
    statuses: dict[str, int] = {}  # a route a later change made answer otherwise is still measured, and said so
    with _backend() as (endpoint, core), _local_lambda() as lambda_endpoint:
        environments = {variant: _environment(endpoint, lambda_endpoint, on) for variant, on in variants.items()}
        floor_events = {
            "floor-http": api_event("GET", f"{_sub_queue(READER)}/stats", "/queues/{q}/clients/{c}/stats"),
            "floor-event": {"action": "sweep"},
        }
        for _ in range(repeats):
            for floor in floors:
                by_floor[floor].add(_answer(environments["deployed"], floor_events[floor], floor, TABLE))
            for subject in subjects:
                for variant in measured[subject]:
                    names = subject.prepare(core)
                    module = f"functions.{subject.name}.handler"
                    answer = _answer(environments[variant], subject.event(names), "function", module)
                    if answer["status"] >= 500:
                        raise RuntimeError(f"{subject.label} answered {answer['status']}")
                    samples[(variant, subject.label)].add(answer)
                    statuses[subject.label] = answer["status"]
    rows = []
    for subject in subjects:
        floor = by_floor[subject.floor]
        row: dict[str, Any] = {"function": subject.name, "route": subject.route, "floor": subject.floor}
        if statuses.get(subject.label, subject.expected_status) != subject.expected_status:
            row["route"] += f" (answered {statuses[subject.label]})"
        for variant in measured[subject]:
            seen = samples[(variant, subject.label)]
            prefix = "" if variant == "deployed" else f"{variant}_"
            row[f"{prefix}seconds"] = seen.median
            row[f"{prefix}ratio"] = seen.median / floor.median
            row[f"{prefix}cpu_ratio"] = seen.cpu_median / floor.cpu_median
            row[f"{prefix}loaded"] = sorted(seen.loaded)
        rows.append(row)
    return {
        "repeats": repeats,
        "python": sys.version.split()[0],
        "tracing_default": DEFAULT_TRACING,
        "floors": {floor: samples.median for floor, samples in by_floor.items()},
        "floors_cpu": {floor: samples.cpu_median for floor, samples in by_floor.items()},
        "rows": rows,
        "target_ratio": TARGET_RATIO,
    }


def _layer_without_bytecode(into: Path) -> Path:
    """The layer's packages (`layers/requirements.txt` and ours) as a layer built without byte-code holds them."""
    from importlib import metadata

    for line in (ROOT / "layers" / "requirements.txt").read_text().splitlines():
        name = line.split("#", 1)[0].split("==")[0].strip()
        for file in (metadata.distribution(name).files or []) if name else []:
            source = Path(str(file.locate()))
            if "__pycache__" in file.parts or file.suffix == ".pyc" or ".." in file.parts or not source.is_file():
                continue
            (into / file).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, into / file)
    shutil.copytree(LAYER, into, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), dirs_exist_ok=True)
    return into


def sweeper_alone(repeats: int) -> dict[str, Any]:
    """The sweeper's first pass on the table `_backend` leaves (two queues, three sub-queues, a message each), in
    turns with its floor. In `measure` it sweeps whatever every subject before it made, repeat after repeat (the
    queues the create and update routes made, replays, archives), a pass that grows with the run."""
    (sweeper,) = [subject for subject in SUBJECTS if subject.name == "visibility_sweeper"]
    floor, samples = Samples(), Samples()
    with _backend() as (endpoint, core), _local_lambda() as lambda_endpoint:
        environment = _environment(endpoint, lambda_endpoint, DEFAULT_TRACING)
        for _ in range(repeats):
            floor.add(_answer(environment, {"action": "sweep"}, "floor-event", TABLE))
            event = sweeper.event(sweeper.prepare(core))
            samples.add(_answer(environment, event, "function", "functions.visibility_sweeper.handler"))
    return {
        "seconds": samples.median,
        "ratio": samples.median / floor.median,
        "cpu_ratio": samples.cpu_median / floor.cpu_median,
        "floor_seconds": floor.median,
    }


def without_bytecode(repeats: int) -> dict[str, Any]:
    """The poller and the HTTP floor once more, their packages loaded from a layer without byte-code (each cold
    start then compiles every module it imports from the layer; the runtime's own boto3 keeps its byte-code)."""
    (poller,) = [subject for subject in SUBJECTS if subject.label == "poller receive"]
    with_code, without = Samples(), Samples()
    floor_with, floor_without = Samples(), Samples()
    with tempfile.TemporaryDirectory() as folder, _backend() as (endpoint, core), _local_lambda() as lambda_endpoint:
        layer = _layer_without_bytecode(Path(folder))
        compiled = _environment(endpoint, lambda_endpoint, DEFAULT_TRACING)
        source_only = {
            **compiled,
            "PYTHONPATH": os.pathsep.join([str(layer), str(ROOT)]),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        floor_event = api_event("GET", f"{_sub_queue(READER)}/stats", "/queues/{q}/clients/{c}/stats")
        for _ in range(repeats):
            for environment, floor, samples in (
                (compiled, floor_with, with_code),
                (source_only, floor_without, without),
            ):
                floor.add(_answer(environment, floor_event, "floor-http", TABLE))
                event = poller.event(poller.prepare(core))
                samples.add(_answer(environment, event, "function", "functions.poller.handler"))
    return {
        "floor_seconds": floor_with.median,
        "floor_cpu": floor_with.cpu_median,
        "floor_without_seconds": floor_without.median,
        "floor_without_cpu": floor_without.cpu_median,
        "poller_seconds": with_code.median,
        "poller_cpu": with_code.cpu_median,
        "poller_without_seconds": without.median,
        "poller_without_cpu": without.cpu_median,
    }


def run(quick: bool = False) -> dict[str, Any]:
    figures = measure(SUBJECTS, repeats=1 if quick else REPEATS)
    figures["bytecode"] = without_bytecode(repeats=1 if quick else BYTECODE_REPEATS)
    figures["sweeper_alone"] = sweeper_alone(repeats=1 if quick else REPEATS)
    alone = figures["sweeper_alone"]
    print(
        f"  sweeper alone (a table of two queues): {alone['seconds'] * 1000:.0f} ms ({alone['ratio']:.2f}x, "
        f"CPU {alone['cpu_ratio']:.2f}x)"
    )
    code = figures["bytecode"]
    print(
        f"  layer without byte-code: poller CPU {code['poller_cpu'] * 1000:.0f} -> "
        f"{code['poller_without_cpu'] * 1000:.0f} ms, floor CPU {code['floor_cpu'] * 1000:.0f} -> "
        f"{code['floor_without_cpu'] * 1000:.0f} ms"
    )
    for floor, seconds in figures["floors"].items():
        print(f"  {floor:<20}: {seconds * 1000:6.0f} ms")
    for row in figures["rows"]:
        traced = (
            f"; tracing on {row['traced_seconds'] * 1000:5.0f} ms ({row['traced_ratio']:.2f}x)"
            if "traced_seconds" in row
            else ""
        )
        print(
            f"  {row['function'] + ' ' + row['route']:<42}: {row['seconds'] * 1000:6.0f} ms ({row['ratio']:.2f}x, "
            f"CPU {row['cpu_ratio']:.2f}x){traced}"
        )
    return figures


def summary_rows(figures: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """The summary table's rows, tracing as deployed: the slowest route of each HTTP function against its floor
    (every route is in the section's table), then the functions that answer other events."""
    rows = figures["rows"]
    http = [row for row in rows if row["floor"] == "floor-http"]
    slowest_by_function: dict[str, dict[str, Any]] = {}
    for row in http:
        if row["function"] not in slowest_by_function or row["ratio"] > slowest_by_function[row["function"]]["ratio"]:
            slowest_by_function[row["function"]] = row
    slowest = max(http, key=lambda row: row["ratio"])
    per_function = ", ".join(
        f"{row['function']} {row['ratio']:.2f} ({row['route']})" for row in slowest_by_function.values()
    )
    events = [row for row in rows if row["floor"] != "floor-http"]
    event_figures = ", ".join(f"{row['function']} {row['ratio']:.2f}" for row in events)
    alone = figures.get("sweeper_alone")
    if alone:
        event_figures += (
            f"; the sweeper alone, on the run's starting table of two queues, {alone['ratio']:.2f} "
            f"(CPU {alone['cpu_ratio']:.2f})"
        )
    tracing = "on" if figures["tracing_default"] else "off"
    summary = [
        (
            f"cold start to first answer ÷ a bare Powertools handler's, every route of every HTTP function "
            f"({len(http)} routes), tracing as deployed ({tracing})",
            f"≤ {figures['target_ratio']}",
            f"slowest {slowest['function']} {slowest['route']} {slowest['ratio']:.2f}; each function's slowest: "
            f"{per_function}",
            "yes" if all(row["ratio"] <= figures["target_ratio"] for row in http) else "**no**",
        )
    ]
    if events:
        summary.append(
            (
                "the same, functions of other events (the sweeper's first answer is a whole sweep)",
                f"≤ {figures['target_ratio']} (sweeper ≤ {SWEEPER_TARGET_RATIO})",
                event_figures,
                "yes"
                if all(
                    row["ratio"] <= _target(figures, row) for row in events if row["function"] != "visibility_sweeper"
                )
                and (alone or {"ratio": 0})["ratio"] <= SWEEPER_TARGET_RATIO
                else "**no**",
            )
        )
    return summary


def _target(figures: dict[str, Any], row: dict[str, Any]) -> float:
    return SWEEPER_TARGET_RATIO if row["function"] == "visibility_sweeper" else figures["target_ratio"]


def section(figures: dict[str, Any]) -> list[str]:
    """This scenario's part of docs/benchmarks.md."""
    paragraphs = [" ".join(part.split()) for part in (__doc__ or "").strip().split("\n\n")]
    lines = [
        "\n## Cold start to first answer\n",
        f"Backend: moto's server on this machine (Python {figures['python']}, median of {figures['repeats']} fresh "
        f"interpreters each). {paragraphs[0]}\n",
        *(paragraph + "\n" for paragraph in paragraphs[1:]),
        "| function | route | floor (ms) | first answer (ms) | ÷ floor | CPU ÷ floor's CPU | met (≤ "
        f"{figures['target_ratio']}; sweeper ≤ {SWEEPER_TARGET_RATIO}) | tracing on (ms) | ÷ floor |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in figures["rows"]:
        floor_ms = figures["floors"][row["floor"]] * 1000
        met = "yes" if row["ratio"] <= _target(figures, row) else "**no**"
        traced = f"{row['traced_seconds'] * 1000:.0f} | {row['traced_ratio']:.2f}" if "traced_seconds" in row else "| "
        lines.append(
            f"| {row['function']} | {row['route']} | {row['floor'].removeprefix('floor-')} {floor_ms:.0f} "
            f"| {row['seconds'] * 1000:.0f} "
            f"| {row['ratio']:.2f} | {row['cpu_ratio']:.2f} | {met} | {traced} |"
        )
    alone = figures.get("sweeper_alone")
    if alone:
        lines.append(
            "\nThe sweeper's row above sweeps what every subject before it made, repeat after repeat (queues created "
            "and changed, replays, archives): its pass grows with the run. Alone, in turns with its floor on the "
            "table the run starts from (two queues, three sub-queues, a message each), its first pass took "
            f"{alone['seconds'] * 1000:.0f} ms against {alone['floor_seconds'] * 1000:.0f} ms: "
            f"{alone['ratio']:.2f} (CPU {alone['cpu_ratio']:.2f}), the figure its target is judged on."
        )
    code = figures.get("bytecode")
    if code:
        lines.append(
            "\nByte-code. A Lambda layer is read-only: modules it ships without byte-code are compiled again by "
            "every cold start. The same poller first answer with its layer's packages (pydantic, Powertools, ours) "
            f"without byte-code took {code['poller_without_cpu'] * 1000:.0f} ms of CPU instead of "
            f"{code['poller_cpu'] * 1000:.0f} ms ({code['poller_without_seconds'] * 1000:.0f} ms instead of "
            f"{code['poller_seconds'] * 1000:.0f} ms wall); the floor, its Powertools in such a layer too, "
            f"{code['floor_without_cpu'] * 1000:.0f} ms instead of {code['floor_cpu'] * 1000:.0f} ms. `infra/layer.py` "
            "ships byte-code when the machine that synthesizes has a Python of the functions' runtime version "
            "(`python3.14`); without one, the layer is built as before and each cold start pays this."
        )
    lines.append(
        f"\nTracing as deployed: {'on' if figures['tracing_default'] else 'off'} (the stack's `tracing` setting; "
        'see the README\'s "Tracing"). ' + NOTES + " Rerun: `.venv/bin/python -m bench.run --only first_answer`.\n"
    )
    return lines
