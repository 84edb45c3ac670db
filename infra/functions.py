"""The four Lambda functions: thin handlers in `functions/<name>/`, the queue core from the layer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.compliance import acknowledge
from infra.paths import FUNCTIONS_DIR
from infra.permissions import grant_function_table_access
from infra.props import DynamoQueueProps

# The newest Python the CDK knows (cdk-nag's AwsSolutions-L1 asks for it) on Graviton, which costs less per
# second than x86 for the same work.
RUNTIME: Final = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE: Final = lambda_.Architecture.ARM_64
HANDLER: Final = "handler.lambda_handler"


@dataclass(frozen=True)
class FunctionSpec:
    """One function: its folder under `functions/`, its construct id, and what bounds its run time."""

    name: str
    construct_id: str
    description: str
    timeout_seconds: int
    single_instance: bool = False


FUNCTIONS: Final = (
    # Sends up to 25 messages in one call: a handful of DynamoDB round trips.
    FunctionSpec("producer", "Producer", "Creates, describes, lists and deletes queues; sends messages", 15),
    # Covers a 20 s long poll plus the claims after it; API Gateway stops waiting at 29 s.
    FunctionSpec(
        "poller",
        "Poller",
        "Receives, deletes, changes visibility, releases, peeks, gets, cancels, purges; reports stats",
        30,
    ),
    # A redrive moves messages in batches until its budget runs out; SDK callers may ask for large redrives.
    FunctionSpec("dlq_redriver", "DlqRedriver", "Lists and redrives dead-letter messages", 60),
    # One sweep at a time walks every queue once a minute; a second concurrent sweep would only waste
    # conditional writes, hence a single reserved instance.
    FunctionSpec(
        "visibility_sweeper",
        "VisibilitySweeper",
        "Moves exhausted messages to the DLQ, frees stuck FIFO groups, removes expired messages, "
        "publishes depth and age metrics",
        120,
        single_instance=True,
    ),
)


def build_functions(
    scope: Construct, *, table: dynamodb.ITable, layer: lambda_.ILayerVersion, props: DynamoQueueProps
) -> Mapping[str, lambda_.Function]:
    """Each function with its own role, log group and table actions (`infra.permissions.TABLE_ACTIONS`)."""
    return {spec.name: _build_function(scope, spec, table=table, layer=layer, props=props) for spec in FUNCTIONS}


def _build_function(
    scope: Construct,
    spec: FunctionSpec,
    *,
    table: dynamodb.ITable,
    layer: lambda_.ILayerVersion,
    props: DynamoQueueProps,
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
        description=f"{spec.name}: its own log group, X-Ray, and its table actions",
    )
    log_group.grant_write(role)
    grant_function_table_access(role, table, spec.name)
    log_level = props.log_level.upper()
    function = lambda_.Function(
        scope,
        spec.construct_id,
        description=spec.description,
        code=lambda_.Code.from_asset(str(FUNCTIONS_DIR / spec.name), exclude=["__pycache__", "*.pyc", ".*"]),
        handler=HANDLER,
        runtime=RUNTIME,
        architecture=ARCHITECTURE,
        layers=[layer],
        role=role,
        memory_size=props.memory_size_mb,
        timeout=cdk.Duration.seconds(spec.timeout_seconds),
        reserved_concurrent_executions=((props.sweeper_reserved_concurrency or None) if spec.single_instance else None),
        tracing=lambda_.Tracing.ACTIVE,
        log_group=log_group,
        logging_format=lambda_.LoggingFormat.JSON,
        application_log_level_v2=lambda_.ApplicationLogLevel[log_level],
        system_log_level_v2=lambda_.SystemLogLevel.WARN,
        environment={
            "TABLE_NAME": table.table_name,
            "POWERTOOLS_SERVICE_NAME": props.service_name,
            "POWERTOOLS_METRICS_NAMESPACE": props.metrics_namespace,
            "POWERTOOLS_LOG_LEVEL": log_level,
            "LOG_LEVEL": log_level,
            # Responses carry message bodies (up to 256 KiB, possibly sensitive): keep them out of X-Ray.
            "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
        },
    )
    acknowledge(
        role,
        "AwsSolutions-IAM5[Resource::*]",
        "X-Ray PutTraceSegments and PutTelemetryRecords support no resource-level permissions: active "
        "tracing needs Resource '*' for these two write-only actions",
    )
    return function
