"""A move to the DLQ that DynamoDB cancels for an item's size (`MessageTooLarge` from a transaction since the
cancellation reason is read): whoever meets it must not fail for everything else it was doing. Such a message is
held out of sight and reported as stuck, tried again every `STUCK_RETRY_SECONDS` (a FIFO head holds its group
that long), until it is cancelled or expires."""

from __future__ import annotations

from typing import Any

import pytest
from queue_core import MessageTooLarge, QueueClient, limits
from queue_core.models import QueueStats

from tests.conftest import FakeClock
from tests.core.answers import Interleave, LostAnswer, attached, expression_has, too_large_in_a_transaction


@pytest.mark.parametrize("name", ["big", "big.fifo"])
def test_a_receive_that_meets_a_message_whose_dlq_copy_is_too_large_still_answers(
    client: QueueClient, clock: FakeClock, dynamodb: Any, name: str
) -> None:
    """A message past its receive limit whose DLQ copy DynamoDB refuses for its size stays where it is (FIFO:
    stuck, holding its group only); a receive that meets it must still hand out the others, not fail as a whole
    with `MessageTooLarge`, which says the caller's own request was too large."""
    client.create_queue(name, visibility_timeout=30, max_receive_count=1)
    jobs = client.queue(name, "c")
    fifo = name.endswith(".fifo")
    jobs.send("huge-one", group_id="g1" if fifo else None)
    assert [message.body for message in jobs.receive()] == ["huge-one"]
    clock.advance(31)
    jobs.send("small", group_id="g2" if fifo else None)
    with too_large_in_a_transaction(dynamodb, "huge-one") as hook:
        got = jobs.receive(max_messages=10)
    assert hook.refused >= 1
    assert [message.body for message in got] == ["small"]


def test_a_sweep_that_meets_a_message_whose_dlq_copy_is_too_large_sweeps_the_rest(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """The sweep moves a standard message past its receive limit to the DLQ; DynamoDB refuses the copy for its
    size. The sweep must go on with the other queues (and report the one it could not move), not stop the whole
    table's pass with `MessageTooLarge`, pass after pass."""
    client.create_queue("big", visibility_timeout=30, max_receive_count=1)
    client.create_queue("other", retention_seconds=60)
    jobs = client.queue("big", "c")
    jobs.send("huge-one")
    assert [message.body for message in jobs.receive()] == ["huge-one"]
    other = client.queue("other", "c")
    other.send("old")
    clock.advance(61)  # "old" expired: the sweep deletes it
    with too_large_in_a_transaction(dynamodb, "huge-one") as hook:
        client.sweep()
    assert hook.refused >= 1
    assert other.stats().visible == 0


def test_an_operator_move_of_a_message_whose_dlq_copy_is_too_large_says_so(client: QueueClient, dynamodb: Any) -> None:
    """`move_to_dlq` by id of a visible message whose copy DynamoDB refuses for its size says so, not "the message
    is in flight; move it when it is visible again" (the operator would wait and try again, for ever)."""
    client.create_queue("big", visibility_timeout=30)
    jobs = client.queue("big", "c")
    sent = jobs.send("huge-one")
    with too_large_in_a_transaction(dynamodb, "huge-one") as hook, pytest.raises(MessageTooLarge):
        jobs.move_to_dlq(sent.message_id)
    assert hook.refused == 1


def _past_their_limit(client: QueueClient, clock: FakeClock, count: int) -> Any:
    """`count` standard messages past their receive limit (received once, `max_receive_count` 1, visible again)
    ahead of "small", received never."""
    client.create_queue("big", visibility_timeout=30, max_receive_count=1)
    jobs = client.queue("big", "c")
    for n in range(count):
        jobs.send(f"huge-{n}")
    assert len(jobs.receive(max_messages=10)) == count
    clock.advance(31)
    jobs.send("small")
    return jobs


def test_standard_messages_whose_dlq_copy_is_too_large_leave_the_front_of_the_shard(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """Three of them ahead of "small": a receive of one message reads one entry a round for three rounds and meets
    only them. Left visible, they hid "small" from every receive until they expired; held out of sight, the next
    receive hands it out."""
    jobs = _past_their_limit(client, clock, 3)
    with too_large_in_a_transaction(dynamodb, "huge-") as hook:
        first = jobs.receive(max_messages=1)
        second = jobs.receive(max_messages=1)
    assert hook.refused == 3
    assert [message.body for message in first + second] == ["small"]


def test_a_standard_message_whose_dlq_copy_is_too_large_is_tried_again_after_a_while_and_reported_stuck(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """One refused transaction, not one at every receive that meets it; counted in `stats` (delayed, and stuck)
    and by the sweep, as a stuck FIFO head is; tried again `STUCK_RETRY_SECONDS` later, and moved once the copy
    fits."""
    jobs = _past_their_limit(client, clock, 1)
    with too_large_in_a_transaction(dynamodb, "huge-") as hook:
        assert [message.body for message in jobs.receive(max_messages=10)] == ["small"]
        clock.advance(31)  # "small" is visible again: it goes on being received
        for _ in range(3):
            jobs.receive(max_messages=10)
        swept = client.sweep()
    assert hook.refused == 1
    assert jobs.stats().stuck == 1
    assert jobs.stats().delayed == 1
    assert [depth.get("stuck") for depth in swept.depths if depth["queue"] == "big"] == [1]
    clock.advance(limits.STUCK_RETRY_SECONDS + 1)
    with too_large_in_a_transaction(dynamodb, "huge-") as hook:
        jobs.receive(max_messages=10)
    assert hook.refused == 1
    assert jobs.stats().stuck == 1
    clock.advance(limits.STUCK_RETRY_SECONDS + 1)
    jobs.receive(max_messages=10)  # the copy fits now: moved ("small", past its limit too, went before)
    assert jobs.stats().stuck == 0
    assert sorted(letter.message.body for letter in jobs.dlq_receive(10)) == ["huge-0", "small"]


def test_a_hold_whose_answer_was_lost_is_taken_for_done_and_one_cancelled_meanwhile_is_left_alone(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """The SDK repeats a hold whose answer was lost: its condition fails on the hold itself, which the mover takes
    for its own (the message is stuck, the receive answers the rest). An operator who cancels the message between
    the move's refusal and the hold leaves the hold nothing to hold: nothing is raised, nothing comes back."""
    jobs = _past_their_limit(client, clock, 1)
    lost = LostAnswer("UpdateItem", expression_has("in_flight = :zero"))
    with too_large_in_a_transaction(dynamodb, "huge-"), attached(dynamodb, lost):
        assert [message.body for message in jobs.receive(max_messages=10)] == ["small"]
    assert lost.lost == 1
    assert jobs.stats().stuck == 1

    other = client.queue("big", "d")
    huge = other.send("huge-x")
    assert len(other.receive(max_messages=10)) == 1
    clock.advance(31)
    cancel = Interleave("UpdateItem", lambda: other.cancel(huge.message_id), expression_has("in_flight = :zero"))
    with too_large_in_a_transaction(dynamodb, "huge-"), attached(dynamodb, cancel):
        assert other.receive(max_messages=10) == []
    assert cancel.done
    assert other.stats() == QueueStats()
