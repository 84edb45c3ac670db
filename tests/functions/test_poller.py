"""The poller: receiving and settling messages, and looking at them, through API Gateway and direct invokes."""

from __future__ import annotations

import pytest
from queue_core import QueueClient, SubQueue

from functions.poller import handler as poller
from tests.functions.conftest import call, invoke, metric_values

BASE = "/queues/orders/clients/c1"
RECEIVED_KEYS = {
    "message_id",
    "receipt_handle",
    "body",
    "attributes",
    "group_id",
    "sequence",
    "receive_count",
    "sent_at",
    "first_received_at",
    "attribute_types",
    "client",
    "priority",
    "dedup_id",
}


@pytest.fixture
def orders(core: QueueClient) -> SubQueue:
    core.create_queue("orders", visibility_timeout=30, max_receive_count=0)
    return core.queue("orders", "c1")


def error_of(answer) -> tuple[int, str]:
    assert set(answer.body) == {"error"}
    return answer.status, answer.body["error"]["code"]


def test_receive_then_delete(orders: SubQueue) -> None:
    sent = orders.send("hello", attributes={"k": "v"})
    answer = call(poller, "POST", f"{BASE}/receive", {"max_messages": 10, "visibility_timeout": 60})
    assert answer.status == 200
    [message] = answer.body["messages"]
    assert set(message) == RECEIVED_KEYS
    assert (message["message_id"], message["body"], message["attributes"]) == (sent.message_id, "hello", {"k": "v"})
    assert call(poller, "POST", f"{BASE}/receive").body == {"messages": []}

    deleted = call(poller, "POST", f"{BASE}/delete", {"receipt_handles": [message["receipt_handle"]]})
    assert deleted.status == 200 and deleted.body == {"successful": [{"index": 0}], "failed": []}
    assert orders.stats().in_flight == 0


def test_receive_without_a_body_takes_the_defaults(orders: SubQueue) -> None:
    orders.send("one")
    orders.send("two")
    assert len(call(poller, "POST", f"{BASE}/receive").body["messages"]) == 1


def test_receive_newest_first(orders: SubQueue) -> None:
    orders.send("old")
    orders.send("new")
    answer = call(poller, "POST", f"{BASE}/receive", {"order": "newest"})
    assert [message["body"] for message in answer.body["messages"]] == ["new"]


@pytest.mark.parametrize(
    "body",
    [
        {"max_messages": 11},
        {"max_messages": 0},
        {"wait_seconds": 21},
        {"visibility_timeout": -1},
        {"order": "random"},
        {"max_messages": "5"},
        {"wait": 1},
    ],
)
def test_receive_refuses_out_of_range_and_unknown_options(orders: SubQueue, body: dict) -> None:
    assert error_of(call(poller, "POST", f"{BASE}/receive", body)) == (400, "ValidationError")


def test_a_stale_or_forged_handle_fails_its_entry_only(orders: SubQueue) -> None:
    orders.send("one")
    orders.send("two")
    handles = [
        message["receipt_handle"]
        for message in call(poller, "POST", f"{BASE}/receive", {"max_messages": 2}).body["messages"]
    ]
    answer = call(poller, "POST", f"{BASE}/delete", {"receipt_handles": [handles[0], "forged.handle", handles[1]]})
    assert [entry["index"] for entry in answer.body["successful"]] == [0, 2]
    assert [(entry["index"], entry["code"]) for entry in answer.body["failed"]] == [(1, "ValidationError")]


def test_change_visibility_and_a_stale_handle_is_a_409(orders: SubQueue) -> None:
    orders.send("one")
    [first] = call(poller, "POST", f"{BASE}/receive", {"visibility_timeout": 0}).body["messages"]
    [second] = call(poller, "POST", f"{BASE}/receive", {"visibility_timeout": 0}).body["messages"]
    moved = call(
        poller, "POST", f"{BASE}/visibility", {"receipt_handle": second["receipt_handle"], "visibility_timeout": 120}
    )
    assert moved.status == 200 and moved.body["visible_at"] >= second["first_received_at"] + 120_000
    stale = call(
        poller, "POST", f"{BASE}/visibility", {"receipt_handle": first["receipt_handle"], "visibility_timeout": 5}
    )
    assert error_of(stale) == (409, "ReceiptHandleStale")


