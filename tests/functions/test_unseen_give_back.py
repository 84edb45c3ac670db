"""Messages a receive claimed but could not carry in its answer: given back as if never received."""

from __future__ import annotations

import json

from queue_api.payloads import LAMBDA_SYNC_PAYLOAD_BYTES
from queue_core import QueueClient

from functions.poller import handler as poller
from tests.functions.conftest import call, invoke

# Ten bodies that JSON escapes six bytes a character (\u00e9): 7.5 MB of answer, more than Lambda returns.
BODY = "é" * (128 * 1024)


def test_messages_cut_from_an_invoked_receive_answer_are_delivered_later_not_dead_lettered(
    core: QueueClient,
) -> None:
    core.create_queue("big", max_receive_count=1)
    sub = core.queue("big", "c1")
    sub.send_batch([{"body": BODY} for _ in range(10)])
    event = {"action": "receive", "queue": "big", "client": "c1", "max_messages": 10}
    first = invoke(poller, event)
    assert len(json.dumps(first)) < LAMBDA_SYNC_PAYLOAD_BYTES
    kept = len(first["messages"])
    assert 1 <= kept < 10
    second = invoke(poller, event)
    assert [m["receive_count"] for m in second["messages"]] == [1] * len(second["messages"])
    assert len(first["messages"]) + len(second["messages"]) <= 10
    stats = sub.stats()
    assert stats.dlq == 0 and stats.visible == 10 - kept - len(second["messages"])


def test_messages_cut_from_a_queue_wide_receive_over_http_keep_their_receive_count(core: QueueClient) -> None:
    core.create_queue("big", max_receive_count=1)
    for client_id in ("c1", "c2"):
        core.queue("big", client_id).send_batch([{"body": BODY} for _ in range(5)])
    first = call(poller, "POST", "/queues/big/receive", {"max_messages": 10})
    kept = len(first.body["messages"])
    assert 1 <= kept < 10
    left = [message for client_id in ("c1", "c2") for message in core.queue("big", client_id).peek(10)]
    assert len(left) == 10 - kept
    assert all(message.receive_count == 0 for message in left)
    assert core.queue_stats("big").dlq == 0
