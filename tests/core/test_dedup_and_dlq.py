"""Deduplication, the redelivery limit, the dead-letter queue and redrive."""

from __future__ import annotations

import threading

import pytest
from queue_core import MessageNotFound, QueueClient, ReceiptHandleStale, ValidationError

from tests.conftest import FakeClock


def test_dedup_inside_the_window_returns_the_first_id_and_writes_nothing(client: QueueClient, clock) -> None:
    client.create_queue("d", dedup_window_seconds=300)
    queue = client.queue("d", "c")
    first = queue.send("x", dedup_id="order-1")
    again = queue.send("changed", dedup_id="order-1")
    assert (again.message_id, again.duplicate, first.duplicate) == (first.message_id, True, False)
    assert queue.stats().visible == 1
    clock.advance(301)
    after = queue.send("x", dedup_id="order-1")
    assert after.message_id != first.message_id and not after.duplicate


def test_content_based_dedup_on_fifo(client: QueueClient) -> None:
    client.create_queue("cb.fifo", content_based_dedup=True)
    queue = client.queue("cb.fifo", "c")
    first = queue.send("same body", group_id="g")
    assert queue.send("same body", group_id="g").message_id == first.message_id
    assert queue.send("other body", group_id="g").message_id != first.message_id


@pytest.mark.parametrize("name", ["kept", "kept.fifo"])
def test_a_message_shows_its_dedup_id_on_every_path(client: QueueClient, clock: FakeClock, name: str) -> None:
    client.create_queue(name, max_receive_count=1, visibility_timeout=10)
    queue = client.queue(name, "c")
    group = "g" if name.endswith(".fifo") else None
    sent = queue.send("x", dedup_id="order-1", group_id=group)
    queue.send("y", group_id="h" if group else None)
    assert [message.dedup_id for message in queue.peek(10)] == ["order-1", None]
    assert {message.body: message.dedup_id for message in queue.receive(max_messages=2)} == {"x": "order-1", "y": None}
    assert queue.get(sent.message_id).to_dict()["dedup_id"] == "order-1"
    clock.advance(11)
    assert queue.receive(max_messages=2) == []
    assert {message.body: message.dedup_id for message in queue.dlq_list()} == {"x": "order-1", "y": None}
    queue.redrive()  # a FIFO redrive gives each message a new place (and id) at its group's end
    assert {message.body: message.dedup_id for message in queue.peek(10)} == {"x": "order-1", "y": None}


def test_batches_dedup_per_entry(client: QueueClient) -> None:
    client.create_queue("bd.fifo")
    queue = client.queue("bd.fifo", "c")
    queue.send("x", group_id="g", dedup_id="a")
    result = queue.send_batch(
        [
            {"body": "1", "group_id": "g", "dedup_id": "a"},
            {"body": "2", "group_id": "g", "dedup_id": "b"},
            {"body": "3", "group_id": "g"},
        ]
    )
    assert len(result.successful) == 3 and result.failed == []
    got = []
    while batch := queue.receive(max_messages=10):
        got += [m.body for m in batch]
        queue.delete_batch([m.receipt_handle for m in batch])
    assert got == ["x", "2", "3"]


@pytest.mark.parametrize("name", ["con", "con.fifo"])
def test_concurrent_same_id_sends_from_8_threads_store_one(client: QueueClient, name: str) -> None:
    client.create_queue(name)
    queue = client.queue(name, "c")
    ids: list[str] = []
    lock = threading.Lock()

    def send() -> None:
        for _ in range(3):
            result = queue.send("x", dedup_id="same", group_id="g" if name.endswith(".fifo") else None)
            with lock:
                ids.append(result.message_id)

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(ids)) == 1 and len(ids) == 24
    assert queue.stats().visible == 1


