"""Push consumers of the local server: `dq local --consumer QUEUE/CLIENT=package.module:function`.

Each consumer gets the dispatcher the deployed stack runs (`queue_core.push`), in the server's process, with an
invoke that calls the function in-process with a Lambda-like context and the event as the JSON Lambda would
pass. What wakes it stands in for the stream and the schedule: a send to its sub-queue through the server, and
every sweep interval (released, delayed and expired messages produce no send).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from queue_core import QueueClient
from queue_core.push import ConsumerSpec, Dispatcher, Invoke, InvokeAnswer, covering_visibility
from queue_core.sqs_event import EventSource

from .environments import LocalContext

logger = logging.getLogger("dq.consumers")

LOCAL_ACCOUNT: Final = "000000000000"
# A local consumer's timeout and visibility: what `add_consumer` gives a function with Lambda's default timeout
# would be too short for a debugger; these are a deployed consumer's usual values.
LOCAL_TIMEOUT_SECONDS: Final = 30.0
LOCAL_VISIBILITY_SECONDS: Final = 60
# What a local dispatcher's run says it has left: its slot's lease is this long (a restarted server against a
# lasting DynamoDB finds a dead run's slot free again after it), and it keeps delivering while messages wait.
LOCAL_RUN_SECONDS: Final = 120.0
_OPTION: Final = re.compile(r"(?P<queue>[^/=\s]+)/(?P<client>[^/=\s]+)=(?P<module>[\w.]+):(?P<function>\w+)")

Function = Callable[[dict[str, Any], Any], Any]


class ConsumerOptionError(ValueError):
    """A `--consumer` value that cannot be used; the message says why, in one line."""


@dataclass(frozen=True)
class LocalConsumer:
    spec: ConsumerSpec
    function: Function


def parse_option(value: str) -> tuple[str, str, str, str]:
    """`QUEUE/CLIENT=package.module:function` as (queue, client, module, function)."""
    match = _OPTION.fullmatch(value.strip())
    if match is None:
        raise ConsumerOptionError(f"--consumer {value!r} is not QUEUE/CLIENT=package.module:function")
    return match["queue"], match["client"], match["module"], match["function"]


def load(value: str, timeout_seconds: float = LOCAL_TIMEOUT_SECONDS) -> LocalConsumer:
    """Imports the function from the working directory, as `python -m` would find it."""
    queue, client, module_name, function_name = parse_option(value)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise ConsumerOptionError(f"--consumer {value!r}: cannot import {module_name}: {error}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ConsumerOptionError(f"--consumer {value!r}: {module_name} has no function {function_name}")
    spec = ConsumerSpec(
        queue=queue,
        client=client,
        function=f"{module_name}:{function_name}",
        visibility_timeout=max(LOCAL_VISIBILITY_SECONDS, covering_visibility(timeout_seconds, 0)),
        timeout_seconds=timeout_seconds,
        max_concurrency=1,
    )
    return LocalConsumer(spec, function)


def in_process_invoke(function: Function, name: str, timeout_seconds: float) -> Invoke:
    """Calls `function(event, context)` as Lambda's synchronous invoke would: the event as JSON gives it, the
    answer as JSON, an exception or a run past the timeout reported as a function error. A timed-out call goes
    on in its thread (a process cannot stop a thread), as a timed-out Lambda's side effects may have happened."""

    def invoke(event: dict[str, Any]) -> InvokeAnswer:
        outcome: dict[str, Any] = {}
        context = LocalContext(
            function_name=name, aws_request_id=str(uuid.uuid4()), deadline=time.time() + timeout_seconds
        )
        passed = json.loads(json.dumps(event))

        def call() -> None:
            try:
                outcome["result"] = function(passed, context)
            except Exception as error:
                _log_function_error(name, error)
                outcome["error"] = type(error).__name__

        thread = threading.Thread(target=call, name=f"consumer-{name}", daemon=True)
        thread.start()
        thread.join(timeout_seconds)
        if thread.is_alive():
            return InvokeAnswer(function_error="Sandbox.Timedout")
        if "error" in outcome:
            return InvokeAnswer(function_error=outcome["error"])
        try:
            return InvokeAnswer(payload=json.dumps(outcome.get("result")))
        except (TypeError, ValueError):
            return InvokeAnswer(function_error="Runtime.MarshalError")

    return invoke


def _log_function_error(name: str, error: Exception) -> None:
    """What Lambda logs for a function error: its type, its message and where it was raised. The message is the
    error's `str`, which for Powertools' `BatchProcessingError` ("All records failed processing. N individual
    errors logged separately below.") holds each record's own error and traceback; its `repr` would hold none."""
    individual = getattr(error, "child_exceptions", None)
    logger.warning(
        "consumer %s raised %s: %s", name, type(error).__name__, error, exc_info=None if individual else error
    )


class LocalDispatchers:
    """One dispatcher thread per consumer, woken by `wake(queue, client)` and every `interval` seconds."""

    def __init__(
        self, consumers: Iterable[LocalConsumer], client: QueueClient, region: str, interval: float, log: Any = None
    ) -> None:
        self._consumers = list(consumers)
        self._client = client
        self._region = region
        self._interval = interval if interval > 0 else 60.0
        self._log = log or (lambda line: None)
        self._stopping = threading.Event()
        self._wakes = {(c.spec.queue, c.spec.client): threading.Event() for c in self._consumers}
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for consumer in self._consumers:
            thread = threading.Thread(target=self._loop, args=(consumer,), name=f"dq-push-{consumer.spec.name}")
            thread.daemon = True
            thread.start()
            self._threads.append(thread)

    def wake(self, queue: str | None, client: str | None) -> None:
        event = self._wakes.get((queue, client))
        if event is not None:
            event.set()

    def stop(self) -> None:
        self._stopping.set()
        for event in self._wakes.values():
            event.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def _loop(self, consumer: LocalConsumer) -> None:
        spec = consumer.spec
        source = EventSource(self._region, LOCAL_ACCOUNT, spec.queue, spec.client)
        invoke = in_process_invoke(consumer.function, spec.function, spec.timeout_seconds)
        dispatcher = Dispatcher(self._client, spec, invoke, source)
        wake = self._wakes[(spec.queue, spec.client)]
        while not self._stopping.is_set():
            wake.wait(self._interval)
            wake.clear()
            if self._stopping.is_set():
                return
            try:
                report = dispatcher.run(lambda: 0.0 if self._stopping.is_set() else LOCAL_RUN_SECONDS)
            except Exception as error:
                self._log(f"push {spec.name} failed: {error!r}")
                continue
            if report.batches:
                self._log(
                    f"push {spec.name} -> {spec.function}: {report.delivered} delivered, {report.failed} failed, "
                    f"{report.moved_to_dlq} to DLQ in {report.invocations} invocations"
                )
