"""`dq local`: the whole HTTP API on http://127.0.0.1:8080, backed by an embedded DynamoDB, no AWS account.

Each request becomes the API Gateway REST proxy event the deployed API would send, goes to the real handler of
the function that owns the route (in a Lambda-like environment, see `environments`), and the handler's proxy
answer goes back as HTTP. The sweeper's handler runs on its schedule in a background thread, as EventBridge
Scheduler would run it. The server binds to the loopback interface only. The embedded DynamoDB and S3 keep
their data in a folder across restarts (`dq.data_dir`), or in memory only when asked.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final, TextIO
from urllib.parse import urlsplit

from queue_api.operations import FUNCTIONS as REST_FUNCTIONS
from sqs_api.routes import FUNCTION as SQS_FUNCTION

from . import routes
from .environments import FUNCTIONS_DIR, EnvironmentPool, InvocationError
from .local_defaults import (
    DEFAULT_DATA_DIR,
    DEFAULT_DYNAMODB_PORT,
    DEFAULT_PORT,
    DEFAULT_SWEEP_INTERVAL,
    DEFAULT_TABLE,
    HOST,
)
from .proxy import http_answer, proxy_event

# The embedded moto serves S3 too: large bodies are offloaded to this bucket, created at start.
LOCAL_BUCKET: Final = "dynamo-queue-local-bodies"
# API Gateway refuses payloads over 10 MB before any function runs.
MAX_PAYLOAD_BYTES: Final = 10 * 1024 * 1024
DEMO_QUEUE: Final = "demo"
DEMO_CLIENT: Final = "me"
# The REST API's functions and the one that speaks SQS at `POST /`, `POST /sqs/{client}` and `POST /sqs-admin`.
FUNCTIONS: Final = (*REST_FUNCTIONS, SQS_FUNCTION)


class LocalServerError(Exception):
    """The server cannot start; the message is one line meant for the user."""


def function_environment(table: str, dynamodb_endpoint: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment variables the functions get: the table, the endpoint, a region, and fake credentials
    when none are configured (any credentials work against a local DynamoDB). Quiet logs and no EMF output
    unless asked for, so the console shows one line per request."""
    base = os.environ if base is None else base
    region = base.get("AWS_REGION") or base.get("AWS_DEFAULT_REGION") or "us-east-1"
    environ = {
        "TABLE_NAME": table,
        "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_endpoint,
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": base.get("POWERTOOLS_LOG_LEVEL") or base.get("LOG_LEVEL") or "WARNING",
        "POWERTOOLS_METRICS_DISABLED": base.get("POWERTOOLS_METRICS_DISABLED", "true"),
    }
    configured = base.get("AWS_PROFILE") or (base.get("AWS_ACCESS_KEY_ID") and base.get("AWS_SECRET_ACCESS_KEY"))
    if not configured:
        environ.update(AWS_ACCESS_KEY_ID="local", AWS_SECRET_ACCESS_KEY="local")
    return environ


