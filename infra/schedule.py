"""The sweeper's clock: EventBridge Scheduler invokes it with `{"action": "sweep"}` at a fixed rate."""

from __future__ import annotations

from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as targets
from constructs import Construct

from infra.compliance import acknowledge
from infra.props import DynamoQueueProps

SWEEP_EVENT: Final = {"action": "sweep"}


def build_sweeper_schedule(
    scope: Construct, *, sweeper: lambda_.Function, props: DynamoQueueProps
) -> scheduler.Schedule:
    """A missed or failed sweep is not retried: the next one is at most one interval away and does the same
    work, whereas retries (185 over 24 h by default) would only run beside the scheduled sweeps and skip.
    """
    stack = cdk.Stack.of(scope)
    # Its own role, confined to this account's schedules, instead of one shared by every schedule target of
    # the stack.
    role = iam.Role(
        scope,
        "SweeperScheduleRole",
        assumed_by=iam.ServicePrincipal(
            "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": stack.account}}
        ),
        description="EventBridge Scheduler: invoke the visibility sweeper",
    )
    target = targets.LambdaInvoke(
        sweeper,
        input=scheduler.ScheduleTargetInput.from_object(SWEEP_EVENT),
        retry_attempts=0,
        # The Scheduler's minimum: an invocation that cannot start within a minute is dropped.
        max_event_age=cdk.Duration.minutes(1),
        role=role,
    )
    schedule = scheduler.Schedule(
        scope,
        "SweeperSchedule",
        description="Runs the visibility sweeper: DLQ moves, stuck FIFO groups, expiry, depth metrics",
        schedule=scheduler.ScheduleExpression.rate(cdk.Duration.minutes(props.sweeper_interval_minutes)),
        target=target,
        enabled=props.sweeper_enabled,
    )
    sweeper_id = stack.resolve(stack.get_logical_id(sweeper.node.default_child))
    acknowledge(
        role,
        f"AwsSolutions-IAM5[Resource::<{sweeper_id}.Arn>:*]",
        "lambda:InvokeFunction on the sweeper's versions and aliases (ARN suffix ':*') as CDK's grantInvoke "
        "writes it; the wildcard never leaves this one function",
    )
    return schedule
