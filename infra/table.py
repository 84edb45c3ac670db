"""The queue's one table, built from the core's own definition so the library and the stack cannot drift."""

from __future__ import annotations

from typing import Any, Final

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from constructs import Construct
from queue_core.table import TTL_ATTRIBUTE, table_definition

from infra.props import DynamoQueueProps

_ATTRIBUTE_TYPES: Final = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}
_PROJECTIONS: Final = {
    "ALL": dynamodb.ProjectionType.ALL,
    "KEYS_ONLY": dynamodb.ProjectionType.KEYS_ONLY,
    "INCLUDE": dynamodb.ProjectionType.INCLUDE,
}


def customer_key(scope: Construct, props: DynamoQueueProps) -> kms.IKey | None:
    """The customer managed key of `encryption_key_arn`, once per stack; None for the default encryption."""
    if not props.encryption_key_arn:
        return None
    found = scope.node.try_find_child("CustomerKey")
    return found or kms.Key.from_key_arn(scope, "CustomerKey", props.encryption_key_arn)  # type: ignore[return-value]


def build_table(scope: Construct, props: DynamoQueueProps) -> dynamodb.Table:
    """On-demand (or provisioned with auto scaling), point-in-time recoverable, encrypted, deletion-protected unless
    the props say otherwise.

    Keys, attribute types and every index come from `queue_core.table.table_definition()`, the same
    arguments `QueueClient.create_table()` sends: a change of the data model changes both.
    """
    definition = table_definition(props.table_name or "unused")
    bounds = props.capacity_bounds
    table = dynamodb.Table(
        scope,
        "Table",
        table_name=props.table_name,
        partition_key=_key(definition, definition["KeySchema"], "HASH"),
        sort_key=_key(definition, definition["KeySchema"], "RANGE"),
        billing_mode=dynamodb.BillingMode.PROVISIONED if props.provisioned else dynamodb.BillingMode.PAY_PER_REQUEST,
        read_capacity=bounds["read"][0] if props.provisioned else None,
        write_capacity=bounds["write"][0] if props.provisioned else None,
        time_to_live_attribute=TTL_ATTRIBUTE,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED if props.encryption_key_arn else props.table_encryption,
        encryption_key=customer_key(scope, props),
        deletion_protection=props.deletion_protection,
        removal_policy=props.removal_policy,
    )
    for index in definition.get("GlobalSecondaryIndexes", []):
        projection = index["Projection"]
        table.add_global_secondary_index(
            index_name=index["IndexName"],
            partition_key=_key(definition, index["KeySchema"], "HASH"),
            sort_key=_key(definition, index["KeySchema"], "RANGE"),
            projection_type=_PROJECTIONS[projection["ProjectionType"]],
            non_key_attributes=projection.get("NonKeyAttributes"),
            read_capacity=bounds["index_read"][0] if props.provisioned else None,
            write_capacity=bounds["index_write"][0] if props.provisioned else None,
        )
        if props.provisioned:
            _scale_index(table, index["IndexName"], props)
    if props.provisioned:
        _scale_table(table, props)
    return table


def _scale_table(table: dynamodb.Table, props: DynamoQueueProps) -> None:
    """Target tracking on the table's read and write units, between the props' floors and ceilings."""
    bounds = props.capacity_bounds
    target = props.capacity_target_utilization
    read_floor, read_ceiling = bounds["read"]
    write_floor, write_ceiling = bounds["write"]
    table.auto_scale_read_capacity(min_capacity=read_floor, max_capacity=read_ceiling).scale_on_utilization(
        target_utilization_percent=target
    )
    table.auto_scale_write_capacity(min_capacity=write_floor, max_capacity=write_ceiling).scale_on_utilization(
        target_utilization_percent=target
    )


def _scale_index(table: dynamodb.Table, index_name: str, props: DynamoQueueProps) -> None:
    """The same on an index, which has units of its own: a write to the table that changes an index entry also
    needs a unit of the index, so an index at its limit throttles the table's writes too."""
    bounds = props.capacity_bounds
    target = props.capacity_target_utilization
    read_floor, read_ceiling = bounds["index_read"]
    write_floor, write_ceiling = bounds["index_write"]
    table.auto_scale_global_secondary_index_read_capacity(
        index_name, min_capacity=read_floor, max_capacity=read_ceiling
    ).scale_on_utilization(target_utilization_percent=target)
    table.auto_scale_global_secondary_index_write_capacity(
        index_name, min_capacity=write_floor, max_capacity=write_ceiling
    ).scale_on_utilization(target_utilization_percent=target)


def _key(definition: dict[str, Any], schema: list[dict[str, str]], key_type: str) -> dynamodb.Attribute | None:
    """One key of a key schema, typed from the definition's attribute list; None when the schema has no such key."""
    names = [item["AttributeName"] for item in schema if item["KeyType"] == key_type]
    if not names:
        return None
    types = {item["AttributeName"]: item["AttributeType"] for item in definition["AttributeDefinitions"]}
    return dynamodb.Attribute(name=names[0], type=_ATTRIBUTE_TYPES[types[names[0]]])
