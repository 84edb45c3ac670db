"""A standard message held out of sight because its DLQ copy is too large (`StandardClaims._hold_stuck`), met by
the writes of the holder of its last attempt, whose claim ran out before the hold: `stats` must tell a message its
holder has taken back from one that is stuck."""

from __future__ import annotations

from typing import Any

from queue_core import QueueClient

from tests.conftest import FakeClock
from tests.core.answers import LostAnswer, attached, expression_has, too_large_in_a_transaction


def _held_while_its_holder_still_has_a_handle(client: QueueClient, clock: FakeClock, dynamodb: Any) -> Any:
    """ "huge" received once (`max_receive_count` 1), its claim run out, and held stuck by another receive."""
    client.create_queue("big", visibility_timeout=30, max_receive_count=1)
    jobs = client.queue("big", "c")
    jobs.send("huge")
    [late] = jobs.receive(max_messages=1)
    clock.advance(31)
    with too_large_in_a_transaction(dynamodb, "huge") as hook:
        assert jobs.receive(max_messages=10) == []
    assert hook.refused == 1
    assert jobs.stats().stuck == 1
    return jobs, late


def test_a_late_holders_change_of_visibility_of_a_held_message_counts_it_in_flight_not_stuck(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """The holder whose claim ran out still holds the handle (`tok` stays on the item) and moves the visibility:
    the message is its again, in flight, as it was counted before the hold; `in_flight` 0 left by the hold counts
    it as stuck instead."""
    jobs, late = _held_while_its_holder_still_has_a_handle(client, clock, dynamodb)
    jobs.change_visibility(late.receipt_handle, 600)
    stats = jobs.stats()
    assert (stats.in_flight, stats.delayed, stats.stuck) == (1, 0, 0)


def test_a_repeated_receive_that_holds_a_held_message_again_counts_it_in_flight_not_stuck(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """The receive that made the last claim, repeated under its attempt id within five minutes, answers the message
    again and holds it by that claim (`hold_again`): it is in flight, not stuck."""
    client.create_queue("big", visibility_timeout=30, max_receive_count=1)
    jobs = client.queue("big", "c")
    jobs.send("huge")
    [first] = jobs.receive_attempt("attempt-1", max_messages=1)
    clock.advance(31)
    with too_large_in_a_transaction(dynamodb, "huge"):
        assert jobs.receive(max_messages=10) == []
    assert jobs.stats().stuck == 1
    again = jobs.receive_attempt("attempt-1", max_messages=1)
    if not again:
        return  # not answered again: nothing is in flight, and stuck is right
    assert [message.receipt_handle for message in again] == [first.receipt_handle]
    stats = jobs.stats()
    assert (stats.in_flight, stats.delayed, stats.stuck) == (1, 0, 0)


def _counts(jobs: Any) -> tuple[int, int, int, int]:
    stats = jobs.stats()
    return stats.visible, stats.in_flight, stats.delayed, stats.stuck


def test_a_late_release_with_a_delay_counts_it_delayed(client: QueueClient, clock: FakeClock, dynamodb: Any) -> None:
    jobs, late = _held_while_its_holder_still_has_a_handle(client, clock, dynamodb)
    jobs.release(late.receipt_handle, delay_seconds=60)
    assert _counts(jobs) == (0, 0, 1, 0)
    clock.advance(61)
    assert _counts(jobs) == (1, 0, 0, 0)


def test_a_late_change_to_0_counts_it_visible_then_stuck_again(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    jobs, late = _held_while_its_holder_still_has_a_handle(client, clock, dynamodb)
    jobs.change_visibility(late.receipt_handle, 0)
    assert _counts(jobs) == (1, 0, 0, 0)
    with too_large_in_a_transaction(dynamodb, "huge"):
        assert jobs.receive(max_messages=10) == []
    assert _counts(jobs) == (0, 0, 1, 1)


def test_a_late_change_whose_answer_is_lost_counts_it_in_flight(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    jobs, late = _held_while_its_holder_still_has_a_handle(client, clock, dynamodb)
    with attached(dynamodb, LostAnswer("UpdateItem", expression_has("changed"))) as lost:
        jobs.change_visibility(late.receipt_handle, 600)
    assert lost.lost == 1
    assert _counts(jobs) == (0, 1, 0, 0)
    clock.advance(601)
    assert _counts(jobs) == (1, 0, 0, 0)
