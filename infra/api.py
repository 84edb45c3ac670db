"""The REST API of CONTRACT.md on API Gateway: IAM-authorized, validated, throttled, logged and traced."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct
from queue_api import operations
from queue_api.operations import Operation
from sqs_api import routes as sqs_routes

from infra.compliance import acknowledge
from infra.props import DynamoQueueProps

_OBJECT: Final = apigateway.JsonSchemaType.OBJECT
_JSON_TYPES: Final = {
    "string": apigateway.JsonSchemaType.STRING,
    # Draft 4 (API Gateway's models) reads `30.0` as no integer, where the API's own document (JSON Schema 2020-12)
    # and the functions take it: at the edge an integer field is a number, and the function checks it is whole.
    "integer": apigateway.JsonSchemaType.NUMBER,
    "number": apigateway.JsonSchemaType.NUMBER,
    "boolean": apigateway.JsonSchemaType.BOOLEAN,
    "array": apigateway.JsonSchemaType.ARRAY,
    "object": _OBJECT,
    "null": apigateway.JsonSchemaType.NULL,
}

# Only the shape is checked at the edge: required keys and their JSON types. Ranges and limits are the core's
# (`queue_core.limits`), which answers with the precise error; checking them twice would let the two drift.
# A request model's shape is read from its JSON schema; a union of models is written here, as the edge sees it.
UNION_SHAPES: Final[Mapping[str, apigateway.JsonSchema]] = {
    "SendRequest": apigateway.JsonSchema(
        schema=apigateway.JsonSchemaVersion.DRAFT4,
        title="SendRequest",
        type=_OBJECT,
        properties={
            "messages": apigateway.JsonSchema(
                type=apigateway.JsonSchemaType.ARRAY,
                items=apigateway.JsonSchema(type=_OBJECT, required=["body"]),
            )
        },
        any_of=[apigateway.JsonSchema(required=["body"]), apigateway.JsonSchema(required=["messages"])],
    ),
}


def body_shape(operation: Operation) -> apigateway.JsonSchema:
    """The API Gateway model of an operation's required body: its request's required keys and their types."""
    if operation.request in UNION_SHAPES:
        return UNION_SHAPES[operation.request]
    schema = operation.request_type().model_json_schema()
    return apigateway.JsonSchema(
        schema=apigateway.JsonSchemaVersion.DRAFT4,
        title=operation.request,
        type=_OBJECT,
        required=schema.get("required"),
        properties={name: _shape(field) for name, field in schema.get("properties", {}).items()},
    )


def _shape(field: Mapping[str, Any]) -> apigateway.JsonSchema:
    """A value's JSON type (a list of them when it may be null), and its items' for an array; a nested model is
    an object."""
    options = field.get("anyOf", [field])
    types = [_JSON_TYPES[option.get("type", "object")] for option in options]
    items = next((option["items"] for option in options if "items" in option), None)
    return apigateway.JsonSchema(type=types[0] if len(types) == 1 else types, items=_shape(items) if items else None)


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
# API Gateway's own refusals answer every route alike, the SQS protocol's too. Their body keeps the API's error
# shape; a throttle also carries SQS's query-error header, from which botocore takes the error code
# (`RequestThrottled`, which SDKs retry as a throttle), as it does from the SQS function's own throttles.
GATEWAY_QUERY_ERRORS: Final = {"THROTTLED": "RequestThrottled;Sender"}

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
    """Every route of `queue_api.operations`, each with AWS_IAM authorization and a request validator."""
    access_logs = logs.LogGroup(
        scope, "ApiAccessLogs", retention=props.log_retention, removal_policy=props.removal_policy
    )
    api = apigateway.RestApi(
        scope,
        "Api",
        description="dynamo-queue: multi-tenant message queue on DynamoDB",
        endpoint_types=[apigateway.EndpointType.REGIONAL],
        # Execution and access logs both need the region's API Gateway logging role, an account setting: set
        # here unless the props leave it to the account. Kept on stack deletion: other APIs of the account and
        # region log through it.
        cloud_watch_role=props.api_account_logging_role,
        cloud_watch_role_removal_policy=cdk.RemovalPolicy.RETAIN if props.api_account_logging_role else None,
        default_method_options=apigateway.MethodOptions(authorization_type=apigateway.AuthorizationType.IAM),
        deploy_options=apigateway.StageOptions(
            stage_name=props.api_stage_name,
            throttling_rate_limit=props.api_throttle_rate_limit,
            throttling_burst_limit=props.api_throttle_burst_limit,
            tracing_enabled=props.tracing,
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
            response_headers=(
                {"x-amzn-query-error": f"'{GATEWAY_QUERY_ERRORS[response_type.response_type]}'"}
                if response_type.response_type in GATEWAY_QUERY_ERRORS
                else None
            ),
        )
    validators = {
        True: api.add_request_validator(
            "BodyAndParametersValidator", validate_request_body=True, validate_request_parameters=True
        ),
        False: api.add_request_validator("ParametersValidator", validate_request_parameters=True),
    }
    # One model per request that must have a body. Routes whose whole body is optional take none: API Gateway
    # refuses an empty body against any model.
    required_bodies = {route.request: route for route in operations.ROUTES if route.body_required()}
    models = {
        name: api.add_model(f"{name}Model", model_name=name, content_type="application/json", schema=body_shape(route))
        for name, route in required_bodies.items()
    }
    integrations = {
        name: apigateway.LambdaIntegration(function, proxy=True, allow_test_invoke=False)
        for name, function in functions.items()
    }
    for route in operations.ROUTES:
        parameters = {f"method.request.path.{name}": True for name in route.path_parameters}
        parameters |= {f"method.request.querystring.{name}": False for name in route.query}
        body_model = models[route.request] if route.body_required() else None
        api.root.resource_for_path(route.path).add_method(
            route.method,
            integrations[route.function],
            authorization_type=apigateway.AuthorizationType.IAM,
            request_parameters=parameters or None,
            request_validator=validators[body_model is not None],
            request_models={"application/json": body_model} if body_model else None,
        )
    # Amazon SQS's protocol: one POST per resource, the action in a header, the body checked by the function.
    for resource in sqs_routes.RESOURCES:
        api.root.resource_for_path(resource).add_method(
            sqs_routes.METHOD,
            integrations[sqs_routes.FUNCTION],
            authorization_type=apigateway.AuthorizationType.IAM,
            request_parameters={"method.request.path.client": True} if "{client}" in resource else None,
            request_validator=validators[False],
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
    cloud_watch_role = api.node.try_find_child("CloudWatchRole")
    if cloud_watch_role is None:
        return
    acknowledge(
        cloud_watch_role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AmazonAPIGatewayPushToCloudWatchLogs]",
        "API Gateway's account-wide logging role must be able to create the execution log groups API Gateway "
        "names itself; AmazonAPIGatewayPushToCloudWatchLogs is the policy AWS documents for that role",
    )
