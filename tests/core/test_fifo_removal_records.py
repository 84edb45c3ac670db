"""A holder's removals recorded on the group item (`rr` slots, `rl`) through every path, counted once: a delete
repeated after a lost answer while its claim holds the group, of one message or one of several, a transactional
ack, a holder's own delete sent again by its caller after the group moved on, and deletes of parked messages
(plain, repeated, racing the claim's unlock, in the caller's transaction). A repeat within the claim must not rely
on the removal records (`rl{n}`), which the claim's other removals write over."""

from __future__ import annotations

from typing import Any

import pytest
from queue_core import QueueClient

from tests.conftest import FakeClock
from tests.core.answers import LostAnswer, attached


def _in_the_group(jobs: Any) -> int:
    stats = jobs.stats()
    return stats.visible + stats.in_flight + stats.delayed


def _parked(client: QueueClient, name: str) -> tuple[Any, Any, Any]:
    """A group of "a", "b", "c" whose claim took "a" and "b" and gave "a" back at once (parked: the claim still
    holds the group); the sub-queue and the two messages received."""
    client.create_queue(name, fifo=True, visibility_timeout=30)
    jobs = client.queue(name, "c")
    jobs.send_batch([{"body": body, "group_id": "g"} for body in ("a", "b", "c")])
    first, second = jobs.receive(max_messages=2)
    jobs.change_visibility(first.receipt_handle, 0)
    return jobs, first, second


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
    jobs, first, second = _parked(client, "parked.fifo")
    with attached(dynamodb, LostAnswer("DeleteItem")) as lost:
        jobs.delete(first.receipt_handle)
    assert lost.lost == 1
    jobs.delete(second.receipt_handle)
    assert _in_the_group(jobs) == 1
    assert [message.body for message in jobs.receive(max_messages=10)] == ["c"]


def test_a_delete_repeated_by_its_caller_after_a_same_slot_message_of_its_claim_was_deleted_counts_nothing(
    client: QueueClient, dynamodb: Any
) -> None:
    """A claim holds six messages (received once). Its holder deletes the first, then the fifth, whose number is
    the first's modulo four: its record (`rl{n}`) writes over the first's. The caller sends the first delete again
    (its answer lost on the way back) and the SDK sends that repeat twice: the group's `acked` has the first, and
    the repeat, which may have removed it, counts it unless a record names it. None does any more: counted twice."""
    client.create_queue("slots.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("slots.fifo", "c")
    bodies = ["a", "b", "c", "d", "e", "f", "g"]
    jobs.send_batch([{"body": body, "group_id": "g"} for body in bodies])
    held = jobs.receive(max_messages=6)
    assert [message.body for message in held] == bodies[:6]
    jobs.delete(held[0].receipt_handle)
    jobs.delete(held[4].receipt_handle)
    assert _in_the_group(jobs) == 5
    with attached(dynamodb, LostAnswer("DeleteItem")) as lost:
        jobs.delete(held[0].receipt_handle)
    assert lost.lost == 1
    assert _in_the_group(jobs) == 5


def test_a_parked_message_deleted_twice_by_its_caller_is_counted_once(client: QueueClient, dynamodb: Any) -> None:
    """Parked, deleted (counted by `gone`), then the same delete sent again by its caller and by the SDK: the
    repeat finds the message in `acked` (the park) and in `gone` (the delete): nothing more."""
    jobs, first, second = _parked(client, "parked2.fifo")
    jobs.delete(first.receipt_handle)
    assert _in_the_group(jobs) == 2
    with attached(dynamodb, LostAnswer("DeleteItem")) as lost:
        jobs.delete(first.receipt_handle)
    assert lost.lost == 1
    assert _in_the_group(jobs) == 2
    jobs.delete(second.receipt_handle)
    with attached(dynamodb, LostAnswer("DeleteItem")) as lost:
        jobs.delete(first.receipt_handle)
    assert _in_the_group(jobs) == 1
    assert [message.body for message in jobs.receive(max_messages=10)] == ["c"]


def test_a_parked_message_deleted_while_the_claim_unlocks_the_group_is_counted_once(
    client: QueueClient, dynamodb: Any
) -> None:
    """The parked message's delete removes it, its answer lost; meanwhile the claim's other message is deleted
    and the group unlocks. The SDK's retry finds the message gone and the group no longer held: counted once."""
    jobs, first, second = _parked(client, "parked3.fifo")
    lose = LostAnswer("DeleteItem", meanwhile=lambda: jobs.delete(second.receipt_handle))
    with attached(dynamodb, lose):
        jobs.delete(first.receipt_handle)
    assert lose.lost == 1
    assert _in_the_group(jobs) == 1
    assert [message.body for message in jobs.receive(max_messages=10)] == ["c"]


def test_a_parked_message_is_deleted_in_a_transaction_and_counted_once(client: QueueClient) -> None:
    """The parked message's handle still deletes it (`change_visibility`'s promise), in the caller's transaction
    as well as by a plain delete; counted once."""
    jobs, first, second = _parked(client, "parked4.fifo")
    client.transact(list(jobs.delete_transact_items(first.receipt_handle)))
    assert _in_the_group(jobs) == 2
    client.transact(list(jobs.delete_transact_items(second.receipt_handle)))
    assert _in_the_group(jobs) == 1
    assert [message.body for message in jobs.receive(max_messages=10)] == ["c"]
