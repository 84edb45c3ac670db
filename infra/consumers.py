"""Push consumers: Lambda functions that get a sub-queue's messages as SQS events (`DynamoQueue.add_consumer`).

The first consumer brings what all of them share: a keys-only stream on the table and the dispatcher function
(`functions/dispatcher`, over `queue_core.push`). Each consumer adds an event source mapping on the stream whose
filter lets through only inserts into its sub-queue's message partitions, so the dispatcher runs only when a
message arrives and nothing polls while the sub-queue is idle; the sweeper wakes the dispatcher of a sub-queue
whose messages became visible without an insert (released, delayed, visibility expired). The consumer function is
granted nothing on the table: the dispatcher claims, deletes and releases for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct, Node
from queue_api.dispatcher import (
    CONSUMERS_ENV,
    DISPATCHER_ENV,
    PUSH_AGE_METRIC,
    PUSH_METRICS,
)
from queue_core.errors import ValidationError
from queue_core.keys import message_partition_prefixes
from queue_core.push import SETTLE_MARGIN_SECONDS, ConsumerSpec, covering_visibility

from infra.compliance import acknowledge
from infra.functions import FunctionSpec, build_function
from infra.monitoring import Monitoring
from infra.permissions import check_name
from infra.props import CONTEXT_PREFIX, DynamoQueueProps

# Lambda's longest run: the dispatcher's timeout, so a dispatcher delivers a burst for as long as it can.
DISPATCHER_TIMEOUT_SECONDS: Final = 900
DISPATCHER: Final = FunctionSpec(
    "dispatcher",
    "Dispatcher",
    "Delivers sub-queues' messages to their push consumer functions as SQS events",
    DISPATCHER_TIMEOUT_SECONDS,
)
# Lambda's default timeout, for a function whose timeout the construct cannot read.
LAMBDA_DEFAULT_TIMEOUT_SECONDS: Final = 3
# A failed wake-up is not worth holding the stream for: the sweep wakes the dispatcher again within an interval.
STREAM_RETRY_ATTEMPTS: Final = 2
STREAM_MAX_RECORD_AGE: Final = cdk.Duration.seconds(60)
STREAM_BATCH_SIZE: Final = 100
CONSUMERS_CONTEXT: Final = CONTEXT_PREFIX + "consumers"


def stream_filter(queue: str, client: str) -> dict[str, Any]:
    """The event source mapping's filter pattern: inserts into the sub-queue's message partitions, in any
    generation of the queue (the prefixes stop before the generation). Claims, releases and FIFO group items are
    modifications or other partitions, and are left out."""
    return {
        "eventName": ["INSERT"],
        "dynamodb": {
            "Keys": {"pk": {"S": [{"prefix": prefix} for prefix in message_partition_prefixes(queue, client)]}}
        },
    }


@dataclass(frozen=True)
class PushConsumer:
    spec: ConsumerSpec
    function: lambda_.IFunction
    mapping: lambda_.EventSourceMapping


class PushConsumers(Construct):
    """The stream, the dispatcher and one filtered mapping per consumer; created by the first `add_consumer`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.Table,
        layer: lambda_.ILayerVersion,
        sweeper: lambda_.Function,
        monitoring: Monitoring,
        props: DynamoQueueProps,
        bucket: s3.IBucket,
    ) -> None:
        super().__init__(scope, construct_id)
        self._sweeper = sweeper
        self._monitoring = monitoring
        self._props = props
        self.consumers: list[PushConsumer] = []
        cfn_table = table.node.default_child
        assert isinstance(cfn_table, dynamodb.CfnTable)
        cfn_table.stream_specification = dynamodb.CfnTable.StreamSpecificationProperty(stream_view_type="KEYS_ONLY")
        self.stream_arn: str = cfn_table.attr_stream_arn
        self.dispatcher = build_function(self, DISPATCHER, table=table, layer=layer, props=props, bucket=bucket)
        self.dispatcher.add_to_role_policy(
            iam.PolicyStatement(
                actions=["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"],
                resources=[self.stream_arn],
            )
        )
        self.dispatcher.add_to_role_policy(iam.PolicyStatement(actions=["dynamodb:ListStreams"], resources=["*"]))
        acknowledge(
            self.dispatcher.role,
            "AwsSolutions-IAM5[Resource::*]",
            "dynamodb:ListStreams has no resource-level permissions; the event source mapping's poller lists "
            "streams with the function's role before it reads the table's stream",
        )
        self._sweeper.add_environment(DISPATCHER_ENV, self.dispatcher.function_arn)
        iam.Grant.add_to_principal(
            grantee=self._sweeper,
            actions=["lambda:InvokeFunction"],
            resource_arns=[self.dispatcher.function_arn],
        )
        self._monitoring.add_alarm(
            "DispatcherErrors",
            self.dispatcher.metric_errors(period=self._monitoring.period, statistic="Sum"),
            threshold=0,
            description="The push dispatcher raised errors or timed out",
        )

    def add(
        self,
        function: lambda_.IFunction,
        *,
        queue: str,
        client: str,
        batch_size: int,
        max_batching_window: cdk.Duration | None,
        max_concurrency: int,
        visibility_timeout: cdk.Duration | None,
        function_timeout: cdk.Duration | None,
    ) -> PushConsumer:
        for kind, name in (("queue", queue), ("client", client)):
            check_name(kind, name)
            if name == "*":
                raise ValueError(f"a push consumer takes one sub-queue: name its {kind}, not '*'")
        if any((c.spec.queue, c.spec.client) == (queue, client) for c in self.consumers):
            raise ValueError(f"{queue}/{client} already has a push consumer; a sub-queue pushes to one function")
        timeout = _timeout_seconds(function, function_timeout)
        window = max_batching_window.to_seconds() if max_batching_window is not None else 0
        # Unless given, the shortest that covers the window, one invocation and its settling; a shorter one given
        # is refused by `ConsumerSpec` with that rule.
        visibility = (
            int(visibility_timeout.to_seconds())
            if visibility_timeout is not None
            else covering_visibility(timeout, window)
        )
        room = DISPATCHER_TIMEOUT_SECONDS - SETTLE_MARGIN_SECONDS - window
        if timeout > room:
            raise ValueError(
                f"push consumer {queue}/{client}: its function's timeout ({timeout:g} s) and batching window "
                f"({window:g} s) leave the dispatcher, which waits for the invoke, no time within its own "
                f"{DISPATCHER_TIMEOUT_SECONDS} s; use a timeout of at most {room:g} s"
            )
        try:
            spec = ConsumerSpec(
                queue=queue,
                client=client,
                function=function.function_arn,
                batch_size=batch_size,
                max_batching_window_seconds=window,
                max_concurrency=max_concurrency,
                visibility_timeout=visibility,
                timeout_seconds=timeout,
            )
        except ValidationError as error:
            raise ValueError(f"push consumer {queue}/{client}: {error.message}") from None
        index = len(self.consumers)
        mapping = lambda_.EventSourceMapping(
            self,
            f"Wake{index}",
            target=self.dispatcher,
            event_source_arn=self.stream_arn,
            starting_position=lambda_.StartingPosition.LATEST,
            batch_size=STREAM_BATCH_SIZE,
            retry_attempts=STREAM_RETRY_ATTEMPTS,
            max_record_age=STREAM_MAX_RECORD_AGE,
            filters=[lambda_.FilterCriteria.filter(stream_filter(queue, client))],
        )
        iam.Grant.add_to_principal(
            grantee=self.dispatcher, actions=["lambda:InvokeFunction"], resource_arns=[function.function_arn]
        )
        consumer = PushConsumer(spec, function, mapping)
        self.consumers.append(consumer)
        specs = json.dumps([c.spec.to_dict() for c in self.consumers], separators=(",", ":"))
        self.dispatcher.add_environment(CONSUMERS_ENV, specs)
        self._sweeper.add_environment(CONSUMERS_ENV, specs)
        self._add_alarms(index, spec)
        return consumer

    def _add_alarms(self, index: int, spec: ConsumerSpec) -> None:
        monitoring, namespace = self._monitoring, self._props.metrics_namespace
        dimensions = {"queue": spec.queue, "client": spec.client}

        def metric(name: str, statistic: str) -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace=namespace,
                metric_name=name,
                dimensions_map=dimensions,
                statistic=statistic,
                period=monitoring.period,
            )

        age_limit = self._props.oldest_message_age_alarm_seconds
        alarms = [
            monitoring.add_alarm(
                f"Push{index}MovedToDlq",
                metric("PushMovedToDlq", "Sum"),
                threshold=0,
                description=f"Push consumer {spec.name}: messages failed every allowed delivery and went to the DLQ",
            ),
            monitoring.add_alarm(
                f"Push{index}OldestAtDispatch",
                metric(PUSH_AGE_METRIC, "Maximum"),
                threshold=age_limit,
                description=f"Push consumer {spec.name}: a message waited over {age_limit} s before its delivery",
            ),
        ]
        monitoring.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title=f"Push {spec.name}: deliveries",
                left=[metric(name, "Sum") for _, name, _ in PUSH_METRICS],
                right=[metric(PUSH_AGE_METRIC, "Maximum")],
                width=12,
            ),
            cloudwatch.AlarmStatusWidget(title=f"Push {spec.name}: alarms", alarms=alarms, width=12, height=4),
        )