class LocalServer:
    """The local API: start(), then requests are served until stop(). Usable as a context manager."""

    def __init__(
        self,
        port: int = DEFAULT_PORT,
        dynamodb_endpoint: str | None = None,
        table: str = DEFAULT_TABLE,
        sweep_interval: float = DEFAULT_SWEEP_INTERVAL,
        log: TextIO | None = None,
        consumers: Sequence[str] = (),
        dynamodb_port: int = 0,
        data_dir: Path | str | None = None,
        reset: bool = False,
    ) -> None:
        """`data_dir`: the folder where the embedded DynamoDB keeps its data across restarts (`None`: in memory,
        gone at stop); `reset` empties it first."""
        self.port = port
        self.dynamodb_port = dynamodb_port
        self.consumer_options = list(consumers)
        self.push: Any = None
        self.dynamodb_endpoint = dynamodb_endpoint
        self.table = table
        self.sweep_interval = sweep_interval
        self.log = log
        self._log_lock = threading.Lock()
        self._http: ThreadingHTTPServer | None = None
        self._dynamodb: Any = None
        self.data_dir = None if data_dir is None else Path(data_dir)
        self.reset = reset
        self._store: Any = None
        self._pool: EnvironmentPool | None = None
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> LocalServer:
        """Binds the port and takes the data folder first (a taken port or a folder in use fails fast), then
        starts DynamoDB (rebuilt from the folder), the table, the functions' first environments, the HTTP server
        and the sweeper schedule."""
        missing = [name for name in FUNCTIONS if not (FUNCTIONS_DIR / name / "handler.py").is_file()]
        if missing:
            raise LocalServerError(
                f"no handler for {', '.join(missing)} under {FUNCTIONS_DIR}: reinstall dynamo-queue[local]"
            )
        consumers = _load_consumers(self.consumer_options)
        self._http = _bind(self.port, self)
        self.port = self._http.server_address[1]
        try:
            self._store = self._open_data_dir()
            if self.dynamodb_endpoint is None:
                from .embedded_dynamodb import EmbeddedDynamoDB

                self._dynamodb = EmbeddedDynamoDB(HOST, self.dynamodb_port, self._store)
                self.dynamodb_endpoint = _start_embedded(self._dynamodb, self.dynamodb_port)
            environ = function_environment(self.table, self.dynamodb_endpoint)
            if self._dynamodb is not None:
                environ.update(AWS_ENDPOINT_URL_S3=self.dynamodb_endpoint, QUEUE_BUCKET=LOCAL_BUCKET)
                _create_bucket(LOCAL_BUCKET, environ)
            _create_table(self.table, environ)
            self._pool = EnvironmentPool(environ)
            self._pool.warm(FUNCTIONS)
            if consumers:
                self.push = _push_consumers(self, consumers, environ)
        except BaseException:
            self.stop()
            raise
        self._spawn(self._http.serve_forever, "dq-http")
        if self.sweep_interval > 0:
            self._spawn(self._sweep_on_schedule, "dq-sweeper")
        return self

    def _open_data_dir(self) -> Any:
        """The embedded DynamoDB's folder, locked; None when it keeps its data in memory or is not embedded."""
        if self.data_dir is None or self.dynamodb_endpoint is not None:
            return None
        from .data_dir import DataDir, DataDirError

        try:
            return DataDir(self.data_dir).open(reset=self.reset)
        except DataDirError as error:
            raise LocalServerError(str(error)) from None

    def _spawn(self, target: Any, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self) -> None:
        self._stopping.set()
        if self.push is not None:
            self.push.stop()
        if self._http is not None:
            if any(thread.name == "dq-http" for thread in self._threads):
                self._http.shutdown()
            self._http.server_close()
        if self._pool is not None:
            self._pool.close()
        for thread in self._threads:
            thread.join(timeout=5)
        if self._dynamodb is not None:
            self._dynamodb.stop()
            self._dynamodb = None
        if self._store is not None:
            self._store.close()
            self._store = None

    def wait(self, timeout: float) -> bool:
        """Blocks up to `timeout` seconds; True once the server is stopping."""
        return self._stopping.wait(timeout)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def invoke(self, function: str, event: Any) -> Any:
        """Runs `event` through `function`'s handler, as Lambda would."""
        if self._pool is None:
            raise LocalServerError("the server is not started")
        return self._pool.invoke(function, event)

    def _sweep_on_schedule(self) -> None:
        while not self._stopping.wait(self.sweep_interval):
            started = time.monotonic()
            try:
                report = self.invoke("visibility_sweeper", {"action": "sweep"})
            except InvocationError as error:
                self.write_log(f"sweep failed: {error.message}")
                continue
            elapsed = (time.monotonic() - started) * 1000
            if "error" in report:
                self.write_log(f"sweep failed: {report['error'].get('message')}")
                continue
            self.write_log(
                f"sweep {report.get('sub_queues', 0)} sub-queues: {report.get('moved_to_dlq', 0)} to DLQ, "
                f"{report.get('expired_deleted', 0)} expired, {report.get('groups_freed', 0)} groups freed"
                + (f", {report['replayed']} replayed" if report.get("replayed") else "")
                + f" {elapsed:.0f} ms"
            )

    def write_log(self, line: str) -> None:
        if self.log is None:
            return
        with self._log_lock:
            self.log.write(f"{time.strftime('%H:%M:%S')} {line}\n")
            self.log.flush()

    def banner(self) -> str:
        """What `serve` prints on start: where it listens, three commands that work as printed, and the line that
        points the library, boto3 and the AWS CLI at this DynamoDB."""
        sub_queue = f"{self.url}/queues/{DEMO_QUEUE}/clients/{DEMO_CLIENT}"
        json_header = "-H 'Content-Type: application/json'"
        backend = f"embedded moto (and S3 bucket {LOCAL_BUCKET}) at" if self._dynamodb is not None else "at"
        return "\n".join(
            [
                f"dq local: the queue API on {self.url} (DynamoDB: {backend} {self.dynamodb_endpoint}, "
                f"table {self.table})",
                "Try:",
                f"  curl -s -X PUT {self.url}/queues/{DEMO_QUEUE}",
                f'  curl -s -X POST {sub_queue}/messages {json_header} -d \'{{"body": "hello"}}\'',
                f"  curl -s -X POST {sub_queue}/receive {json_header} -d '{{\"wait_seconds\": 5}}'",
                f"SQS (boto3, aws sqs, Celery): endpoint_url={self.url} (client default), {self.url}/sqs/<client>; "
                f"create queues at {self.url}/sqs-admin",
                *self.data_lines(),
                f"Web console (in another terminal; it prints the URL to open): {self.console_command()}",
                "Library, boto3 and aws on this DynamoDB (paste into another terminal):",
                f"  {self.export_line()}",
                "Ctrl-C stops.",
                "",
            ]
        )

    def data_lines(self) -> list[str]:
        """Where the embedded DynamoDB's data lives, what a start found there, and how to start clean; nothing
        for a DynamoDB of the user's own."""
        if self._dynamodb is None:
            return []
        if self._store is None:
            return ["Data: in memory only, gone when this stops (without --in-memory, dq local keeps it)"]
        found = self._store.recovery
        counts = found.counts
        kept = (
            f"{_count(counts.tables, 'table')} of {_count(counts.items, 'item')}, "
            f"{_count(counts.objects, 'object')} in S3"
        )
        lines = [
            f"Data: kept in {self._store.path} across restarts ({'found ' + kept if found.replayed else 'new'}); "
            "start empty with dq local --reset, or keep nothing with --in-memory"
        ]
        if found.torn_bytes:
            lines.append(
                f"Data: dropped an unfinished last write ({found.torn_bytes} bytes) that a crash cut short; "
                "it was never acknowledged"
            )
        if found.failed:
            lines.append(f"Data: {found.failed} kept writes did not apply again; the data may differ from before")
        return lines

    def console_command(self) -> str:
        """`dq console`, with this server's address when it is not the one every `dq` command targets."""
        return "dq console" if self.port == DEFAULT_PORT else f"dq --endpoint {self.url} console"

    def export_line(self) -> str:
        """The shell line that points a new terminal's library, boto3 and AWS CLI at this server's DynamoDB:
        its endpoint, a region, and the dummy keys any local DynamoDB accepts."""
        environ = function_environment(self.table, self.dynamodb_endpoint or "")
        keys = ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
        return "export " + " ".join(f"{key}={environ.get(key, 'local')}" for key in keys)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _start_embedded(dynamodb: Any, port: int) -> str:
    """The embedded DynamoDB's endpoint; a taken port or an unusable data folder is one line for the user, not a
    traceback."""
    from .data_dir import DataDirError

    try:
        return str(dynamodb.start())
    except DataDirError as error:
        raise LocalServerError(str(error)) from None
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise LocalServerError(
                f"port {port} on {HOST} (the embedded DynamoDB) is already in use; choose another with --dynamodb-port"
            ) from None
        raise


