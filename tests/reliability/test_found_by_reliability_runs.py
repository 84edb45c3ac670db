"""The smallest cases of what the stress and model runs caught while the core was rewritten, so that each stays
fixed (they belong with `test_regressions.py`)."""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import threading
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError
from queue_core import MessageNotFound, QueueClient, QueueError, ReceiptHandleStale, ReceivedMessage, receive_attempts
from sqs_api.dead_letters import dlq_name

from tests.conftest import FakeClock
from tests.reliability.ledger import Ledger
from tests.reliability.paths import (
    ACCOUNT,
    PUSH_CLIENT,
    PUSH_QUEUE,
    PUSH_RUN_SECONDS,
    SQS_ENDPOINT,
    in_process_sqs,
    sqs_received,
)
from tests.reliability.stress import PUSH, SHORT, StressRun
from tests.reliability.truth import TableTruth
from tests.throttle_hooks import ThrottleAll, ThrottleOne, request_body, throttle_error, throttled, throttling


@pytest.mark.parametrize("name", ["jobs", "jobs.fifo"])
def test_a_release_with_a_handle_whose_message_was_received_and_released_again_since_is_stale(
    client: QueueClient, name: str
) -> None:
    """A release that finds the message released can be this very release, its answer lost and the SDK's retry
    refused by the condition; it can also be an old holder's, after another receive and release. Only the first
    may answer "ok"."""
    client.create_queue(name, visibility_timeout=30)
    jobs = client.queue(name, "c1")
    jobs.send("m", group_id="g" if name.endswith(".fifo") else None)
    [first] = jobs.receive()
    jobs.release(first.receipt_handle, delay_seconds=0)
    [second] = jobs.receive()
    assert second.receive_count == 2
    jobs.release(second.receipt_handle, delay_seconds=0)

    with pytest.raises(ReceiptHandleStale):
        jobs.release(first.receipt_handle, delay_seconds=0)


def test_a_fifo_group_given_back_at_once_delivers_its_head_before_anything_behind_it(client: QueueClient) -> None:
    """A visibility of 0 gives the group back: the next receive starts again from the head, never after it."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c1")
    for step in ("first", "second", "third"):
        jobs.send(step, group_id="g")
    [first] = jobs.receive()
    jobs.change_visibility(first.receipt_handle, 0)

    bodies = [message.body for message in jobs.receive(max_messages=2)]

    assert bodies in ([], ["first"], ["first", "second"]), f"FIFO order broken: {bodies}"


def test_a_fifo_mark_racing_a_later_claim_never_counts_a_receive_past_the_limit(
    client: QueueClient, clock: FakeClock
) -> None:
    """Consumer A claims a group and reads its head; before A marks it, A's lock runs out and B claims the group and
    reads the same head; A marks, then B: only one of the two may count the last allowed receive."""
    client.create_queue("jobs.fifo", visibility_timeout=30, max_receive_count=2)
    jobs = client.queue("jobs.fifo", "c1")
    jobs.send("m", group_id="g")
    jobs.receive()
    clock.advance(31)
    b_is_marking, a_marked = threading.Event(), threading.Event()
    marks = itertools.count()
    got: dict[str, list[ReceivedMessage]] = {}

    def consumer_b() -> None:
        clock.advance(31)
        got["b"] = jobs.receive()

    b = threading.Thread(target=consumer_b)

    def before_mark(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if "receive_count" not in json.loads(params["body"]).get("UpdateExpression", ""):
            return
        context["mark"] = next(marks)
        if context["mark"] == 0:  # A's mark waits until B is about to mark
            b.start()
            b_is_marking.wait(10)
        elif context["mark"] == 1:  # B's mark waits until A's is done
            b_is_marking.set()
            a_marked.wait(10)

    def after_mark(context: dict[str, Any], **_: Any) -> None:
        if context.get("mark") == 0:
            a_marked.set()

    events = client.dynamodb.meta.events
    events.register("before-call.dynamodb.UpdateItem", before_mark, unique_id="race-before-mark")
    events.register("after-call.dynamodb.UpdateItem", after_mark, unique_id="race-after-mark")
    try:
        got["a"] = jobs.receive()
        b.join(10)
    finally:
        events.unregister("before-call.dynamodb.UpdateItem", unique_id="race-before-mark")
        events.unregister("after-call.dynamodb.UpdateItem", unique_id="race-after-mark")

    counts = [message.receive_count for message in got["a"] + got["b"]]
    assert counts and max(counts) <= 2, f"receive counts {counts} past the limit of 2"


def _meanwhile_before_first_unlock(client: QueueClient, meanwhile: Any) -> Any:
    """Runs `meanwhile()` once, just before the next write that unlocks a FIFO group (that of the call made inside
    the `with`): the interleaving of another thread, made deterministic."""

    class Interleaving:
        def __enter__(self) -> None:
            self.fired = False
            client.dynamodb.meta.events.register("before-call.dynamodb.UpdateItem", self, unique_id="interleave")

        def __call__(self, params: dict[str, Any], **_: Any) -> None:
            if not self.fired and "unlocked_by" in json.loads(params["body"]).get("UpdateExpression", ""):
                self.fired = True
                meanwhile()

        def __exit__(self, *_: object) -> None:
            client.dynamodb.meta.events.unregister("before-call.dynamodb.UpdateItem", unique_id="interleave")
            assert self.fired

    return Interleaving()


def test_a_fifo_delete_counted_late_does_not_count_again_what_a_claim_found_empty(
    client: QueueClient, clock: FakeClock
) -> None:
    """A deletes its message after its lock ran out; before A unlocks, B claims the group, finds it empty and sets
    its count to 0. A's unlock then fails and A counts its removal late: it was counted by B's finding, and a
    message sent afterwards must show in the stats."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c1")
    jobs.send("first", group_id="g")
    [held] = jobs.receive()
    clock.advance(31)

    with _meanwhile_before_first_unlock(client, lambda: jobs.receive()):
        jobs.delete(held.receipt_handle)
    jobs.send("second", group_id="g")

    assert jobs.stats().visible == 1


