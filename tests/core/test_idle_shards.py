"""Idle shards cost nothing: a quiet receive on a queue of many shards reads its home shard and, when that is not
enough, the shard marks, never every shard; and no message is left where no receive looks (`shard_marks`)."""

from __future__ import annotations

from typing import Any

import pytest
from queue_core import QueueClient, keys, limits, shard_marks
from queue_core.subqueue import SubQueue

from tests.conftest import TABLE, FakeClock
from tests.core.answers import Interleave, LostAnswer, attached, expression_has
from tests.dynamo_calls import CallCounter
from tests.index_lag import IndexLag

SHARDS = 64
LAG_SECONDS = 0.2
DROP = expression_has("put_at = :put")


def _queue(client: QueueClient, fifo: bool, **settings: Any) -> SubQueue:
    name = "jobs.fifo" if fifo else "jobs"
    client.create_queue(name, shards=SHARDS, **settings)
    return client.queue(name, "a")


def _spread(queue: SubQueue) -> None:
    """This process's sends go round the shards from now on, as a busy (or throttled) sender's do."""
    queue.engine().traffic.home.throttled()


def _marks(dynamodb: Any, queue: SubQueue) -> list[str]:
    pk = queue.engine().space.ready_pk()
    answer = dynamodb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :m)",
        ExpressionAttributeValues={":pk": {"S": pk}, ":m": {"S": "#"}},
    )
    return [item["sk"]["S"] for item in answer["Items"]]


def _first_done(jobs: SubQueue, clock: FakeClock) -> Any:
    """A first message sent, received and deleted on a lagging index, then time for the index to show it all (the
    first message's mark still covers this process's next send to its shard)."""
    jobs.send("first")
    clock.advance(LAG_SECONDS)
    [first] = jobs.receive(10)
    jobs.delete(first.receipt_handle)
    clock.advance(2 * LAG_SECONDS)
    return first


def _send(queue: SubQueue, fifo: bool, number: int) -> None:
    queue.send(f"m{number}", **({"group_id": f"g{number % 5}"} if fifo else {}))


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_an_empty_receive_of_a_queue_of_64_shards_costs_at_most_two_queries(
    client: QueueClient, counter: CallCounter, fifo: bool
) -> None:
    queue = _queue(client, fifo)
    _send(queue, fifo, 0)
    for message in queue.receive(10):
        queue.delete(message.receipt_handle)
    queue.receive(10)
    for _ in range(5):
        counter.reset()
        assert queue.receive(10) == []
        assert counter.calls["Query"] <= 2, counter.calls


@pytest.mark.parametrize(("fifo", "most"), [(False, 1.5), (True, 3.0)], ids=["standard", "fifo"])
def test_a_receive_at_low_load_on_64_shards_reads_its_home_shard_only(
    client: QueueClient, dynamodb: Any, counter: CallCounter, fifo: bool, most: float
) -> None:
    """One message at a time: each one is at home (its sender sends little), where the first query looks."""
    queue = _queue(client, fifo)
    delivered = 0
    for number in range(8):
        _send(queue, fifo, number)
        got = queue.receive(10)
        queue.delete_batch([message.receipt_handle for message in got])
        delivered += len(got)
    assert delivered == 8
    assert counter.calls["Query"] / delivered <= most, counter.calls
    assert _marks(dynamodb, queue) == []  # nothing was spread: nothing to mark


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_spread_messages_are_found_through_their_marks_and_drained_marks_leave(
    client: QueueClient, dynamodb: Any, clock: FakeClock, counter: CallCounter, fifo: bool
) -> None:
    queue = _queue(client, fifo)
    _spread(queue)
    if fifo:
        for number in range(20):
            queue.send(f"m{number}", group_id=f"g{number}")
    else:
        for start in (0, 25):
            queue.send_batch([{"body": f"m{number}"} for number in range(start, start + 25)])
    assert _marks(dynamodb, queue)
    bodies = []
    while got := queue.receive(10):
        bodies += [message.body for message in got]
        queue.delete_batch([message.receipt_handle for message in got])
    assert sorted(bodies) == sorted(f"m{number}" for number in range(20 if fifo else 50))
    # The marks were put within the grace: each drain left a reminder, whose own drain looks once it is due.
    clock.advance(limits.INDEX_LAG_GRACE_SECONDS + 3)
    assert queue.receive(10) == []
    assert _marks(dynamodb, queue) == []
    counter.reset()
    assert queue.receive(10) == []
    assert counter.calls["Query"] <= 2, counter.calls


def test_a_spread_send_just_before_a_drain_is_found_after_the_grace_when_the_index_lags(
    client: QueueClient, dynamodb: Any, clock: FakeClock
) -> None:
    """The second message goes to the shard of the first, whose mark this process put a moment ago and so covers
    it (no put). A receive finds the shard empty (the index does not show the new message yet) and drops the mark:
    the drop leaves a reminder for the grace's end after what the mark covered, when the index shows it."""
    jobs = _queue(client, False, visibility_timeout=300)
    _spread(jobs)
    with IndexLag(LAG_SECONDS, clock):
        _first_done(jobs, clock)  # the index shows the delete; the first one's mark still covers
        with attached(dynamodb, Interleave("DeleteItem", lambda: jobs.send("second"), DROP)) as sent:
            assert jobs.receive(10) == []
        assert sent.done
        clock.advance(LAG_SECONDS)
        assert jobs.receive(10) == []  # a moment's delay: the reminder's time has not come
        clock.advance(limits.INDEX_LAG_GRACE_SECONDS + 2)
        assert [message.body for message in jobs.receive(10)] == ["second"]


