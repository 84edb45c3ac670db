"""A FIFO group's count of messages (what `stats` reports) after deletes whose answers were lost."""

from __future__ import annotations

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