def _timeout_seconds(function: lambda_.IFunction, given: cdk.Duration | None) -> float:
    """The consumer function's timeout: as given, else as the function says, else Lambda's default."""
    if given is not None:
        return given.to_seconds()
    timeout = getattr(function, "timeout", None)
    if isinstance(timeout, cdk.Duration):
        return timeout.to_seconds()
    if isinstance(function, lambda_.Function):
        return LAMBDA_DEFAULT_TIMEOUT_SECONDS
    raise ValueError("the consumer function's timeout cannot be read from an imported function: pass function_timeout")


def consumers_from_context(node: Node) -> list[dict[str, Any]]:
    """`dynamo-queue:consumers`: a JSON list of consumers for the bundled stack, each
    `{"function_arn", "queue", "client", "function_timeout_seconds"}` and optionally `batch_size`,
    `max_batching_window_seconds`, `max_concurrency`, `visibility_timeout_seconds`."""
    raw = node.try_get_context(CONSUMERS_CONTEXT)
    if raw is None:
        return []
    entries = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(entries, Sequence) or not all(isinstance(entry, Mapping) for entry in entries):
        raise ValueError(f"context {CONSUMERS_CONTEXT} must be a list of consumer objects")
    return [dict(entry) for entry in entries]


CONTEXT_KEYS: Final = frozenset(
    {
        "function_arn",
        "queue",
        "client",
        "function_timeout_seconds",
        "batch_size",
        "max_batching_window_seconds",
        "max_concurrency",
        "visibility_timeout_seconds",
    }
)


