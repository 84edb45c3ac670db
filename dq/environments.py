"""Lambda-like execution environments for the local server: a process per concurrent invocation of a function.

Lambda runs one event at a time in an environment and scales out by adding environments. The handlers rely on
that: Powertools' resolver, logger and metrics keep the current invocation's state in module globals. Running two
requests at once in one interpreter would mix that state (one request's path parameters under another's route),
so each environment here is a process that imports one function's handler the way Lambda does (the function's
directory and the layer's `python/` on the path, `handler.lambda_handler` called with a context), takes one event
at a time, and is reused by later invocations. A long poll holds one poller environment; a send runs beside it in
a producer environment.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final

# The deployed functions' handlers: `dq/functions` links to the checkout's `functions/` and the wheel ships a copy
# of them there, so `dq local` runs the same handlers from a checkout and from `pip install 'dynamo-queue[local]'`.
FUNCTIONS_DIR: Final = Path(__file__).resolve().parent / "functions"
# The layer's packages in a checkout; an installed package imports them from site-packages instead.
LAYER_DIR: Final = Path(__file__).resolve().parents[1] / "layers" / "queue_core" / "python"

# The deployed functions' timeouts: the poller outlasts a 20 s long poll, the sweeper a full sweep.
TIMEOUT_SECONDS: Final = {
    "producer": 15.0,
    "poller": 30.0,
    "dlq_redriver": 60.0,
    "visibility_sweeper": 120.0,
    "sqs": 30.0,
}
MEMORY_MB: Final = 256
INIT_TIMEOUT_SECONDS: Final = 60.0
MAX_ENVIRONMENTS_PER_FUNCTION: Final = 16


class InvocationError(Exception):
    """The function failed, timed out or could not start; `status` is what API Gateway would answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class LocalContext:
    """The parts of Lambda's context object that handlers and Powertools read."""

    function_name: str
    aws_request_id: str
    deadline: float
    memory_limit_in_mb: int = MEMORY_MB
    function_version: str = "$LATEST"
    log_group_name: str = field(default="")
    log_stream_name: str = "local"

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:local:000000000000:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.time()) * 1000))


def _run_environment(function: str, environ: Mapping[str, str], connection: Connection) -> None:
    """The environment process: set up like Lambda, import the handler once, then answer events until told to
    stop. Ctrl-C is the server's to handle; the server ends its environments."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.update(environ)
    sys.path[:0] = [str(FUNCTIONS_DIR / function), *([str(LAYER_DIR)] if LAYER_DIR.is_dir() else [])]
    try:
        handler = importlib.import_module("handler").lambda_handler
    except BaseException:
        connection.send(("failed", traceback.format_exc()))
        return
    connection.send(("ready", None))
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        event, deadline, request_id = message
        context = LocalContext(function, request_id, deadline, log_group_name=f"/aws/lambda/{function}")
        try:
            connection.send(("ok", handler(event, context)))
        except BaseException:
            connection.send(("failed", traceback.format_exc()))


class Environment:
    """One process running one function's handler; used by one invocation at a time."""

    def __init__(self, function: str, environ: Mapping[str, str]) -> None:
        spawn = multiprocessing.get_context("spawn")
        self.function = function
        self._connection, child = spawn.Pipe()
        self._process = spawn.Process(
            target=_run_environment, args=(function, dict(environ), child), name=f"dq-{function}", daemon=True
        )
        self._process.start()
        child.close()
        self._ready = False

    def invoke(self, event: Any, timeout: float) -> Any:
        """The handler's answer; raises `InvocationError` (and the environment is then unusable) when the
        handler raised, timed out or the process died."""
        if not self._ready:
            self._receive(INIT_TIMEOUT_SECONDS, "start")
            self._ready = True
        self._connection.send((event, time.time() + timeout, str(uuid.uuid4())))
        return self._receive(timeout, "run")

    def _receive(self, timeout: float, stage: str) -> Any:
        try:
            if not self._connection.poll(timeout):
                raise InvocationError(504, f"{self.function} timed out after {timeout:.0f} s")
            kind, payload = self._connection.recv()
        except (EOFError, OSError) as error:
            raise InvocationError(502, f"{self.function} stopped unexpectedly") from error
        if kind == "failed":
            raise InvocationError(502, f"{self.function} failed to {stage}:\n{payload}")
        return payload

    def close(self) -> None:
        """Asks the process to stop, and ends it if it does not (a long poll in progress)."""
        self.ask_to_stop()
        self.finish(time.monotonic() + 0.5)

    def ask_to_stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._connection.send(None)

    def finish(self, deadline: float) -> None:
        """Waits for the process until `deadline` (after `ask_to_stop`), then ends it."""
        self._process.join(timeout=max(0.0, deadline - time.monotonic()))
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout=2)
        # The pipe's descriptor may be closed already by another library of the same process that closed a number
        # it once held (a Celery worker's event loop at its shutdown, in the SQS client tests): the process is
        # ended either way.
        with contextlib.suppress(OSError):
            self._connection.close()


class EnvironmentPool:
    """Idle environments per function, started on demand up to a limit, reused like Lambda's warm ones."""

    def __init__(self, environ: Mapping[str, str], max_per_function: int = MAX_ENVIRONMENTS_PER_FUNCTION) -> None:
        self._environ = dict(environ)
        self._max = max_per_function
        self._lock = threading.Condition()
        self._idle: dict[str, list[Environment]] = {}
        self._busy: dict[str, int] = {}
        self._all: list[Environment] = []
        self._closed = False

    def warm(self, functions: Iterable[str]) -> None:
        """Starts one environment per function now, so the first requests do not wait for a cold start."""
        with self._lock:
            for function in functions:
                environment = Environment(function, self._environ)
                self._all.append(environment)
                self._idle.setdefault(function, []).append(environment)

    def invoke(self, function: str, event: Any) -> Any:
        environment = self._acquire(function)
        try:
            answer = environment.invoke(event, TIMEOUT_SECONDS[function])
        except BaseException:
            self._discard(environment)
            raise
        self._release(environment)
        return answer

    def _acquire(self, function: str) -> Environment:
        with self._lock:
            while True:
                if self._closed:
                    raise InvocationError(503, "the local server is stopping")
                idle = self._idle.setdefault(function, [])
                if idle:
                    environment = idle.pop()
                    break
                if self._busy.get(function, 0) < self._max:
                    environment = Environment(function, self._environ)
                    self._all.append(environment)
                    break
                self._lock.wait()
            self._busy[function] = self._busy.get(function, 0) + 1
            return environment

    def _release(self, environment: Environment) -> None:
        with self._lock:
            self._busy[environment.function] -= 1
            if self._closed:
                environment.close()
            else:
                self._idle.setdefault(environment.function, []).append(environment)
            self._lock.notify_all()

    def _discard(self, environment: Environment) -> None:
        with self._lock:
            self._busy[environment.function] -= 1
            if environment in self._all:
                self._all.remove(environment)
            self._lock.notify_all()
        environment.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            environments, self._all = self._all, []
            self._idle.clear()
            self._lock.notify_all()
        # All are asked at once and given the same half second: a server with many functions, some of them still
        # starting on a busy machine, stops in seconds rather than seconds per function.
        for environment in environments:
            environment.ask_to_stop()
        deadline = time.monotonic() + 0.5
        for environment in environments:
            environment.finish(deadline)
