"""The table's definition: one source for `create_table()` and for the CDK stack's test that compares them."""

from __future__ import annotations

from typing import Any, Final

PARTITION_KEY: Final = "pk"
SORT_KEY: Final = "sk"
TTL_ATTRIBUTE: Final = "expires_at"
INDEX_NAME: Final = "gsi1"
INDEX_PARTITION_KEY: Final = "gsi1pk"
INDEX_SORT_KEY: Final = "gsi1sk"
# A small INCLUDE projection: enough to skip expired entries, count in-flight messages and spot messages over
# their receive limit straight from the index, while every index write stays one write unit.
INDEX_PROJECTED: Final = ("expires_at", "receive_count", "in_flight")


def table_definition(table_name: str) -> dict[str, Any]:
    """The `CreateTable` arguments, on-demand billing."""
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": SORT_KEY, "AttributeType": "S"},
            {"AttributeName": INDEX_PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": INDEX_SORT_KEY, "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": INDEX_NAME,
                "KeySchema": [
                    {"AttributeName": INDEX_PARTITION_KEY, "KeyType": "HASH"},
                    {"AttributeName": INDEX_SORT_KEY, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(INDEX_PROJECTED)},
            }
        ],
    }
