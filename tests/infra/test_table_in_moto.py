"""The table as the template deploys it works with the core: create it in moto from the synthesized
properties, then run a message through its whole life with `QueueClient`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from queue_core import QueueClient

from tests.infra.synth import Synthesized

TABLE = "deployed-queue"


def _create_table_arguments(properties: dict[str, Any]) -> dict[str, Any]:
    """CloudFormation's table properties as `CreateTable` arguments (SSE and TTL are set the same way)."""
    sse = properties["SSESpecification"]
    return {
        "TableName": TABLE,
        "BillingMode": properties["BillingMode"],
        "KeySchema": properties["KeySchema"],
        "AttributeDefinitions": properties["AttributeDefinitions"],
        "GlobalSecondaryIndexes": properties["GlobalSecondaryIndexes"],
        "SSESpecification": {"Enabled": sse["SSEEnabled"]},
        "DeletionProtectionEnabled": properties["DeletionProtectionEnabled"],
    }


@pytest.fixture
def deployed(synthesized: Synthesized) -> Iterator[Any]:
    (table,) = synthesized.of_type("AWS::DynamoDB::Table").values()
    properties = table["Properties"]
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(**_create_table_arguments(properties))
        ttl = properties["TimeToLiveSpecification"]
        dynamodb.update_time_to_live(
            TableName=TABLE,
            TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": ttl["Enabled"]},
        )
        yield dynamodb


def test_a_message_lives_and_dies_on_the_deployed_table(deployed: Any) -> None:
    client = QueueClient(TABLE, dynamodb=deployed)
    client.create_queue("orders")
    queue = client.queue("orders", "tenant-a")

    sent = queue.send("hello")
    (received,) = queue.receive(max_messages=1)
    queue.delete(received.receipt_handle)

    assert received.message_id == sent.message_id
    assert received.body == "hello"
    assert queue.receive(max_messages=1) == []
    assert queue.stats().visible == 0


def test_the_deployed_table_is_the_one_the_core_creates(deployed: Any) -> None:
    QueueClient("core-created", dynamodb=deployed).create_table()
    described = deployed.describe_table(TableName=TABLE)["Table"]
    created = deployed.describe_table(TableName="core-created")["Table"]

    def shape(table: dict[str, Any]) -> tuple[Any, ...]:
        indexes = {
            index["IndexName"]: (index["KeySchema"], index["Projection"]["ProjectionType"])
            for index in table["GlobalSecondaryIndexes"]
        }
        attributes = sorted((item["AttributeName"], item["AttributeType"]) for item in table["AttributeDefinitions"])
        return table["KeySchema"], attributes, indexes

    assert shape(described) == shape(created)
