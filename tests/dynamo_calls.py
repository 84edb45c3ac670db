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

    def attach(self, client: Any) -> CallCounter:
        client.meta.events.register("after-call.dynamodb", self._after_call)
        return self

    def detach(self, client: Any) -> None:
        client.meta.events.unregister("after-call.dynamodb", self._after_call)

    def reset(self) -> None:
        self.calls.clear()
        self.items_read = 0
        self.condition_failures = 0

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
