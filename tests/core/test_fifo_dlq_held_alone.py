"""A FIFO DLQ's dead letter written alone (more time asked while its group is held as long already: a transaction
of a check that the claim still holds the group and the dead letter, and the dead letter's own update), tried from
outside: lost answers with other processes at work before the SDK's repeat, a repeated receive's hold with another
process between its reads and its write, and a transaction conflict on the group's claim item. After each, the
caller's answer matches what was written, and nothing is held for nobody."""

from __future__ import annotations

import json
from typing import Any

import pytest
from queue_core import QueueClient, QueueError

from tests.conftest import FakeClock
from tests.core.answers import Interleave, LostAnswer, attached, cancelled_transaction
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


def test_a_write_alone_applied_whose_answer_was_lost_while_its_dead_letter_was_given_back_is_answered_as_done(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """y's own write (20 s, the group held 60 s for x and y) is applied and its answer lost; before the SDK's repeat
    the same handle gives y back. The repeat is the same commit: success, once; y stays given back."""
    queue = _dead_letters_of_one_group(client, clock, "x", "y", "z")
    x, y = queue.dlq_receive(2, visibility_timeout=60)

    def given_back() -> None:
        queue.dlq_change_visibility(y.receipt_handle, 0)

    lost = LostAnswer(ALONE, _the_dead_letter_alone, meanwhile=lambda: _elsewhere(given_back))
    with attached(dynamodb, lost):
        stale = _stale(lambda: queue.dlq_change_visibility(y.receipt_handle, 20))
    assert lost.lost == 1
    assert not stale, "the write was applied before the give-back"
    assert _dead(dynamodb)["y"]["dlq_until"] == _at(1)
    assert len(_group(dynamodb)["held_copies"]) == 1
    assert queue.dlq_delete(x.receipt_handle)
    assert _bodies(queue.dlq_receive(10)) == ["y", "z"]


def test_a_write_alone_applied_whose_answer_was_lost_while_a_later_receive_took_the_group_is_answered_as_done(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """The same, the claim's time running out and a receive of one taking the group (x alone) before the repeat:
    the later claim's holds are left as it made them, and y, held 20 s by the write, is the later claim's next."""
    queue = _dead_letters_of_one_group(client, clock, "x", "y", "z")
    _, y = queue.dlq_receive(2, visibility_timeout=60)
    later: list[Any] = []

    def a_receive_of_one() -> None:
        clock.advance(61)
        later.extend(queue.dlq_receive(1, visibility_timeout=30))

    lost = LostAnswer(ALONE, _the_dead_letter_alone, meanwhile=lambda: _elsewhere(a_receive_of_one))
    with attached(dynamodb, lost):
        stale = _stale(lambda: queue.dlq_change_visibility(y.receipt_handle, 20))
    assert not stale
    assert _bodies(later) == ["x"]
    group = _group(dynamodb)
    assert (group["held_until"], len(group["held_copies"])) == (_at(92), 1)
    assert _dead(dynamodb)["y"]["dlq_until"] == _at(21)
    assert queue.dlq_delete(later[0].receipt_handle)
    assert _bodies(queue.dlq_receive(10)) == ["y", "z"]


@pytest.mark.parametrize("meanwhile", ["y given back", "x given back"])
def test_a_repeated_receive_whose_second_dead_letter_changes_before_its_write_alone_leaves_nothing_hidden(
    client: QueueClient, clock: FakeClock, dynamodb: Any, meanwhile: str
) -> None:
    """A receive of x and y (30 s) is repeated with its attempt id at 10 s: x's hold moves the group to 40 s, y's
    is then written alone. Before that write, one of the first answer's handles gives its dead letter back. The
    repeat is refused (y given back) or answered (x given back); either way, once the answered handles are
    settled, the group's remaining dead letters come at once, none hidden for a claim nobody holds."""
    queue = _dead_letters_of_one_group(client, clock, "x", "y", "z")
    first = queue.dlq_receive_attempt("a", 2, visibility_timeout=30)
    handles = {letter.message.body: letter.receipt_handle for letter in first}  # type: ignore[union-attr]
    clock.advance(10)
    body = meanwhile[0]

    def given_back() -> None:
        queue.dlq_change_visibility(handles[body], 0)

    between = Interleave(ALONE, lambda: _elsewhere(given_back), _the_dead_letter_alone)
    with attached(dynamodb, between):
        again = queue.dlq_receive_attempt("a", 2, visibility_timeout=30)
    assert between.done
    if meanwhile == "x given back":
        assert [letter.receipt_handle for letter in again] == [letter.receipt_handle for letter in first]
    for letter in again:
        assert queue.dlq_delete(letter.receipt_handle), letter.message.body  # type: ignore[union-attr]
    left = sorted(_dead(dynamodb))
    assert _bodies(queue.dlq_receive(10)) == left, f"group {_group(dynamodb)}, dead {_dead(dynamodb)}"


@pytest.mark.parametrize("again", [False, True], ids=["a change of visibility", "a repeated receive's hold"])
def test_a_write_alone_that_meets_another_transaction_on_the_group_is_a_throttle_that_gives_nothing_back(
    client: QueueClient, clock: FakeClock, dynamodb: Any, again: bool
) -> None:
    """DynamoDB cancels y's write alone with `TransactionConflict` on the group's claim item (another transaction of
    the claim, x's, is writing it): nothing was written, the caller is told to retry, and y is still the claim's."""
    queue = _dead_letters_of_one_group(client, clock, "x", "y", "z")
    _, y = queue.dlq_receive(2, visibility_timeout=60)
    conflicts = [0]

    def before_call(params: dict[str, Any], **_: Any) -> Any:
        body = params.get("body") or b"{}"
        request = json.loads(body.decode() if isinstance(body, bytes) else body)
        if not _the_dead_letter_alone(request):
            return None
        conflicts[0] += 1
        return cancelled_transaction(request, "TransactionConflict", "Transaction is ongoing for the item")

    dynamodb.meta.events.register("before-call.dynamodb.TransactWriteItems", before_call)
    try:
        with pytest.raises(QueueError) as raised:
            queue.dlq_change_visibility(y.receipt_handle, 20, again=again)
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb.TransactWriteItems", before_call)
    assert conflicts[0] >= 1
    assert raised.value.code == "Throttled"
    assert len(_group(dynamodb)["held_copies"]) == 2, "nothing given back on a conflict"
    queue.dlq_change_visibility(y.receipt_handle, 20)
    assert _dead(dynamodb)["y"]["dlq_until"] == _at(21)
