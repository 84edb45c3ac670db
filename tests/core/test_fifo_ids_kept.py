"""A FIFO message's id is its place in its group: it names the same message through everything that leaves the
message where it is (a release, a change of visibility, a partial receive, a claim's lock running out and the
sweep ending it, a change of the shard count, a receive moving another group's head to the DLQ). Only a redrive,
which puts the message at its group's end, gives it a new id; a handle from before names nothing then."""

from __future__ import annotations

from queue_core import MessageNotFound, QueueClient, ReceiptHandleStale

from tests.conftest import FakeClock


def _ids(messages: list) -> dict[str, str]:
    return {message.body: message.message_id for message in messages}


def test_a_fifo_messages_id_stays_through_everything_but_a_redrive(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("ids.fifo", max_receive_count=5, visibility_timeout=10)
    queue = client.queue("ids.fifo", "c")
    for body in ("a", "b", "c"):
        queue.send(body, group_id="g")
    queue.send("h", group_id="other")
    sent = _ids(queue.peek(10))

    seen: list[dict[str, str]] = []
    partial = queue.receive(max_messages=1)  # a partial receive: a of g (or h)
    seen.append(_ids(partial))
    for message in partial:
        queue.release(message.receipt_handle, delay_seconds=0)
    both = queue.receive(max_messages=10)
    seen.append(_ids(both))
    for message in both:
        queue.change_visibility(message.receipt_handle, 0 if message.body != "a" else 5)
    clock.advance(11)
    client.sweep()  # the lock runs out and the sweep ends it
    seen.append(_ids(queue.receive(max_messages=10)))
    client.update_queue("ids.fifo", shards=3)
    clock.advance(11)
    client.sweep()
    seen.append(_ids(queue.receive(max_messages=10)))
    client.update_queue("ids.fifo", shards=1)
    clock.advance(11)
    client.sweep()
    seen.append(_ids(queue.peek(10)))
    for ids in seen:
        assert all(sent[body] == message_id for body, message_id in ids.items()), (sent, ids)


def test_a_handle_of_a_claim_of_two_from_before_a_redrive_never_reaches_the_redriven_message(
    client: QueueClient, clock: FakeClock
) -> None:
    """x and y of one group are received together (a claim of two); the lock runs out, the sweep ends it and moves
    x, over its limit at the group's head, to the DLQ; x is redriven (a new id, at the group's end) and a receive
    moves y to the DLQ and takes x. The first claim's handle of x reaches neither the new claim nor its x."""
    client.create_queue("back2.fifo", max_receive_count=1, visibility_timeout=10)
    queue = client.queue("back2.fifo", "c")
    queue.send("x", group_id="g")
    queue.send("y", group_id="g")
    old_x, _ = queue.receive(max_messages=10)
    clock.advance(11)
    client.sweep()
    assert queue.redrive() == 1
    [x] = queue.receive(max_messages=10)
    assert (x.body, x.receive_count) == ("x", 1) and x.message_id != old_x.message_id

    answers = {}
    for what, call in {
        "more time": lambda: queue.change_visibility(old_x.receipt_handle, 60),
        "given back": lambda: queue.change_visibility(old_x.receipt_handle, 0),
        "released": lambda: queue.release(old_x.receipt_handle, delay_seconds=60),
        "deleted": lambda: queue.delete(old_x.receipt_handle),
    }.items():
        try:
            call()
            answers[what] = "ok"
        except (MessageNotFound, ReceiptHandleStale) as error:
            answers[what] = error.code
    assert answers == {
        "more time": "ReceiptHandleStale",
        "given back": "MessageNotFound",
        "released": "MessageNotFound",
        "deleted": "ok",
    }
    assert queue.stats().in_flight == 1, "the new claim still holds x"
    queue.change_visibility(x.receipt_handle, 30)
    queue.delete(x.receipt_handle)
    assert queue.peek(10) == []
