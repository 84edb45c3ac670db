"""Counts DynamoDB calls and items with a botocore event hook, for tests where cost is the point."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CallCounter:
    calls: Counter = field(default_factory=Counter)
    items_read: int = 0
    condition_failures: int = 0
    # The string values of each query's key condition (its partition and sort key bounds), in order.
    queries: list[list[str]] = field(default_factory=list)

    def attach(self, client: Any) -> CallCounter:
        client.meta.events.register("after-call.dynamodb", self._after_call)
        client.meta.events.register("provide-client-params.dynamodb.Query", self._query)
        return self

    def detach(self, client: Any) -> None:
        client.meta.events.unregister("after-call.dynamodb", self._after_call)
        client.meta.events.unregister("provide-client-params.dynamodb.Query", self._query)

    def reset(self) -> None:
        self.calls.clear()
        self.items_read = 0
        self.condition_failures = 0
        self.queries.clear()

    def _query(self, params: dict[str, Any], **_: Any) -> None:
        values = params.get("ExpressionAttributeValues", {})
        self.queries.append([value["S"] for value in values.values() if isinstance(value, dict) and "S" in value])

    def _after_call(self, http_response: Any, parsed: dict, model: Any, **_: Any) -> None:
        self.calls[model.name] += 1
        if model.name in ("Query", "Scan"):
            self.items_read += int(parsed.get("ScannedCount", 0))
        elif model.name == "GetItem":
            self.items_read += 1 if parsed.get("Item") else 0
        elif model.name == "BatchGetItem":
            self.items_read += sum(len(items) for items in parsed.get("Responses", {}).values())
        error = parsed.get("Error", {}).get("Code", "")
        if error in ("ConditionalCheckFailedException", "TransactionCanceledException"):
            self.condition_failures += 1
