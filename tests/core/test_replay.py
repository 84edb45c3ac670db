"""Replay of the archive: acknowledged messages sent again as new messages carrying `replayed_from`, by a durable
job that goes on from where it stopped after a crash at any write, sends each archived message at most once per
replay whatever fails or is repeated, keeps its rate, can be cancelled, and keeps FIFO groups in order."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from queue_core import MessageNotFound, QueueClient, SubQueue, Throttled, ValidationError, replays

from tests.conftest import FakeClock
from tests.reliability.faults import FaultInjector, Kind


class Crash(BaseException):
    """The process dies here: nothing of the core catches it."""


@pytest.fixture(params=["standard", "fifo"])
def queue(request: pytest.FixtureRequest, client: QueueClient) -> SubQueue:
    fifo = request.param == "fifo"
    name = "orders.fifo" if fifo else "orders"
    client.create_queue(name, fifo=fifo, archive_days=7, content_based_dedup=fifo, shards=2 if not fifo else 1)
    return client.queue(name, "a")


@pytest.fixture
def standard(client: QueueClient) -> SubQueue:
    client.create_queue("orders", archive_days=7, shards=2)
    return client.queue("orders", "a")


def _acknowledge(queue: SubQueue, clock: FakeClock, count: int, groups: int = 3, one_by_one: bool = False) -> list[str]:
    """`count` messages sent, received and deleted (`one_by_one`: each alone, 1 ms apart, so that each FIFO group
    is acknowledged in its order); their ids in the order sent."""
    entries = [
        {
            "body": f"order-{n}",
            "attributes": {"n": str(n), "kind": "odd" if n % 2 else "even"},
            **({"group_id": f"g{n % groups}"} if queue.settings.fifo else {}),
        }
        for n in range(count)
    ]
    for start in range(0, count, 1 if one_by_one else 10):
        queue.send_batch(entries[start : start + (1 if one_by_one else 10)])
    acked: dict[str, str] = {}
    while len(acked) < count:
        got = queue.receive(max_messages=1 if one_by_one else 10)
        clock.advance(0.001)
        assert queue.delete_batch([message.receipt_handle for message in got]).failed == []
        acked.update((message.body, message.message_id) for message in got)
    return [acked[f"order-{n}"] for n in range(count)]


def _drain(queue: SubQueue) -> list[Any]:
    """Every message now waiting, received and deleted (FIFO: in each group's order)."""
    found = []
    for _ in range(200):
        got = queue.receive(max_messages=10)
        if not got:
            return found
        found += got
        for message in got:
            queue.delete(message.receipt_handle)
    raise AssertionError("the queue never emptied")


def _origins(messages: list[Any]) -> list[str]:
    return [json.loads(message.attributes["replayed_from"])["message_id"] for message in messages]


def test_a_time_range_is_replayed_as_new_messages_carrying_replayed_from(standard: SubQueue, clock: FakeClock) -> None:
    queue = standard
    acked = _acknowledge(queue, clock, 11)
    started = queue.replay_start()
    assert (started.state, started.replayed, started.until) == ("running", 0, queue._now())
    done = queue.replay(started.replay_id, sleep=clock.advance)
    assert (done.state, done.replayed, done.skipped, done.failed) == ("done", 11, 0, 0)
    assert queue.replay_cancel(started.replay_id).state == "done", "a finished replay stays as it ended"
    replayed = _drain(queue)
    assert sorted(_origins(replayed)) == sorted(acked)
    assert {json.loads(m.attributes["replayed_from"])["replay_id"] for m in replayed} == {started.replay_id}
    assert not set(m.message_id for m in replayed) & set(acked), "new messages, new ids"
    first = next(m for m in replayed if _origins([m]) == [acked[0]])
    assert (first.body, first.attributes["n"]) == ("order-0", "0")


def test_ids_and_an_attribute_filter_choose_what_is_replayed(standard: SubQueue, clock: FakeClock) -> None:
    queue = standard
    acked = _acknowledge(queue, clock, 6)
    odd = queue.replay(queue.replay_start(attributes={"kind": "odd"}).replay_id, clock.advance)
    assert (odd.replayed, odd.skipped) == (3, 3)
    assert sorted(_origins(_drain(queue))) == sorted(acked[1::2])
    wanted = [acked[1], acked[1], acked[4], acked[5]]
    by_ids = queue.replay(queue.replay_start(message_ids=wanted, attributes={"kind": "even"}).replay_id, clock.advance)
    assert (by_ids.replayed, by_ids.skipped, by_ids.total) == (1, 2, 3), "an id named twice is replayed once"
    assert _origins(_drain(queue)) == [acked[4]]


def test_a_range_ends_at_its_start_so_replayed_messages_acknowledged_again_are_not_replayed_again(
    standard: SubQueue, clock: FakeClock
) -> None:
    queue = standard
    _acknowledge(queue, clock, 3)
    started = queue.replay_start()
    queue.replay_run(started.replay_id, seconds=0)  # the first batch: all three
    clock.advance(1)
    _drain(queue)  # acknowledged again, archived after the replay's start
    assert queue.replay(started.replay_id, clock.advance).replayed == 3
    assert _drain(queue) == []


def test_bad_requests_are_refused_and_change_nothing(client: QueueClient, standard: SubQueue) -> None:
    queue = standard
    for options in (
        {"since": 5, "until": 1},
        {"since": 1, "message_ids": ["S0.abc"]},
        {"message_ids": []},
        {"message_ids": ["not an id"]},
        {"attributes": {"k": 1}},
        {"rate": 0},
        {"rate": 10_001},
    ):
        with pytest.raises(ValidationError):
            queue.replay_start(**options)
    assert queue.replay_list() == []
    with pytest.raises(ValidationError):
        queue.replay_status("nope")
    with pytest.raises(MessageNotFound):
        queue.replay_status("1800000000000-0123456789ab")
    client.create_queue("plain")
    with pytest.raises(ValidationError, match="keeps no archive"):
        client.queue("plain", "a").replay_start()


def test_a_cancelled_replay_sends_nothing_more_and_its_count_is_final(queue: SubQueue, clock: FakeClock) -> None:
    _acknowledge(queue, clock, 14)
    started = queue.replay_start(rate=10)
    partial = queue.replay_run(started.replay_id, seconds=0, sleep=clock.advance)
    # One batch: 10 messages (FIFO: one per group, and the groups' messages come together here).
    assert partial.state == "running" and 0 < partial.replayed <= 10
    cancelled = queue.replay_cancel(started.replay_id)
    assert (cancelled.state, cancelled.replayed) == ("cancelled", partial.replayed)
    again = queue.replay_run(started.replay_id, seconds=60, sleep=clock.advance)
    assert (again.state, again.replayed) == ("cancelled", partial.replayed)
    assert len(_drain(queue)) == partial.replayed
    assert queue.replay_cancel(started.replay_id).state == "cancelled"
    assert [status.replay_id for status in queue.replay_list()] == [started.replay_id]


def test_a_replay_keeps_its_rate(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("orders", archive_days=7)
    queue = client.queue("orders", "a")
    _acknowledge(queue, clock, 21)
    started = queue.replay_start(rate=10)
    began = clock()
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.advance(seconds)

    done = queue.replay(started.replay_id, sleep=sleep)
    assert done.replayed == 21
    # 21 messages at 10 a second in batches of 10: the last batch goes out 2 s after the first, not sooner.
    assert clock() - began >= 2 and slept


def test_a_fifo_replay_keeps_each_group_in_order(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("jobs.fifo", fifo=True, archive_days=7, content_based_dedup=True)
    queue = client.queue("jobs.fifo", "a")
    acked = _acknowledge(queue, clock, 8, groups=2, one_by_one=True)
    queue.replay(queue.replay_start().replay_id, clock.advance)
    order: dict[str, list[str]] = {}
    for message in _drain(queue):
        order.setdefault(message.group_id, []).append(_origins([message])[0])
    assert order == {group: [m for i, m in enumerate(acked) if f"g{i % 2}" == group] for group in ("g0", "g1")}


class _CrashAt:
    """Kills the run at the `nth` write the core makes, before DynamoDB applies it or after (its answer unseen)."""

    def __init__(self, dynamodb: Any, nth: int, after: bool) -> None:
        self.left = nth
        self.after = after
        self.dynamodb = dynamodb
        self.event = "after-call.dynamodb" if after else "before-call.dynamodb"
        dynamodb.meta.events.register(self.event, self, unique_id="replay-crash")

    def __call__(self, model: Any, **_: Any) -> None:
        if model.name not in ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"):
            return
        self.left -= 1
        if self.left == 0:
            raise Crash(model.name)

    def detach(self) -> None:
        self.dynamodb.meta.events.unregister(self.event, unique_id="replay-crash")


def _writes_of_a_clean_replay(client: QueueClient, queue: SubQueue, replay_id: str, clock: FakeClock) -> int:
    counted = _CrashAt(client.dynamodb, 10**9, after=False)
    try:
        queue.replay(replay_id, clock.advance)
    finally:
        counted.detach()
    return 10**9 - counted.left


@pytest.fixture
def crash_queue(client: QueueClient, clock: FakeClock) -> Iterator[tuple[SubQueue, list[str]]]:
    client.create_queue("orders", archive_days=7, shards=1)
    queue = client.queue("orders", "a")
    yield queue, _acknowledge(queue, clock, 11)


@pytest.mark.parametrize("after", [False, True], ids=["before-applied", "applied-answer-unseen"])
def test_a_crash_at_any_write_resumes_where_it_stopped_each_message_replayed_once(
    client: QueueClient, crash_queue: tuple[SubQueue, list[str]], clock: FakeClock, after: bool
) -> None:
    queue, acked = crash_queue
    until = queue._now()  # the replayed messages, acknowledged again, are archived after it
    writes = _writes_of_a_clean_replay(client, queue, queue.replay_start(until=until, rate=1000).replay_id, clock)
    _drain(queue)
    assert writes >= 2  # two batches, the last one ending the replay
    for nth in range(1, writes + 1):
        replay_id = queue.replay_start(until=until, rate=1000).replay_id
        crash = _CrashAt(client.dynamodb, nth, after)
        try:
            with pytest.raises(Crash):
                queue.replay(replay_id, clock.advance)
        finally:
            crash.detach()
        done = queue.replay(replay_id, clock.advance)
        replayed = _drain(queue)
        assert Counter(_origins(replayed)) == Counter(acked), f"crash at write {nth}"
        assert (done.state, done.replayed) == ("done", 11)


def test_a_lost_answer_repeated_by_the_sdk_replays_once(
    client: QueueClient, crash_queue: tuple[SubQueue, list[str]], clock: FakeClock
) -> None:
    queue, acked = crash_queue
    faults = FaultInjector(retried_rate=1.0, operations=frozenset({"TransactWriteItems", "UpdateItem"}))
    faults.attach(client.dynamodb)
    try:
        done = queue.replay(queue.replay_start().replay_id, clock.advance)
    finally:
        faults.detach()
    assert faults.counts[Kind.ANSWER_LOST_RETRIED] >= 2
    assert Counter(_origins(_drain(queue))) == Counter(acked)
    assert (done.state, done.replayed) == ("done", 11)


def test_a_stale_runner_beside_a_live_one_sends_nothing_twice(
    client: QueueClient, crash_queue: tuple[SubQueue, list[str]], clock: FakeClock
) -> None:
    queue, acked = crash_queue
    replay_id = queue.replay_start().replay_id
    other = QueueClient(client.table_name, dynamodb=client.dynamodb, clock=clock).queue("orders", "a")
    calls = 0

    def meanwhile(_seconds: float) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            # Another runner commits the very batch this run has built (from the same place), while this run
            # waits for its rate: the selection's last, so the job is done with it.
            assert other.replay_run(replay_id, seconds=0).state == "done"
            clock.advance(3600)  # past the dedup window: the job's own condition alone stands in the way

    queue.replay_run(replay_id, seconds=0.001, sleep=meanwhile)
    queue.replay(replay_id, clock.advance)
    assert Counter(_origins(_drain(queue))) == Counter(acked)


def test_a_cancel_while_a_run_waits_for_its_rate_stops_its_very_next_commit(
    client: QueueClient, crash_queue: tuple[SubQueue, list[str]], clock: FakeClock
) -> None:
    queue, _ = crash_queue
    replay_id = queue.replay_start(rate=10).replay_id
    other = QueueClient(client.table_name, dynamodb=client.dynamodb, clock=clock).queue("orders", "a")

    def meanwhile(seconds: float) -> None:
        other.replay_cancel(replay_id)  # the run has read the job and built its next batch
        clock.advance(seconds)

    stopped = queue.replay_run(replay_id, seconds=60, sleep=meanwhile)
    assert (stopped.state, stopped.replayed) == ("cancelled", 10)
    assert len(_drain(queue)) == 10


def test_a_throttle_while_a_fifo_send_is_built_stops_the_run_and_loses_nothing(
    client: QueueClient, clock: FakeClock
) -> None:
    """A FIFO send reads its group's item while it is built: a throttle there is a stop to resume, never a
    message counted as failed and passed over."""
    client.create_queue("jobs.fifo", fifo=True, archive_days=7)
    queue = client.queue("jobs.fifo", "a")
    acked = _acknowledge(queue, clock, 4, groups=4)
    replay_id = queue.replay_start().replay_id
    faults = FaultInjector(
        before_rate=1.0,
        before_kinds=(Kind.THROTTLING,),
        budget=1,
        operations=frozenset({"GetItem"}),
        selects=lambda _operation, request: request.get("Key", {}).get("pk", {}).get("S", "").startswith("F#"),
    ).attach(client.dynamodb)
    try:
        with pytest.raises(Throttled):
            queue.replay_run(replay_id, seconds=0)
    finally:
        faults.detach()
    done = queue.replay(replay_id, clock.advance)
    assert (done.state, done.replayed, done.failed) == ("done", 4, 0)
    assert sorted(_origins(_drain(queue))) == sorted(acked)


def test_the_sweep_runs_on_a_replay_whose_runner_is_gone_a_slice_a_pass_and_leaves_a_moving_one_alone(
    queue: SubQueue, client: QueueClient, clock: FakeClock
) -> None:
    """A replay started and run for one batch, then left (a closed `dq archive replay`, a run_seconds of 0): the
    sweep finds it once its job has not moved for `ORPHANED_SECONDS` and runs it on, for at most
    `SWEEP_SLICE_SECONDS` a pass (at rate 1: three batches of 10), and a pass out of time for one batch, until it
    is done; a pass right after one that moved it leaves it alone, and a done replay is never run again."""
    acked = _acknowledge(queue, clock, 55, groups=55)
    replay_id = queue.replay_start(rate=1).replay_id
    assert queue.replay_run(replay_id, seconds=0, sleep=clock.advance).replayed == 10
    clock.advance(replays.ORPHANED_SECONDS - 1)
    assert client.sweep(sleep=clock.advance).replays_resumed == 0, "its runner may still be there"
    assert queue.replay_status(replay_id).replayed == 10
    clock.advance(1)
    out_of_time = client.sweep(budget_seconds=0, lease_seconds=30, sleep=clock.advance)
    assert (out_of_time.replays_resumed, out_of_time.replayed, queue.replay_status(replay_id).replayed) == (1, 10, 20)
    assert client.sweep(sleep=clock.advance).replays_resumed == 0, "moved by the last pass: not orphaned"
    clock.advance(replays.ORPHANED_SECONDS)
    report = client.sweep(sleep=clock.advance)
    status = queue.replay_status(replay_id)
    assert (report.replays_resumed, report.replayed, status.state, status.replayed) == (1, 30, "running", 50)
    clock.advance(replays.ORPHANED_SECONDS)
    report = client.sweep(sleep=clock.advance)
    status = queue.replay_status(replay_id)
    assert (report.replays_resumed, report.replayed, status.state, status.replayed) == (1, 5, "done", 55)
    clock.advance(replays.ORPHANED_SECONDS)
    assert client.sweep(sleep=clock.advance).replays_resumed == 0
    assert sorted(_origins(_drain(queue))) == sorted(acked)
