"""The REST API of CONTRACT.md on API Gateway: IAM-authorized, validated, throttled, logged and traced."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.compliance import acknowledge
from infra.props import DynamoQueueProps


class Access(enum.Enum):
    """Which grant of the construct opens a route (`grant_send`, `grant_consume`, `grant_admin`); a route of a
    whole queue also needs a grant that names no client (`grant_queue_admin`)."""

    DESCRIBE = "describe"  # the API's own description: part of every grant, it holds no data
    SEND = "send"
    CONSUME = "consume"
    ADMIN = "admin"


@dataclass(frozen=True)
class Route:
    """One method of the API. `{q}`, `{c}` and `{id}` are the queue, the client and the message id."""

    method: str
    path: str
    function: str
    access: Access
    # Name of the request model when the body is required; routes whose whole body is optional take none,
    # because API Gateway refuses an empty body against any model.
    body_model: str | None = None
    query: tuple[str, ...] = ()

    @property
    def path_parameters(self) -> tuple[str, ...]:
        return tuple(part[1:-1] for part in self.path.split("/") if part.startswith("{"))


SUB_QUEUE: Final = "/queues/{q}/clients/{c}"

ROUTES: Final = (
    Route("GET", "/openapi.json", "producer", Access.DESCRIBE),
    Route("GET", "/queues", "producer", Access.ADMIN),
    Route("PUT", "/queues/{q}", "producer", Access.ADMIN),
    Route("GET", "/queues/{q}", "producer", Access.ADMIN),
    Route("DELETE", "/queues/{q}", "producer", Access.ADMIN),
    Route("PATCH", "/queues/{q}", "producer", Access.ADMIN),
    Route("GET", "/queues/{q}/clients", "producer", Access.ADMIN),
    Route("POST", f"{SUB_QUEUE}/messages", "producer", Access.SEND, body_model="SendRequest"),
    Route("POST", f"{SUB_QUEUE}/receive", "poller", Access.CONSUME),
    Route("POST", f"{SUB_QUEUE}/delete", "poller", Access.CONSUME, body_model="DeleteRequest"),
    Route("POST", f"{SUB_QUEUE}/visibility", "poller", Access.CONSUME, body_model="VisibilityRequest"),
    Route("POST", f"{SUB_QUEUE}/release", "poller", Access.CONSUME, body_model="ReleaseRequest"),
    Route("GET", f"{SUB_QUEUE}/messages", "poller", Access.CONSUME, query=("limit",)),
    Route("GET", f"{SUB_QUEUE}/messages/{{id}}", "poller", Access.CONSUME),
    Route("DELETE", f"{SUB_QUEUE}/messages/{{id}}", "poller", Access.CONSUME),
    Route("DELETE", f"{SUB_QUEUE}/messages", "poller", Access.ADMIN),
    Route("GET", f"{SUB_QUEUE}/stats", "poller", Access.CONSUME),
    Route("GET", f"{SUB_QUEUE}/dlq", "dlq_redriver", Access.ADMIN, query=("limit",)),
    Route("POST", f"{SUB_QUEUE}/dlq/redrive", "dlq_redriver", Access.ADMIN),
    Route("POST", f"{SUB_QUEUE}/messages/{{id}}/dlq", "dlq_redriver", Access.ADMIN),
)

_STRING: Final = apigateway.JsonSchema(type=apigateway.JsonSchemaType.STRING)
_INTEGER: Final = apigateway.JsonSchema(type=apigateway.JsonSchemaType.INTEGER)
_NULLABLE_INTEGER: Final = apigateway.JsonSchema(
    type=[apigateway.JsonSchemaType.INTEGER, apigateway.JsonSchemaType.NULL]
)

# Only the shape is checked at the edge: required keys and their JSON types. Ranges and limits are the core's
# (`queue_core.limits`), which answers with the precise error; checking them twice would let the two drift.
BODY_MODELS: Final[Mapping[str, apigateway.JsonSchema]] = {
    "SendRequest": apigateway.JsonSchema(
        schema=apigateway.JsonSchemaVersion.DRAFT4,
        title="SendRequest",
        type=apigateway.JsonSchemaType.OBJECT,
        properties={
            "messages": apigateway.JsonSchema(
                type=apigateway.JsonSchemaType.ARRAY,
                items=apigateway.JsonSchema(type=apigateway.JsonSchemaType.OBJECT, required=["body"]),
            )
        },
        any_of=[apigateway.JsonSchema(required=["body"]), apigateway.JsonSchema(required=["messages"])],
    ),
    "DeleteRequest": apigateway.JsonSchema(
        schema=apigateway.JsonSchemaVersion.DRAFT4,
        title="DeleteRequest",
        type=apigateway.JsonSchemaType.OBJECT,
        required=["receipt_handles"],
        properties={"receipt_handles": apigateway.JsonSchema(type=apigateway.JsonSchemaType.ARRAY, items=_STRING)},
    ),
    "VisibilityRequest": apigateway.JsonSchema(
        schema=apigateway.JsonSchemaVersion.DRAFT4,
        title="VisibilityRequest",
        type=apigateway.JsonSchemaType.OBJECT,
        required=["receipt_handle", "visibility_timeout"],
        properties={"receipt_handle": _STRING, "visibility_timeout": _INTEGER},
    ),
    "ReleaseRequest": apigateway.JsonSchema(
        schema=apigateway.JsonSchemaVersion.DRAFT4,
        title="ReleaseRequest",
        type=apigateway.JsonSchemaType.OBJECT,
        required=["receipt_handle"],
        properties={"receipt_handle": _STRING, "delay_seconds": _NULLABLE_INTEGER},
    ),
}

# Errors API Gateway answers itself keep the API's one error shape, {"error": {"code", "message"}}.
_ERROR_TEMPLATE: Final = '{"error": {"code": "%s", "message": $context.error.messageString}}'
GATEWAY_ERRORS: Final = (
    (apigateway.ResponseType.BAD_REQUEST_BODY, "400", "ValidationError"),
    (apigateway.ResponseType.BAD_REQUEST_PARAMETERS, "400", "ValidationError"),
    (apigateway.ResponseType.REQUEST_TOO_LARGE, "413", "MessageTooLarge"),
    (apigateway.ResponseType.THROTTLED, "429", "Throttled"),
    (apigateway.ResponseType.DEFAULT_4_XX, None, "$context.error.responseType"),
    (apigateway.ResponseType.DEFAULT_5_XX, None, "InternalError"),
)

# One JSON object per request, every value quoted: API Gateway writes "-" for a missing number.
ACCESS_LOG_FIELDS: Final = {
    "request_id": "$context.requestId",
    "extended_request_id": "$context.extendedRequestId",
    "time": "$context.requestTime",
    "time_epoch": "$context.requestTimeEpoch",
    "ip": "$context.identity.sourceIp",
    "caller": "$context.identity.caller",
    "user_arn": "$context.identity.userArn",
    "account_id": "$context.identity.accountId",
    "user_agent": "$context.identity.userAgent",
    "method": "$context.httpMethod",
    "resource": "$context.resourcePath",
    "path": "$context.path",
    "protocol": "$context.protocol",
    "status": "$context.status",
    "response_length": "$context.responseLength",
    "response_latency_ms": "$context.responseLatency",
    "integration_latency_ms": "$context.integrationLatency",
    "integration_status": "$context.integrationStatus",
    "error": "$context.error.message",
    "error_type": "$context.error.responseType",
    "xray_trace_id": "$context.xrayTraceId",
}


def build_api(
    scope: Construct, *, functions: Mapping[str, lambda_.IFunction], props: DynamoQueueProps
) -> apigateway.RestApi:
    """Every route of `ROUTES`, each with AWS_IAM authorization and a request validator."""
    access_logs = logs.LogGroup(
        scope, "ApiAccessLogs", retention=props.log_retention, removal_policy=props.removal_policy
    )
    api = apigateway.RestApi(
        scope,
        "Api",
        description="dynamo-queue: multi-tenant message queue on DynamoDB",
        endpoint_types=[apigateway.EndpointType.REGIONAL],
        # Execution logs need the account's API Gateway logging role. Kept on stack deletion: other APIs of
        # the account and region share it.
        cloud_watch_role=True,
        cloud_watch_role_removal_policy=cdk.RemovalPolicy.RETAIN,
        default_method_options=apigateway.MethodOptions(authorization_type=apigateway.AuthorizationType.IAM),
        deploy_options=apigateway.StageOptions(
            stage_name=props.api_stage_name,
            throttling_rate_limit=props.api_throttle_rate_limit,
            throttling_burst_limit=props.api_throttle_burst_limit,
            tracing_enabled=True,
            # Errors only, never bodies: messages may hold personal data.
            logging_level=apigateway.MethodLoggingLevel.ERROR,
            data_trace_enabled=False,
            access_log_destination=apigateway.LogGroupLogDestination(access_logs),
            access_log_format=apigateway.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FIELDS)),
        ),
    )
    for response_type, status, code in GATEWAY_ERRORS:
        api.add_gateway_response(
            f"{response_type.response_type}Response",
            type=response_type,
            status_code=status,
            templates={"application/json": _ERROR_TEMPLATE % code},
        )
    validators = {
        True: api.add_request_validator(
            "BodyAndParametersValidator", validate_request_body=True, validate_request_parameters=True
        ),
        False: api.add_request_validator("ParametersValidator", validate_request_parameters=True),
    }
    models = {
        name: api.add_model(f"{name}Model", model_name=name, content_type="application/json", schema=schema)
        for name, schema in BODY_MODELS.items()
    }
    integrations = {
        name: apigateway.LambdaIntegration(function, proxy=True, allow_test_invoke=False)
        for name, function in functions.items()
    }
    for route in ROUTES:
        parameters = {f"method.request.path.{name}": True for name in route.path_parameters}
        parameters |= {f"method.request.querystring.{name}": False for name in route.query}
        api.root.resource_for_path(route.path).add_method(
            route.method,
            integrations[route.function],
            authorization_type=apigateway.AuthorizationType.IAM,
            request_parameters=parameters or None,
            request_validator=validators[route.body_model is not None],
            request_models={"application/json": models[route.body_model]} if route.body_model else None,
        )
    _acknowledge_findings(api)
    return api


def _acknowledge_findings(api: apigateway.RestApi) -> None:
    acknowledge(
        api,
        "AwsSolutions-COG4",
        "Callers are AWS principals signing with SigV4: every method uses AWS_IAM authorization, and IAM "
        "policies (grant_send, grant_consume, grant_admin) confine a tenant to its own queue and client paths",
    )
    acknowledge(
        api.deployment_stage,
        "AwsSolutions-APIG3",
        "Every method requires SigV4-signed IAM credentials and the stage is throttled; a WAF web ACL (billed "
        "per rule and request) adds little for an API no anonymous caller can reach, and can be associated "
        "with the stage by a deployment that faces untrusted networks",
    )
    cloud_watch_role = api.node.find_child("CloudWatchRole")
    acknowledge(
        cloud_watch_role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AmazonAPIGatewayPushToCloudWatchLogs]",
        "API Gateway's account-wide logging role must be able to create the execution log groups API Gateway "
        "names itself; AmazonAPIGatewayPushToCloudWatchLogs is the policy AWS documents for that role",
    )
