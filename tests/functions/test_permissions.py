"""What the new operations call on DynamoDB is what their function's IAM policy allows (`infra.permissions`).

IAM authorizes each item of a TransactWriteItems as the PutItem, UpdateItem, DeleteItem or ConditionCheckItem it
holds, so a transaction counts as those.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from queue_core import QueueClient

from functions.dlq_redriver import handler as redriver
from functions.producer import handler as producer
from infra.permissions import TABLE_ACTIONS
from tests.functions.conftest import invoke

TRANSACTION_ITEMS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


@pytest.fixture
def called(core: QueueClient) -> Iterator[set[str]]:
    """The IAM actions of the DynamoDB calls the functions make from now on."""
    actions: set[str] = set()

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "TransactWriteItems":
            actions.update(f"dynamodb:{TRANSACTION_ITEMS[kind]}" for item in params["TransactItems"] for kind in item)
        else:
            actions.add(f"dynamodb:{model.name}")

    core.dynamodb.meta.events.register("provide-client-params.dynamodb", record)
    yield actions
    core.dynamodb.meta.events.unregister("provide-client-params.dynamodb", record)


@pytest.mark.parametrize(
    ("handler", "function", "event"),
    [
        (producer, "producer", {"action": "list_clients", "queue": "orders"}),
        (producer, "producer", {"action": "update_queue", "queue": "orders", "shards": 2}),
        (redriver, "dlq_redriver", {"action": "move_to_dlq", "queue": "orders", "client": "c1"}),
    ],
    ids=["list_clients", "update_queue", "move_to_dlq"],
)
def test_an_operation_calls_only_what_its_function_may(
    core: QueueClient, called: set[str], handler: ModuleType, function: str, event: dict[str, Any]
) -> None:
    core.create_queue("orders")
    message_id = core.queue("orders", "c1").send("invalid").message_id
    called.clear()

    answer = invoke(handler, {**event, "message_id": message_id} if "client" in event else event)

    assert "error" not in answer, answer
    assert called, "the operation reached DynamoDB"
    assert called <= set(TABLE_ACTIONS[function]), called - set(TABLE_ACTIONS[function])