def test_a_fifo_delete_racing_a_second_delete_of_its_handle_is_counted_once(
    client: QueueClient, clock: FakeClock
) -> None:
    """A deletes its message; before A unlocks, a second delete of the same handle (a retry, a racing thread) finds
    the message gone and unlocks, counting it; another consumer then claims the group. A's unlock fails and A counts
    the removal late: once is all, and the group's next message shows in the stats."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c1")
    jobs.send("first", group_id="g")
    jobs.send("second", group_id="g")
    [held] = jobs.receive()
    taken: list[ReceivedMessage] = []

    def second_delete_then_another_claim() -> None:
        jobs.delete(held.receipt_handle)
        taken.extend(jobs.receive())

    with _meanwhile_before_first_unlock(client, second_delete_then_another_claim):
        jobs.delete(held.receipt_handle)

    assert [message.body for message in taken] == ["second"]
    assert jobs.stats().in_flight == 1
    jobs.delete(taken[0].receipt_handle)
    jobs.send("third", group_id="g")
    assert jobs.stats().visible == 1


def test_a_fifo_claim_that_loses_its_head_to_a_later_claim_delivers_nothing_behind_it(
    client: QueueClient, clock: FakeClock
) -> None:
    """A claims a group and reads its two messages; before A marks them, A's lock runs out and B claims the group
    and marks the first. A may mark the second, but must not deliver it while B holds the first."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c1")
    jobs.send("first", group_id="g")
    jobs.send("second", group_id="g")
    got: dict[str, list[ReceivedMessage]] = {}
    fired = threading.Event()

    def before_mark(params: dict[str, Any], **_: Any) -> None:
        if fired.is_set() or "receive_count" not in json.loads(params["body"]).get("UpdateExpression", ""):
            return
        fired.set()
        clock.advance(31)
        got["b"] = jobs.receive(max_messages=1)

    events = client.dynamodb.meta.events
    events.register("before-call.dynamodb.UpdateItem", before_mark, unique_id="race-before-mark")
    try:
        got["a"] = jobs.receive(max_messages=2)
    finally:
        events.unregister("before-call.dynamodb.UpdateItem", unique_id="race-before-mark")

    assert [message.body for message in got["b"]] == ["first"]
    assert got["a"] == [], f"delivered behind a message another consumer holds: {[m.body for m in got['a']]}"


def test_fifo_order_is_judged_by_claims_not_by_the_order_receives_returned(client: QueueClient) -> None:
    """Found by the stress run with faults: a FIFO receive stalled (faults, retries) past its own claim; the next
    claim found the group's head at its receive limit, moved it to the DLQ and delivered the message behind it;
    then the stalled receive returned the head. The claims were in order (the late receive's consumer holds an
    expired claim, as a consumer slower than its visibility timeout does), so that is no violation; a claim that
    certainly came after a later message's is one."""
    first, second = _first_then_second(client, "order.fifo")

    # The stalled receive's claim ran from 0 to 30 s; the next claim came at 35 s; the stalled one returned at 50 s.
    stalled = Ledger()
    stalled.deliver("order.fifo/c", [second], 35_000, 36_000, 30)
    stalled.deliver("order.fifo/c", [first], 0, 50_000, 30)
    assert stalled.violations == []

    skipped = Ledger()
    [hold] = skipped.deliver("order.fifo/c", [second], 35_000, 36_000, 30)
    skipped.settling(hold, 37_000)
    skipped.deliver("order.fifo/c", [first], 40_000, 41_000, 30)  # claimed after `second` certainly was
    assert [violation.split(":")[0] for violation in skipped.violations] == [
        "FIFO order broken in order.fifo/c group 'g'"
    ]


def test_a_message_held_again_by_its_handle_after_its_holder_gave_it_up_counts_as_possibly_held(
    client: QueueClient, clock: FakeClock
) -> None:
    """Found by the fleet run ("audit fleet/a: 1 in flight, the consumers hold 0 to 0"): a holder gave its message
    back with a visibility of 0; another process then sent the same handle a visibility of 60, which succeeded (the
    claim's token is still the message's: the core, as the reference, holds it again). The ledger counted the hold
    as given up for good, so the message was in flight with nobody to hold it. It may be held until the visibility
    the handle set runs out; given up again, it is not."""
    client.create_queue("again", visibility_timeout=30)
    jobs = client.queue("again", "c")
    jobs.send("m")
    [message] = jobs.receive()
    ledger = Ledger()
    [hold] = ledger.deliver("again/c", [message], 0, 1_000, 30)

    def now() -> int:
        return int(clock() * 1000)

    ledger.settling(hold, now())
    jobs.change_visibility(message.receipt_handle, 0)
    clock.advance(5)
    before = now()
    jobs.change_visibility(message.receipt_handle, 60)
    ledger.extended(hold, before, now(), 60)

    assert jobs.stats().in_flight == 1
    low, high = ledger.held_at("again/c", now())
    assert low <= 1 <= high
    clock.advance(61)
    assert (jobs.stats().in_flight, ledger.held_at("again/c", now())) == (0, (0, 0))

    clock.advance(-61)
    ledger.settling(hold, now())
    jobs.change_visibility(message.receipt_handle, 0)
    assert (jobs.stats().in_flight, ledger.held_at("again/c", now())) == (0, (0, 0))


