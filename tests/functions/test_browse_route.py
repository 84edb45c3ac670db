"""Browsing a sub-queue through API Gateway and direct invokes: every waiting message with its state, page by
page, filtered; bad input a 400 with the API's error shape, never a 500."""

from __future__ import annotations

import pytest
from queue_core import QueueClient

from functions.poller import handler as poller
from tests.functions.conftest import call, invoke

BASE = "/queues/orders/clients/c1"


@pytest.fixture
def arranged(core: QueueClient) -> dict[str, str]:
    core.create_queue("orders", visibility_timeout=30)
    core.create_queue("jobs.fifo", fifo=True)
    q = core.queue("orders", "c1")
    taken = q.send("taken").message_id
    assert [message.message_id for message in q.receive(max_messages=1)] == [taken]
    ready, later = q.send("ready", priority=3).message_id, q.send("later", delay_seconds=60).message_id
    ids = {"visible": ready, "delayed": later, "in_flight": taken}
    return ids


def test_the_route_lists_every_state_with_until_and_pages_on(arranged: dict[str, str]) -> None:
    answer = call(poller, "GET", f"{BASE}/browse", query={"limit": "100"})
    assert answer.status == 200 and answer.body["cursor"] is None
    states = {message["message_id"]: (message["state"], message["until"]) for message in answer.body["messages"]}
    assert {state: arranged[state] for state in ("visible", "in_flight", "delayed")} == {
        state: message_id for message_id, (state, _) in states.items()
    }
    assert states[arranged["visible"]][1] is None and states[arranged["delayed"]][1] is not None
    assert {"body", "attributes", "receive_count", "sent_at", "body_stored", "priority"} <= set(
        answer.body["messages"][0]
    )

    first = call(poller, "GET", f"{BASE}/browse", query={"limit": "2"})
    rest = call(poller, "GET", f"{BASE}/browse", query={"limit": "2", "cursor": first.body["cursor"]})
    paged = [m["message_id"] for m in first.body["messages"] + rest.body["messages"]]
    assert sorted(paged) == sorted(states) and rest.body["cursor"] is None

    delayed = call(poller, "GET", f"{BASE}/browse", query={"state": "delayed"})
    assert [m["message_id"] for m in delayed.body["messages"]] == [arranged["delayed"]]
    ranked = call(poller, "GET", f"{BASE}/browse", query={"priority": "3"})
    assert [m["message_id"] for m in ranked.body["messages"]] == [arranged["visible"]]


def test_the_invoke_action_answers_as_the_route(arranged: dict[str, str]) -> None:
    event = {"action": "browse", "queue": "orders", "client": "c1", "state": "in_flight", "limit": 5}
    answer = invoke(poller, event)
    assert [m["message_id"] for m in answer["messages"]] == [arranged["in_flight"]] and answer["cursor"] is None
    refused = invoke(poller, {**event, "state": "gone"})
    assert refused["status"] == 400 and refused["error"]["code"] == "ValidationError"


BAD_QUERIES = [
    (BASE, {"state": "dlq"}),
    (BASE, {"limit": "0"}),
    (BASE, {"limit": "many"}),
    (BASE, {"priority": "10"}),
    (BASE, {"priority": "high"}),
    (BASE, {"group": "g1"}),
    (BASE, {"cursor": "not-a-cursor"}),
    (BASE, {"cursor": "x" * 1001}),
    ("/queues/jobs.fifo/clients/c1", {"priority": "1"}),
    ("/queues/bad name/clients/c1", {}),
]


def test_bad_input_is_a_400(arranged: dict[str, str]) -> None:
    for path, query in BAD_QUERIES:
        answer = call(poller, "GET", f"{path}/browse", query=query)
        assert answer.status == 400, (path, query, answer.body)
        assert answer.body["error"]["code"] == "ValidationError"


def test_a_missing_queue_is_a_404(core: QueueClient) -> None:
    answer = call(poller, "GET", "/queues/nowhere/clients/c1/browse")
    assert (answer.status, answer.body["error"]["code"]) == (404, "QueueNotFound")
