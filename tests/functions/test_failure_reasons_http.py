"""Failure reasons through the functions: a release's `reason` over REST and invoke, `get` and the DLQ listing
showing the attempts, the grouping of the DLQ's last reasons, and a redrive by reason."""

from __future__ import annotations

from queue_core import QueueClient

from functions.dlq_redriver import handler as redriver
from functions.poller import handler as poller
from tests.functions.conftest import call, invoke

BASE = "/queues/orders/clients/c1"


def _fail(core: QueueClient, reasons: list[str]) -> None:
    """One message per reason, each failed twice with it (the queue's limit): all in the DLQ."""
    core.create_queue("orders", max_receive_count=2)
    sub_queue = core.queue("orders", "c1")
    for _ in reasons:
        sub_queue.send("m")
    for _ in range(2):
        for reason in reasons:
            [message] = call(poller, "POST", f"{BASE}/receive").body["messages"]
            body = {"receipt_handle": message["receipt_handle"], "delay_seconds": 0, "reason": reason}
            assert call(poller, "POST", f"{BASE}/release", body).status == 200
    assert sub_queue.receive() == []


def test_release_reason_over_rest_and_invoke_shows_in_get(core: QueueClient) -> None:
    core.create_queue("orders")
    message_id = core.queue("orders", "c1").send("m").message_id
    [message] = call(poller, "POST", f"{BASE}/receive").body["messages"]
    body = {"receipt_handle": message["receipt_handle"], "delay_seconds": 0, "reason": "KeyError: 'customer_id'"}
    assert call(poller, "POST", f"{BASE}/release", body).status == 200
    shown = call(poller, "GET", f"{BASE}/messages/{message_id}").body
    assert shown["last_reason"] == "KeyError: 'customer_id'"
    assert shown["attempts"][0]["outcome"] == "released"
    [again] = invoke(poller, {"action": "receive", "queue": "orders", "client": "c1"})["messages"]
    event = {"action": "release", "queue": "orders", "client": "c1", "receipt_handle": again["receipt_handle"]}
    assert "visible_at" in invoke(poller, {**event, "reason": "timeout calling billing"})
    got = invoke(poller, {"action": "get", "queue": "orders", "client": "c1", "message_id": message_id})
    assert [a["reason"] for a in got["attempts"]] == ["KeyError: 'customer_id'", "timeout calling billing"]


def test_a_reason_that_is_not_text_is_refused(core: QueueClient) -> None:
    core.create_queue("orders")
    core.queue("orders", "c1").send("m")
    [message] = call(poller, "POST", f"{BASE}/receive").body["messages"]
    answer = call(poller, "POST", f"{BASE}/release", {"receipt_handle": message["receipt_handle"], "reason": 7})
    assert (answer.status, answer.body["error"]["code"]) == (400, "ValidationError")


def test_dlq_listing_grouping_and_redrive_by_reason(core: QueueClient) -> None:
    _fail(core, ["KeyError: 'customer_id'", "KeyError: 'customer_id'", "visibility of billing"])
    listed = call(redriver, "GET", f"{BASE}/dlq").body["messages"]
    assert sorted(m["last_reason"] for m in listed) == [
        "KeyError: 'customer_id'",
        "KeyError: 'customer_id'",
        "visibility of billing",
    ]
    assert {m["moved_reason"] for m in listed} >= {"max receives 2 reached (last: visibility of billing)"}
    grouped = call(redriver, "GET", f"{BASE}/dlq/reasons").body
    assert [(g["reason"], g["count"]) for g in grouped["reasons"]] == [
        ("KeyError: 'customer_id'", 2),
        ("visibility of billing", 1),
    ]
    assert grouped["approximate"] is False and grouped["reasons"][0]["first_seen"] <= grouped["reasons"][0]["last_seen"]
    by_invoke = invoke(redriver, {"action": "dlq_reasons", "queue": "orders", "client": "c1"})
    assert by_invoke == grouped
    answer = call(redriver, "POST", f"{BASE}/dlq/redrive", {"reason": "KeyError"})
    assert answer.body == {"redriven": 2}
    [left] = call(redriver, "GET", f"{BASE}/dlq").body["messages"]
    assert left["last_reason"] == "visibility of billing"