def consumer_arguments(scope: Construct, index: int, entry: Mapping[str, Any]) -> dict[str, Any]:
    """`add_consumer`'s arguments for one context entry; the function is imported by its ARN."""
    unknown = set(entry) - CONTEXT_KEYS
    missing = {"function_arn", "queue", "client", "function_timeout_seconds"} - set(entry)
    if unknown or missing:
        raise ValueError(f"context {CONSUMERS_CONTEXT}[{index}]: unknown {sorted(unknown)}, missing {sorted(missing)}")
    seconds = {name: entry.get(name) for name in ("max_batching_window_seconds", "visibility_timeout_seconds")}
    return {
        "fn": lambda_.Function.from_function_arn(scope, f"PushConsumer{index}", str(entry["function_arn"])),
        "queue": str(entry["queue"]),
        "client": str(entry["client"]),
        "batch_size": int(entry.get("batch_size", 10)),
        "max_concurrency": int(entry.get("max_concurrency", 2)),
        "function_timeout": cdk.Duration.seconds(float(entry["function_timeout_seconds"])),
        "max_batching_window": None
        if seconds["max_batching_window_seconds"] is None
        else cdk.Duration.seconds(float(seconds["max_batching_window_seconds"])),
        "visibility_timeout": None
        if seconds["visibility_timeout_seconds"] is None
        else cdk.Duration.seconds(float(seconds["visibility_timeout_seconds"])),
    }
