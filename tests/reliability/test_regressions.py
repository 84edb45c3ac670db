"""The smallest cases of what the stress and model runs caught, so that each stays fixed."""

from __future__ import annotations

from queue_core import QueueClient

from tests.conftest import FakeClock


def test_a_late_delete_after_the_group_was_claimed_again_leaves_the_count(
    client: QueueClient, clock: FakeClock
) -> None:
    """A holder whose lock ran out may still delete a message nobody took again since; the group's count (what
    `stats()` reads) must lose that message even though the group's lock now belongs to another claim."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c1")
    jobs.send("first", group_id="g")
    jobs.send("second", group_id="g")
    slow = jobs.receive(max_messages=2)
    clock.advance(31)
    assert [message.body for message in jobs.receive(max_messages=1)] == ["first"]

    jobs.delete(slow[1].receipt_handle)

    stats = jobs.stats()
    assert (stats.visible, stats.in_flight, stats.delayed) == (0, 1, 0)


def test_a_fifo_release_delay_holds_even_when_a_later_message_of_the_batch_is_settled_after_it(
    client: QueueClient, clock: FakeClock
) -> None:
    """A consumer that fails the head of a batch gives it back with a delay (backoff) and the rest at once, as
    `Consumer` does: the group must wait for the longest delay, or a failing head spins without backoff."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c1")
    jobs.send("first", group_id="g")
    jobs.send("second", group_id="g")
    first, second = jobs.receive(max_messages=2)

    jobs.release(first.receipt_handle, delay_seconds=100)
    jobs.release(second.receipt_handle, delay_seconds=0)

    assert jobs.receive(max_messages=2) == []
    assert jobs.stats().delayed == 2
    clock.advance(101)
    assert [message.body for message in jobs.receive(max_messages=2)] == ["first", "second"]


def test_a_redrive_naming_one_message_twice_moves_it_once(client: QueueClient) -> None:
    """DynamoDB refuses a batch read that names one item twice: the same id (or another spelling of it, with a
    zero-padded shard) must not turn a redrive into an internal error."""
    client.create_queue("orders", max_receive_count=1, visibility_timeout=0)
    orders = client.queue("orders", "c1")
    sent = orders.send("poison").message_id
    orders.receive()
    orders.receive()
    [dead] = orders.dlq_list()
    assert dead.message_id == sent
    shard, sequence = sent[1:].split(".")

    assert orders.redrive(message_ids=[sent, sent, f"S0{shard}.{sequence}"]) == 1

    assert [message.body for message in orders.receive()] == ["poison"]
