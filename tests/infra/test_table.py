"""The deployed table is the table the core creates: same keys, types, index and TTL, never drifting apart."""

from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Match
from queue_core.table import TTL_ATTRIBUTE, table_definition

from tests.infra.synth import Synthesized


def _table(synthesized: Synthesized) -> dict[str, Any]:
    (table,) = synthesized.of_type("AWS::DynamoDB::Table").values()
    return table


def _by_name(items: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {item[key]: item for item in items}


def test_table_keys_and_attribute_types_match_the_core_definition(synthesized: Synthesized) -> None:
    properties = _table(synthesized)["Properties"]
    definition = table_definition("any")

    assert properties["KeySchema"] == definition["KeySchema"]
    assert _by_name(properties["AttributeDefinitions"], "AttributeName") == _by_name(
        definition["AttributeDefinitions"], "AttributeName"
    )
    assert properties["BillingMode"] == definition["BillingMode"] == "PAY_PER_REQUEST"


def test_index_key_schema_and_projection_match_the_core_definition(synthesized: Synthesized) -> None:
    deployed = _by_name(_table(synthesized)["Properties"]["GlobalSecondaryIndexes"], "IndexName")
    defined = _by_name(table_definition("any")["GlobalSecondaryIndexes"], "IndexName")

    assert deployed.keys() == defined.keys()
    for name, index in defined.items():
        assert deployed[name]["KeySchema"] == index["KeySchema"]
        assert deployed[name]["Projection"]["ProjectionType"] == index["Projection"]["ProjectionType"]
        assert sorted(deployed[name]["Projection"].get("NonKeyAttributes", [])) == sorted(
            index["Projection"].get("NonKeyAttributes", [])
        )


def test_expired_items_are_removed_by_ttl_on_the_core_attribute(synthesized: Synthesized) -> None:
    ttl = _table(synthesized)["Properties"]["TimeToLiveSpecification"]
    assert ttl == {"AttributeName": TTL_ATTRIBUTE, "Enabled": True}


def test_table_is_recoverable_encrypted_and_protected_from_deletion(synthesized: Synthesized) -> None:
    table = _table(synthesized)
    properties = table["Properties"]

    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert properties["SSESpecification"] == {"SSEEnabled": True}
    assert properties["DeletionProtectionEnabled"] is True
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"


def test_table_name_is_left_to_cloudformation_by_default(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::DynamoDB::Table", Match.object_like({"TableName": Match.absent()})
    )