def test_a_fifo_message_received_again_over_the_other_path_is_no_first_claim(
    client: QueueClient, clock: FakeClock
) -> None:
    """Found by the fleet run ("FIFO order broken ... first claimed after ..."): a claim through the library took
    two messages of a group and gave them back; the next claim, over SQS, took them again. SQS shows another
    `MessageId` than the library's own id, so the ledger took the first message's second claim for its first one,
    made after the second message's first claim. Both claims were in order: no violation. A message first claimed
    after a later one of its group, whatever the path, still is one."""
    client.create_queue("again.fifo", visibility_timeout=30)
    jobs = client.queue("again.fifo", "c")
    jobs.send("first", group_id="g", dedup_id="d1")
    jobs.send("second", group_id="g", dedup_id="d2")
    taken = jobs.receive(max_messages=2)
    assert [message.body for message in taken] == ["first", "second"]
    clock.advance(31)
    sqs = in_process_sqs(client, "c")
    answer = sqs.receive_message(
        QueueUrl=f"{SQS_ENDPOINT}/sqs/c/{ACCOUNT}/again.fifo", MaxNumberOfMessages=2, AttributeNames=["All"]
    )
    again = [sqs_received(raw, "c") for raw in answer["Messages"]]
    assert [message.body for message in again] == ["first", "second"]
    assert again[0].message_id != taken[0].message_id  # the same message under another id

    ledger = Ledger()
    ledger.deliver("again.fifo/c", taken, 0, 1_000, 30)
    ledger.deliver("again.fifo/c", again, 31_000, 32_000, 30)
    assert ledger.violations == []

    skipped = Ledger()
    skipped.deliver("again.fifo/c", taken[1:], 0, 1_000, 30)
    skipped.deliver("again.fifo/c", again[:1], 31_000, 32_000, 30)  # over SQS, claimed after `second` was
    assert [violation.split(":")[0] for violation in skipped.violations] == [
        "FIFO order broken in again.fifo/c group 'g'"
    ]


def test_a_group_held_by_a_later_claim_counts_though_an_earlier_stalled_receive_returned_last(
    client: QueueClient,
) -> None:
    """Found by the stress run's checkpoint: a receive stalled past its own claim returned after the next claim's
    receive, so the group's last recorded lock was the expired one (given up: its delete found the handle stale),
    while the later claim still held the group (its consumer crashed): the stats rightly said one in flight, the
    ledger said none."""
    first, second = _first_then_second(client, "held.fifo")

    ledger = Ledger()
    ledger.deliver("held.fifo/c", [second], 35_000, 36_000, 30)  # holds until 65 s, never settled
    [late] = ledger.deliver("held.fifo/c", [first], 0, 50_000, 30)  # claimed at 0 s, returned at 50 s
    ledger.settling(late, 51_000)  # its delete then found the handle stale
    assert ledger.violations == []
    assert ledger.groups_held_at("held.fifo/c", 60_000) == (1, 1)
    assert ledger.groups_held_at("held.fifo/c", 70_000) == (0, 0)


def test_a_message_held_again_after_a_redrive_counts_though_its_receive_count_started_over(
    client: QueueClient,
) -> None:
    """Found by the stress run's checkpoint (SQS path, redrives by move task): a redrive puts a message back with
    its receive count at 0, so its next holder shows a lower count than the holders before the DLQ. The ledger took
    the holder with the highest count for the current one (a holder that had given the message back), and said
    nobody held the message while the stats rightly said one in flight."""
    client.create_queue("held", max_receive_count=5)
    jobs = client.queue("held", "c")
    jobs.send("m")
    [first] = jobs.receive(visibility_timeout=30)
    jobs.release(first.receipt_handle, delay_seconds=0)
    [second] = jobs.receive(visibility_timeout=30)
    jobs.release(second.receipt_handle, delay_seconds=0)
    jobs.move_to_dlq(second.message_id)
    assert jobs.redrive() == 1
    [again] = jobs.receive(visibility_timeout=30)
    assert (second.receive_count, again.receive_count) == (2, 1)

    ledger = Ledger()
    for received, at in ((first, 0), (second, 2_000)):
        [hold] = ledger.deliver("held/c", [received], at, at + 1_000, 30)
        ledger.settling(hold, at + 1_500)
    ledger.deliver("held/c", [again], 10_000, 11_000, 30)  # holds until 40 s, never settled (its consumer crashed)
    assert ledger.violations == []
    assert ledger.held_at("held/c", 20_000) == (1, 1)
    assert ledger.held_at("held/c", 40_500) == (0, 1)
    assert ledger.held_at("held/c", 42_000) == (0, 0)


