"""Replay from the DLQ by reason: dead letters whose last reason matches sent into their sub-queue again as new
messages carrying `replayed_from`, each leaving the DLQ in the same transaction, by the durable replay job: once per
dead letter whatever fails or is repeated, resumable after a crash at any write, FIFO groups in order."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from queue_core import QueueClient, SubQueue, ValidationError, replays

from bench.messages import random_bytes
from tests.conftest import FakeClock
from tests.core.conftest import OFFLOAD
from tests.core.test_replay import Crash, _CrashAt, _drain, _origins
from tests.reliability.faults import FaultInjector, Kind


@pytest.fixture(params=["standard", "fifo"])
def queue(request: pytest.FixtureRequest, client: QueueClient) -> SubQueue:
    fifo = request.param == "fifo"
    name = "orders.fifo" if fifo else "orders"
    client.create_queue(name, fifo=fifo, max_receive_count=1, content_based_dedup=fifo, shards=1 if fifo else 2)
    return client.queue(name, "a")


def _kill(queue: SubQueue, clock: FakeClock, reasons: list[str]) -> list[str]:
    """One message per reason, each released once with it, then moved to the DLQ by the next receive (at most one
    receive each); their ids, in the order of `reasons`. FIFO: two groups, in order within each."""
    fifo = queue.settings.fifo
    ids = []
    for n in range(len(reasons)):
        group = {"group_id": f"g{n % 2}"} if fifo else {}
        ids.append(queue.send(f"order-{n}", attributes={"n": str(n)}, **group).message_id)
    released = 0
    while released < len(reasons):
        got = queue.receive(max_messages=10)
        assert got, "every message is received once before it dies"
        for message in got:
            queue.release(message.receipt_handle, 0, reason=reasons[int(message.attributes["n"])])
            released += 1
        clock.advance(0.001)
    assert queue.receive(max_messages=10) == []  # each over its limit: moved
    assert len(queue.dlq_list(limit=100)) == len(reasons)
    return ids


def test_dead_letters_of_one_reason_are_replayed_as_new_messages_and_leave_the_dlq(
    queue: SubQueue, clock: FakeClock
) -> None:
    reasons = ["KeyError: 'customer_id'", "TimeoutError", "KeyError: 'customer_id'", "KeyError: 'sku'"]
    ids = _kill(queue, clock, reasons)
    started = queue.replay_start(source="dlq", reason="KeyError: 'customer_id'")
    assert (started.source, started.reason, started.state) == ("dlq", "KeyError: 'customer_id'", "running")
    done = queue.replay(started.replay_id, sleep=clock.advance)
    assert (done.state, done.replayed, done.failed) == ("done", 2, 0)
    replayed = _drain(queue)
    assert sorted(_origins(replayed)) == sorted([ids[0], ids[2]])
    assert {json.loads(m.attributes["replayed_from"])["replay_id"] for m in replayed} == {started.replay_id}
    assert not {m.message_id for m in replayed} & set(ids), "new messages, new ids"
    assert {m.body for m in replayed} == {"order-0", "order-2"}
    assert sorted(m.message_id for m in queue.dlq_list(limit=100)) == sorted([ids[1], ids[3]])
    again = queue.replay(queue.replay_start(source="dlq", reason="KeyError").replay_id, clock.advance)
    assert again.replayed == 1, "what one replay took is gone from the DLQ: never replayed twice"
    assert _origins(_drain(queue)) == [ids[3]]


def test_a_dlq_replay_keeps_each_fifo_group_in_order_and_its_range_ends_at_its_start(
    client: QueueClient, clock: FakeClock
) -> None:
    client.create_queue("jobs.fifo", fifo=True, max_receive_count=1, content_based_dedup=True)
    queue = client.queue("jobs.fifo", "a")
    ids = _kill(queue, clock, ["boom"] * 6)
    replay_id = queue.replay_start(source="dlq").replay_id
    queue.replay(replay_id, clock.advance)
    order: dict[str, list[str]] = {}
    for message in _drain(queue):
        order.setdefault(message.group_id, []).append(_origins([message])[0])
    assert order == {"g0": ids[0::2], "g1": ids[1::2]}


def test_the_replays_own_messages_that_die_again_are_not_selected_by_it(queue: SubQueue, clock: FakeClock) -> None:
    _kill(queue, clock, ["boom"] * 12)
    replay_id = queue.replay_start(source="dlq", reason="boom").replay_id
    first = queue.replay_run(replay_id, seconds=0)  # one batch: 10 of the 12 (FIFO: one a group, a group's in a row)
    while first.replayed < 6:
        first = queue.replay_run(replay_id, seconds=0)
    assert first.state == "running"
    clock.advance(1)
    died = 0
    while died < first.replayed:  # the replayed messages die again, with the same reason
        for message in queue.receive(max_messages=10):
            queue.release(message.receipt_handle, 0, reason="boom")
            died += 1
    clock.advance(1)
    assert [queue.receive(max_messages=10) for _ in range(3)] == [[]] * 3
    done = queue.replay(replay_id, clock.advance)
    assert (done.state, done.replayed) == ("done", 12), "only what was in the DLQ when the replay started"
    assert len(queue.dlq_list(limit=100)) == first.replayed and len(_drain(queue)) == 12 - first.replayed


@pytest.mark.parametrize("after", [False, True], ids=["before-applied", "applied-answer-unseen"])
def test_a_crash_at_any_write_resumes_and_replays_each_dead_letter_once(
    client: QueueClient, clock: FakeClock, after: bool
) -> None:
    client.create_queue("orders", max_receive_count=1, shards=1)
    queue = client.queue("orders", "a")
    nth = 0
    while True:
        nth += 1
        ids = _kill(queue, clock, ["boom"] * 12)
        replay_id = queue.replay_start(source="dlq", rate=1000).replay_id
        crash = _CrashAt(client.dynamodb, nth, after)
        try:
            queue.replay(replay_id, clock.advance)
            crashed = False
        except Crash:
            crashed = True
        finally:
            crash.detach()
        done = queue.replay(replay_id, clock.advance)
        assert Counter(_origins(_drain(queue))) == Counter(ids), f"crash at write {nth}"
        assert (done.state, done.replayed, queue.dlq_list(limit=100)) == ("done", 12, [])
        if not crashed:
            break
    assert nth >= 3  # two batches and the end


def test_a_lost_answer_repeated_by_the_sdk_replays_each_dead_letter_once(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("orders", max_receive_count=1, shards=1)
    queue = client.queue("orders", "a")
    ids = _kill(queue, clock, ["boom"] * 11)
    faults = FaultInjector(retried_rate=1.0, operations=frozenset({"TransactWriteItems", "UpdateItem"}))
    faults.attach(client.dynamodb)
    try:
        done = queue.replay(queue.replay_start(source="dlq").replay_id, clock.advance)
    finally:
        faults.detach()
    assert faults.counts[Kind.ANSWER_LOST_RETRIED] >= 2
    assert Counter(_origins(_drain(queue))) == Counter(ids)
    assert (done.state, done.replayed) == ("done", 11)


def test_a_dead_letter_redriven_meanwhile_is_passed_over_not_sent_twice(
    queue: SubQueue, client: QueueClient, clock: FakeClock
) -> None:
    """Another process redrives one of the batch's dead letters after the replay read its page, before its commit:
    the commit is cancelled, the page read again without it, and it reaches the queue once (as itself)."""
    ids = _kill(queue, clock, ["boom"] * 3)
    replay_id = queue.replay_start(source="dlq").replay_id
    other = QueueClient(client.table_name, dynamodb=client.dynamodb, clock=clock).queue(queue.queue, "a")
    redriven = []

    def redrive_first(model: Any, **_: Any) -> None:
        if model.name == "TransactWriteItems" and not redriven:
            redriven.append(0)  # once: the redrive's own writes pass through here too
            redriven[0] = other.redrive(message_ids=[ids[0]])

    client.dynamodb.meta.events.register("before-call.dynamodb", redrive_first, unique_id="redrive-first")
    try:
        done = queue.replay(replay_id, clock.advance)
    finally:
        client.dynamodb.meta.events.unregister("before-call.dynamodb", unique_id="redrive-first")
    assert redriven == [1]
    delivered = _drain(queue)
    assert (done.state, done.replayed) == ("done", 2)
    assert sorted(m.attributes["n"] for m in delivered) == ["0", "1", "2"]
    assert sorted(_origins([m for m in delivered if "replayed_from" in m.attributes])) == sorted(ids[1:])
    assert queue.dlq_list() == []


def test_bad_dlq_replays_are_refused_and_change_nothing(queue: SubQueue, clock: FakeClock) -> None:
    _kill(queue, clock, ["boom"])
    for options in (
        {"source": "dead"},
        {"reason": "boom"},  # a reason selects dead letters only
        {"source": "dlq", "reason": ""},
        {"source": "dlq", "reason": 7},
        {"source": "dlq", "reason": "x" * 2049},
        {"source": "dlq", "message_ids": ["S0.abc"]},
    ):
        with pytest.raises(ValidationError):
            queue.replay_start(**options)
    assert queue.replay_list() == []
    assert len(queue.dlq_list()) == 1


def test_the_sweep_runs_on_a_dlq_replay_whose_runner_is_gone_on_a_queue_without_an_archive(
    client: QueueClient, clock: FakeClock
) -> None:
    client.create_queue("orders", max_receive_count=1, shards=1)
    queue = client.queue("orders", "a")
    ids = _kill(queue, clock, ["boom"] * 15)
    replay_id = queue.replay_start(source="dlq", rate=1).replay_id
    assert queue.replay_run(replay_id, seconds=0, sleep=clock.advance).replayed == 10
    clock.advance(replays.ORPHANED_SECONDS)
    report = client.sweep(sleep=clock.advance)
    status = queue.replay_status(replay_id)
    assert (report.replays_resumed, status.state, status.replayed) == (1, "done", 15)
    assert sorted(_origins(_drain(queue))) == sorted(ids)


def test_a_cancelled_runner_does_not_discard_the_body_of_a_redriven_dead_letter(
    large: QueueClient, dynamodb: Any, clock: FakeClock
) -> None:
    large.create_queue("orders", max_receive_count=1, shards=1)
    queue = large.queue("orders", "a")
    bodies = [f"{n}:" + random_bytes(OFFLOAD * 2) for n in range(3)]
    ids = [queue.send(body).message_id for body in bodies]
    for message in queue.receive(max_messages=10):
        queue.release(message.receipt_handle, 0, reason="boom")
    clock.advance(0.01)
    assert queue.receive(max_messages=10) == []
    assert len(queue.dlq_list(limit=10)) == 3
    replay_id = queue.replay_start(source="dlq", rate=1000).replay_id
    raced: list[str] = []

    def race(model: Any, **_: Any) -> None:
        if model.name != "TransactWriteItems" or raced:
            return
        raced.append("x")
        # Between runner A's read and its commit: the second dead letter is redriven, and runner B (the sweep, or
        # a second `replay_run`) runs the replay to its end.
        assert queue.redrive(message_ids=[ids[1]]) == 1
        queue.replay_run(replay_id, seconds=5, sleep=clock.advance)

    dynamodb.meta.events.register("before-call.dynamodb", race)
    try:
        queue.replay_run(replay_id, seconds=5, sleep=clock.advance)
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb", race)
    assert raced
    received = queue.receive(max_messages=10)
    stats = queue.stats()
    assert sorted(m.body[:2] for m in received) == ["0:", "1:", "2:"], (
        f"received {[m.body[:2] for m in received]} (message ids {[m.message_id for m in received]}); the "
        f"redriven {ids[1]} is not among them; dlq count {stats.dlq}, dlq listed {queue.dlq_list(limit=10)}"
    )


def test_the_sweep_finishes_a_dlq_replay_whose_runner_emptied_the_dlq(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("orders", max_receive_count=1, shards=1)
    queue = client.queue("orders", "a")
    _kill(queue, clock, ["boom"] * 10)
    replay_id = queue.replay_start(source="dlq", rate=1).replay_id
    ran = queue.replay_run(replay_id, seconds=0, sleep=clock.advance)  # one batch: the ten dead letters
    assert (ran.replayed, ran.state) == (10, "done"), "the selection's last batch ends the replay as it commits"
    assert queue.dlq_list(limit=100) == []
    clock.advance(replays.ORPHANED_SECONDS * 10)
    report = client.sweep(sleep=clock.advance)
    clock.advance(replays.ORPHANED_SECONDS * 10)
    client.sweep(sleep=clock.advance)
    status = queue.replay_status(replay_id)
    assert status.state == "done", f"still {status.state} after two sweeps (resumed {report.replays_resumed})"


def test_the_sweep_finishes_a_dlq_replay_whose_dead_letters_were_redriven(
    client: QueueClient, clock: FakeClock
) -> None:
    client.create_queue("orders", max_receive_count=1, shards=1)
    queue = client.queue("orders", "a")
    _kill(queue, clock, ["boom"] * 3)
    replay_id = queue.replay_start(source="dlq").replay_id  # REST/invoke with run_seconds 0: left to the sweep
    assert queue.redrive() == 3
    clock.advance(replays.ORPHANED_SECONDS * 10)
    client.sweep(sleep=clock.advance)
    status = queue.replay_status(replay_id)
    assert status.state == "done", f"still {status.state} after a sweep"


def test_a_group_with_a_long_one_line_reason_can_be_replayed(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("orders", max_receive_count=1, shards=1)
    queue = client.queue("orders", "a")
    queue.send("x")
    [message] = queue.receive()
    queue.release(message.receipt_handle, 0, reason="E" * 1500)
    clock.advance(0.01)
    assert queue.receive() == []
    [group], _ = queue.dlq_reasons()
    assert group["count"] == 1
    try:
        started = queue.replay_start(source="dlq", reason=group["reason"])
    except ValidationError as error:
        redriven = queue.redrive(reason=group["reason"])
        raise AssertionError(f"replay refused ({error}); a redrive of the same group took {redriven}") from None
    assert queue.replay(started.replay_id, clock.advance).replayed == 1


def test_a_group_of_dead_letters_moved_by_hand_can_be_replayed(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("orders", max_receive_count=3, shards=1)
    queue = client.queue("orders", "a")
    sent = queue.send("x")
    assert queue.move_to_dlq(sent.message_id)
    [group], _ = queue.dlq_reasons()
    assert group["count"] == 1
    done = queue.replay(queue.replay_start(source="dlq", reason=group["reason"]).replay_id, clock.advance)
    assert done.replayed == 1, f"the group {group['reason']!r} of 1 dead letter: {done.replayed} replayed"
