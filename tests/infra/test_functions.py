"""The functions: runtime, architecture, layer, logging, tracing, limits, and exactly their permissions."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from infra.paths import FUNCTIONS_DIR
from infra.permissions import BUCKET_ACTIONS, BUCKET_LISTERS
from tests.infra.synth import Synthesized

FUNCTIONS = ("producer", "poller", "dlq_redriver", "visibility_sweeper", "sqs")

# Written out rather than read from infra.permissions: this is the reviewed list the policies must equal.
EXPECTED_TABLE_ACTIONS = {
    "producer": {"GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "BatchWriteItem"},
    "poller": {
        "GetItem",
        "BatchGetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "BatchWriteItem",
        "ConditionCheckItem",
    },
    "dlq_redriver": {"GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "Query"},
    "sqs": {
        "GetItem",
        "BatchGetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "BatchWriteItem",
        "ConditionCheckItem",
    },
    "visibility_sweeper": {
        "GetItem",
        "BatchGetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "BatchWriteItem",
        "ConditionCheckItem",
    },
}
# Only a query reads an index; the DLQ redriver's only to find archived messages by id for a replay.
QUERIES_THE_INDEX = {"producer", "poller", "dlq_redriver", "visibility_sweeper", "sqs"}
# The three behind the API stop by the time API Gateway does (29 s); the sweeper is only scheduled.
EXPECTED_TIMEOUTS = {"producer": 15, "poller": 29, "dlq_redriver": 29, "visibility_sweeper": 120, "sqs": 29}


def _function(synthesized: Synthesized, name: str) -> dict[str, Any]:
    return synthesized.resource(synthesized.stack.queue.functions[name])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_runs_the_newest_python_on_arm_with_the_core_layer(synthesized: Synthesized, name: str) -> None:
    properties = _function(synthesized, name)["Properties"]
    layer_id = synthesized.logical_id(synthesized.stack.queue.layer)

    assert properties["Runtime"] == "python3.14"
    assert properties["Architectures"] == ["arm64"]
    assert properties["Handler"] == "handler.lambda_handler"
    assert properties["Layers"] == [{"Ref": layer_id}]
    # Tracing is a deployment's choice, off by default (tests/infra/test_options.py turns it on).
    assert "TracingConfig" not in properties


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_logs_json_to_its_own_retained_log_group(synthesized: Synthesized, name: str) -> None:
    queue = synthesized.stack.queue
    logging = _function(synthesized, name)["Properties"]["LoggingConfig"]
    (log_group_id,) = [
        key for key, value in synthesized.of_type("AWS::Logs::LogGroup").items() if logging["LogGroup"] == {"Ref": key}
    ]

    assert logging["LogFormat"] == "JSON"
    assert logging["ApplicationLogLevel"] == "INFO"
    assert synthesized.resources[log_group_id]["Properties"]["RetentionInDays"] == 30
    assert log_group_id.startswith(f"Queue{queue.functions[name].node.id}Logs")


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_environment_names_the_table_and_powertools_settings(synthesized: Synthesized, name: str) -> None:
    environment = _function(synthesized, name)["Properties"]["Environment"]["Variables"]
    table_id = synthesized.logical_id(synthesized.stack.queue.table)

    assert environment["TABLE_NAME"] == {"Ref": table_id}
    assert environment["POWERTOOLS_SERVICE_NAME"] == "dynamo-queue"
    assert environment["POWERTOOLS_METRICS_NAMESPACE"] == "DynamoQueue"
    assert environment["POWERTOOLS_LOG_LEVEL"] == environment["LOG_LEVEL"] == "INFO"
    # Tracing off: Powertools' Tracer is disabled, so a cold start never loads the X-Ray SDK.
    assert environment["POWERTOOLS_TRACE_DISABLED"] == "true"
    assert "POWERTOOLS_TRACER_CAPTURE_RESPONSE" not in environment
    assert environment["PYDANTIC_DISABLE_PLUGINS"] == "__all__"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_timeouts_fit_their_work(synthesized: Synthesized, name: str) -> None:
    assert _function(synthesized, name)["Properties"]["Timeout"] == EXPECTED_TIMEOUTS[name]


def test_poller_outlasts_a_long_poll_but_api_gateway_bounds_the_wait(synthesized: Synthesized) -> None:
    assert 20 < _function(synthesized, "poller")["Properties"]["Timeout"] <= 29


def test_no_function_reserves_concurrency_by_default(synthesized: Synthesized) -> None:
    reserved = {
        name: _function(synthesized, name)["Properties"].get("ReservedConcurrentExecutions") for name in FUNCTIONS
    }
    assert reserved == dict.fromkeys(FUNCTIONS)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_role_has_exactly_its_log_group_table_actions_and_index_queries(
    synthesized: Synthesized, name: str
) -> None:
    queue = synthesized.stack.queue
    function = _function(synthesized, name)
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    table_arn = {"Fn::GetAtt": [synthesized.logical_id(queue.table), "Arn"]}
    bucket_arn = {"Fn::GetAtt": [synthesized.logical_id(queue.bodies_bucket), "Arn"]}
    (log_group_id,) = [function["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]]
    policies = [
        policy["Properties"]
        for policy in synthesized.of_type("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
    ]

    assert "ManagedPolicyArns" not in synthesized.resources[role_id]["Properties"]
    assert len(policies) == 1
    assert _normalized(policies[0]["PolicyDocument"]["Statement"]) == _normalized(
        [
            {
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                "Effect": "Allow",
                "Resource": {"Fn::GetAtt": [log_group_id, "Arn"]},
            },
            {
                "Action": [f"dynamodb:{action}" for action in EXPECTED_TABLE_ACTIONS[name]],
                "Effect": "Allow",
                "Resource": table_arn,
            },
            *(
                [
                    {
                        "Action": "dynamodb:Query",
                        "Effect": "Allow",
                        "Resource": {"Fn::Join": ["", [table_arn, "/index/gsi1"]]},
                    }
                ]
                if name in QUERIES_THE_INDEX
                else []
            ),
            {
                "Action": list(BUCKET_ACTIONS[name]),
                "Effect": "Allow",
                "Resource": {"Fn::Join": ["", [bucket_arn, "/*"]]},
            },
            *(
                [{"Action": "s3:ListBucket", "Effect": "Allow", "Resource": bucket_arn}]
                if name in BUCKET_LISTERS
                else []
            ),
        ]
    )


def test_function_roles_trust_only_lambda(synthesized: Synthesized) -> None:
    for name in FUNCTIONS:
        role_id = _function(synthesized, name)["Properties"]["Role"]["Fn::GetAtt"][0]
        trust = synthesized.resources[role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        assert trust == [
            {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}
        ]


def _normalized(statements: list[dict[str, Any]]) -> list[str]:
    """Statements compared as sets: action order inside a statement and statement order do not matter."""
    result = []
    for statement in statements:
        actions = statement["Action"]
        actions = sorted(actions) if isinstance(actions, list) else [actions]
        result.append(repr({**statement, "Action": actions}))
    return sorted(result)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_folder_holds_the_handler_the_function_names(name: str) -> None:
    tree = ast.parse((FUNCTIONS_DIR / name / "handler.py").read_text())
    assert "lambda_handler" in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
