"""A FIFO DLQ's handles used late, tried from outside (`dead_letter_groups.hold`): a handle whose claim's time ran
out and whose group a later receive took without reaching its dead letter (a receive of fewer than the group
holds) is stale, at any moment of its writes; and a release whose outcome its caller could not learn can be sent
again, also where the group is held as long already and the dead letter is written alone."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from queue_core import QueueClient, QueueError

from tests.conftest import FakeClock
from tests.core.answers import AnswerNeverCame, Interleave, attached, never_answered
from tests.core.test_fifo_dlq_stale_holds import (
    ALONE,
    _at,
    _bodies,
    _dead,
    _dead_letters_of_one_group,
    _elsewhere,
    _group,
    _stale,
    _the_dead_letter_alone,
)


def test_a_handle_whose_group_a_later_receive_took_between_the_transaction_and_its_own_write_changes_nothing(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A claim holds x and y for 60 s; y's handle asks for 20 s (the group is held as long already: the transaction
    is refused, y's own write follows). Before that write, the claim's time runs out and a receive of one takes the
    group with x alone: y's copy still bears the first claim's stamp, and its own write is fenced on that stamp
    only. The handle is stale by then; it must change nothing."""
    queue = _dead_letters_of_one_group(client, clock, "x", "y", "z")
    _, y = queue.dlq_receive(2, visibility_timeout=60)
    taken: list[list[str]] = []
    before: list[dict[str, Any]] = []

    def a_receive_of_one() -> None:
        clock.advance(61)
        taken.append(_bodies(queue.dlq_receive(1, visibility_timeout=30)))
        before.extend(_dead(dynamodb)["y"].items())

    with attached(dynamodb, Interleave(ALONE, lambda: _elsewhere(a_receive_of_one), _the_dead_letter_alone)):
        stale = _stale(lambda: queue.dlq_change_visibility(y.receipt_handle, 20))
    assert taken == [["x"]]
    assert sorted(_dead(dynamodb)["y"].items()) == sorted(before), "y rewritten by a handle whose group was taken"
    assert stale


def test_a_stale_handles_own_write_never_holds_its_dead_letter_past_the_later_claim(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """y's handle asks for 20 s while the claim holds x and y for 60 s: the transaction is refused, y's own write
    follows. Meanwhile the same claim gives y back and x's handle asks for 1 s (x alone: the group's time moves to
    1 s), and after it a receive of one takes the group with x. y's late write finds y still stamped by the first
    claim and holds it for 20 s: once the later claim deletes x, the group is free and nobody holds y, yet no
    receive is given the group until those 20 s end."""
    queue = _dead_letters_of_one_group(client, clock, "x", "y", "z")
    x, y = queue.dlq_receive(2, visibility_timeout=60)
    later: list[Any] = []

    def meanwhile() -> None:
        queue.dlq_change_visibility(y.receipt_handle, 0)
        queue.dlq_change_visibility(x.receipt_handle, 1)
        clock.advance(2)
        later.extend(queue.dlq_receive(1, visibility_timeout=30))

    with attached(dynamodb, Interleave(ALONE, lambda: _elsewhere(meanwhile), _the_dead_letter_alone)):
        stale = _stale(lambda: queue.dlq_change_visibility(y.receipt_handle, 20))
    assert _bodies(later) == ["x"]
    assert queue.dlq_delete(later[0].receipt_handle)
    assert _bodies(queue.dlq_receive(10)) == ["y", "z"], f"y held until {_dead(dynamodb)['y']['dlq_until']}"
    assert stale


def test_a_dead_letter_its_own_claim_gave_back_before_its_own_write_stays_given_back(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """y's handle asks for 20 s while the claim holds x and y for 60 s (held as long already: y's own write
    follows); before that write, the same handle gives y back. The claim still holds the group, for x alone: y's
    late write must not hide y for 20 s from the receive that takes the group once x is deleted."""
    queue = _dead_letters_of_one_group(client, clock, "x", "y", "z")
    x, y = queue.dlq_receive(2, visibility_timeout=60)

    def given_back() -> None:
        queue.dlq_change_visibility(y.receipt_handle, 0)

    with attached(dynamodb, Interleave(ALONE, lambda: _elsewhere(given_back), _the_dead_letter_alone)):
        stale = _stale(lambda: queue.dlq_change_visibility(y.receipt_handle, 20))
    assert queue.dlq_delete(x.receipt_handle)
    assert _bodies(queue.dlq_receive(10)) == ["y", "z"], f"y held until {_dead(dynamodb)['y']['dlq_until']}"
    assert stale


def test_a_handle_whose_group_a_later_receive_claimed_but_has_not_stamped_yet_changes_nothing(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """y's handle asks for 20 s while the claim holds x and y for 60 s (held as long already: y's own write
    follows). Before that write, the claim's time runs out and a receive of two takes the group, for x and y, and
    has stamped neither yet: y still bears the first claim's stamp and sits in the later claim's set. The stale
    handle must change nothing, and the later receive gets both."""
    queue = _dead_letters_of_one_group(client, clock, "x", "y", "z")
    _, y = queue.dlq_receive(2, visibility_timeout=60)
    claimed, go = threading.Event(), threading.Event()
    taken: list[list[str]] = []

    def pause_before_stamping(request: Any, **_: Any) -> None:
        if threading.current_thread().name == "later" and "SET dlq_tok = :tok" in request.body.decode():
            claimed.set()
            go.wait(10)

    def later_receive() -> None:
        taken.append(_bodies(queue.dlq_receive(2, visibility_timeout=30)))

    def start_later_receive() -> None:
        clock.advance(61)
        threading.Thread(target=later_receive, name="later").start()
        assert claimed.wait(10)

    dynamodb.meta.events.register("before-send.dynamodb.UpdateItem", pause_before_stamping)
    try:
        with attached(dynamodb, Interleave(ALONE, start_later_receive, _the_dead_letter_alone)):
            stale = _stale(lambda: queue.dlq_change_visibility(y.receipt_handle, 20))
        before = dict(_dead(dynamodb)["y"])
    finally:
        go.set()
        dynamodb.meta.events.unregister("before-send.dynamodb.UpdateItem", pause_before_stamping)
    for thread in threading.enumerate():
        if thread.name == "later":
            thread.join(10)
    assert stale
    assert before["dlq_until"] == _at(61), "y's end moved by a handle whose group was taken"
    assert taken == [["x", "y"]]


@pytest.mark.usefixtures("instant_backoff")
def test_a_release_whose_answers_never_came_is_an_error_and_its_retry_is_answered_as_done(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """The release's transaction is applied and every answer to it is lost: the caller is told to retry (the outcome
    is unknown). Its retry must not be refused as stale: y was released by this very handle, as a release of a live
    message or of a standard DLQ's dead letter sent again is answered."""
    queue = _dead_letters_of_one_group(client, clock, "x", "y", "z")
    _, y = queue.dlq_receive(2, visibility_timeout=30)
    clock.advance(10)
    never = AnswerNeverCame("TransactWriteItems", lambda body: "DELETE held_copies" in str(body), times=1_000)
    with never_answered(dynamodb, never), pytest.raises(QueueError):
        queue.dlq_change_visibility(y.receipt_handle, 0)
    assert _dead(dynamodb)["y"]["dlq_until"] == _at(11), "applied"
    assert len(_group(dynamodb)["held_copies"]) == 1
    assert not _stale(lambda: queue.dlq_change_visibility(y.receipt_handle, 0))