def embedded_address(dynamodb_endpoint: str | None, dynamodb_port: int) -> str | None:
    """`None` when `dynamodb_endpoint` names the embedded DynamoDB's own address: the endpoint a previous
    `dq local` printed and the user exported (`AWS_ENDPOINT_URL_DYNAMODB`) means "the embedded one", not an
    existing DynamoDB to connect to."""
    if dynamodb_endpoint is None:
        return None
    own = {f"http://{host}:{dynamodb_port}" for host in (HOST, "localhost")}
    return None if dynamodb_endpoint.rstrip("/") in own else dynamodb_endpoint


class _Server(ThreadingHTTPServer):
    # Workers, the console's reads of many queues at once and a browser each open several connections together:
    # with the standard library's 5, a burst on a busy machine overflows the accept queue, and each connection
    # dropped waits for the kernel's retry (1 s, then 2, 4).
    request_queue_size = 128


def _bind(port: int, server: LocalServer) -> ThreadingHTTPServer:
    try:
        http = _Server((HOST, port), _handler_class(server))
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise LocalServerError(f"port {port} on {HOST} is already in use; choose another with --port") from None
        raise LocalServerError(f"cannot listen on {HOST}:{port}: {error.strerror}") from None
    http.daemon_threads = True
    return http


def _create_bucket(bucket: str, environ: Mapping[str, str]) -> None:
    """Idempotent: the bucket of offloaded bodies in the embedded moto."""
    import boto3

    s3 = boto3.client(
        "s3",
        endpoint_url=environ["AWS_ENDPOINT_URL_S3"],
        region_name=environ["AWS_REGION"],
        aws_access_key_id=environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=environ.get("AWS_SECRET_ACCESS_KEY") or os.environ.get("AWS_SECRET_ACCESS_KEY"),
    )
    try:
        s3.create_bucket(Bucket=bucket)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        return


