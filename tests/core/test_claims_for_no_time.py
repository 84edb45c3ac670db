"""Receives with a claim for no time: no answer carries one message twice, nor counts its receive twice."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from queue_core import QueueClient, keys, limits


def _twice(messages) -> list[str]:
    return [body for body, n in Counter(m.body for m in messages).items() if n > 1]


def test_a_standard_receive_never_claims_a_message_twice_across_its_rounds(client: QueueClient, clock) -> None:
    """A first round that loses entries to the DLQ reads a second page; the message it claimed for no time has
    moved to now, past the page's end, and must not be claimed again."""
    client.create_queue("jobs", max_receive_count=2)
    sub = client.queue("jobs", "a")
    sub.send_batch([{"body": "x1"}, {"body": "x2"}, {"body": "x3"}])
    assert len(sub.receive(max_messages=3, visibility_timeout=0)) == 3
    assert len(sub.receive(max_messages=3, visibility_timeout=5)) == 3  # count 2: over the limit, at now + 5
    sub.send("m1")
    clock.advance(6)
    got = sub.receive(max_messages=2, visibility_timeout=0)
    assert _twice(got) == []
    assert [m.receive_count for m in got] == [1] * len(got)


def _built(client: QueueClient, name: str, **settings) -> object:
    """A queue received queue-wide whose markers are trusted (the sweep built them)."""
    client.create_queue(name, queue_wide=True, **settings)
    wide = client.queue_wide(name)
    wide.receive()
    clock = client._ctx.clock
    clock.advance(limits.INDEX_LAG_GRACE_SECONDS + 1)
    client.sweep()
    assert client.get_queue(name).markers_built
    return wide


def _markers(client: QueueClient, name: str, sub: str, priority: int = 0) -> list[str]:
    space = keys.Space(name, sub, client.get_queue(name).generation)
    return sorted(str(item["sk"]) for item in client._ctx.store.prefixed(space.ready_pk(), str(priority)))


def test_a_busy_clients_due_at_markers_do_not_pile_up_behind_its_ready_now_marker(client: QueueClient, clock) -> None:
    """A client never empty keeps its ready-now marker; the "ready at" markers of its delayed messages come due
    one by one. Each must leave once its time came and the client was served: kept, every read of the markers
    reads them all again, and they grow by one per distinct delivery time for as long as the client is busy."""
    wide = _built(client, "jobs", visibility_timeout=30)
    sub = client.queue("jobs", "a")
    sub.send_batch([{"body": f"b{i}"} for i in range(10)])
    for step in range(20):
        sub.send(f"later{step}", delay_seconds=1)
        sub.send(f"now{step}")
        clock.advance(1.5)
        got = wide.receive(max_messages=3)
        assert got
        wide.delete_batch([m.receipt_handle for m in got])
    due = [sk for sk in _due(client, "a") if "@" in sk]
    assert len(due) <= 2, due


def test_a_queue_wide_receive_for_no_time_never_answers_a_message_twice_across_a_shards_rounds(
    client: QueueClient, clock
) -> None:
    """The sub-queue's rounds, reached queue-wide: the same answer must not carry one message twice."""
    wide = _built(client, "jobs", max_receive_count=2)
    sub = client.queue("jobs", "a")
    sub.send_batch([{"body": "x1"}, {"body": "x2"}, {"body": "x3"}])
    assert len(sub.receive(max_messages=3, visibility_timeout=0)) == 3
    assert len(sub.receive(max_messages=3, visibility_timeout=5)) == 3
    sub.send("m1")
    clock.advance(6)
    got = wide.receive(max_messages=2, visibility_timeout=0)
    assert _twice(got) == []
    assert [m.receive_count for m in got] == [1] * len(got)


@pytest.mark.parametrize("shards", [1, 4])
@pytest.mark.parametrize("order", ["oldest", "newest"])
def test_receives_for_no_time_across_clients_priorities_and_delays_answer_each_message_once(
    client: QueueClient, clock, shards: int, order: str
) -> None:
    """Clients with messages of two priorities, some delayed (a ready-now and several due "ready at" markers of
    one client and priority), received queue-wide for no time again and again: each answer holds a message at
    most once, and each receive counts one."""
    wide = _built(client, "jobs", visibility_timeout=30, shards=shards)
    rng = random.Random(shards * 10 + len(order))
    for name in ("a", "b", "c"):
        sub = client.queue("jobs", name)
        for i in range(6):
            sub.send(f"{name}{i}", priority=rng.choice([0, 3]), delay_seconds=rng.choice([0, 0, 1, 2, 3]))
    counts: dict[str, int] = {}
    for step in range(8):
        clock.advance(1)
        got = wide.receive(max_messages=rng.choice([1, 4, 10]), visibility_timeout=0, order=order)
        assert _twice(got) == [], (step, [m.body for m in got])
        for message in got:
            assert message.receive_count == counts.get(message.body, 0) + 1, (step, message.body)
            counts[message.body] = message.receive_count
    assert counts


def _due(client: QueueClient, name: str) -> list[str]:
    """The client's markers of priority 0 whose time came."""
    now = client._ctx.now_ms()
    return [sk for sk in _markers(client, "jobs", name) if "@" not in sk or int(sk.split("@")[1]) <= now]