def test_a_fifo_handle_whose_group_a_later_claim_took_is_stale_to_a_delete_only_once_its_message_was_taken(
    client: QueueClient, clock: FakeClock
) -> None:
    """Found by the fleet run's audit (`delete with a stale live handle ... succeeded and changed 2 items`): A held
    three messages of a group and its lock ran out; B claimed the group and took only the first. A's handles of the
    others are still their messages' latest: as in SQS, a delete with one removes its message, while a release or a
    change of visibility, which would move the group's lock, is refused. The ledger's staleness must say the same:
    by the group's later claims for those, by the later claims of the message itself for a delete."""
    client.create_queue("late.fifo", visibility_timeout=30)
    jobs = client.queue("late.fifo", "c")
    for body in ("first", "second", "third"):
        jobs.send(body, group_id="g")
    held = jobs.receive(max_messages=3)
    clock.advance(31)
    [taken] = jobs.receive(max_messages=1)
    assert taken.body == "first"
    ledger = Ledger()
    _, second, third = ledger.deliver("late.fifo/c", held, 0, 1_000, 30)
    ledger.deliver("late.fifo/c", [taken], 32_000, 33_000, 30)

    assert ledger.superseded(third, 35_000)
    with pytest.raises(ReceiptHandleStale):
        jobs.release(third.handle, delay_seconds=0)
    with pytest.raises(ReceiptHandleStale):
        jobs.change_visibility(third.handle, 60)
    assert not ledger.superseded(second, 35_000, message_only=True)
    jobs.delete(second.handle)
    with pytest.raises(MessageNotFound):
        jobs.get(second.message_id)

    jobs.delete(taken.receipt_handle)
    [again] = jobs.receive(max_messages=1)
    assert again.body == "third"
    ledger.deliver("late.fifo/c", [again], 40_000, 41_000, 30)
    assert ledger.superseded(third, 45_000, message_only=True)
    with pytest.raises(ReceiptHandleStale):
        jobs.delete(third.handle)


def _first_then_second(client: QueueClient, name: str) -> tuple[ReceivedMessage, ReceivedMessage]:
    """Two deliveries of one group, the first deleted before the second was received: real messages and
    handles for the ledger's cases, whose times the cases then set."""
    client.create_queue(name)
    jobs = client.queue(name, "c")
    jobs.send("first", group_id="g")
    jobs.send("second", group_id="g")
    [first] = jobs.receive()
    jobs.delete(first.receipt_handle)
    [second] = jobs.receive()
    return first, second


class _AlwaysTimesOut(random.Random):
    """The push consumer function's rolls: every invocation runs into its timeout."""

    def random(self) -> float:
        return 0.0


def test_a_push_batch_left_to_its_claims_after_a_timeout_counts_as_held_at_a_checkpoint(
    client: QueueClient, clock: FakeClock, truth: TableTruth
) -> None:
    """Found by the stress run's checkpoint (`push/a: 3 in flight, the consumers hold 0 to 0`): a consumer function
    that timed out may still run, so the dispatcher leaves its messages in flight until their claims run out (as
    SQS's mapping does), and those claims were extended before the invocation (they had aged in the batching
    window). The harness counted the messages as given up when the function answered, and took their claims' ends
    from the receive, not from the extension."""
    run = StressRun(client, clock, truth, SHORT)
    run.create_queues()
    pushed = [message for message in run.planned if message.path == PUSH][:3]
    for message in pushed:
        run.sub_queues[(PUSH_QUEUE, PUSH_CLIENT)].send(message.body, attributes={"label": message.label})
    dispatcher = run.paths.dispatcher(_AlwaysTimesOut())
    started = clock()

    def time_passes() -> None:
        """The window's wait outlasts a third of the claims (so they are extended before the invocation), then
        the function runs into its timeout and the claims' first ends pass."""
        while not run.paths.unsent_claims(run.now_ms()) and not run.stopping():
            time.sleep(0.005)
        clock.advance(30)
        while not run.paths.figures[PUSH]["timeouts"] and not run.stopping():
            time.sleep(0.005)
        for _ in range(35):
            clock.advance(1)
            time.sleep(0.005)
        run.stop()

    helper = threading.Thread(target=time_passes, daemon=True)
    helper.start()
    report = dispatcher.run(lambda: 0.0 if run.stopping() else PUSH_RUN_SECONDS)
    helper.join(10)
    assert (report.invocations, report.timed_out) == (1, 3)
    assert clock() == started + 65  # the claims, extended at 30 s, end at 90 s; taken at 0 s, they would end at 60 s

    sub = run.sub_queues[(PUSH_QUEUE, PUSH_CLIENT)]
    assert sub.stats().in_flight == 3
    run._checkpoint()
    assert run.problems == []
    clock.advance(30)
    assert sub.stats().visible == 3
    run._checkpoint()
    assert run.problems == []
    assert run.ledger.violations + run.ledger.recheck() == []


