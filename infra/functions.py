"""The Lambda functions: thin handlers in `functions/<name>/`, the queue core from the layer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.compliance import acknowledge
from infra.function_environment import function_environment
from infra.paths import FUNCTIONS_DIR
from infra.permissions import grant_function_bucket_access, grant_function_table_access
from infra.props import DynamoQueueProps

# The newest Python the CDK knows (cdk-nag's AwsSolutions-L1 asks for it), by default on Graviton, which costs
# less per second than x86 for the same work (`DynamoQueueProps.architecture`).
RUNTIME: Final = lambda_.Runtime.PYTHON_3_14
ARCHITECTURES: Final = {"arm64": lambda_.Architecture.ARM_64, "x86_64": lambda_.Architecture.X86_64}
HANDLER: Final = "handler.lambda_handler"
# API Gateway stops waiting for a Lambda integration after 29 s: a function behind the API stops then too,
# rather than go on working for a caller that has already been answered 504.
API_INTEGRATION_TIMEOUT_SECONDS: Final = 29


@dataclass(frozen=True)
class FunctionSpec:
    """One function: its folder under `functions/`, its construct id, and what bounds its run time.
    `reservable`: the props' `sweeper_reserved_concurrency` applies to it."""

    name: str
    construct_id: str
    description: str
    timeout_seconds: int
    reservable: bool = False


FUNCTIONS: Final = (
    # Sends up to 25 messages in one call: a handful of DynamoDB round trips.
    FunctionSpec("producer", "Producer", "Creates, describes, lists and deletes queues; sends messages", 15),
    # Covers a 20 s long poll plus the claims after it.
    FunctionSpec(
        "poller",
        "Poller",
        "Receives, deletes, changes visibility, releases, peeks, gets, cancels, purges; reports stats",
        API_INTEGRATION_TIMEOUT_SECONDS,
    ),
    # A redrive moves one message per write, each kept once made: a DLQ too large for one call is redriven in
    # steps of `max_messages`, over HTTP and by invoke alike.
    FunctionSpec(
        "dlq_redriver", "DlqRedriver", "Lists and redrives dead-letter messages", API_INTEGRATION_TIMEOUT_SECONDS
    ),
    # Amazon SQS's protocol at the API's `POST /` and `POST /sqs/{client}`: a 20 s long poll plus the claims.
    FunctionSpec(
        "sqs",
        "Sqs",
        "Speaks Amazon SQS's protocol (AWS JSON 1.0) for SQS SDKs, the AWS CLI and Celery",
        API_INTEGRATION_TIMEOUT_SECONDS,
    ),
    # Not behind the API: a sweep walks every queue within its budget (the remaining time less a margin) and
    # an unfinished one resumes on the next schedule.
    FunctionSpec(
        "visibility_sweeper",
        "VisibilitySweeper",
        "Moves exhausted messages to the DLQ, frees stuck FIFO groups, removes expired messages, "
        "publishes depth and age metrics",
        120,
        reservable=True,
    ),
)


def build_functions(
    scope: Construct,
    *,
    table: dynamodb.ITable,
    layer: lambda_.ILayerVersion,
    props: DynamoQueueProps,
    bucket: s3.IBucket,
) -> Mapping[str, lambda_.Function]:
    """Each function with its own role, log group, table actions (`infra.permissions.TABLE_ACTIONS`) and bucket
    actions (`BUCKET_ACTIONS`) on the bucket of offloaded bodies."""
    return {
        spec.name: build_function(scope, spec, table=table, layer=layer, props=props, bucket=bucket)
        for spec in FUNCTIONS
    }


def build_function(
    scope: Construct,
    spec: FunctionSpec,
    *,
    table: dynamodb.ITable,
    layer: lambda_.ILayerVersion,
    props: DynamoQueueProps,
    bucket: s3.IBucket,
) -> lambda_.Function:
    log_group = logs.LogGroup(
        scope,
        f"{spec.construct_id}Logs",
        retention=props.log_retention,
        removal_policy=props.removal_policy,
    )
    # An explicit role instead of the default one: the managed AWSLambdaBasicExecutionRole may write to every
    # log group of the account, this one only to the function's own.
    role = iam.Role(
        scope,
        f"{spec.construct_id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"{spec.name}: its own log group, {'X-Ray, ' if props.tracing else ''}and its table actions",
    )
    log_group.grant_write(role)
    grant_function_table_access(role, table, spec.name)
    grant_function_bucket_access(role, bucket, spec.name)
    if props.encryption_key_arn:
        # What reads and writes the table and the bucket encrypted with the customer key (no wildcard actions).
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey"], resources=[props.encryption_key_arn]
            )
        )
    log_level = props.log_level.upper()
    function = lambda_.Function(
        scope,
        spec.construct_id,
        description=spec.description,
        code=lambda_.Code.from_asset(str(FUNCTIONS_DIR / spec.name), exclude=["__pycache__", "*.pyc", ".*"]),
        handler=HANDLER,
        runtime=RUNTIME,
        architecture=ARCHITECTURES[props.architecture],
        layers=[layer],
        role=role,
        memory_size=props.memory_size_mb,
        timeout=cdk.Duration.seconds(spec.timeout_seconds),
        # 0 is no reservation at all (the property left out), never a reservation of zero, which stops a function.
        reserved_concurrent_executions=(props.sweeper_reserved_concurrency or None) if spec.reservable else None,
        tracing=lambda_.Tracing.ACTIVE if props.tracing else lambda_.Tracing.DISABLED,
        log_group=log_group,
        logging_format=lambda_.LoggingFormat.JSON,
        application_log_level_v2=lambda_.ApplicationLogLevel[log_level],
        system_log_level_v2=lambda_.SystemLogLevel.WARN,
        environment={
            "TABLE_NAME": table.table_name,
            "QUEUE_BUCKET": bucket.bucket_name,
            "POWERTOOLS_SERVICE_NAME": props.service_name,
            "POWERTOOLS_METRICS_NAMESPACE": props.metrics_namespace,
            "POWERTOOLS_LOG_LEVEL": log_level,
            "LOG_LEVEL": log_level,
            **({"DQ_KMS_KEY_ARN": props.encryption_key_arn} if props.encryption_key_arn else {}),
            **function_environment(props.tracing),
        },
    )
    if props.tracing:
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray PutTraceSegments and PutTelemetryRecords support no resource-level permissions: active "
            "tracing needs Resource '*' for these two write-only actions",
        )
    stack = cdk.Stack.of(scope)
    bucket_id = stack.resolve(stack.get_logical_id(bucket.node.default_child))
    acknowledge(
        role,
        f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/*]",
        "The objects of the bodies bucket: their keys are drawn at random by each send (under the queue and "
        "client of the message), so no narrower ARN can name them; the bucket holds nothing else",
    )
    return function