def test_a_busy_clients_piled_markers_leave_and_its_messages_come_once_it_quiets(client: QueueClient, clock) -> None:
    """After a busy spell behind its ready-now marker, the client quiets: every message it had comes in the next
    few receives, and every marker whose time came leaves within as many receives as it has markers."""
    wide = _built(client, "jobs", visibility_timeout=30)
    sub = client.queue("jobs", "a")
    sub.send_batch([{"body": f"b{i}"} for i in range(10)])
    sent = {f"b{i}" for i in range(10)}
    for step in range(10):
        sub.send(f"later{step}", delay_seconds=1)
        sub.send(f"now{step}")
        sent |= {f"later{step}", f"now{step}"}
        clock.advance(1.5)
        got = wide.receive(max_messages=1)
        sent -= {m.body for m in got}
        wide.delete_batch([m.receipt_handle for m in got])
    empties = 0
    for _ in range(40):
        clock.advance(0.2)
        got = wide.receive(max_messages=10)
        sent -= {m.body for m in got}
        if got:
            wide.delete_batch([m.receipt_handle for m in got])
        empties += not got
        if not sent and not _due(client, "a"):
            break
    assert not sent
    assert _due(client, "a") == []
    assert empties <= 12, empties


@pytest.mark.parametrize("built", [True, False])
def test_many_clients_past_the_markers_read_with_duplicates_are_each_served_once(
    client: QueueClient, clock, monkeypatch, built: bool
) -> None:
    """More ready clients than one read lists, each with a ready-now and due "ready at" markers (or, before the
    markers are trusted, every client visited): each receive for no time holds a message once at most, and
    receives that take what they get deliver every message exactly once."""
    from queue_core import queuewide

    monkeypatch.setattr(queuewide, "MARKERS_READ", 3)
    if built:
        wide = _built(client, "jobs", visibility_timeout=30, shards=4)
    else:
        client.create_queue("jobs", visibility_timeout=30, shards=4)
        client.queue("jobs", "c0").send("early")
        wide = client.queue_wide("jobs")
    names = [f"c{i}" for i in range(7)]
    for name in names:
        sub = client.queue("jobs", name)
        sub.send(f"{name}-d1", delay_seconds=1)
        sub.send(f"{name}-d2", delay_seconds=2)
        sub.send(f"{name}-p", delay_seconds=1, priority=2)
        sub.send(f"{name}-n")
    clock.advance(3)
    assert client.get_queue("jobs").markers_trusted is built
    for step in range(4):
        got = wide.receive(max_messages=4, visibility_timeout=0, order="newest" if step % 2 else "oldest")
        assert _twice(got) == [], (step, [m.body for m in got])
        clock.advance(0.2)
    taken: list[str] = []
    for _ in range(30):
        got = wide.receive(max_messages=4)
        assert _twice(got) == []
        taken += [m.body for m in got]
        if got:
            wide.delete_batch([m.receipt_handle for m in got])
        clock.advance(0.2)
    assert sorted(b for b in taken if b != "early") == sorted(
        f"{name}-{kind}" for name in names for kind in ("d1", "d2", "p", "n")
    )


def test_a_busy_clients_extended_jobs_do_not_leave_their_markers_behind(client: QueueClient, clock) -> None:
    """Workers extend each job once, then finish it: every extension puts a "ready at" marker for the job's new
    end. The client keeps a backlog, so its ready-now marker stays; the extensions' markers must not stay too."""
    wide = _built(client, "jobs", visibility_timeout=30)
    sub = client.queue("jobs", "a")
    sub.send_batch([{"body": f"b{i}"} for i in range(10)])
    for step in range(40):
        sub.send_batch([{"body": f"n{step}/{i}"} for i in range(3)])
        got = wide.receive(max_messages=3)
        assert got
        for message in got:
            wide.change_visibility(message.receipt_handle, 5)
            wide.delete(message.receipt_handle)
        clock.advance(1)
    due = [sk for sk in _due(client, "a") if "@" in sk]
    assert len(due) <= 2, (len(due), due[:3])


@pytest.mark.parametrize("shards", [1, 4])
def test_fifo_receives_for_no_time_queue_wide_answer_each_message_once(client: QueueClient, clock, shards: int) -> None:
    """FIFO groups of several clients, received queue-wide for no time again and again (groups given back at
    once, released ones with a delay come due by their "ready at" markers): each answer holds a message once."""
    wide = _built(client, "jobs.fifo", fifo=True, visibility_timeout=30, shards=shards)
    for name in ("a", "b", "c"):
        sub = client.queue("jobs.fifo", name)
        for i in range(6):
            sub.send(f"{name}{i}", group_id=f"g{i % 3}", dedup_id=f"{name}{i}")
    rng = random.Random(shards)
    for step in range(10):
        got = wide.receive(max_messages=rng.choice([1, 4, 10]), visibility_timeout=rng.choice([0, 0, 2]))
        assert _twice(got) == [], (step, [m.body for m in got])
        for message in got:
            if rng.random() < 0.3:
                wide.release(message.receipt_handle, delay_seconds=1)
        clock.advance(rng.choice([0.2, 1, 2]))
