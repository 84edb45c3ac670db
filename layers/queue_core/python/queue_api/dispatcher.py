"""The dispatcher function's work: which consumer an event wakes, the Lambda invoke, and the metrics.

Events: a DynamoDB stream batch from a consumer's filtered event source mapping (inserts into its sub-queue's
message partitions: keys only, the keys name the sub-queue), or `{"action": "dispatch", "queue", "client"}` from
the sweeper. The delivery itself is `queue_core.push`. The answer is a report and never an error: a stream batch
whose handler fails is retried and holds its shard, and what failed here is delivered by the next wake anyway.

The consumers come from the environment (`PUSH_CONSUMERS`, JSON written by the stack), so the dispatcher needs no
table read to know them; the sweeper reads the same variable and `DISPATCHER_FUNCTION` to wake dispatchers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any, Final

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from .core_client import queue_client
from .observability import NAMESPACE, logger

CONSUMERS_ENV: Final = "PUSH_CONSUMERS"
DISPATCHER_ENV: Final = "DISPATCHER_FUNCTION"
DISPATCH_ACTION: Final = "dispatch"
# The invoke waits for the consumer's whole timeout; the connection is given a little more.
INVOKE_READ_MARGIN_SECONDS: Final = 10
# Per consumer (dimensions `queue` and `client`): report field, metric name, unit.
PUSH_METRICS: Final = (
    ("delivered", "PushDelivered", MetricUnit.Count),
    ("failed", "PushFailed", MetricUnit.Count),
    ("released", "PushReleased", MetricUnit.Count),
    ("moved_to_dlq", "PushMovedToDlq", MetricUnit.Count),
)
PUSH_AGE_METRIC: Final = "PushOldestMessageAgeSeconds"


@cache
def consumers() -> Mapping[tuple[str, str], Any]:
    from queue_core.push import ConsumerSpec

    specs = [ConsumerSpec.from_dict(raw) for raw in json.loads(os.getenv(CONSUMERS_ENV) or "[]")]
    return {(spec.queue, spec.client): spec for spec in specs}


@cache
def lambda_client(read_timeout: int) -> Any:
    """No retries: Lambda's synchronous invoke is not idempotent; a lost answer releases the batch instead."""
    import boto3
    from botocore.config import Config

    config = Config(read_timeout=read_timeout, connect_timeout=5, retries={"total_max_attempts": 1})
    return boto3.client("lambda", config=config)


def lambda_invoke(spec: Any) -> Any:
    from queue_core.push import InvokeAnswer
    from queue_core.sqs_event import encoded

    client = lambda_client(int(spec.timeout_seconds) + INVOKE_READ_MARGIN_SECONDS)

    def invoke(event: dict[str, Any]) -> InvokeAnswer:
        answer = client.invoke(FunctionName=spec.function, InvocationType="RequestResponse", Payload=encoded(event))
        payload = answer["Payload"].read().decode() if answer.get("Payload") is not None else None
        return InvokeAnswer(payload=payload or None, function_error=answer.get("FunctionError"))

    return invoke


def targets(event: Any) -> list[tuple[str, str]]:
    from queue_core.push import woken_sub_queues

    if isinstance(event, Mapping) and isinstance(event.get("Records"), list):
        return woken_sub_queues(event["Records"])
    if isinstance(event, Mapping) and event.get("action") == DISPATCH_ACTION:
        queue, client = event.get("queue"), event.get("client")
        if isinstance(queue, str) and isinstance(client, str):
            return [(queue, client)]
    return []


def dispatch(event: Any, context: Any) -> dict[str, Any]:
    from queue_core import QueueError
    from queue_core.push import Dispatcher
    from queue_core.sqs_event import EventSource

    region = os.getenv("AWS_REGION") or "us-east-1"
    account = str(getattr(context, "invoked_function_arn", "") or "").split(":")[4:5] or ["000000000000"]
    reports = []
    for target in targets(event):
        spec = consumers().get(target)
        if spec is None:
            logger.warning("no push consumer for %s/%s", *target)
            continue
        source = EventSource(region, account[0], spec.queue, spec.client)
        dispatcher = Dispatcher(queue_client(), spec, lambda_invoke(spec), source)
        try:
            report = dispatcher.run(lambda: context.get_remaining_time_in_millis() / 1000)
        except QueueError as error:
            logger.warning("dispatching %s stopped: %s", spec.name, error.message)
            continue
        except Exception:
            logger.exception("dispatching %s failed", spec.name)
            continue
        publish(report.to_dict())
        reports.append(report.to_dict())
    return {"dispatched": reports}


def publish(report: Mapping[str, Any]) -> None:
    """One EMF record per dispatcher run with dimensions `queue` and `client`; nothing for a skipped run."""
    if report.get("skipped") or not report.get("batches"):
        return
    metrics = EphemeralMetrics(namespace=NAMESPACE, service="")
    metrics.add_dimension(name="queue", value=str(report["queue"]))
    metrics.add_dimension(name="client", value=str(report["client"]))
    for key, name, unit in PUSH_METRICS:
        metrics.add_metric(name=name, unit=unit, value=report[key])
    if report.get("oldest_age_ms") is not None:
        metrics.add_metric(name=PUSH_AGE_METRIC, unit=MetricUnit.Seconds, value=report["oldest_age_ms"] / 1000)
    metrics.flush_metrics()


def wake_dispatchers(depths: Iterable[Mapping[str, Any]]) -> int:
    """The sweeper's part: an asynchronous dispatch for each consumer whose sub-queue has visible messages.
    Returns how many were woken; none without consumers."""
    function = os.getenv(DISPATCHER_ENV)
    if not function or not consumers():
        return 0
    from queue_core.push import wake_list

    woken = 0
    for spec in wake_list(list(depths), list(consumers().values())):
        event = {"action": DISPATCH_ACTION, "queue": spec.queue, "client": spec.client}
        try:
            lambda_client(INVOKE_READ_MARGIN_SECONDS).invoke(
                FunctionName=function, InvocationType="Event", Payload=json.dumps(event)
            )
            woken += 1
        except Exception:
            logger.exception("waking the dispatcher of %s failed", spec.name)
    return woken
