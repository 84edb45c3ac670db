"""A FIFO group's count of messages (what `stats` reports) after deletes whose answers were lost."""

from __future__ import annotations

import pytest
from queue_core import QueueClient

from tests.conftest import FakeClock
from tests.core.answers import LostAnswer, attached


def test_a_late_delete_whose_answer_was_lost_leaves_the_groups_count(
    client: QueueClient, dynamodb: object, clock: FakeClock
) -> None:
    """The holder's claim ran out and the sweep freed the group; the holder then deletes its message, the delete
    is applied and its answer lost, and the SDK's retry finds the message gone. The message is gone, so the
    group's count must say one fewer."""
    client.create_queue("count.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("count.fifo", "c")
    jobs.send_batch([{"body": body, "group_id": "g"} for body in ("a", "b", "c")])
    (held,) = jobs.receive()
    clock.advance(31)
    client.sweep()
    with attached(dynamodb, LostAnswer("DeleteItem")) as lost:
        jobs.delete(held.receipt_handle)
    assert lost.lost == 1
    assert [message.body for message in jobs.peek(10)] == ["b", "c"]
    assert jobs.stats().visible == 2


@pytest.mark.parametrize("later_claim_of", [1, 2])
def test_a_stale_delete_whose_answer_was_lost_leaves_the_groups_count_as_it_was(
    client: QueueClient, dynamodb: object, later_claim_of: int
) -> None:
    """A claim gave its message back; a later claim received it (alone, or with the next one) and deleted it (the
    group's count one fewer). The first claim's handle then deletes it, the delete's answer is lost and the SDK
    sends it again: both attempts find the message gone, and neither removed it. Counted again as the repeat's own
    removal, the group's count (what `stats` reports as exact) stays one short until the group empties."""
    client.create_queue("twice.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("twice.fifo", "c")
    jobs.send_batch([{"body": body, "group_id": "g"} for body in ("a", "b")])
    (first,) = jobs.receive(max_messages=1)
    jobs.release(first.receipt_handle, delay_seconds=0)
    second, *_ = jobs.receive(max_messages=later_claim_of)
    assert second.body == "a"
    jobs.delete(second.receipt_handle)
    stats = jobs.stats()
    assert stats.visible + stats.in_flight == 1
    with attached(dynamodb, LostAnswer("DeleteItem")) as lost:
        jobs.delete(first.receipt_handle)
    assert lost.lost == 1
    stats = jobs.stats()
    assert stats.visible + stats.in_flight == 1


def test_a_stale_delete_of_a_message_a_later_claim_moved_to_the_dlq_counts_nothing(
    client: QueueClient, dynamodb: object, clock: FakeClock
) -> None:
    """The same with the later claim's move to the DLQ as the removal: the move counted it, and the group's only
    message left is the one in flight."""
    client.create_queue("moved.fifo", fifo=True, visibility_timeout=30, max_receive_count=1)
    jobs = client.queue("moved.fifo", "c")
    jobs.send_batch([{"body": body, "group_id": "g"} for body in ("a", "b")])
    (first,) = jobs.receive(max_messages=1)
    clock.advance(31)
    (next_one,) = jobs.receive(max_messages=1)
    assert next_one.body == "b"
    assert [dead.message.body for dead in jobs.dlq_read()] == ["a"]
    with attached(dynamodb, LostAnswer("DeleteItem")) as lost:
        jobs.delete(first.receipt_handle)
    assert lost.lost == 1
    assert (jobs.stats().visible, jobs.stats().in_flight) == (0, 1)
