"""The README's "Exactly-once effects and the outbox" code, run as printed against moto."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from queue_core import QueueClient

README = Path(__file__).resolve().parents[2] / "README.md"
HEADING = "### Exactly-once effects and the outbox"


def readme_code() -> str:
    section = README.read_text().split(HEADING, 1)[1]
    match = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert match, "the section shows its code"
    return match.group(1)


def revenue(dynamodb: Any) -> int:
    item = dynamodb.get_item(TableName="shop-orders", Key={"pk": {"S": "revenue"}}, ConsistentRead=True).get("Item")
    return int(item["cents"]["N"]) if item else 0


def test_the_readme_outbox_and_exactly_once_code_runs_as_printed(dynamodb: Any) -> None:
    QueueClient("dynamo-queue-local", dynamodb=dynamodb).create_table()
    dynamodb.create_table(
        TableName="shop-orders",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    namespace: dict[str, Any] = {"__name__": "readme"}
    exec(compile(readme_code(), str(README), "exec"), namespace)
    consumer = namespace["consumer"]
    try:
        order_key = {"pk": {"S": f"order#{namespace['order_id']}"}}
        order = dynamodb.get_item(TableName="shop-orders", Key=order_key)["Item"]
        assert order["cents"] == {"N": "4200"}
        assert revenue(dynamodb) == 4200, "the receive loop applied the first message's effect once"
        events = namespace["events"]
        events.send(json.dumps({"order": "o-1002", "cents": 100}))
        deadline = time.monotonic() + 10
        while revenue(dynamodb) < 4300 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        report = consumer.shutdown(timeout=5)
    assert revenue(dynamodb) == 4300 and report.succeeded == 1
    stats = namespace["events"].stats()
    assert stats.visible + stats.in_flight + stats.delayed == 0