def _load_consumers(options: Sequence[str]) -> list[Any]:
    """Each `--consumer`'s function, imported before anything starts, so that a typo fails at once."""
    if not options:
        return []
    from .consumers import ConsumerOptionError, load

    try:
        return [load(option) for option in options]
    except ConsumerOptionError as error:
        raise LocalServerError(str(error)) from None


def _push_consumers(server: LocalServer, consumers: list[Any], environ: Mapping[str, str]) -> Any:
    """`--consumer` dispatchers in this process, on the server's table (see `dq.consumers`)."""
    from queue_core import QueueClient

    from .consumers import LocalDispatchers

    client = QueueClient(server.table, dynamodb=_dynamodb_client(environ))
    push = LocalDispatchers(consumers, client, environ["AWS_REGION"], server.sweep_interval, log=server.write_log)
    push.start()
    return push


def _dynamodb_client(environ: Mapping[str, str]) -> Any:
    """Short timeouts: an unreachable endpoint should fail the start in seconds, not minutes."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "dynamodb",
        config=Config(connect_timeout=5, read_timeout=30, retries={"max_attempts": 2}),
        endpoint_url=environ["AWS_ENDPOINT_URL_DYNAMODB"],
        region_name=environ["AWS_REGION"],
        aws_access_key_id=environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=environ.get("AWS_SECRET_ACCESS_KEY") or os.environ.get("AWS_SECRET_ACCESS_KEY"),
    )


def _create_table(table: str, environ: Mapping[str, str]) -> None:
    """Idempotent."""
    from queue_core import QueueClient

    try:
        QueueClient(table, dynamodb=_dynamodb_client(environ)).create_table()
    except Exception as error:
        raise LocalServerError(
            f"cannot create table {table!r} at {environ['AWS_ENDPOINT_URL_DYNAMODB']}: {error}"
        ) from None


def _handler_class(server: LocalServer) -> type[BaseHTTPRequestHandler]:
    class RequestHandler(BaseHTTPRequestHandler):
        """Every method of every path goes to `_serve`; routing is the route table's and the handlers' job."""

        protocol_version = "HTTP/1.1"
        server_version = "dq-local"
        # An answer goes out in two writes (head, then body): with Nagle's algorithm the body waits for the
        # client's delayed ACK of the head, about 40 ms on every request of a kept-alive connection.
        disable_nagle_algorithm = True

        def _serve(self) -> None:
            started = time.monotonic()
            split = urlsplit(self.path)
            match = routes.match(self.command, split.path)
            try:
                status, headers, body = self._answer(split.path, split.query, match)
            except Exception as error:
                server.write_log(f"{self.command} {self.path} failed in the local server: {error!r}")
                self.close_connection = True
                status, headers, body = _error(500, "InternalError", "the local server failed; see its log")
            try:
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in ("content-length", "connection"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                # A client that stops waiting (a long poll cut short, Ctrl-C) is no failure of the server: one line,
                # not socketserver's traceback. Messages a receive claimed come back after their visibility timeout.
                self.close_connection = True
                server.write_log(f"{self.command} {self.path} {status}: the client left before the answer")
                return
            elapsed = (time.monotonic() - started) * 1000
            server.write_log(f"{self.command} {self.path} {status} {elapsed:.0f} ms {match.function}")
            if server.push is not None and status < 300 and self.command == "POST":
                # What the table's stream does for a deployed consumer: a write to its sub-queue wakes it.
                server.push.wake(match.path_parameters.get("q"), match.path_parameters.get("c"))

        def _answer(self, path: str, query: str, match: routes.Match) -> tuple[int, list[tuple[str, str]], bytes]:
            allowed = [] if match.route else routes.allowed_methods(path)
            if allowed:
                # The deployed API declares each route's methods; another method at a route's path never reaches
                # a function. Its body is left unread, so the connection closes.
                self.close_connection = True
                status, headers, body = _error(
                    405, "MethodNotAllowed", f"{self.command} is not a method of {path}; it takes {', '.join(allowed)}"
                )
                return status, [*headers, ("Allow", ", ".join(allowed))], body
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                self.close_connection = True
                return _error(411, "ValidationError", "send the body with a Content-Length, not chunked")
            length_header = self.headers.get("Content-Length") or "0"
            if not length_header.isdigit():
                self.close_connection = True
                return _error(400, "ValidationError", "Content-Length must be a number of bytes")
            length = int(length_header)
            if length > MAX_PAYLOAD_BYTES:
                self.close_connection = True
                return _error(413, "MessageTooLarge", f"request body over {MAX_PAYLOAD_BYTES} bytes")
            body = self.rfile.read(length) if length > 0 else b""
            event = proxy_event(self.command, path, query, self.headers.items(), body, match, self.client_address[0])
            try:
                return http_answer(server.invoke(match.function, event))
            except InvocationError as error:
                server.write_log(error.message)
                return _error(error.status, "InternalError", "the function failed; the details are in the log")

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _serve

        def __getattr__(self, name: str) -> Any:
            """Any other method (TRACE, CONNECT, one made up) is served too, so that it gets the API's answer (405
            at a route's path, 404 elsewhere) rather than http.server's 501 page in HTML."""
            if name.startswith("do_"):
                return self._serve
            raise AttributeError(name)

        def log_message(self, format: str, *args: Any) -> None:
            """Silenced: `_serve` writes one line per request with the function that served it."""

    return RequestHandler


def _error(status: int, code: str, message: str) -> tuple[int, list[tuple[str, str]], bytes]:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return status, [("Content-Type", "application/json")], body


def serve(
    port: int = DEFAULT_PORT,
    dynamodb_endpoint: str | None = None,
    table: str = DEFAULT_TABLE,
    sweep_interval: float = DEFAULT_SWEEP_INTERVAL,
    consumers: Sequence[str] = (),
    dynamodb_port: int = DEFAULT_DYNAMODB_PORT,
    data_dir: str | None = None,
    in_memory: bool = False,
    reset: bool = False,
) -> None:
    """Serves until Ctrl-C, printing the banner and one line per request. The embedded DynamoDB keeps its data in
    `data_dir` (default `DEFAULT_DATA_DIR`) unless `in_memory`. Raises `LocalServerError` when it cannot start
    (the port or the data folder is taken, DynamoDB is unreachable, a `--consumer` cannot be imported)."""
    endpoint = embedded_address(dynamodb_endpoint, dynamodb_port)
    server = LocalServer(
        port,
        endpoint,
        table,
        sweep_interval,
        log=sys.stdout,
        consumers=consumers,
        dynamodb_port=dynamodb_port,
        data_dir=data_folder(endpoint, data_dir, in_memory, reset),
        reset=reset,
    )
    # Python leaves Ctrl-C ignored when the process started with it ignored (a parent that ignores SIGINT, as test
    # runners' workers and some CI shells do): the server would then never stop on it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        server.start()
        sys.stdout.write(server.banner())
        sys.stdout.flush()
        while not server.wait(0.5):
            pass
    except KeyboardInterrupt:
        sys.stdout.write("stopping\n")
    finally:
        server.stop()


def data_folder(endpoint: str | None, data_dir: str | None, in_memory: bool, reset: bool) -> Path | None:
    """The folder the embedded DynamoDB keeps its data in, from the command line's choices; None for none."""
    if endpoint is not None:
        if data_dir or in_memory or reset:
            raise LocalServerError(
                f"--data-dir, --in-memory and --reset are for the embedded DynamoDB; {endpoint} keeps its own data"
            )
        return None
    if in_memory and (data_dir or reset):
        raise LocalServerError("--in-memory keeps nothing: give it no --data-dir nor --reset")
    return None if in_memory else Path(data_dir or DEFAULT_DATA_DIR)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dq local", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port on 127.0.0.1 (default 8080)")
    parser.add_argument(
        "--dynamodb-endpoint",
        default=os.environ.get("AWS_ENDPOINT_URL_DYNAMODB"),
        help="use this DynamoDB instead of the embedded one (default: $AWS_ENDPOINT_URL_DYNAMODB)",
    )
    parser.add_argument(
        "--dynamodb-port", type=int, default=DEFAULT_DYNAMODB_PORT, help="the embedded DynamoDB's port (default 8081)"
    )
    parser.add_argument("--table", default=DEFAULT_TABLE, help=f"table name (default {DEFAULT_TABLE})")
    parser.add_argument(
        "--sweep-interval", type=float, default=DEFAULT_SWEEP_INTERVAL, help="seconds between sweeps; 0: never"
    )
    parser.add_argument(
        "--consumer",
        action="append",
        default=[],
        metavar="QUEUE/CLIENT=package.module:function",
        help="push the sub-queue's messages to this function as SQS events (repeatable; imported from here)",
    )
    parser.add_argument(
        "--data-dir", help=f"the embedded DynamoDB's folder, kept across restarts (default ./{DEFAULT_DATA_DIR})"
    )
    parser.add_argument("--in-memory", action="store_true", help="keep no data: it is gone when the server stops")
    parser.add_argument("--reset", action="store_true", help="empty the data folder before starting")
    options = parser.parse_args(argv)
    try:
        serve(
            options.port,
            options.dynamodb_endpoint,
            options.table,
            options.sweep_interval,
            options.consumer,
            options.dynamodb_port,
            options.data_dir,
            options.in_memory,
            options.reset,
        )
    except LocalServerError as error:
        sys.stderr.write(f"dq local: {error}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
