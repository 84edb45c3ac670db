"""Every attempt's reason: written with the release that ends it, shown by get and the DLQ listing, carried by
moves to the DLQ and redrives, bounded, and dropped before a body near the item limit."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
from queue_core import Consumer, MessageTooLarge, QueueClient, ReceiptHandleStale, ValidationError, reasons

from tests.dynamo_calls import CallCounter


@pytest.fixture(params=["standard", "fifo"])
def queue(request: pytest.FixtureRequest, client: QueueClient):
    fifo = request.param == "fifo"
    name = "orders.fifo" if fifo else "orders"
    client.create_queue(name, fifo=fifo, visibility_timeout=30, max_receive_count=3)
    return client.queue(name, "a")


def _send(queue, body: str = "m") -> str:
    group = "g" if queue.settings.fifo else None
    return queue.send(body, group_id=group).message_id


def test_release_reason_is_kept_with_its_attempt_and_shown_by_get(queue, counter: CallCounter) -> None:
    message_id = _send(queue)
    (got,) = queue.receive()
    counter.reset()
    queue.release(got.receipt_handle, 0, reason="KeyError: 'customer_id'\n  File \"app.py\", line 3")
    released = dict(counter.calls)
    # the release's own writes and no other: standard one update, FIFO the message's and the group's in one
    # transaction (the group's unlock is conditional on the claim, so a handle whose claim ended gives nothing back)
    if queue.settings.fifo:
        assert released == {"TransactWriteItems": 1}
    else:
        assert released.get("UpdateItem", 0) == 1
        assert set(released) <= {"UpdateItem", "PutItem", "DeleteItem"}
    shown = queue.get(message_id)
    assert shown.last_reason == "KeyError: 'customer_id'"
    (attempt,) = shown.attempts
    assert attempt["attempt"] == 1 and attempt["outcome"] == "released"
    assert attempt["detail"] == '  File "app.py", line 3'


def test_attempt_whose_claim_ran_out_reads_visibility_expired(queue, clock) -> None:
    message_id = _send(queue)
    queue.receive(visibility_timeout=5)
    assert queue.get(message_id).attempts == []  # in flight: the attempt has not ended
    clock.advance(6)
    (second,) = queue.receive()
    queue.release(second.receipt_handle, 0, reason="boom")
    shown = [(a["attempt"], a["outcome"], a["reason"]) for a in queue.get(message_id).attempts]
    assert shown == [(1, "visibility_expired", "visibility expired"), (2, "released", "boom")]


def test_reasons_go_with_the_message_to_the_dlq_and_back(queue, clock) -> None:
    _send(queue)
    for number in range(3):
        (got,) = queue.receive()
        queue.release(got.receipt_handle, 0, reason=f"error {number}")
    assert queue.receive() == []  # over the limit: moved
    (dead,) = queue.dlq_list()
    assert [a["reason"] for a in dead.attempts] == ["error 0", "error 1", "error 2"]
    assert dead.moved_reason == "max receives 3 reached (last: error 2)"
    assert dead.last_reason == "error 2"
    assert queue.redrive() == 1
    (again,) = queue.receive()
    queue.release(again.receipt_handle, 0, reason="after redrive")
    live_id = again.message_id
    assert [a["reason"] for a in queue.get(live_id).attempts] == ["error 0", "error 1", "error 2", "after redrive"]


def test_only_the_last_five_attempts_are_kept(client: QueueClient) -> None:
    client.create_queue("many", max_receive_count=0)
    queue = client.queue("many", "a")
    message_id = queue.send("m").message_id
    for number in range(8):
        (got,) = queue.receive()
        queue.release(got.receipt_handle, 0, reason=f"error {number}")
    attempts = queue.get(message_id).attempts
    assert [a["attempt"] for a in attempts] == [4, 5, 6, 7, 8]
    assert [a["reason"] for a in attempts] == [f"error {n}" for n in range(3, 8)]


def test_a_long_reason_is_cut_visibly_and_a_bad_one_refused(queue) -> None:
    message_id = _send(queue)
    (got,) = queue.receive()
    with pytest.raises(ValidationError):
        queue.release(got.receipt_handle, 0, reason=42)  # type: ignore[arg-type]
    queue.release(got.receipt_handle, 0, reason="x" * 10_000)
    (attempt,) = queue.get(message_id).attempts
    assert len(attempt["reason"].encode()) <= reasons.MAX_REASON_BYTES
    assert attempt["reason"].endswith("more bytes]")


def test_a_stale_handle_writes_no_reason(queue, clock) -> None:
    message_id = _send(queue)
    (first,) = queue.receive(visibility_timeout=1)
    clock.advance(2)
    (second,) = queue.receive()
    with pytest.raises(Exception):  # noqa: B017 - stale or gone, by engine
        queue.release(first.receipt_handle, 0, reason="stale")
    queue.release(second.receipt_handle, 0, reason="holder")
    assert [a["reason"] for a in queue.get(message_id).attempts] == ["visibility expired", "holder"]


def test_body_near_the_item_limit_keeps_its_body_and_drops_reasons(client: QueueClient) -> None:
    client.create_queue("big", max_receive_count=0)
    queue = client.queue("big", "a")
    rng = random.Random(7)
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(600_000))
    for size in range(600_000, 300_000, -2_000):  # the largest body the item takes, compressed as it may be
        try:
            message_id = queue.send(body := text[:size]).message_id
            break
        except MessageTooLarge:
            continue
    for _ in range(5):
        (got,) = queue.receive()
        queue.release(got.receipt_handle, 0, reason="y" * 2000)
    shown = queue.get(message_id)
    assert shown.body == body
    assert shown.reasons_dropped >= 1


def test_library_consumer_records_the_handlers_exception(client: QueueClient) -> None:
    client.create_queue("work", max_receive_count=0)
    queue = client.queue("work", "a")
    message_id = queue.send("m").message_id
    failed = threading.Event()

    def handler(message) -> None:
        failed.set()
        raise KeyError("customer_id")

    consumer = Consumer(queue, handler, concurrency=1)
    consumer.start()
    assert failed.wait(10)
    consumer.shutdown(timeout=5)
    attempts = queue.get(message_id).attempts
    assert attempts[0]["reason"] == "KeyError: 'customer_id'"
    assert "Traceback" in attempts[0]["detail"] and "handler" in attempts[0]["detail"]


def _end_attempt(queue, handle: str, how: str, reason: str) -> None:
    """Releases the handle's message with `reason`, or notes it (as a push delivery that timed out does)."""
    if how == "release":
        queue.release(handle, 0, reason=reason)
    else:
        queue.note_attempt(handle, reasons.TIMED_OUT, reason)


