"""Tables written by earlier releases (`fixtures/*.json`, dumped by `fixtures/write_fixture.py` run with that
release's code), loaded item by item into moto as that release left them."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from queue_core.table import table_definition

FIXTURES = Path(__file__).parent / "fixtures"
TABLE = "queue-fixture"


def typed(value: dict[str, Any]) -> dict[str, Any]:
    """An attribute value as the low-level client takes it (binary values are base64 text in the dump)."""
    ((kind, inner),) = value.items()
    if kind == "B":
        return {"B": base64.b64decode(inner)}
    if kind == "BS":
        return {"BS": [base64.b64decode(part) for part in inner]}
    if kind == "M":
        return {"M": {key: typed(part) for key, part in inner.items()}}
    if kind == "L":
        return {"L": [typed(part) for part in inner]}
    return value


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def restore(dynamodb: Any, dump: dict[str, Any]) -> None:
    """The table as the earlier release left it: its definition (unchanged since) and every item."""
    dynamodb.create_table(**table_definition(TABLE))
    for item in dump["items"]:
        dynamodb.put_item(TableName=TABLE, Item={key: typed(value) for key, value in item.items()})


def scan(dynamodb: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=TABLE):
        items.extend(page["Items"])
    return sorted(items, key=lambda item: (item["pk"]["S"], item["sk"]["S"]))
