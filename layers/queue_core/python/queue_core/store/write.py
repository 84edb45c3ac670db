"""One conditional write, named by the operation that builds it (see `messages`, `groups`, `registry`).

A write runs alone (`Store.write`) or as one action of a transaction (`Store.transact`); `transact_item` gives it
in the low-level client's format (typed attribute values), ready for a caller's own `transact_write_items`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from boto3.dynamodb.types import TypeSerializer

Key = dict[str, str]
_serializer = TypeSerializer()


def serialize(value: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _serializer.serialize(item) for key, item in value.items() if item is not None}


@dataclass(frozen=True)
class Write:
    kind: Literal["Put", "Update", "Delete", "ConditionCheck"]
    key: Key | None = None
    item: dict[str, Any] | None = None
    update: str | None = None
    condition: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    # What a write run alone answers: the item after an update ("ALL_NEW"), before a delete ("ALL_OLD"), or nothing.
    returns: str = "NONE"

    def expression_arguments(self) -> dict[str, Any]:
        arguments: dict[str, Any] = {}
        if self.condition:
            arguments["ConditionExpression"] = self.condition
            arguments["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        if self.values:
            arguments["ExpressionAttributeValues"] = serialize(self.values)
        return arguments

    def transact_item(self, table: str) -> dict[str, Any]:
        body: dict[str, Any] = {"TableName": table, **self.expression_arguments()}
        body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        if self.item is not None:
            body["Item"] = serialize(self.item)
        if self.key is not None:
            body["Key"] = serialize(self.key)
        if self.update is not None:
            body["UpdateExpression"] = self.update
        return {self.kind: body}


def put(item: dict[str, Any], condition: str | None = None, values: Mapping[str, Any] | None = None) -> Write:
    return Write("Put", item=item, condition=condition, values=values or {})


def put_new(item: dict[str, Any]) -> Write:
    """An item whose key was never used: every message, DLQ and registration key is new when written."""
    return Write("Put", item=item, condition="attribute_not_exists(pk)")


def delete(key: Key, condition: str | None = None, values: Mapping[str, Any] | None = None) -> Write:
    return Write("Delete", key=key, condition=condition, values=values or {}, returns="ALL_OLD")


def update(
    key: Key, expression: str, values: Mapping[str, Any], condition: str | None = None, returns: str = "NONE"
) -> Write:
    return Write("Update", key=key, update=expression, condition=condition, values=values, returns=returns)