@pytest.mark.parametrize("earlier", ["release", "note"])
@pytest.mark.parametrize("late", ["release", "note"])
def test_a_late_holders_reason_written_while_a_receive_moves_the_message_to_the_dlq_goes_with_it(
    queue, client: QueueClient, clock, late: str, earlier: str
) -> None:
    """The claim of the last allowed attempt runs out; the next receive reads the message (past its limit) to move
    it to the DLQ, and just before its move the late holder releases it with a reason (or notes why its attempt
    ended, as a push delivery that timed out does), which DynamoDB applies, since nobody took the message, and
    answers with success. The DLQ copy must carry that reason: a move of a message changed since it was read is
    made again from the message as it is (the stress run's "the reason of attempt 3's release was lost", FIFO).

    A FIFO release is the exception: it gives the message back and unlocks the group in one transaction, and the
    receive's claim holds the group already, so the late release is stale and writes nothing; the attempt ran out."""
    _send(queue)
    for number in (1, 2):
        (got,) = queue.receive()
        _end_attempt(queue, got.receipt_handle, earlier, f"error {number}")
        clock.advance(31)  # a noted attempt's claim runs out by itself
    (last,) = queue.receive()
    clock.advance(31)
    answered = []

    def late_holder_first(**_: Any) -> None:
        if not answered:
            answered.append("writing")
            try:
                _end_attempt(queue, last.receipt_handle, late, "error 3")
                answered.append("ok")
            except ReceiptHandleStale:
                answered.append("stale")

    events = client.dynamodb.meta.events
    events.register("before-call.dynamodb.TransactWriteItems", late_holder_first, unique_id="late-holder")
    try:
        assert queue.receive() == []
    finally:
        events.unregister("before-call.dynamodb.TransactWriteItems", unique_id="late-holder")
    stale = queue.settings.fifo and late == "release"
    assert answered == ["writing", "stale" if stale else "ok"], "the late holder's write was not made before the move"
    (dead,) = queue.dlq_list()
    outcome = {"release": reasons.RELEASED, "note": reasons.TIMED_OUT}
    last_attempt = (3, "visibility_expired", "visibility expired") if stale else (3, outcome[late], "error 3")
    assert [(a["attempt"], a["outcome"], a["reason"]) for a in dead.attempts] == [
        (1, outcome[earlier], "error 1"),
        (2, outcome[earlier], "error 2"),
        last_attempt,
    ]
    assert dead.moved_reason == f"max receives 3 reached (last: {last_attempt[2]})"
    assert queue.stats().to_dict().get("stuck", 0) == 0


def test_a_release_of_a_parked_fifo_message_keeps_its_reason(client: QueueClient) -> None:
    """One of two FIFO messages held by one claim is given back by a visibility of 0 (parked: acked in its group,
    still its claim's), then released with a reason. The release answers with success, so its reason is kept,
    though it gives nothing back again (the park did, and the handle still deletes the message); it was dropped
    before, the attempt reading "visibility expired"."""
    client.create_queue("parks.fifo", fifo=True, visibility_timeout=30, max_receive_count=3)
    queue = client.queue("parks.fifo", "a")
    first_id = queue.send("m1", group_id="g").message_id
    queue.send("m2", group_id="g")
    first, second = queue.receive(max_messages=2)
    queue.change_visibility(first.receipt_handle, 0)
    queue.release(first.receipt_handle, 0, reason="after the park")
    queue.delete(second.receipt_handle)
    (again,) = queue.receive(max_messages=2)
    assert (again.body, again.receive_count) == ("m1", 2)
    assert [(a["attempt"], a["reason"]) for a in queue.get(first_id).attempts] == [(1, "after the park")]
