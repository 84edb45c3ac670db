"""Alarms and a dashboard: is the queue healthy, is it keeping up, and is anything stuck in the DLQ.

The sweeper publishes through EMF, in the props' namespace, each sub-queue's depths with dimensions `queue` and
`client` (`VisibleMessages`, `InFlightMessages`, `DelayedMessages`, `DlqDepth`, `OldestMessageAgeSeconds`),
and the queue-wide `DlqDepth` (sum) and `OldestMessageAgeSeconds` (maximum) without dimensions: the alarms watch
those two totals, so one alarm covers every queue, including queues created after deployment. The handlers'
counters carry Powertools' `service` dimension; the dashboard sums every series of a name with SEARCH, which
stays right whatever dimensions a publisher adds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct
from queue_core.table import INDEX_NAME

from infra.props import DynamoQueueProps

DLQ_DEPTH: Final = "DlqDepth"
OLDEST_MESSAGE_AGE: Final = "OldestMessageAgeSeconds"
# Each queue's shard count, published by the sweeper (dimension `queue`).
SHARDS: Final = "Shards"
SUB_QUEUE_DEPTHS: Final = ("VisibleMessages", "InFlightMessages", "DelayedMessages")
SUB_QUEUE_DIMENSIONS: Final = ("client", "queue")
THROUGHPUT_METRICS: Final = (
    "MessagesSent",
    "MessagesReceived",
    "MessagesDeleted",
    "MessagesRedriven",
    "MessagesMovedToDlq",
)
CLAIM_CONFLICTS: Final = "ClaimConflicts"
DASHBOARD_PERIOD: Final = cdk.Duration.minutes(1)


class Monitoring(Construct):
    """Alarms (optionally notifying an encrypted SNS topic) and one dashboard for the whole queue."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.ITable,
        functions: Mapping[str, lambda_.Function],
        api: apigateway.RestApi,
        props: DynamoQueueProps,
    ) -> None:
        super().__init__(scope, construct_id)
        self._props = props
        self._period = cdk.Duration.minutes(max(props.alarm_period_minutes, props.sweeper_interval_minutes))
        self.topic = self._build_topic() if props.wants_alarm_topic else None
        self.alarms: list[cloudwatch.Alarm] = []

        self._alarm(
            "DlqNotEmpty",
            self.queue_metric(DLQ_DEPTH, self._period),
            threshold=props.dlq_depth_alarm_threshold,
            description="Messages reached a dead-letter queue: they failed max_receive_count times",
        )
        self._alarm(
            "OldestMessageTooOld",
            self.queue_metric(OLDEST_MESSAGE_AGE, self._period),
            threshold=props.oldest_message_age_alarm_seconds,
            description=(
                f"A visible message has waited more than {props.oldest_message_age_alarm_seconds} s: "
                "consumers are not keeping up or have stopped"
            ),
        )
        for function in functions.values():
            function_id = function.node.id
            self._alarm(
                f"{function_id}Errors",
                function.metric_errors(period=self._period, statistic="Sum"),
                threshold=0,
                description=f"{function_id} raised errors (unhandled exceptions or timeouts)",
            )
            self._alarm(
                f"{function_id}Throttles",
                function.metric_throttles(period=self._period, statistic="Sum"),
                threshold=0,
                description=f"{function_id} invocations were throttled by Lambda concurrency limits",
            )
        self._alarm(
            "TableThrottled",
            self.table_throttles(table),
            threshold=0,
            description="DynamoDB throttled reads or writes on the queue table or its index",
        )
        self._alarm(
            "DynamoDbUserErrors",
            table.metric_user_errors(period=self._period, statistic="Sum"),
            threshold=props.dynamodb_user_errors_alarm_threshold,
            description=(
                "DynamoDB refused requests as invalid (HTTP 400, not conditional check failures); this "
                "metric covers the whole account and region, not only this table"
            ),
        )
        self._alarm(
            "ApiServerErrors",
            api.metric_server_error(period=self._period, statistic="Sum"),
            threshold=0,
            description="The API answered 5xx: a function failed or timed out behind API Gateway",
        )
        self.dashboard = self._build_dashboard(table, functions, api)

    @property
    def period(self) -> cdk.Duration:
        """What every alarm evaluates: the alarm period, or the sweeper interval when that is longer."""
        return self._period

    def add_alarm(
        self, construct_id: str, metric: cloudwatch.IMetric, *, threshold: float, description: str
    ) -> cloudwatch.Alarm:
        """An alarm added after the queue was built (a push consumer's), notifying the same topic."""
        self._alarm(construct_id, metric, threshold=threshold, description=description)
        return self.alarms[-1]

    def queue_metric(self, name: str, period: cdk.Duration) -> cloudwatch.Metric:
        """A queue-wide figure of the sweeper: the maximum within a period is the one that matters."""
        return cloudwatch.Metric(
            namespace=self._props.metrics_namespace, metric_name=name, statistic="Maximum", period=period
        )

    def search(self, name: str, statistic: str, period: cdk.Duration, *, per_sub_queue: bool = False) -> str:
        """A SEARCH for every series of `name`; `per_sub_queue` keeps only the ones with queue and client."""
        namespace = self._props.metrics_namespace
        scope = (
            "{" + ",".join([f'"{namespace}"', *SUB_QUEUE_DIMENSIONS]) + "}"
            if per_sub_queue
            else f'Namespace="{namespace}"'
        )
        return f"SEARCH('{scope} MetricName=\"{name}\"', '{statistic}', {int(period.to_seconds())})"

    def summed(
        self, name: str, statistic: str, period: cdk.Duration, *, per_sub_queue: bool = False
    ) -> cloudwatch.MathExpression:
        """All series of `name` added up: a counter over its dimension sets, or a depth over sub-queues."""
        search = self.search(name, statistic, period, per_sub_queue=per_sub_queue)
        return cloudwatch.MathExpression(expression=f"SUM({search})", label=name, period=period)

    def per_sub_queue(self, name: str, statistic: str, period: cdk.Duration) -> cloudwatch.MathExpression:
        """One line per (queue, client): which sub-queue is behind."""
        return cloudwatch.MathExpression(
            expression=self.search(name, statistic, period, per_sub_queue=True), label="", period=period
        )

    def per_queue_shards(self, period: cdk.Duration) -> cloudwatch.MathExpression:
        """One line per queue: its shard count, as the sweeper publishes it after each pass."""
        scope = "{" + f'"{self._props.metrics_namespace}",queue' + "}"
        search = f"SEARCH('{scope} MetricName=\"{SHARDS}\"', 'Maximum', {int(period.to_seconds())})"
        return cloudwatch.MathExpression(expression=search, label="", period=period)

    def table_throttles(self, table: dynamodb.ITable) -> cloudwatch.MathExpression:
        """Throttle events of the table and of its index, reads and writes, as one number."""
        metrics: dict[str, cloudwatch.IMetric] = {}
        for event in ("ReadThrottleEvents", "WriteThrottleEvents"):
            metrics[f"t{event[0].lower()}"] = table.metric(event, period=self._period, statistic="Sum")
            metrics[f"i{event[0].lower()}"] = table.metric(
                event,
                period=self._period,
                statistic="Sum",
                dimensions_map={"TableName": table.table_name, "GlobalSecondaryIndexName": INDEX_NAME},
            )
        return cloudwatch.MathExpression(
            expression=" + ".join(f"FILL({name}, 0)" for name in metrics),
            using_metrics=metrics,
            label="Throttle events",
            period=self._period,
        )

    def _alarm(self, construct_id: str, metric: cloudwatch.IMetric, *, threshold: float, description: str) -> None:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        if self.topic is not None:
            alarm.add_alarm_action(cloudwatch_actions.SnsAction(self.topic))
            alarm.add_ok_action(cloudwatch_actions.SnsAction(self.topic))
        self.alarms.append(alarm)

    def _build_topic(self) -> sns.Topic:
        # CloudWatch cannot publish to a topic under the AWS managed SNS key, so the topic has its own key that
        # CloudWatch may use.
        key = kms.Key(
            self,
            "AlarmTopicKey",
            description="Encrypts the dynamo-queue alarm topic",
            enable_key_rotation=True,
            removal_policy=self._props.removal_policy,
        )
        key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*")
        topic = sns.Topic(self, "AlarmTopic", master_key=key, enforce_ssl=True)
        if self._props.alarm_email:
            topic.add_subscription(subscriptions.EmailSubscription(self._props.alarm_email))
        return topic

    def _build_dashboard(
        self, table: dynamodb.ITable, functions: Mapping[str, lambda_.Function], api: apigateway.RestApi
    ) -> cloudwatch.Dashboard:
        period = DASHBOARD_PERIOD
        dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=cdk.Duration.hours(3))
        dashboard.add_widgets(
            _graph(
                "Queue depth (all sub-queues)",
                [self.summed(name, "Maximum", period, per_sub_queue=True) for name in SUB_QUEUE_DEPTHS]
                + [self.queue_metric(DLQ_DEPTH, period)],
            ),
            cloudwatch.GraphWidget(
                title="Oldest visible message (seconds)",
                left=[self.queue_metric(OLDEST_MESSAGE_AGE, period)],
                left_annotations=[
                    cloudwatch.HorizontalAnnotation(value=self._props.oldest_message_age_alarm_seconds, label="alarm")
                ],
                width=12,
            ),
        )
        dashboard.add_widgets(
            _graph(
                "Throughput (messages per minute)",
                [self.summed(name, "Sum", period) for name in THROUGHPUT_METRICS],
            ),
            _graph(
                "Claim conflicts",
                [
                    self.summed(CLAIM_CONFLICTS, "Sum", period),
                    table.metric_conditional_check_failed_requests(period=period, statistic="Sum"),
                    table.metric("TransactionConflict", period=period, statistic="Sum"),
                ],
            ),
        )
        dashboard.add_widgets(
            _graph("Oldest message age per sub-queue", [self.per_sub_queue(OLDEST_MESSAGE_AGE, "Maximum", period)]),
            _graph("DLQ depth per sub-queue", [self.per_sub_queue(DLQ_DEPTH, "Maximum", period)]),
        )
        dashboard.add_widgets(
            _graph("Shards per queue (automatic ones follow their load)", [self.per_queue_shards(period)], 24)
        )
        dashboard.add_widgets(
            _graph(
                "Function invocations",
                [fn.metric_invocations(period=period, label=fn.node.id) for fn in functions.values()],
                width=8,
            ),
            _graph(
                "Function errors and throttles",
                [fn.metric_errors(period=period, label=f"{fn.node.id} errors") for fn in functions.values()]
                + [fn.metric_throttles(period=period, label=f"{fn.node.id} throttles") for fn in functions.values()],
                width=8,
            ),
            _graph(
                "Function duration p99 (ms)",
                [fn.metric_duration(period=period, statistic="p99", label=fn.node.id) for fn in functions.values()],
                width=8,
            ),
        )
        dashboard.add_widgets(
            _graph(
                "API requests and errors",
                [
                    api.metric_count(period=period, statistic="Sum"),
                    api.metric_client_error(period=period, statistic="Sum"),
                    api.metric_server_error(period=period, statistic="Sum"),
                ],
                width=8,
            ),
            _graph(
                "API latency p99 (ms)",
                [
                    api.metric_latency(period=period, statistic="p99"),
                    api.metric_integration_latency(period=period, statistic="p99"),
                ],
                width=8,
            ),
            _graph(
                "Table capacity and throttling",
                [
                    table.metric_consumed_read_capacity_units(period=period, statistic="Sum"),
                    table.metric_consumed_write_capacity_units(period=period, statistic="Sum"),
                    self.table_throttles(table),
                ],
                width=8,
            ),
        )
        dashboard.add_widgets(cloudwatch.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=24, height=4))
        return dashboard


def _graph(title: str, metrics: Sequence[cloudwatch.IMetric], width: int = 12) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(title=title, left=list(metrics), width=width)