def test_max_receives_moves_to_the_dlq_at_the_right_receive(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("limited", max_receive_count=3, visibility_timeout=10)
    queue = client.queue("limited", "c")
    sent = queue.send("poison", attributes={"a": "1"})
    for expected in (1, 2, 3):
        [message] = queue.receive()
        assert message.receive_count == expected
        clock.advance(11)
    assert queue.receive() == []
    state = queue.get(sent.message_id)
    assert (state.state, state.receive_count, state.body, state.attributes) == ("dlq", 3, "poison", {"a": "1"})
    assert state.sent_at == (1_800_000_000 * 1000)
    stats = queue.stats()
    assert (stats.visible, stats.in_flight, stats.dlq) == (0, 0, 1)
    [listed] = queue.dlq_list()
    assert listed.message_id == sent.message_id


def test_fifo_poison_message_goes_to_the_dlq_and_its_group_continues(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("p.fifo", max_receive_count=2, visibility_timeout=10)
    queue = client.queue("p.fifo", "c")
    poison = queue.send("poison", group_id="g")
    queue.send("next", group_id="g")
    for _ in range(2):
        [message] = queue.receive()
        assert message.body == "poison"
        clock.advance(11)
    [message] = queue.receive()
    assert message.body == "next"
    assert queue.get(poison.message_id).state == "dlq"
    assert queue.stats().dlq == 1


def test_redrive_all_by_id_and_by_count(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("r", max_receive_count=1, visibility_timeout=10)
    queue = client.queue("r", "c")
    sent = [queue.send(f"m{i}") for i in range(5)]
    queue.receive(max_messages=10)
    clock.advance(11)
    assert queue.receive(max_messages=10) == []
    assert queue.stats().dlq == 5
    assert queue.redrive(message_ids=[sent[2].message_id]) == 1
    [back] = queue.receive()
    assert (back.body, back.receive_count) == ("m2", 1)
    queue.delete(back.receipt_handle)
    assert queue.redrive(max_messages=2) == 2
    assert queue.redrive() == 2
    assert queue.stats().dlq == 0
    assert sorted(m.body for m in queue.receive(max_messages=10)) == ["m0", "m1", "m3", "m4"]


def test_fifo_redrive_keeps_group_order(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("fr.fifo", max_receive_count=1, visibility_timeout=10)
    queue = client.queue("fr.fifo", "c")
    for i in range(4):
        queue.send(f"m{i}", group_id="g")
    got = queue.receive(max_messages=10)
    assert [m.body for m in got] == ["m0", "m1", "m2", "m3"]
    clock.advance(11)
    assert queue.receive(max_messages=10) == []
    assert queue.stats().dlq == 4
    assert queue.redrive() == 4
    assert [m.body for m in queue.receive(max_messages=10)] == ["m0", "m1", "m2", "m3"]


@pytest.mark.parametrize(
    ("name", "answers"),
    [
        ("back", {"release": "ReceiptHandleStale", "visibility": "ReceiptHandleStale", "delete": "ReceiptHandleStale"}),
        ("back.fifo", {"release": "MessageNotFound", "visibility": "ReceiptHandleStale", "delete": None}),
    ],
)
def test_a_handle_from_before_its_message_went_to_the_dlq_and_back_acts_on_nothing(
    client: QueueClient, clock: FakeClock, name: str, answers: dict[str, str | None]
) -> None:
    """A redriven FIFO message is put at its group's end, so it has a new id: to a handle from before, the message
    it named is gone (its delete has nothing to do, its release nothing to give back). A standard message keeps
    its id while its shard is there (one here; tests/reliability/test_model_redriven_handles.py has the shard gone),
    and the handle is only stale. Either way the redriven message is untouched and served next."""
    client.create_queue(name, max_receive_count=1, visibility_timeout=10)
    queue = client.queue(name, "c")
    queue.send("x", group_id="g" if name.endswith(".fifo") else None)
    [old] = queue.receive()
    clock.advance(11)
    client.sweep()
    assert queue.redrive() == 1
    calls = {
        "release": lambda: queue.release(old.receipt_handle, delay_seconds=60),
        "visibility": lambda: queue.change_visibility(old.receipt_handle, 60),
        "delete": lambda: queue.delete(old.receipt_handle),
    }
    for what, call in calls.items():
        try:
            call()
            answered = None
        except (MessageNotFound, ReceiptHandleStale) as error:
            answered = error.code
        assert answered == answers[what], what
    [again] = queue.receive()
    assert (again.body, again.receive_count) == ("x", 1)
    assert (again.message_id == old.message_id) is not name.endswith(".fifo")


def test_redriven_messages_are_not_expired_at_once(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("ret", max_receive_count=1, visibility_timeout=10, retention_seconds=100)
    queue = client.queue("ret", "c")
    queue.send("x")
    queue.receive()
    clock.advance(90)
    client.sweep()
    assert queue.stats().dlq == 1
    clock.advance(50)
    assert queue.stats().dlq == 1
    assert queue.redrive() == 1
    assert [m.body for m in queue.receive()] == ["x"]


def test_cancel_removes_a_dlq_message(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("cx", max_receive_count=1, visibility_timeout=10)
    queue = client.queue("cx", "c")
    sent = queue.send("x")
    queue.receive()
    clock.advance(11)
    client.sweep()
    assert queue.cancel(sent.message_id)
    with pytest.raises(MessageNotFound):
        queue.get(sent.message_id)


@pytest.mark.parametrize("name", ["letters", "letters.fifo"])
def test_a_dead_letters_handle_deletes_that_dlq_copy_only_even_within_one_millisecond(
    client: QueueClient, clock: FakeClock, name: str
) -> None:
    """A standard message is dead-lettered, redriven and dead-lettered again under one DLQ key with the clock
    standing still: only the id stamped on each DLQ copy tells the copies apart. (A FIFO group's lock needs the
    clock to move on; its redriven message gets a new id and DLQ key.)"""
    client.create_queue(name, max_receive_count=1)
    queue = client.queue(name, "c")
    fifo = name.endswith(".fifo")
    tick = 1 if fifo else 0
    queue.send("x", group_id="g" if fifo else None)
    queue.receive(visibility_timeout=0)
    clock.advance(tick)
    assert queue.receive() == []
    [first] = queue.dlq_read()
    queue.redrive()
    [held] = queue.receive(visibility_timeout=0)
    clock.advance(tick)
    assert queue.receive() == []
    [second] = queue.dlq_read()

    assert queue.dlq_delete(first.receipt_handle) is False
    with pytest.raises(ValidationError):
        queue.dlq_delete(f"dlq:{second.message.message_id}")
    with pytest.raises(ValidationError):
        queue.dlq_delete(held.receipt_handle)
    with pytest.raises(ValidationError):
        queue.delete(second.receipt_handle)
    assert [message.body for message in queue.dlq_list()] == ["x"]

    assert queue.dlq_delete(second.receipt_handle) is True
    assert queue.dlq_delete(second.receipt_handle) is False, "a repeat of an applied delete removes nothing"
    assert queue.dlq_list() == [] and queue.stats().dlq == 0


@pytest.mark.parametrize("name", ["claims", "claims.fifo"])
def test_a_dlq_receive_whose_claims_lost_their_answers_holds_each_dead_letter_once(
    client: QueueClient, clock: FakeClock, name: str
) -> None:
    """Every claim is applied, its answer lost and sent again by the SDK: the repeat finds the claim live and its
    own token in the item, so the receive still answers each dead letter, and a second receive none."""
    from tests.reliability.faults import FaultInjector, Kind

    client.create_queue(name, max_receive_count=1)
    queue = client.queue(name, "c")
    fifo = name.endswith(".fifo")
    for body in ("a", "b"):
        queue.send(body, group_id=body if fifo else None)
    queue.receive(max_messages=10, visibility_timeout=0)
    clock.advance(1)
    assert queue.receive(max_messages=10) == []
    faults = FaultInjector(retried_rate=1.0, operations=frozenset({"UpdateItem"})).attach(client.dynamodb)
    try:
        held = queue.dlq_receive(10, visibility_timeout=30)
    finally:
        faults.detach()
    assert faults.counts[Kind.ANSWER_LOST_RETRIED] >= 2
    assert sorted(dead.message.body for dead in held) == ["a", "b"]
    assert queue.dlq_receive(10) == [], "held by the first receive"
    assert len(queue.dlq_list()) == 2, "the REST API's view is a look: it still lists them"

    clock.advance(31)
    again = queue.dlq_receive(10, visibility_timeout=30)
    assert sorted(dead.message.body for dead in again) == ["a", "b"]
    assert all(queue.dlq_delete(dead.receipt_handle) is False for dead in held), "spent by the later claims"
    with pytest.raises(ReceiptHandleStale):
        queue.dlq_change_visibility(held[0].receipt_handle, 0)
    assert queue.stats().dlq == 2
    assert all(queue.dlq_delete(dead.receipt_handle) is True for dead in again)
    assert queue.stats().dlq == 0


def test_a_redrive_of_a_held_dead_letter_is_beyond_its_holders_late_delete(client: QueueClient) -> None:
    """A redrive takes a dead letter another receive holds: the holder's delete names that DLQ copy, gone by then,
    and leaves the redriven message in the queue (delivered again, never lost)."""
    client.create_queue("held", max_receive_count=1)
    queue = client.queue("held", "c")
    queue.send("x")
    queue.receive(visibility_timeout=0)
    assert queue.receive() == []
    [dead] = queue.dlq_receive(1, visibility_timeout=300)
    assert queue.redrive() == 1
    assert queue.dlq_delete(dead.receipt_handle) is False
    [back] = queue.receive()
    assert back.body == "x" and back.message_id == dead.message.message_id
