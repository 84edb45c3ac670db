"""The reference (`tests.reliability.model`) against the queue for a handle from before its message went to the
DLQ and back. A redriven FIFO message is put at its group's end under a new id; a redriven standard message keeps
its id, unless its shard is gone (the shard count was lowered since): it is then put in a shard that is there,
under a new id too, and the handle from before names a message that is gone, as a FIFO one does."""

from __future__ import annotations

import pytest
from queue_core import QueueClient, QueueError

from tests.conftest import FakeClock
from tests.reliability.model import Handle, Outcome, Reference


def _outcome(call: object) -> Outcome:
    try:
        return ("ok", call())  # type: ignore[operator]
    except QueueError as error:
        return ("error", error.code)


def _now(clock: FakeClock) -> int:
    return int(clock() * 1000)


@pytest.mark.parametrize("shards", [1, 4], ids=["its shard kept", "its shard gone"])
def test_the_reference_answers_a_standard_handle_from_before_a_redrive_as_the_queue_does(
    client: QueueClient, clock: FakeClock, shards: int
) -> None:
    client.create_queue("back", max_receive_count=1, visibility_timeout=10, shards=shards)
    queue = client.queue("back", "c")
    reference = Reference(False, 10, 1, 60)
    for number in range(12):
        body = f"m{number}"
        reference.send(body, None, 0, None, _now(clock))
        reference.sent(body, queue.send(body).message_id, None, _now(clock))
    handles: list[Handle] = []
    while received := queue.receive(max_messages=10, visibility_timeout=10):
        reference.claimed_standard(received, [], 10, _now(clock))
        handles += [Handle.of(message) for message in received]
    old = next(handle for handle in handles if shards == 1 or not handle.message_id.startswith("S0."))
    clock.advance(11)
    client.sweep()
    reference.sweep(_now(clock))
    client.update_queue("back", shards=1)
    assert queue.redrive() == len(reference.redrive(None, _now(clock))) == 12
    reference.saw_ids(queue.peek(100))
    moved = reference.live[old.body].message_id != old.message_id
    assert moved == (shards > 1)

    now = _now(clock)
    answers = {
        "more time": (
            _outcome(lambda: queue.change_visibility(old.handle, 60)),
            reference.change_visibility(old, 60, now),
        ),
        "released": (
            _outcome(lambda: queue.release(old.handle, delay_seconds=60)),
            reference.release(old, 60, now, None),
        ),
        "deleted": (_outcome(lambda: queue.delete(old.handle)), reference.delete(old, now)),
    }
    assert all(actual == expected for actual, expected in answers.values()), answers