def test_a_receive_repeated_with_its_attempt_id_at_a_fifo_dlq_is_not_spent_by_a_throttle(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A receive at a FIFO DLQ's URL under an attempt id answers a dead letter; its answer is lost and the SDK sends
    it again, and DynamoDB throttles one write of the repeat. The repeat may fail (the SDK tries again), but it
    must not answer otherwise than the first did: nothing changed the dead letter meanwhile."""
    client.create_queue("jobs.fifo", visibility_timeout=30, max_receive_count=1)
    jobs = client.queue("jobs.fifo", "a")
    jobs.send("m0", group_id="g", dedup_id="d0")
    jobs.receive()
    clock.advance(31)
    jobs.receive()
    client.sweep()
    sqs = in_process_sqs(client, "a")
    request = {
        "QueueUrl": f"{SQS_ENDPOINT}/sqs/a/{ACCOUNT}/jobs.dlq.fifo",
        "MaxNumberOfMessages": 1,
        "VisibilityTimeout": 90,
        "ReceiveRequestAttemptId": "attempt-1",
    }
    first = [message["ReceiptHandle"] for message in sqs.receive_message(**request)["Messages"]]

    # The group's hold: one transaction with the dead letter's (`dead_letter_groups.hold`).
    hold_group = ThrottleOne(
        "TransactWriteItems",
        lambda body: any(
            item.get("Update", {}).get("Key", {}).get("pk", {}).get("S", "").endswith("#dlq")
            for item in body.get("TransactItems", [])
        ),
    )
    with throttled(dynamodb, hold_group):
        try:
            again = [message["ReceiptHandle"] for message in sqs.receive_message(**request).get("Messages", [])]
        except ClientError:
            # Failed: the SDK sends it again, and that one answers what the first did.
            again = [message["ReceiptHandle"] for message in sqs.receive_message(**request).get("Messages", [])]

    assert again == first


def test_a_fifo_head_whose_move_to_the_dlq_is_throttled_once_is_not_stuck(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """The head of a group has used its last receive; the claim that moves it to the DLQ meets one throttle. A
    throttle passes: the next claim after it moves the head and delivers the message behind it, and nothing is
    reported stuck (stuck is for a message no move can take, such as one too large for a DLQ copy)."""
    client.create_queue("jobs.fifo", visibility_timeout=30, max_receive_count=1)
    jobs = client.queue("jobs.fifo", "a")
    jobs.send("m1", group_id="g", dedup_id="d1")
    jobs.send("m2", group_id="g", dedup_id="d2")
    [first] = jobs.receive()
    clock.advance(31)
    with throttled(dynamodb, ThrottleOne("TransactWriteItems", lambda _body: True)):
        jobs.receive()
    clock.advance(1)

    assert [message.body for message in jobs.receive()] == ["m2"]
    assert [message.body for message in jobs.dlq_list()] == [first.body]
    assert jobs.stats().to_dict().get("stuck", 0) == 0


def test_a_fifo_head_whose_move_to_the_dlq_was_applied_with_every_answer_lost_is_moved_once_and_not_stuck(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """The same move applied by DynamoDB, its answer lost every time the SDK and the core sent it again: the claim
    cannot know it moved. The group is given back; the next claim finds the head gone and delivers the message
    behind it; the DLQ holds one copy."""
    client.create_queue("jobs.fifo", visibility_timeout=30, max_receive_count=1)
    jobs = client.queue("jobs.fifo", "a")
    jobs.send("m1", group_id="g", dedup_id="d1")
    jobs.send("m2", group_id="g", dedup_id="d2")
    jobs.receive()
    clock.advance(31)
    lost: list[str] = []

    def lose_the_answer(model: Any, **_: Any) -> None:
        if model.name == "TransactWriteItems":
            lost.append(model.name)
            raise throttle_error(model.name)

    dynamodb.meta.events.register("after-call.dynamodb", lose_the_answer)
    try:
        with contextlib.suppress(QueueError):
            jobs.receive()
    finally:
        dynamodb.meta.events.unregister("after-call.dynamodb", lose_the_answer)
    assert lost
    clock.advance(1)

    assert [message.body for message in jobs.receive()] == ["m2"]
    assert [message.body for message in jobs.dlq_list()] == ["m1"]
    assert jobs.stats().to_dict().get("stuck", 0) == 0


def test_a_fifo_receive_with_an_attempt_id_throttled_after_its_claim_leaves_nothing_held_by_nobody(
    client: QueueClient, dynamodb: Any
) -> None:
    """DynamoDB throttles every write a FIFO receive under an attempt id makes after it marked the group's head
    (its answer cannot be kept, nor its claim given back), then recovers. Either the message is not held, or the
    receive's retry with the same attempt id answers it, or the first answer does (then its handle settles it):
    never held by nobody, found by nobody."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "a")
    jobs.send("m1", group_id="g", dedup_id="d1")
    sqs = in_process_sqs(client, "a")
    request = {
        "QueueUrl": f"{SQS_ENDPOINT}/sqs/a/{ACCOUNT}/jobs.fifo",
        "MaxNumberOfMessages": 1,
        "ReceiveRequestAttemptId": "attempt-1",
    }
    marked = threading.Event()

    def throttle_after_the_mark(params: dict[str, Any], model: Any, **_: Any) -> None:
        if marked.is_set() and model.name in ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"):
            raise throttle_error(model.name)
        if model.name == "UpdateItem" and "marks" in request_body(params).get("UpdateExpression", ""):
            marked.set()

    dynamodb.meta.events.register("before-call.dynamodb", throttle_after_the_mark)
    first: list[dict[str, Any]] = []
    try:
        with contextlib.suppress(ClientError):
            first = sqs.receive_message(**request).get("Messages", [])
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb", throttle_after_the_mark)
    assert marked.is_set()
    if first:
        # Neither kept nor given back: answered, so its receiver holds it and settles it.
        assert [message["Body"] for message in first] == ["m1"]
        sqs.delete_message(QueueUrl=request["QueueUrl"], ReceiptHandle=first[0]["ReceiptHandle"])
        assert jobs.stats().in_flight == 0 and jobs.stats().visible == 0
        return
    retried = [message["Body"] for message in sqs.receive_message(**request).get("Messages", [])]
    assert retried == ["m1"] or jobs.stats().in_flight == 0


def test_the_reference_parks_one_of_several_fifo_messages_given_back_with_visibility_0(
    client: QueueClient, clock: FakeClock
) -> None:
    """The model's long form: a claim holds two messages of a group, and one is given back with a visibility of 0.
    The core parks it (the group waits for the other, its handle still deletes it); the reference freed the whole
    group at once, and the next browse disagreed ("m1 in flight", "m1 visible"). Then each of what a parked
    message's handle may still do."""
    from tests.reliability.test_model import FifoQueueAgainstReference

    machine = FifoQueueAgainstReference(client, clock)
    checks = ("browsed_states_agree", "receivable_messages_agree", "stats_agree")
    steps = [
        ("fill", {"counts": [2, 2]}),
        ("receive", {"actions": ("keep",) * 3, "lose": None, "newest": False, "settle_now": False,
                     "visibility": None, "want": 3}),
        ("use_a_handle", {"action": "extend", "lose": None, "pick": 0, "seconds": 0}),
        ("use_a_handle", {"action": "release later", "lose": None, "pick": 0, "seconds": 0}),
        ("use_a_handle", {"action": "extend", "lose": None, "pick": 0, "seconds": 60}),
        ("use_a_handle", {"action": "delete", "lose": None, "pick": 1, "seconds": 0}),
        ("use_a_handle", {"action": "release", "lose": None, "pick": 0, "seconds": 0}),
        ("use_a_handle", {"action": "extend", "lose": None, "pick": 0, "seconds": 0}),
        ("use_a_handle", {"action": "delete", "lose": None, "pick": 0, "seconds": 0}),
    ]  # fmt: skip
    try:
        for step, arguments in steps:
            getattr(machine, step)(**arguments)
            for check in checks:
                getattr(machine, check)()
    finally:
        machine.teardown()


@pytest.mark.parametrize("later", [False, True], ids=["read-after-throttled", "done-set-changed-before-commit"])
def test_a_transactional_delete_completing_a_fifo_claim_unlocks_its_group_in_the_transaction(
    client: QueueClient, dynamodb: Any, clock: FakeClock, later: bool
) -> None:
    """The fleet run: a claim held two messages of a group; the first was deleted, the second deleted in the
    caller's transaction, and the read after the commit that was to unlock the group throttled (the ack is
    committed, so the error was only logged): the group stayed locked with nothing held until its lock ran out,
    and the next message waited the whole visibility timeout. `later`: the first is deleted after the second's
    ack was built, so the ack is built again in the commit."""
    client.create_queue("jobs.fifo", visibility_timeout=300)
    jobs = client.queue("jobs.fifo", "a")
    for n in range(3):
        jobs.send(f"m{n}", group_id="g", dedup_id=f"d{n}")
    first, second = jobs.receive(max_messages=2)
    if not later:
        jobs.delete(first.receipt_handle)
    ack = jobs.delete_transact_items(second.receipt_handle)
    if later:
        jobs.delete(first.receipt_handle)
    committed = threading.Event()

    def note_the_commit(model: Any, parsed: dict[str, Any], **_: Any) -> None:
        if model.name == "TransactWriteItems" and "Error" not in parsed:
            committed.set()

    def throttle_reads_after_the_commit(model: Any, **_: Any) -> None:
        if committed.is_set() and model.name == "GetItem":
            raise throttle_error(model.name)

    events = dynamodb.meta.events
    events.register("after-call.dynamodb", note_the_commit, unique_id="commit")
    events.register("before-call.dynamodb", throttle_reads_after_the_commit, unique_id="after-commit")
    try:
        client.transact([*ack])
    finally:
        events.unregister("after-call.dynamodb", unique_id="commit")
        events.unregister("before-call.dynamodb", unique_id="after-commit")
    assert committed.is_set()
    clock.advance(1)
    assert [message.body for message in jobs.receive()] == ["m2"], "the group is free at once"
    assert jobs.stats().in_flight == 1


class _GiveBackHalfApplied:
    """Throttles a FIFO receive's attempt record, and every write and read after its give-back's message write
    applied (the message is back; its group's bookkeeping is not done)."""

    def __init__(self) -> None:
        self.unseen_applied = False
        self.pending = False
        self.thrown: list[str] = []

    def before(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        body = request_body(params)
        if model.name == "PutItem" and "kept_until" in body.get("Item", {}):
            self.thrown.append("keep_attempt")
            raise throttle_error(model.name)
        if self.unseen_applied and model.name in ("UpdateItem", "TransactWriteItems", "GetItem"):
            self.thrown.append(model.name)
            raise throttle_error(model.name)
        if "released_by = :rel" in json.dumps(body) and model.name in ("UpdateItem", "TransactWriteItems"):
            self.pending = True

    def after(self, model: Any, **_: Any) -> None:
        if self.pending:
            self.pending = False
            self.unseen_applied = True


def _receive_half_given_back(jobs: Any, dynamodb: Any, want: int) -> tuple[list[Any], _GiveBackHalfApplied]:
    hook = _GiveBackHalfApplied()
    dynamodb.meta.events.register("before-call.dynamodb", hook.before)
    dynamodb.meta.events.register("after-call.dynamodb", hook.after)
    try:
        got = jobs.receive_attempt("attempt-1", max_messages=want)
    except QueueError:
        got = []  # raised: the client retries (nothing answered, nothing stale)
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb", hook.before)
        dynamodb.meta.events.unregister("after-call.dynamodb", hook.after)
    assert hook.unseen_applied and "keep_attempt" in hook.thrown, hook.thrown
    return got, hook


@pytest.mark.parametrize("held", [1, 2])
def test_a_message_given_back_whose_group_bookkeeping_throttles_is_not_answered(
    client: QueueClient, dynamodb: Any, clock: FakeClock, held: int
) -> None:
    """A FIFO receive under an attempt id whose record is throttled gives its claim back; the last message's
    give-back writes the message back, then its group's part throttles (one held: the unlock; two: the read after
    the transaction). That message must not be answered: its handle no longer holds it, and it would be
    delivered again (processed twice). What is answered, its handles settle."""
    client.create_queue("jobs.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "a")
    for n in range(held):
        jobs.send(f"m{n + 1}", group_id="g", dedup_id=f"d{n + 1}")
    got, hook = _receive_half_given_back(jobs, dynamodb, held)
    assert [m.body for m in got] in ([], ["m1"]), hook.thrown
    for message in got:
        try:
            jobs.delete(message.receipt_handle)
        except ReceiptHandleStale:
            clock.advance(31)
            again = [m.body for m in jobs.receive()]
            pytest.fail(f"{message.body} answered with a stale handle ({hook.thrown}); delivered again: {again}")


def test_a_throttled_give_back_of_one_group_does_not_strand_the_others(client: QueueClient, dynamodb: Any) -> None:
    client.create_queue("jobs.fifo", fifo=True, visibility_timeout=300)
    jobs = client.queue("jobs.fifo", "a")
    for n in range(3):
        jobs.send(f"m{n}", group_id=f"g{n}", dedup_id=f"d{n}")
    unseen = ThrottleOne("UpdateItem", lambda body: "released_by = :rel" in body.get("UpdateExpression", ""))
    with throttled(dynamodb, unseen):
        got = jobs.receive_attempt("attempt-1", max_messages=3, fit=lambda messages: 1)
    assert len(got) == 1
    # Two messages went back; one give-back was throttled (its group is held until its visibility ends).
    # The other group's message was never handed to anyone: it must be receivable now.
    later = jobs.receive(max_messages=10)
    assert len(later) == 1, (
        f"answered {[m.body for m in got]}, receivable now {[m.body for m in later]}: a group whose give-back "
        f"was never tried is held by nobody ({jobs.stats().in_flight} in flight)"
    )


@pytest.mark.parametrize("seconds", [0, 60], ids=["made-visible", "extended"])
def test_a_standard_receive_repeated_with_its_attempt_id_after_its_holder_changed_a_visibility_is_spent(
    client: QueueClient, seconds: int
) -> None:
    """The fleet run: a standard message answered under an attempt id, then made visible (or held longer) by its
    holder's ChangeMessageVisibility, was held again by a repeat of that receive under the old claim: the holder
    had given it up, and the ledger saw a message in flight that no consumer held. As SQS, a repeat answers its
    first answer only while none of its messages was modified; else it is a new receive."""
    client.create_queue("jobs", visibility_timeout=30)
    jobs = client.queue("jobs", "a")
    jobs.send("m1")
    [first] = jobs.receive_attempt("attempt-1")
    jobs.change_visibility(first.receipt_handle, seconds)
    again = jobs.receive_attempt("attempt-1")
    assert first.receipt_handle not in [message.receipt_handle for message in again]
    if seconds:
        assert again == [] and jobs.stats().in_flight == 1  # still its holder's, for 60 s
        jobs.delete(first.receipt_handle)
    else:
        assert [(m.body, m.receive_count) for m in again] == [("m1", 2)]  # received anew, a new claim
        with pytest.raises(ReceiptHandleStale):
            jobs.delete(first.receipt_handle)
        jobs.delete(again[0].receipt_handle)
    assert jobs.stats().in_flight == 0 and jobs.stats().visible == 0


@pytest.mark.parametrize("seconds", [0, 120], ids=["released", "extended"])
def test_a_receive_repeated_at_a_fifo_dlq_after_its_holder_changed_the_dead_letter_is_spent(
    client: QueueClient, clock: FakeClock, seconds: int
) -> None:
    """As at a queue's URL: a repeat of a receive at a FIFO DLQ's URL (SQS honours attempt ids on FIFO queues only)
    answers its first answer only while nobody changed it. A dead letter its holder held longer was held again
    under the first claim (fixed); one it gave back (visibility 0) leaves its group's claim and was not. The repeat
    is a new receive (which takes a dead letter given back anew, with a new handle)."""
    name = "jobs.fifo"
    client.create_queue(name, visibility_timeout=30, max_receive_count=1)
    jobs = client.queue(name, "a")
    jobs.send("m0", group_id="g", dedup_id="d0")
    jobs.receive()
    clock.advance(31)
    jobs.receive()
    client.sweep()
    sqs = in_process_sqs(client, "a")
    url = f"{SQS_ENDPOINT}/sqs/a/{ACCOUNT}/{dlq_name(name)}"
    request = {"QueueUrl": url, "MaxNumberOfMessages": 1, "VisibilityTimeout": 90, "ReceiveRequestAttemptId": "a-1"}
    [first] = sqs.receive_message(**request)["Messages"]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=seconds)
    again = sqs.receive_message(**request).get("Messages", [])
    assert first["ReceiptHandle"] not in [message["ReceiptHandle"] for message in again]
    assert [message["Body"] for message in again] == ([] if seconds else ["m0"])


def test_a_fifo_release_after_the_sweep_ended_its_claim_is_stale_and_the_group_goes_on(
    client: QueueClient, clock: FakeClock
) -> None:
    """Found by the model's long form, a fault of the reference: the claim's lock ran out and the sweep ended it
    (the group freed for the next receive); the holder's late release is stale, as the core answers, and changes
    nothing: the next receive takes the group from its head."""
    client.create_queue("late.fifo", fifo=True, visibility_timeout=10)
    sub = client.queue("late.fifo", "t")
    for body in ("m1", "m2"):
        sub.send(body, group_id="g")
    first, _ = sub.receive(max_messages=10)
    clock.advance(31)
    client.sweep()
    with pytest.raises(ReceiptHandleStale):
        sub.release(first.receipt_handle)
    assert [m.body for m in sub.receive(max_messages=10)] == ["m1", "m2"]


def test_a_receive_whose_attempt_record_throttles_once_keeps_its_answer_after_a_pause(
    client: QueueClient, dynamodb: Any
) -> None:
    """The fleet run: a FIFO receive under an attempt id whose record throttled gave its claims back, the give-back
    throttled too, so it answered them unkept; that answer lost as well, the repeat received anew while the first
    claims ran out held by nobody. A keep that throttles once is now tried again after a pause: the first call
    answers, and a repeat answers the same handles."""
    client.create_queue("jobs.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "a")
    jobs.send("m1", group_id="g", dedup_id="d1")
    keep = ThrottleOne("PutItem", lambda body: "kept_until" in body.get("Item", {}))
    with throttled(dynamodb, keep):
        first = jobs.receive_attempt("attempt-1")
    assert keep.thrown == 1
    assert [message.body for message in first] == ["m1"]
    again = jobs.receive_attempt("attempt-1")
    assert [message.receipt_handle for message in again] == [first[0].receipt_handle]


def test_an_answer_neither_kept_nor_given_back_is_said_in_a_log_line(
    client: QueueClient, dynamodb: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Every keep of the attempt record throttles and so does the give-back: the message is answered, held by its
    caller, and the core says that its attempt id did not keep it (a lost answer then leaves it held until its
    visibility ends)."""
    client.create_queue("jobs.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "a")
    jobs.send("m1", group_id="g", dedup_id="d1")
    keep = ThrottleAll("PutItem", lambda body: "kept_until" in body.get("Item", {}))
    give_back = ThrottleAll("UpdateItem", lambda body: "released_by = :rel" in body.get("UpdateExpression", ""))
    with caplog.at_level("WARNING", logger="queue_core"), throttling(dynamodb, keep), throttling(dynamodb, give_back):
        got = jobs.receive_attempt("attempt-1")
    assert keep.thrown == 1 + 2 * (len(receive_attempts.KEEP_RETRY_PAUSES) + 1)
    assert [message.body for message in got] == ["m1"]
    assert "a receive under attempt id 'attempt-1' answers 1 message(s) it did not keep" in caplog.text
    jobs.delete(got[0].receipt_handle)
    assert jobs.stats().in_flight == 0


def _reads_group(group: str) -> Any:
    """A match for the query of a FIFO group's messages (its head read)."""

    def match(body: dict[str, Any]) -> bool:
        pks = [str(value.get("S", "")) for value in body.get("ExpressionAttributeValues", {}).values()]
        return any(pk.startswith("G#") and pk.endswith(f"#{group}") for pk in pks)

    return match


@pytest.mark.usefixtures("instant_backoff")
def test_a_fifo_receive_that_leaves_a_group_locked_for_nobody_fails_and_gives_back_what_it_claimed(
    client: QueueClient, dynamodb: Any
) -> None:
    """Found by the fleet run's audit (FIFO groups locked by claims no consumer was ever answered): a receive locked
    two groups, and DynamoDB refused the head read of one and then its unlock. The receive answered the other
    group's message as a success, and the refused group stayed locked by nobody until its lock ended, behind an
    answer that said nothing of it. Now the receive fails, as one may that leaves a claim in flight (its caller
    retries), and gives back what it claimed elsewhere."""
    client.create_queue("jobs.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("a1", group_id="a", dedup_id="a1")
    jobs.send("b1", group_id="b", dedup_id="b1")
    head = ThrottleAll("Query", _reads_group("b"))
    unlock = ThrottleAll(
        "UpdateItem",
        lambda body: body.get("Key", {}).get("sk") == {"S": "b"} and "unlocked_by" in body.get("UpdateExpression", ""),
    )
    with throttling(dynamodb, head), throttling(dynamodb, unlock), pytest.raises(QueueError) as failed:
        jobs.receive(max_messages=2)
    assert failed.value.code == "Throttled"
    assert jobs.stats().in_flight == 1  # group b, until its lock ends: a failed receive may leave that
    [again] = jobs.receive(max_messages=2)
    assert (again.body, again.receive_count) == ("a1", 1)  # given back unseen
