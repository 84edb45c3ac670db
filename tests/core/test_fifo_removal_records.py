"""A holder's removals recorded on the group item (`rr` slots, `rl`) through every path, counted once: a delete
repeated after a lost answer while its claim holds the group, of one message or one of several, a transactional
ack, and a holder's own delete sent again by its caller after the group moved on."""

from __future__ import annotations

from typing import Any

import pytest
from queue_core import QueueClient

from tests.conftest import FakeClock
from tests.core.answers import LostAnswer, attached


def _in_the_group(jobs: Any) -> int:
    stats = jobs.stats()
    return stats.visible + stats.in_flight + stats.delayed


@pytest.mark.parametrize("held", [1, 2])
@pytest.mark.parametrize("how", ["lost answer", "transaction"])
def test_a_redelivered_message_deleted_by_its_holder_is_counted_once(
    client: QueueClient, dynamodb: Any, clock: FakeClock, held: int, how: str
) -> None:
    client.create_queue("again.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("again.fifo", "c")
    jobs.send_batch([{"body": body, "group_id": "g"} for body in ("a", "b", "c")])
    got = jobs.receive(max_messages=held)
    clock.advance(31)
    got = jobs.receive(max_messages=held)
    assert [message.receive_count for message in got] == [2] * held
    for message in got:
        if how == "lost answer":
            with attached(dynamodb, LostAnswer("DeleteItem")) as lost:
                jobs.delete(message.receipt_handle)
            assert lost.lost == 1
        else:
            client.transact(list(jobs.delete_transact_items(message.receipt_handle)))
    assert _in_the_group(jobs) == 3 - held
    assert [message.body for message in jobs.receive(max_messages=10)] == ["a", "b", "c"][held:]


@pytest.mark.parametrize("next_deleted", [False, True])
def test_a_delete_repeated_by_its_caller_whose_answer_was_lost_after_the_group_moved_on_counts_nothing(
    client: QueueClient, dynamodb: Any, next_deleted: bool
) -> None:
    """A holder deletes its message (received once) and the group is counted down; its caller, whose answer was
    lost on the way back, sends the same delete again after another claim took the group (and, with
    `next_deleted`, deleted its own message, received once too, whose record must not write over the first), and
    that repeat's answer is lost too (the SDK sends it twice). Nothing was removed by the repeat: it must count
    nothing, or `stats` says the group is empty while its last message waits."""
    client.create_queue("twice.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("twice.fifo", "c")
    jobs.send_batch([{"body": body, "group_id": "g"} for body in ("a", "b", "c")])
    (first,) = jobs.receive(max_messages=1)
    assert first.receive_count == 1
    jobs.delete(first.receipt_handle)
    (second,) = jobs.receive(max_messages=1)
    assert (second.body, second.receive_count) == ("b", 1)
    if next_deleted:
        jobs.delete(second.receipt_handle)
    left = 1 if next_deleted else 2
    assert _in_the_group(jobs) == left
    with attached(dynamodb, LostAnswer("DeleteItem")) as lost:
        jobs.delete(first.receipt_handle)
    assert lost.lost == 1
    assert _in_the_group(jobs) == left


def test_a_parked_message_deleted_by_a_delete_whose_answer_was_lost_is_counted(
    client: QueueClient, dynamodb: Any
) -> None:
    """A holder of two messages gives one back at once (parked: acked, still deletable by its handle), then
    deletes it; the delete's answer is lost and the SDK's retry finds the message gone. The first attempt removed
    it, and nobody else counted it: the retry's ack finds the sequence in `acked` (from the park) and takes that
    for its own ack applied before, so the removal is never counted and the group's count stays one too high."""
    client.create_queue("parked.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("parked.fifo", "c")
    jobs.send_batch([{"body": body, "group_id": "g"} for body in ("a", "b", "c")])
    first, second = jobs.receive(max_messages=2)
    jobs.change_visibility(first.receipt_handle, 0)
    with attached(dynamodb, LostAnswer("DeleteItem")) as lost:
        jobs.delete(first.receipt_handle)
    assert lost.lost == 1
    jobs.delete(second.receipt_handle)
    assert _in_the_group(jobs) == 1
    assert [message.body for message in jobs.receive(max_messages=10)] == ["c"]
