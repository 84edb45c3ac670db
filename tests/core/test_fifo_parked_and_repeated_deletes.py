"""Deletes of one of several held messages, repeated by their caller and the SDK, and of parked messages (plain,
repeated, racing the claim's unlock, in the caller's transaction): each removal counted once. A repeat within
the claim must not rely on the removal records (`rl{n}`), which the claim's other removals write over."""

from __future__ import annotations

from typing import Any

from queue_core import QueueClient

from tests.core.answers import LostAnswer, attached


def _in_the_group(jobs: Any) -> int:
    stats = jobs.stats()
    return stats.visible + stats.in_flight + stats.delayed


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
    client.create_queue("parked2.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("parked2.fifo", "c")
    jobs.send_batch([{"body": body, "group_id": "g"} for body in ("a", "b", "c")])
    first, second = jobs.receive(max_messages=2)
    jobs.change_visibility(first.receipt_handle, 0)
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
    client.create_queue("parked3.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("parked3.fifo", "c")
    jobs.send_batch([{"body": body, "group_id": "g"} for body in ("a", "b", "c")])
    first, second = jobs.receive(max_messages=2)
    jobs.change_visibility(first.receipt_handle, 0)
    lose = LostAnswer("DeleteItem", meanwhile=lambda: jobs.delete(second.receipt_handle))
    with attached(dynamodb, lose):
        jobs.delete(first.receipt_handle)
    assert lose.lost == 1
    assert _in_the_group(jobs) == 1
    assert [message.body for message in jobs.receive(max_messages=10)] == ["c"]


def test_a_parked_message_is_deleted_in_a_transaction_and_counted_once(client: QueueClient) -> None:
    """The parked message's handle still deletes it (`change_visibility`'s promise), in the caller's transaction
    as well as by a plain delete; counted once."""
    client.create_queue("parked4.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("parked4.fifo", "c")
    jobs.send_batch([{"body": body, "group_id": "g"} for body in ("a", "b", "c")])
    first, second = jobs.receive(max_messages=2)
    jobs.change_visibility(first.receipt_handle, 0)
    client.transact(list(jobs.delete_transact_items(first.receipt_handle)))
    assert _in_the_group(jobs) == 2
    client.transact(list(jobs.delete_transact_items(second.receipt_handle)))
    assert _in_the_group(jobs) == 1
    assert [message.body for message in jobs.receive(max_messages=10)] == ["c"]
