"""What `cdk destroy` leaves behind on purpose, and how to remove each piece once it is no longer wanted.

CloudFormation marks every resource it kept because of a Retain policy DELETE_SKIPPED in the deleted stack's
record (kept for 90 days): the table with its messages, the log groups, and the region's API Gateway logging
role and account setting. API Gateway's own execution log group was never part of the stack. `python -m
infra.retained DynamoQueue`, run after `cdk destroy`, lists them with the commands that remove them; it changes
nothing itself.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import boto3
from botocore.exceptions import BotoCoreError, ClientError

LOGGING_POLICY: Final = "policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"


@dataclass(frozen=True)
class Leftover:
    """One thing the deleted stack kept: what it is, its name, and the commands that remove it."""

    what: str
    name: str
    commands: tuple[str, ...]
    note: str = ""


def leftovers(resources: Iterable[Mapping[str, Any]], partition: str = "aws") -> list[Leftover]:
    """From the deleted stack's resources (`DescribeStackResources`), what was kept, and API Gateway's own
    execution log group of the deleted stage."""
    found, api_id, stage = [], None, None
    for resource in resources:
        kind, name = resource["ResourceType"], resource.get("PhysicalResourceId", "")
        if kind == "AWS::ApiGateway::RestApi":
            api_id = name
        if kind == "AWS::ApiGateway::Stage":
            stage = name
        if resource["ResourceStatus"] == "DELETE_SKIPPED":
            found.append(_leftover(kind, name, partition))
    if api_id and stage:
        group = f"API-Gateway-Execution-Logs_{api_id}/{stage}"
        found.append(
            Leftover(
                "API Gateway execution log group (made by API Gateway, if the stage ever logged an error)",
                group,
                (f"aws logs delete-log-group --log-group-name '{group}'",),
            )
        )
    return found


def _leftover(kind: str, name: str, partition: str) -> Leftover:
    if kind == "AWS::DynamoDB::Table":
        return Leftover(
            "DynamoDB table with every message (deletion-protected)",
            name,
            (
                f"aws dynamodb update-table --table-name {name} --no-deletion-protection-enabled",
                f"aws dynamodb delete-table --table-name {name}",
            ),
            "deleting it deletes its messages and its point-in-time recovery history",
        )
    if kind == "AWS::S3::Bucket":
        return Leftover(
            "S3 bucket of offloaded message bodies",
            name,
            (f"aws s3 rm s3://{name} --recursive", f"aws s3api delete-bucket --bucket {name}"),
            "its objects expire by themselves (lifecycle rule); emptying it loses the bodies of kept messages",
        )
    if kind == "AWS::Logs::LogGroup":
        return Leftover("log group", name, (f"aws logs delete-log-group --log-group-name '{name}'",))
    if kind == "AWS::IAM::Role":
        return Leftover(
            "IAM role",
            name,
            (
                f"aws iam detach-role-policy --role-name {name} --policy-arn arn:{partition}:iam::aws:{LOGGING_POLICY}",
                f"aws iam delete-role --role-name {name}",
            ),
            "the region's API Gateway logging role: delete it only after the account setting below names "
            "another role, or no API in this account and region logs to CloudWatch",
        )
    if kind == "AWS::ApiGateway::Account":
        return Leftover(
            "API Gateway account setting (the region's CloudWatch logging role)",
            name,
            (
                "aws apigateway update-account --patch-operations "
                "op=replace,path=/cloudwatchRoleArn,value=<ARN of the role other APIs should log with>",
            ),
            "other APIs of the account and region log through it: leave it unless you replace the role",
        )
    if kind == "AWS::KMS::Key":
        return Leftover(
            "KMS key of the alarm topic",
            name,
            (f"aws kms schedule-key-deletion --key-id {name} --pending-window-in-days 7",),
        )
    return Leftover(kind, name, (), "remove it in the console if it is no longer wanted")


def report(items: list[Leftover]) -> str:
    if not items:
        return "nothing was kept"
    lines = ["kept on purpose, and how to remove each:"]
    for item in items:
        lines.append(f"- {item.what}: {item.name}")
        if item.note:
            lines.append(f"  ({item.note})")
        lines.extend(f"    {command}" for command in item.commands)
    return "\n".join(lines)


def deleted_stack_resources(cloudformation: Any, stack_name: str) -> list[dict[str, Any]] | None:
    """The resources of the most recently deleted stack of that name; None while a stack of that name exists
    or when none was ever deleted."""
    deleted = []
    for page in cloudformation.get_paginator("list_stacks").paginate():
        for summary in page["StackSummaries"]:
            if summary["StackName"] != stack_name:
                continue
            if summary["StackStatus"] != "DELETE_COMPLETE":
                return None
            deleted.append(summary)
    if not deleted:
        return None
    latest = max(deleted, key=lambda summary: summary["DeletionTime"])
    return cloudformation.describe_stack_resources(StackName=latest["StackId"])["StackResources"]


def main(argv: list[str]) -> int:
    stack_name = argv[0] if argv else "DynamoQueue"
    session = boto3.session.Session()
    try:
        resources = deleted_stack_resources(session.client("cloudformation"), stack_name)
    except (ClientError, BotoCoreError) as error:
        print(f"cannot read what {stack_name} kept ({error})")
        return 1
    if resources is None:
        print(f"{stack_name} has not been deleted: nothing was removed")
        return 0
    partition = session.get_partition_for_region(session.region_name) if session.region_name else "aws"
    print(report(leftovers(resources, partition)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
