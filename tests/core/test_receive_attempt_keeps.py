"""FIFO receive attempts whose record write fails: what the core answers, what a repeat answers, and what it says
(`queue_core.receive_attempts`)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError
from queue_core import QueueClient, QueueError, receive_attempts

from tests.throttle_hooks import ThrottleOne, throttle_error, throttled


class KeepScript:
    """Each PutItem of an attempt record in turn: "lost" (applied, its answer lost after the SDK's retries),
    "throttled" (not applied), then as DynamoDB answers."""

    def __init__(self, *steps: str) -> None:
        self.steps = list(steps)
        self.seen: list[str] = []

    def _before_call(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        body = params.get("body") or b"{}"
        item = json.loads(body.decode() if isinstance(body, bytes) else body).get("Item", {})
        if "kept_until" not in item:
            return
        step = self.steps.pop(0) if self.steps else "answered"
        self.seen.append(step)
        if step == "throttled":
            raise throttle_error("PutItem")
        context["answer_lost"] = step == "lost"

    def _after_call(self, context: dict[str, Any], **_: Any) -> None:
        if context.pop("answer_lost", False):
            raise ReadTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")


@pytest.fixture
def keeps(dynamodb: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(receive_attempts, "KEEP_RETRY_PAUSES", (0.0, 0.0, 0.0))
    scripts: list[KeepScript] = []

    def attach(*steps: str) -> KeepScript:
        script = KeepScript(*steps)
        dynamodb.meta.events.register("before-call.dynamodb.PutItem", script._before_call)
        dynamodb.meta.events.register("after-call.dynamodb.PutItem", script._after_call)
        scripts.append(script)
        return script

    yield attach
    for script in scripts:
        dynamodb.meta.events.unregister("before-call.dynamodb.PutItem", script._before_call)
        dynamodb.meta.events.unregister("after-call.dynamodb.PutItem", script._after_call)


def test_an_answer_of_fewer_messages_replaces_its_own_keep_whose_answer_was_lost(
    client: QueueClient, dynamodb: Any, keeps: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The first keep of [m1, m2] is applied and its answer lost; the tries after the pauses are throttled, so the
    claims go back: m2 goes, m1's give-back throttles and m1 is answered alone. Its keep finds the record of
    [m1, m2] under the receive's first token and replaces it: a repeat answers m1's handle. Before, that token was
    taken for this answer kept: the repeat found the record spent (m2 given back) and received anew while m1
    stayed held by the lost answer, and nothing said so."""
    client.create_queue("jobs.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "a")
    jobs.send("m1", group_id="g", dedup_id="d1")
    jobs.send("m2", group_id="g", dedup_id="d2")
    script = keeps("lost", *["throttled"] * (len(receive_attempts.KEEP_RETRY_PAUSES) + 1))
    give_back = ThrottleOne("TransactWriteItems", lambda body: "released_by = :rel" in json.dumps(body), 2)
    with caplog.at_level("WARNING", logger="queue_core"), throttled(dynamodb, give_back):
        first = jobs.receive_attempt("attempt-1", max_messages=2)
    assert script.seen[0] == "lost" and script.seen[-1] == "answered", script.seen
    assert [message.body for message in first] == ["m1"]
    assert "did not keep" not in caplog.text
    again = jobs.receive_attempt("attempt-1", max_messages=2)
    assert [message.receipt_handle for message in again] == [first[0].receipt_handle]


def test_a_late_keep_does_not_answer_claims_that_ran_out_during_its_pauses(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """The keep is throttled three times; its pauses outlast the visibility of 1 s, and another consumer receives
    m1 meanwhile. The fourth try keeps the record: the first call must not answer m1, which the other consumer
    holds (it did, with its handle run out). Its claims are held again after a late keep; here that fails, so it
    fails as an answer not kept does, and its repeat receives anew."""
    client.create_queue("jobs.fifo", fifo=True, visibility_timeout=1)
    jobs = client.queue("jobs.fifo", "a")
    other = QueueClient(client.table_name, dynamodb=dynamodb, clock=client._ctx.clock).queue("jobs.fifo", "a")
    jobs.send("m1", group_id="g", dedup_id="d1")
    taken: list[Any] = []

    class SlowKeep:
        calls = 0

        def before(self, params: dict[str, Any], **_: Any) -> None:
            body = params.get("body") or b"{}"
            item = json.loads(body.decode() if isinstance(body, bytes) else body).get("Item", {})
            if "kept_until" not in item or self.calls >= 3:
                return
            self.calls += 1
            if self.calls == 3:
                clock.advance(2)
                taken.extend(other.receive())
            raise throttle_error("PutItem")

    hook = SlowKeep()
    dynamodb.meta.events.register("before-call.dynamodb.PutItem", hook.before)
    try:
        with pytest.raises(QueueError):
            jobs.receive_attempt("attempt-1", visibility_timeout=1)
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb.PutItem", hook.before)
    assert [message.body for message in taken] == ["m1"]
    assert jobs.receive_attempt("attempt-1", visibility_timeout=1) == []  # the group is the other consumer's
    other.delete(taken[0].receipt_handle)