def test_a_drop_whose_answer_was_lost_still_leaves_its_reminder(
    client: QueueClient, dynamodb: Any, clock: FakeClock
) -> None:
    """As above, with the drop applied and its answer lost: the SDK's repeat finds no mark, and what it covered is
    not known, so the drain reminds as if it had covered everything up to now."""
    jobs = _queue(client, False, visibility_timeout=300)
    _spread(jobs)
    with IndexLag(LAG_SECONDS, clock):
        _first_done(jobs, clock)
        jobs.send("second")  # covered by the first one's mark: no put
        with attached(dynamodb, LostAnswer("DeleteItem", DROP)) as lost:
            assert jobs.receive(10) == []
        assert lost.lost == 1
        clock.advance(limits.INDEX_LAG_GRACE_SECONDS + 2)
        assert [message.body for message in jobs.receive(10)] == ["second"]


def test_a_mark_put_again_between_a_drains_read_and_its_drop_stays(
    client: QueueClient, dynamodb: Any, clock: FakeClock
) -> None:
    """Another process sends to the shard a drain is about to drop the mark of (its own put, after its message):
    the drop is conditional on the mark as read, so the fresh mark stays, and the message is received as soon as
    the index shows it, not after a reminder's grace."""
    jobs = _queue(client, False, visibility_timeout=300)
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs", "a")  # a process of its own
    _spread(jobs)
    _spread(other)
    with IndexLag(LAG_SECONDS, clock):
        first = _first_done(jobs, clock)
        shard = keys.MessageRef.parse(first.message_id).shard
        other.engine().traffic.rotation._next = shard  # its next run goes to that shard
        other.engine().traffic.rotation._run = 1
        with attached(dynamodb, Interleave("DeleteItem", lambda: other.send("second"), DROP)) as sent:
            assert jobs.receive(10) == []
        assert sent.done
        clock.advance(LAG_SECONDS)
        assert [message.body for message in jobs.receive(10)] == ["second"]


def test_a_message_whose_mark_was_lost_is_marked_by_the_next_sweep(client: QueueClient, dynamodb: Any) -> None:
    jobs = _queue(client, False)
    _spread(jobs)
    jobs.send("unmarked")
    pk = jobs.engine().space.ready_pk()
    for sk in _marks(dynamodb, jobs):
        dynamodb.delete_item(TableName=TABLE, Key={"pk": {"S": pk}, "sk": {"S": sk}})
    assert jobs.receive(10) == []
    client.sweep()
    assert [message.body for message in jobs.receive(10)] == ["unmarked"]


def test_a_spread_message_whose_consumer_crashed_comes_back_when_its_claim_ends(
    client: QueueClient, clock: FakeClock
) -> None:
    """The shard is drained while its only message is in flight: the look puts a mark for the claim's end."""
    jobs = _queue(client, False, visibility_timeout=30)
    _spread(jobs)
    jobs.send("crash")
    [held] = jobs.receive(10)
    clock.advance(limits.INDEX_LAG_GRACE_SECONDS + 1)
    assert jobs.receive(10) == []  # drains: the mark comes back for the claim's end
    clock.advance(30)
    [again] = jobs.receive(10)
    assert (again.message_id, again.receive_count) == (held.message_id, 2)


def test_a_fifo_group_of_a_spread_sender_released_comes_back_through_its_mark(
    client: QueueClient, clock: FakeClock
) -> None:
    jobs = _queue(client, True, visibility_timeout=30)
    _spread(jobs)
    groups = [f"g{number}" for number in range(10)]
    for group in groups:
        jobs.send(group, group_id=group)
    received = []
    while got := jobs.receive(10):
        received += got
    assert sorted(message.body for message in received) == groups
    clock.advance(limits.INDEX_LAG_GRACE_SECONDS + 3)
    assert jobs.receive(10) == []  # every group is held: the marks go, one comes back for the locks' end
    jobs.release(received[0].receipt_handle, delay_seconds=0)
    assert [message.body for message in jobs.receive(10)] == [received[0].body]


def test_a_fifo_group_sent_at_low_load_enters_the_home_shards_index_partition(
    client: QueueClient, dynamodb: Any
) -> None:
    jobs = _queue(client, True)
    groups = [f"g{number}" for number in range(6)]
    for group in groups:
        jobs.send(group, group_id=group)
    space = jobs.engine().space
    homes = set()
    for group in groups:
        shard = keys.group_shard(group, SHARDS)
        item = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": space.group_item_pk(shard)}, "sk": {"S": group}})
        homes.add(item["Item"]["gsi1pk"]["S"])
    assert homes == {space.group_item_pk(keys.HOME_SHARD)}
    assert sorted(message.body for message in jobs.receive(10)) == groups


def test_a_priority_another_process_sends_at_home_is_received_first_once_the_marks_are_read_again(
    client: QueueClient, dynamodb: Any, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A queue of several shards learns its priorities from its marks: a message of priority above 0 is marked at
    home too. Another process's is seen once this one's marks are read again (at once here)."""
    monkeypatch.setattr(shard_marks, "MARKS_SECONDS", 0.0)
    jobs = _queue(client, False)
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs", "a")
    assert jobs.receive(10) == []
    other.send("low")
    other.send("high", priority=5)
    for body in ("high", "low"):
        [message] = jobs.receive(1)
        assert message.body == body
        jobs.delete(message.receipt_handle)
    clock.advance(limits.INDEX_LAG_GRACE_SECONDS + 1)
    assert jobs.receive(10) == []  # drains the home mark of priority 5
    assert [mark for mark in _marks(dynamodb, jobs) if mark.endswith("#5#0")] == []
