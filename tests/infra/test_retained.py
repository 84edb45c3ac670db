"""`make destroy` says what the deleted stack kept on purpose and how to remove each piece."""

from __future__ import annotations

from typing import Any

from infra.retained import deleted_stack_resources, leftovers, report
from tests.infra.synth import Synthesized


def _deleted(synthesized: Synthesized) -> list[dict[str, Any]]:
    """The resources as CloudFormation records them once the stack is deleted: retained ones DELETE_SKIPPED."""
    names = {"AWS::ApiGateway::Stage": "v1", "AWS::ApiGateway::RestApi": "abc123defg"}
    return [
        {
            "LogicalResourceId": logical_id,
            "ResourceType": resource["Type"],
            "PhysicalResourceId": names.get(resource["Type"], f"physical-{logical_id}"),
            "ResourceStatus": "DELETE_SKIPPED" if resource.get("DeletionPolicy") == "Retain" else "DELETE_COMPLETE",
        }
        for logical_id, resource in synthesized.resources.items()
    ]


def test_destroy_keeps_the_table_the_log_groups_and_the_logging_role(synthesized: Synthesized) -> None:
    kept = leftovers(_deleted(synthesized))
    kinds = [item.what.split(" (")[0] for item in kept]

    assert sorted(kinds) == sorted(
        [
            "DynamoDB table with every message",
            "S3 bucket of offloaded message bodies",
            *["log group"] * len(synthesized.of_type("AWS::Logs::LogGroup")),
            "IAM role",
            "API Gateway account setting",
            "API Gateway execution log group",
        ]
    )


def test_each_kept_resource_comes_with_its_removal_commands(synthesized: Synthesized) -> None:
    kept = {item.what.split(" (")[0]: item for item in leftovers(_deleted(synthesized), partition="aws-cn")}
    table = kept["DynamoDB table with every message"]
    role = kept["IAM role"]

    assert table.commands[0].endswith("--no-deletion-protection-enabled")
    assert table.commands[1].startswith("aws dynamodb delete-table --table-name physical-")
    assert "arn:aws-cn:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs" in role.commands[0]
    assert kept["API Gateway execution log group"].name == "API-Gateway-Execution-Logs_abc123defg/v1"
    assert "aws logs delete-log-group" in report(list(kept.values()))


class _CloudFormation:
    """ListStacks and DescribeStackResources of an account where the stack was deployed and deleted twice."""

    def __init__(self, summaries: list[dict[str, Any]]) -> None:
        self.summaries = summaries
        self.described: list[str] = []

    def get_paginator(self, _name: str) -> _CloudFormation:
        return self

    def paginate(self) -> list[dict[str, Any]]:
        return [{"StackSummaries": self.summaries}]

    def describe_stack_resources(self, StackName: str) -> dict[str, Any]:
        self.described.append(StackName)
        return {"StackResources": []}


def test_the_most_recently_deleted_stack_is_read_and_a_live_one_is_not() -> None:
    deleted = [
        {"StackName": "DynamoQueue", "StackId": "old", "StackStatus": "DELETE_COMPLETE", "DeletionTime": 1},
        {"StackName": "DynamoQueue", "StackId": "new", "StackStatus": "DELETE_COMPLETE", "DeletionTime": 2},
        {"StackName": "Other", "StackId": "x", "StackStatus": "CREATE_COMPLETE"},
    ]
    cloudformation = _CloudFormation(deleted)
    assert deleted_stack_resources(cloudformation, "DynamoQueue") == []
    assert cloudformation.described == ["new"]

    live = _CloudFormation(
        [*deleted, {"StackName": "DynamoQueue", "StackId": "live", "StackStatus": "UPDATE_COMPLETE"}]
    )
    assert deleted_stack_resources(live, "DynamoQueue") is None
