"""The DLQ redriver: listing a sub-queue's dead-letter queue, moving messages back, and moving one in by hand."""

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


def test_an_operator_moves_a_waiting_message_to_the_dlq(core: QueueClient) -> None:
    core.create_queue("orders", max_receive_count=5)
    sub_queue = core.queue("orders", "c1")
    invalid, valid = sub_queue.send("invalid").message_id, sub_queue.send("valid").message_id

    answer = call(redriver, "POST", f"{BASE}/messages/{invalid}/dlq")
    assert (answer.status, answer.body) == (200, {"moved": True})
    assert sub_queue.get(invalid).state == "dlq"
    assert [message.message_id for message in sub_queue.receive(max_messages=10)] == [valid]


def test_moving_to_the_dlq_publishes_messages_moved_to_dlq(
    core: QueueClient, capsys: pytest.CaptureFixture[str]
) -> None:
    core.create_queue("orders")
    message_id = core.queue("orders", "c1").send("invalid").message_id
    capsys.readouterr()
    call(redriver, "POST", f"{BASE}/messages/{message_id}/dlq")
    assert metric_values(capsys.readouterr().out, "MessagesMovedToDlq") == [1]


def test_moving_to_the_dlq_what_is_not_waiting_is_refused(core: QueueClient) -> None:
    core.create_queue("orders")
    sub_queue = core.queue("orders", "c1")
    in_flight = sub_queue.send("being worked on").message_id
    sub_queue.receive()
    gone = sub_queue.send("cancelled").message_id
    sub_queue.cancel(gone)

    refused = call(redriver, "POST", f"{BASE}/messages/{in_flight}/dlq")
    assert (refused.status, refused.body["error"]["code"]) == (400, "ValidationError")
    assert "in flight" in refused.body["error"]["message"]
    missing = call(redriver, "POST", f"{BASE}/messages/{gone}/dlq")
    assert (missing.status, missing.body["error"]["code"]) == (404, "MessageNotFound")
    assert sub_queue.stats().dlq == 0


def test_a_fifo_message_goes_to_the_dlq_by_its_receive_limit_only(core: QueueClient) -> None:
    core.create_queue("jobs.fifo")
    message_id = core.queue("jobs.fifo", "c1").send("step", group_id="g").message_id
    answer = call(redriver, "POST", f"/queues/jobs.fifo/clients/c1/messages/{message_id}/dlq")
    assert (answer.status, answer.body["error"]["code"]) == (400, "ValidationError")


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/queues/nowhere/clients/c1/messages/S0.1/dlq", 404, "QueueNotFound"),
        (f"{BASE}/messages/not-an-id/dlq", 400, "ValidationError"),
        ("/queues/orders/clients/not%20ok/messages/S0.1/dlq", 400, "ValidationError"),
    ],
)
def test_move_to_dlq_errors(core: QueueClient, path: str, status: int, code: str) -> None:
    core.create_queue("orders")
    answer = call(redriver, "POST", path)
    assert (answer.status, answer.body["error"]["code"]) == (status, code)


def test_invoke_actions(orders: SubQueue) -> None:
    where = {"queue": "orders", "client": "c1"}
    assert len(invoke(redriver, {"action": "list_dlq", **where, "limit": 3})["messages"]) == 3
    assert invoke(redriver, {"action": "redrive", **where, "max_messages": 2}) == {"redriven": 2}
    assert invoke(redriver, {"action": "redrive", **where}) == {"redriven": 1}
    message_id = orders.send("invalid").message_id
    assert invoke(redriver, {"action": "move_to_dlq", **where, "message_id": message_id}) == {"moved": True}
    assert orders.get(message_id).state == "dlq"


def test_invoke_errors(orders: SubQueue) -> None:
    assert invoke(redriver, {"action": "receive", "queue": "orders", "client": "c1"})["status"] == 400
    missing = invoke(redriver, {"action": "list_dlq", "queue": "nowhere", "client": "c1"})
    assert (missing["status"], missing["error"]["code"]) == (404, "QueueNotFound")
    unknown = invoke(redriver, {"action": "move_to_dlq", "queue": "orders", "client": "c1", "message_id": "S0.1"})
    assert (unknown["status"], unknown["error"]["code"]) == (404, "MessageNotFound")
    no_id = invoke(redriver, {"action": "move_to_dlq", "queue": "orders", "client": "c1"})
    assert (no_id["status"], no_id["error"]["code"]) == (400, "ValidationError")
    assert "message_id" in no_id["error"]["message"]
