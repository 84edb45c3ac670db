"""The DLQ redriver: listing a sub-queue's dead-letter queue and moving messages back."""

from __future__ import annotations

import pytest
from queue_core import QueueClient, SubQueue

from functions.dlq_redriver import handler as redriver
from tests.functions.conftest import call, invoke, metric_values

BASE = "/queues/orders/clients/c1"


@pytest.fixture
def orders(core: QueueClient) -> SubQueue:
    """Three messages that each failed their one allowed receive and were swept to the DLQ."""
    core.create_queue("orders", max_receive_count=1)
    sub_queue = core.queue("orders", "c1")
    for body in ("one", "two", "three"):
        sub_queue.send(body)
    assert len(sub_queue.receive(max_messages=3, visibility_timeout=0)) == 3
    assert core.sweep().moved_to_dlq == 3
    return sub_queue


def test_list_dlq_with_a_limit(orders: SubQueue) -> None:
    answer = call(redriver, "GET", f"{BASE}/dlq", query={"limit": "2"})
    assert answer.status == 200 and len(answer.body["messages"]) == 2
    assert {message["state"] for message in answer.body["messages"]} == {"dlq"}
    assert len(call(redriver, "GET", f"{BASE}/dlq").body["messages"]) == 3


def test_redrive_some_then_all(orders: SubQueue) -> None:
    assert call(redriver, "POST", f"{BASE}/dlq/redrive", {"max_messages": 1}).body == {"redriven": 1}
    assert call(redriver, "POST", f"{BASE}/dlq/redrive").body == {"redriven": 2}
    stats = orders.stats()
    assert (stats.visible, stats.dlq) == (3, 0)


def test_redrive_by_id(orders: SubQueue) -> None:
    [listed] = call(redriver, "GET", f"{BASE}/dlq", query={"limit": "1"}).body["messages"]
    answer = call(redriver, "POST", f"{BASE}/dlq/redrive", {"message_ids": [listed["message_id"]]})
    assert answer.body == {"redriven": 1}
    [back] = orders.receive()
    assert back.message_id == listed["message_id"] and back.receive_count == 1


@pytest.mark.parametrize("body", [{"max_messages": 0}, {"message_ids": []}, {"message_ids": "x"}, {"all": True}])
def test_redrive_refuses_bad_requests(orders: SubQueue, body: dict) -> None:
    answer = call(redriver, "POST", f"{BASE}/dlq/redrive", body)
    assert (answer.status, answer.body["error"]["code"]) == (400, "ValidationError")


def test_redriving_publishes_messages_redriven(orders: SubQueue, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    call(redriver, "POST", f"{BASE}/dlq/redrive")
    assert metric_values(capsys.readouterr().out, "MessagesRedriven") == [3]


def test_invoke_actions(orders: SubQueue) -> None:
    where = {"queue": "orders", "client": "c1"}
    assert len(invoke(redriver, {"action": "list_dlq", **where, "limit": 3})["messages"]) == 3
    assert invoke(redriver, {"action": "redrive", **where, "max_messages": 2}) == {"redriven": 2}
    assert invoke(redriver, {"action": "redrive", **where}) == {"redriven": 1}


def test_invoke_errors(orders: SubQueue) -> None:
    assert invoke(redriver, {"action": "receive", "queue": "orders", "client": "c1"})["status"] == 400
    missing = invoke(redriver, {"action": "list_dlq", "queue": "nowhere", "client": "c1"})
    assert (missing["status"], missing["error"]["code"]) == (404, "QueueNotFound")
