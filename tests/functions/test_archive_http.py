"""The archive through the poller: a page by time range (REST query string and invoke), a message by id, and the
queue-wide page; bad bounds are refused."""

from __future__ import annotations

from queue_core import QueueClient

from functions.poller import handler as poller
from tests.functions.conftest import call, invoke

BASE = "/queues/orders/clients/c1"


def _acknowledged(core: QueueClient, client: str, bodies: list[str]) -> list[str]:
    sub_queue = core.queue("orders", client)
    ids = []
    for body in bodies:
        ids.append(sub_queue.send(body).message_id)
        [message] = sub_queue.receive()
        sub_queue.delete(message.receipt_handle)
    return ids


def test_archive_page_by_rest_and_invoke_and_one_message_by_id(core: QueueClient) -> None:
    core.create_queue("orders", archive_days=3)
    ids = _acknowledged(core, "c1", ["one", "two", "three"])
    page = call(poller, "GET", f"{BASE}/archive", query={"limit": "2", "order": "oldest"}).body
    assert [m["body"] for m in page["messages"]] == ["one", "two"] and page["cursor"]
    rest = call(poller, "GET", f"{BASE}/archive", query={"cursor": page["cursor"], "order": "oldest"}).body
    assert [m["body"] for m in rest["messages"]] == ["three"] and rest["cursor"] is None
    event = {"action": "archive_list", "queue": "orders", "client": "c1", "order": "oldest"}
    assert [m["message_id"] for m in invoke(poller, event)["messages"]] == ids
    [copy] = call(poller, "GET", f"{BASE}/archive/{ids[1]}").body["messages"]
    assert (copy["body"], copy["client"], copy["acked_at"] >= copy["sent_at"]) == ("two", "c1", True)
    missing = call(poller, "GET", f"{BASE}/archive/S0.none")
    assert (missing.status, missing.body["error"]["code"]) == (404, "MessageNotFound")


def test_queue_wide_archive_page(core: QueueClient) -> None:
    core.create_queue("orders", archive_days=3)
    _acknowledged(core, "c1", ["a"])
    _acknowledged(core, "c2", ["b"])
    page = call(poller, "GET", "/queues/orders/archive", query={"order": "oldest"}).body
    assert [(m["client"], m["body"]) for m in page["messages"]] == [("c1", "a"), ("c2", "b")]


def test_bad_bounds_are_refused(core: QueueClient) -> None:
    core.create_queue("orders", archive_days=3)
    for query in ({"order": "sideways"}, {"since": "yesterday"}, {"limit": "0"}, {"cursor": "%%%"}):
        answer = call(poller, "GET", f"{BASE}/archive", query=query)
        assert (answer.status, answer.body["error"]["code"]) == (400, "ValidationError"), query


def test_archive_days_is_a_setting(core: QueueClient) -> None:
    from functions.producer import handler as producer

    created = call(producer, "PUT", "/queues/kept", {"archive_days": 90})
    assert created.status == 201 and created.body["archive_days"] == 90
    assert call(producer, "PATCH", "/queues/kept", {"archive_days": 0}).body["archive_days"] == 0
    refused = call(producer, "PUT", "/queues/other", {"archive_days": 91})
    assert refused.status == 400
