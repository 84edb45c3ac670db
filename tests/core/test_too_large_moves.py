"""A move to the DLQ that DynamoDB cancels for an item's size (`MessageTooLarge` from a transaction since the
cancellation reason is read): whoever meets it must not fail for everything else it was doing."""

from __future__ import annotations

from typing import Any

import pytest
from queue_core import MessageTooLarge, QueueClient

from tests.conftest import FakeClock
from tests.core.answers import too_large_in_a_transaction


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
