"""The delivery-time limit through the functions: a delay or `deliver_at` later than the retention less the
delivery window is a 400 by HTTP and by invoke; the latest one accepted is received, by a client and queue-wide,
up to the end of its window."""

from __future__ import annotations

import pytest
from queue_api import core_client
from queue_core import QueueClient, limits

from functions.poller import handler as poller
from functions.producer import handler as producer
from tests.conftest import FakeClock
from tests.functions.conftest import TABLE, call, invoke

RETENTION = 7200
LATEST = RETENTION - limits.MIN_DELIVERY_WINDOW_SECONDS
PATH = "/queues/later/clients/c1"


@pytest.fixture
def core(monkeypatch: pytest.MonkeyPatch) -> tuple[QueueClient, FakeClock]:
    """The handlers' shared client, on a clock the test moves, starting in the middle of a second."""
    clock = FakeClock(1_800_000_000.5)
    client = QueueClient(TABLE, clock=clock)
    monkeypatch.setattr(core_client, "_client", client)
    client.create_queue("later", retention_seconds=RETENTION)
    return client, clock


def test_a_delivery_time_past_the_window_is_a_400_by_http_and_invoke_and_stores_nothing(
    core: tuple[QueueClient, FakeClock],
) -> None:
    client, clock = core
    refused = [{"delay_seconds": LATEST + 1}, {"delay_seconds": RETENTION}, {"deliver_at": clock() + LATEST + 1}]
    for fields in refused:
        answer = call(producer, "POST", f"{PATH}/messages", {"body": "x", **fields})
        assert (answer.status, answer.body["error"]["code"]) == (400, "ValidationError"), fields
        event = {"action": "send", "queue": "later", "client": "c1", "body": "x", **fields}
        assert invoke(producer, event)["status"] == 400, fields
    batch = call(producer, "POST", f"{PATH}/messages", {"messages": [{"body": "x", **f} for f in refused]})
    assert [failure["code"] for failure in batch.body["failed"]] == ["ValidationError"] * 3
    assert client.queue("later", "c1").stats().delayed == 0


@pytest.mark.parametrize("receive", ["client_http", "queue_wide_invoke"])
def test_the_latest_delivery_time_is_received_at_the_end_of_its_window(
    core: tuple[QueueClient, FakeClock], receive: str
) -> None:
    _, clock = core
    start = clock()
    assert call(producer, "POST", f"{PATH}/messages", {"body": "by delay", "delay_seconds": LATEST}).status == 200
    event = {"action": "send", "queue": "later", "client": "c1", "body": "at", "deliver_at": start + LATEST}
    assert "message_id" in invoke(producer, event)
    clock.now = start + RETENTION - 0.001
    if receive == "client_http":
        answer = call(poller, "POST", f"{PATH}/receive", {"max_messages": 10}).body
    else:
        answer = invoke(poller, {"action": "receive_any", "queue": "later", "max_messages": 10})
    assert sorted(message["body"] for message in answer["messages"]) == ["at", "by delay"]
