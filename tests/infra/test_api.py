"""The REST API: the routes of CONTRACT.md, each IAM-authorized and validated, on a throttled, logged stage."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.parsers import create_parser
from queue_api.operations import ROUTES
from sqs_api import routes as sqs_routes

from infra.props import DynamoQueueProps
from tests.infra.synth import Synthesized

SUB_QUEUE = "/queues/{q}/clients/{c}"
# CONTRACT.md's routes and the function that serves each: the operations may add routes, never lose one.
CONTRACT_ROUTES = {
    ("PUT", "/queues/{q}"): "producer",
    ("GET", "/queues/{q}"): "producer",
    ("DELETE", "/queues/{q}"): "producer",
    ("PATCH", "/queues/{q}"): "producer",
    ("GET", "/queues/{q}/clients"): "producer",
    ("GET", "/queues"): "producer",
    ("POST", f"{SUB_QUEUE}/messages"): "producer",
    ("GET", "/openapi.json"): "producer",
    ("POST", f"{SUB_QUEUE}/receive"): "poller",
    ("POST", f"{SUB_QUEUE}/delete"): "poller",
    ("POST", f"{SUB_QUEUE}/visibility"): "poller",
    ("POST", f"{SUB_QUEUE}/release"): "poller",
    ("GET", f"{SUB_QUEUE}/messages"): "poller",
    ("GET", f"{SUB_QUEUE}/messages/{{id}}"): "poller",
    ("DELETE", f"{SUB_QUEUE}/messages/{{id}}"): "poller",
    ("DELETE", f"{SUB_QUEUE}/messages"): "poller",
    ("GET", f"{SUB_QUEUE}/stats"): "poller",
    ("GET", f"{SUB_QUEUE}/dlq"): "dlq_redriver",
    ("POST", f"{SUB_QUEUE}/dlq/redrive"): "dlq_redriver",
    ("POST", f"{SUB_QUEUE}/messages/{{id}}/dlq"): "dlq_redriver",
}
CONTRACT_REQUIRED_BODIES = {
    ("POST", f"{SUB_QUEUE}/messages"),
    ("POST", f"{SUB_QUEUE}/delete"),
    ("POST", f"{SUB_QUEUE}/visibility"),
    ("POST", f"{SUB_QUEUE}/release"),
}
# What the API must serve: every operation's route and the function that serves it.
EXPECTED_ROUTES = {(route.method, route.path): route.function for route in ROUTES} | {
    (sqs_routes.METHOD, resource): sqs_routes.FUNCTION for resource in sqs_routes.RESOURCES
}
REQUIRED_BODIES = {(route.method, route.path) for route in ROUTES if route.body_required()}


def _paths(synthesized: Synthesized) -> dict[str, str]:
    """Resource id → full path, following each resource's parent up to the API's root."""
    resources = synthesized.of_type("AWS::ApiGateway::Resource")

    def path_of(resource_id: str) -> str:
        properties = resources[resource_id]["Properties"]
        parent = properties["ParentId"]
        prefix = path_of(parent["Ref"]) if "Ref" in parent else ""
        return f"{prefix}/{properties['PathPart']}"

    return {resource_id: path_of(resource_id) for resource_id in resources}


def _methods(synthesized: Synthesized) -> dict[tuple[str, str], dict[str, Any]]:
    paths = _paths(synthesized)
    methods = {}
    for method in synthesized.of_type("AWS::ApiGateway::Method").values():
        properties = method["Properties"]
        resource = properties["ResourceId"]
        path = paths[resource["Ref"]] if "Ref" in resource else "/"
        methods[(properties["HttpMethod"], path)] = properties
    return methods


def _stage(synthesized: Synthesized) -> dict[str, Any]:
    (stage,) = synthesized.of_type("AWS::ApiGateway::Stage").values()
    return stage["Properties"]


def test_the_operations_keep_every_contract_route_its_function_and_its_required_body() -> None:
    assert CONTRACT_ROUTES.items() <= EXPECTED_ROUTES.items()
    assert REQUIRED_BODIES & CONTRACT_ROUTES.keys() == CONTRACT_REQUIRED_BODIES


def test_api_has_exactly_the_contract_routes(synthesized: Synthesized) -> None:
    assert set(_methods(synthesized)) == set(EXPECTED_ROUTES)


def test_each_route_is_served_by_its_function_through_a_proxy_integration(synthesized: Synthesized) -> None:
    queue = synthesized.stack.queue
    for route, properties in _methods(synthesized).items():
        integration = properties["Integration"]
        function_id = synthesized.logical_id(queue.functions[EXPECTED_ROUTES[route]])
        assert integration["Type"] == "AWS_PROXY", route
        assert {"Fn::GetAtt": [function_id, "Arn"]} in integration["Uri"]["Fn::Join"][1], route


def test_the_sqs_protocol_is_served_at_the_root_and_per_client_by_its_own_function(synthesized: Synthesized) -> None:
    methods = _methods(synthesized)
    function_id = synthesized.logical_id(synthesized.stack.queue.sqs)
    for resource in ("/", "/sqs/{client}"):
        properties = methods[("POST", resource)]
        assert properties["AuthorizationType"] == "AWS_IAM"
        assert {"Fn::GetAtt": [function_id, "Arn"]} in properties["Integration"]["Uri"]["Fn::Join"][1]
    assert methods[("POST", "/sqs/{client}")]["RequestParameters"] == {"method.request.path.client": True}


def test_every_method_requires_iam_authorization(synthesized: Synthesized) -> None:
    for route, properties in _methods(synthesized).items():
        assert properties["AuthorizationType"] == "AWS_IAM", route


def test_every_method_validates_its_parameters_and_required_bodies(synthesized: Synthesized) -> None:
    validators = synthesized.of_type("AWS::ApiGateway::RequestValidator")
    models = synthesized.of_type("AWS::ApiGateway::Model")
    for route, properties in _methods(synthesized).items():
        validator = validators[properties["RequestValidatorId"]["Ref"]]["Properties"]
        assert validator["ValidateRequestParameters"] is True, route
        for parameter in ("q", "c", "id"):
            if f"{{{parameter}}}" in route[1]:
                assert properties["RequestParameters"][f"method.request.path.{parameter}"] is True, route
        if route in REQUIRED_BODIES:
            assert validator["ValidateRequestBody"] is True, route
            model_id = properties["RequestModels"]["application/json"]["Ref"]
            assert models[model_id]["Properties"]["Schema"]["type"] == "object"
        else:
            assert "RequestModels" not in properties, route


def test_send_model_accepts_one_message_or_a_batch(synthesized: Synthesized) -> None:
    (send,) = [
        model["Properties"]["Schema"]
        for model in synthesized.of_type("AWS::ApiGateway::Model").values()
        if model["Properties"]["Name"] == "SendRequest"
    ]
    assert send["anyOf"] == [{"required": ["body"]}, {"required": ["messages"]}]


def test_stage_is_throttled_untraced_by_default_and_logs_errors_without_bodies(synthesized: Synthesized) -> None:
    defaults = DynamoQueueProps()
    stage = _stage(synthesized)
    (settings,) = stage["MethodSettings"]

    assert stage["StageName"] == defaults.api_stage_name
    assert stage["TracingEnabled"] is False
    assert settings["HttpMethod"] == "*"
    assert settings["ResourcePath"] == "/*"
    assert settings["ThrottlingRateLimit"] == defaults.api_throttle_rate_limit
    assert settings["ThrottlingBurstLimit"] == defaults.api_throttle_burst_limit
    assert settings["LoggingLevel"] == "ERROR"
    assert settings["DataTraceEnabled"] is False


def test_access_logs_are_json_in_their_own_log_group(synthesized: Synthesized) -> None:
    access_log = _stage(synthesized)["AccessLogSetting"]
    log_fields = json.loads(access_log["Format"])
    destination = json.dumps(access_log["DestinationArn"])

    assert {"request_id", "caller", "user_arn", "resource", "status", "error"} <= log_fields.keys()
    assert all(value.startswith("$context.") for value in log_fields.values())
    (log_group_id,) = [
        key for key in synthesized.of_type("AWS::Logs::LogGroup") if key.startswith("QueueApiAccessLogs")
    ]
    assert f'{{"Ref": "{log_group_id}"}}' in destination


@pytest.mark.parametrize(
    ("response_type", "status", "code"),
    [
        ("BAD_REQUEST_BODY", "400", "ValidationError"),
        ("BAD_REQUEST_PARAMETERS", "400", "ValidationError"),
        ("REQUEST_TOO_LARGE", "413", "MessageTooLarge"),
        ("THROTTLED", "429", "Throttled"),
        ("DEFAULT_5XX", None, "InternalError"),
    ],
)
def test_gateway_errors_keep_the_api_error_shape(
    synthesized: Synthesized, response_type: str, status: str | None, code: str
) -> None:
    (response,) = [
        resource["Properties"]
        for resource in synthesized.of_type("AWS::ApiGateway::GatewayResponse").values()
        if resource["Properties"]["ResponseType"] == response_type
    ]
    rendered = response["ResponseTemplates"]["application/json"].replace("$context.error.messageString", '"a message"')

    assert response.get("StatusCode") == status
    assert json.loads(rendered) == {"error": {"code": code, "message": "a message"}}


def test_a_gateway_throttle_reads_as_sqs_request_throttled_to_botocore(synthesized: Synthesized) -> None:
    """The stage's own throttle reaches SQS clients too: botocore takes the code from the query-error header."""
    (response,) = [
        resource["Properties"]
        for resource in synthesized.of_type("AWS::ApiGateway::GatewayResponse").values()
        if resource["Properties"]["ResponseType"] == "THROTTLED"
    ]
    header = response["ResponseParameters"]["gatewayresponse.header.x-amzn-query-error"]
    assert header == "'RequestThrottled;Sender'"
    body = response["ResponseTemplates"]["application/json"].replace("$context.error.messageString", '"slow down"')
    answer = {"status_code": 429, "headers": {"x-amzn-query-error": header.strip("'")}, "body": body.encode()}
    assert create_parser("json").parse(answer, None)["Error"]["Code"] == "RequestThrottled"


def test_api_gateway_logging_role_survives_stack_deletion(synthesized: Synthesized) -> None:
    (account,) = synthesized.of_type("AWS::ApiGateway::Account").values()
    role_id = account["Properties"]["CloudWatchRoleArn"]["Fn::GetAtt"][0]
    assert account["DeletionPolicy"] == "Retain"
    assert synthesized.resources[role_id]["DeletionPolicy"] == "Retain"


def test_edge_models_take_a_whole_float_where_an_integer_goes(synthesized: Synthesized) -> None:
    """JSON Schema 2020-12 (the API's document) reads `30.0` as an integer and the functions take it; API Gateway's
    draft 4 models would refuse it before any function ran, so an integer field is a number at the edge."""
    schemas = [model["Properties"]["Schema"] for model in synthesized.of_type("AWS::ApiGateway::Model").values()]
    text = json.dumps(schemas)
    assert '"integer"' not in text and '"number"' in text
