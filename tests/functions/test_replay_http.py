"""Replays of the archive through the DLQ redriver: started, run, looked at and cancelled by REST and by invoke;
bad requests refused with a 4xx and nothing started."""

from __future__ import annotations

import json

from queue_core import QueueClient

from functions.dlq_redriver import handler as redriver
from tests.functions.conftest import call, invoke

BASE = "/queues/orders/clients/c1"


def _acknowledged(core: QueueClient, bodies: list[str]) -> list[str]:
    sub_queue = core.queue("orders", "c1")
    ids = []
    for body in bodies:
        ids.append(sub_queue.send(body, attributes={"kind": body[:3]}).message_id)
        [message] = sub_queue.receive()
        sub_queue.delete(message.receipt_handle)
    return ids


def test_a_replay_by_rest_runs_to_its_end_and_is_looked_at(core: QueueClient) -> None:
    core.create_queue("orders", archive_days=3)
    ids = _acknowledged(core, ["one", "two", "three"])
    started = call(redriver, "POST", f"{BASE}/replays", {"run_seconds": 5, "rate": 1000})
    assert started.status == 200, started.body
    assert (started.body["state"], started.body["replayed"]) == ("done", 3)
    replay_id = started.body["replay_id"]
    listed = call(redriver, "GET", f"{BASE}/replays", query={"replay_id": replay_id}).body["replays"]
    assert [(r["replay_id"], r["replayed"]) for r in listed] == [(replay_id, 3)]
    got = core.queue("orders", "c1").receive(max_messages=10)
    origins = sorted(json.loads(m.attributes["replayed_from"])["message_id"] for m in got)
    assert origins == sorted(ids)


def test_a_replay_by_invoke_started_detached_run_and_cancelled(core: QueueClient) -> None:
    core.create_queue("orders", archive_days=3)
    ids = _acknowledged(core, ["one", "two", "three"])
    sub = {"queue": "orders", "client": "c1"}
    started = invoke(redriver, {"action": "replay_start", **sub, "message_ids": ids[:2]})
    assert (started["state"], started["replayed"], started["total"]) == ("running", 0, 2)
    ran = invoke(redriver, {"action": "replay_run", **sub, "replay_id": started["replay_id"], "seconds": 1})
    assert (ran["state"], ran["replayed"]) == ("done", 2)
    other = invoke(redriver, {"action": "replay_start", **sub, "attributes": {"kind": "thr"}})
    cancelled = invoke(redriver, {"action": "replay_cancel", **sub, "replay_id": other["replay_id"]})
    assert (cancelled["state"], cancelled["replayed"]) == ("cancelled", 0)
    listed = invoke(redriver, {"action": "replay_list", **sub})["replays"]
    assert [r["replay_id"] for r in listed] == [other["replay_id"], started["replay_id"]]


def test_bad_replay_requests_are_refused_and_start_nothing(core: QueueClient) -> None:
    core.create_queue("orders", archive_days=3)
    core.create_queue("plain")
    for body in (
        {"since": 5, "until": 1},
        {"since": 1, "message_ids": ["S0.abc"]},
        {"message_ids": ["nope"]},
        {"rate": 0},
        {"run_seconds": 60},
        {"attributes": {"k": 1}},
        {"unknown": 1},
    ):
        answer = call(redriver, "POST", f"{BASE}/replays", body)
        assert (answer.status, answer.body["error"]["code"]) == (400, "ValidationError"), body
    no_archive = call(redriver, "POST", "/queues/plain/clients/c1/replays", {})
    assert no_archive.status == 400 and "keeps no archive" in no_archive.body["error"]["message"]
    for path, body in ((f"{BASE}/replays/run", {"replay_id": "x"}), (f"{BASE}/replays/cancel", {})):
        assert call(redriver, "POST", path, body).status == 400
    missing = call(redriver, "POST", f"{BASE}/replays/cancel", {"replay_id": "1800000000000-0123456789ab"})
    assert (missing.status, missing.body["error"]["code"]) == (404, "MessageNotFound")
    assert call(redriver, "GET", f"{BASE}/replays").body == {"replays": []}


def test_a_dlq_replay_by_reason_by_rest_and_by_invoke(core: QueueClient) -> None:
    """A plain queue (no archive): its dead letters of one reason replayed as new messages, the others kept."""
    core.create_queue("plain", max_receive_count=1)
    sub_queue = core.queue("plain", "c1")
    for n, reason in enumerate(["KeyError: 'customer_id'", "TimeoutError", "KeyError: 'customer_id'"]):
        sub_queue.send(f"order-{n}")
        [message] = sub_queue.receive()
        sub_queue.release(message.receipt_handle, 0, reason=reason)
        assert sub_queue.receive() == []  # over its limit: moved
    base = "/queues/plain/clients/c1"
    body = {"source": "dlq", "reason": "KeyError", "run_seconds": 5, "rate": 1000}
    started = call(redriver, "POST", f"{base}/replays", body)
    assert started.status == 200, started.body
    assert (started.body["state"], started.body["replayed"], started.body["source"]) == ("done", 2, "dlq")
    assert started.body["reason"] == "KeyError"
    assert sorted(m.body for m in sub_queue.receive(max_messages=10)) == ["order-0", "order-2"]
    assert [m.body for m in sub_queue.dlq_list()] == ["order-1"]
    sub = {"queue": "plain", "client": "c1"}
    rest = invoke(redriver, {"action": "replay_start", **sub, "source": "dlq", "reason": "Timeout"})
    ran = invoke(redriver, {"action": "replay_run", **sub, "replay_id": rest["replay_id"], "seconds": 1})
    assert (ran["state"], ran["replayed"], ran["source"]) == ("done", 1, "dlq")
    for bad in ({"source": "dlq", "reason": ""}, {"reason": "x"}, {"source": "queue"}):
        answer = call(redriver, "POST", f"{base}/replays", bad)
        assert (answer.status, answer.body["error"]["code"]) == (400, "ValidationError"), bad