def test_release_with_a_delay_and_with_backoff(orders: SubQueue) -> None:
    orders.send("one")
    [message] = call(poller, "POST", f"{BASE}/receive").body["messages"]
    released = call(
        poller, "POST", f"{BASE}/release", {"receipt_handle": message["receipt_handle"], "delay_seconds": 0}
    )
    assert released.status == 200 and isinstance(released.body["visible_at"], int)
    [again] = call(poller, "POST", f"{BASE}/receive").body["messages"]
    assert again["receive_count"] == 2
    backoff = call(
        poller, "POST", f"{BASE}/release", {"receipt_handle": again["receipt_handle"], "delay_seconds": None}
    )
    assert backoff.status == 200 and orders.stats().delayed + orders.stats().visible == 1


def test_visibility_and_release_need_a_handle(orders: SubQueue) -> None:
    assert error_of(call(poller, "POST", f"{BASE}/visibility", {"visibility_timeout": 5})) == (400, "ValidationError")
    assert error_of(call(poller, "POST", f"{BASE}/release", {})) == (400, "ValidationError")
    assert error_of(call(poller, "POST", f"{BASE}/release")) == (400, "ValidationError")


def test_peek_get_cancel_purge_and_stats(orders: SubQueue) -> None:
    first = orders.send("one")
    orders.send("two")
    orders.send("three")

    peeked = call(poller, "GET", f"{BASE}/messages", query={"limit": "2"})
    assert [message["body"] for message in peeked.body["messages"]] == ["one", "two"]
    assert {message["state"] for message in peeked.body["messages"]} == {"visible"}

    got = call(poller, "GET", f"{BASE}/messages/{first.message_id}")
    assert got.status == 200 and (got.body["body"], got.body["state"]) == ("one", "visible")

    cancelled = call(poller, "DELETE", f"{BASE}/messages/{first.message_id}")
    assert (cancelled.status, cancelled.body) == (200, {"deleted": True})
    assert error_of(call(poller, "GET", f"{BASE}/messages/{first.message_id}")) == (404, "MessageNotFound")
    assert error_of(call(poller, "DELETE", f"{BASE}/messages/{first.message_id}")) == (404, "MessageNotFound")

    stats = call(poller, "GET", f"{BASE}/stats")
    assert stats.status == 200 and (stats.body["visible"], stats.body["in_flight"], stats.body["dlq"]) == (2, 0, 0)

    purged = call(poller, "DELETE", f"{BASE}/messages")
    assert (purged.status, purged.body) == (200, {"purged": 2})
    assert call(poller, "GET", f"{BASE}/stats").body["visible"] == 0


@pytest.mark.parametrize("limit", ["0", "101", "ten"])
def test_peek_limit_is_range_checked(orders: SubQueue, limit: str) -> None:
    assert error_of(call(poller, "GET", f"{BASE}/messages", query={"limit": limit})) == (400, "ValidationError")


def test_a_malformed_message_id_is_a_400(orders: SubQueue) -> None:
    answer = call(poller, "GET", f"{BASE}/messages/not-an-id")
    assert error_of(answer) == (400, "ValidationError") and "path parameter id" in answer.body["error"]["message"]


def test_a_missing_queue_is_a_404() -> None:
    assert error_of(call(poller, "POST", "/queues/nowhere/clients/c1/receive")) == (404, "QueueNotFound")
    assert error_of(call(poller, "GET", "/queues/nowhere/clients/c1/stats")) == (404, "QueueNotFound")


def test_poller_does_not_serve_producer_routes() -> None:
    assert error_of(call(poller, "PUT", "/queues/orders")) == (404, "NotFound")


def test_receiving_and_deleting_publish_metrics(orders: SubQueue, capsys: pytest.CaptureFixture[str]) -> None:
    orders.send("one")
    orders.send("two")
    capsys.readouterr()
    handles = [
        m["receipt_handle"] for m in call(poller, "POST", f"{BASE}/receive", {"max_messages": 5}).body["messages"]
    ]
    call(poller, "POST", f"{BASE}/delete", {"receipt_handles": handles})
    output = capsys.readouterr().out
    assert metric_values(output, "MessagesReceived") == [2]
    assert metric_values(output, "MessagesDeleted") == [2]


def test_invoke_actions_answer_the_http_json(orders: SubQueue) -> None:
    where = {"queue": "orders", "client": "c1"}
    first = orders.send("one")
    orders.send("two")

    peeked = invoke(poller, {"action": "peek", **where, "limit": 1})
    assert [message["body"] for message in peeked["messages"]] == ["one"]
    assert invoke(poller, {"action": "get", **where, "message_id": first.message_id})["state"] == "visible"
    assert invoke(poller, {"action": "stats", **where})["visible"] == 2

    received = invoke(poller, {"action": "receive", **where, "max_messages": 2, "wait_seconds": 0})["messages"]
    handles = [message["receipt_handle"] for message in received]
    assert invoke(
        poller, {"action": "change_visibility", **where, "receipt_handle": handles[0], "visibility_timeout": 60}
    )["visible_at"]
    assert invoke(poller, {"action": "release", **where, "receipt_handle": handles[1], "delay_seconds": 0})[
        "visible_at"
    ]
    assert invoke(poller, {"action": "delete", **where, "receipt_handles": [handles[0]]})["successful"] == [
        {"index": 0}
    ]

    assert invoke(poller, {"action": "cancel", **where, "message_id": received[1]["message_id"]}) == {"deleted": True}
    orders.send("three")
    assert invoke(poller, {"action": "purge", **where}) == {"purged": 1}


@pytest.mark.parametrize(
    ("event", "status", "code"),
    [
        ({"action": "receive", "queue": "orders"}, 400, "ValidationError"),
        ({"action": "receive", "queue": "orders", "client": "c1", "max_messages": 99}, 400, "ValidationError"),
        ({"action": "get", "queue": "orders", "client": "c1"}, 400, "ValidationError"),
        ({"action": "delete", "queue": "orders", "client": "c1", "receipt_handles": []}, 400, "ValidationError"),
        ({"action": "send", "queue": "orders", "client": "c1", "body": "x"}, 400, "ValidationError"),
        ({"action": "stats", "queue": "orders", "client": "bad id"}, 400, "ValidationError"),
        ({"action": "stats", "queue": "nowhere", "client": "c1"}, 404, "QueueNotFound"),
    ],
)
def test_invoke_errors(orders: SubQueue, event: dict, status: int, code: str) -> None:
    answer = invoke(poller, event)
    assert (answer["status"], answer["error"]["code"]) == (status, code)


def test_a_whole_float_is_an_integer_as_the_document_reads_it(orders: SubQueue) -> None:
    """JSON Schema's `integer` (the OpenAPI document's) takes `2.0`: so does every integer field; `2.5`, `"2"` and
    `true` are still refused."""
    for n in range(3):
        orders.send(f"m{n}")
    answer = call(poller, "POST", f"{BASE}/receive", {"max_messages": 2.0, "visibility_timeout": 60.0})
    assert answer.status == 200 and len(answer.body["messages"]) == 2
    handle = answer.body["messages"][0]["receipt_handle"]
    assert (
        call(poller, "POST", f"{BASE}/visibility", {"receipt_handle": handle, "visibility_timeout": 1e2}).status == 200
    )
    for wrong in (2.5, "2", True, float("inf")):
        assert error_of(call(poller, "POST", f"{BASE}/receive", {"max_messages": wrong})) == (400, "ValidationError")


def test_an_id_of_the_documented_shape_that_names_no_message_is_not_found(orders: SubQueue) -> None:
    """The document's id pattern takes a FIFO-shaped id whose group does not decode, and another queue kind's id:
    neither names a message of this standard queue, so both are 404, not 400."""
    for message_id in ("Fzzzz.1", "FAAAA.00000000000000000001", "S7.0123abc", "S0-9.x"):
        assert error_of(call(poller, "GET", f"{BASE}/messages/{message_id}")) == (404, "MessageNotFound")


def test_a_handle_for_a_queue_that_does_not_exist_is_a_404_whatever_it_says() -> None:
    handle = "QUJD" * 8 + "." + "A" * 22  # the documented shape, issued by no queue
    for route in ("/queues/missing/release", "/queues/missing/visibility"):
        body = {"receipt_handle": handle, **({"visibility_timeout": 5} if route.endswith("visibility") else {})}
        assert error_of(call(poller, "POST", route, body)) == (404, "QueueNotFound")
