"""Queue-wide receive: one worker pool for every client, fair, by priority, with delivery at any time."""

from __future__ import annotations

import datetime
import random

import pytest
from queue_core import QueueClient, ReceiptHandleStale, ValidationError, limits

from tests.core.answers import LostAnswer, attached, expression_has


def _drain(wide, max_messages=10, rounds=10_000, delete=True):
    """Receives (and deletes) until a receive comes back empty; returns every message in the order received."""
    got = []
    for _ in range(rounds):
        batch = wide.receive(max_messages=max_messages)
        if not batch:
            return got
        got += batch
        if delete:
            result = wide.delete_batch([message.receipt_handle for message in batch])
            assert not result.failed
    return got


def test_quiet_clients_all_arrive_within_the_first_200_behind_a_noisy_one(client: QueueClient, request) -> None:
    """5,000 noisy messages with `--stress`; 300 by default (moto reads a whole index partition per query, so a
    deep one is slow to test, not to run): either way the noisy backlog alone would fill the first 200."""
    backlog = 5000 if request.config.getoption("--stress") else 300
    client.create_queue("jobs", visibility_timeout=600)
    noisy = client.queue("jobs", "noisy")
    for start in range(0, backlog, 25):
        noisy.send_batch([{"body": f"n{start + i}"} for i in range(25)])
    quiet = [f"quiet-{i:02d}" for i in range(20)]
    for name in quiet:
        client.queue("jobs", name).send_batch([{"body": f"{name}/{i}"} for i in range(5)])
    wide = client.queue_wide("jobs")
    first = []
    while len(first) < 200:
        batch = wide.receive(max_messages=10)
        assert batch
        first += batch
    quiet_seen = [message for message in first if message.client != "noisy"]
    assert len(quiet_seen) == 100
    # Each quiet client's messages come in its own order.
    for name in quiet:
        bodies = [message.body for message in quiet_seen if message.client == name]
        assert bodies == [f"{name}/{i}" for i in range(5)]


def test_priorities_strictly_ordered_across_clients_and_per_client(client: QueueClient) -> None:
    client.create_queue("prio", visibility_timeout=600)
    rng = random.Random(7)
    sent = []
    for client_id in ("a", "b", "c"):
        sub = client.queue("prio", client_id)
        for i in range(12):
            priority = rng.randrange(10)
            sub.send(f"{client_id}{i}", priority=priority)
            sent.append(priority)
    got = _drain(client.queue_wide("prio"), max_messages=4)
    assert len(got) == len(sent)
    priorities = [message.priority for message in got]
    assert priorities == sorted(priorities, reverse=True)
    # A client's own receive keeps the same order; within a priority, oldest first (or newest with `order`).
    own = client.queue("prio", "own")
    for i, priority in enumerate([0, 5, 9, 5, 0, 9]):
        own.send(f"m{i}", priority=priority)
    bodies = [m.body for m in _drain(own, max_messages=2)]
    assert bodies == ["m2", "m5", "m1", "m3", "m0", "m4"]
    for i, priority in enumerate([0, 5, 5, 0]):
        own.send(f"n{i}", priority=priority)
    newest = own.receive(max_messages=10, order="newest")
    assert [m.body for m in newest] == ["n2", "n1", "n3", "n0"]


def test_priority_shown_in_peek_get_and_stats_and_refused_on_fifo(client: QueueClient) -> None:
    client.create_queue("shown")
    sub = client.queue("shown", "c")
    high = sub.send("high", priority=9)
    sub.send("low")
    assert [m.priority for m in sub.peek(10)] == [9, 0]
    assert sub.get(high.message_id).priority == 9
    stats = sub.stats()
    assert stats.by_priority == {
        "9": {"visible": 1, "in_flight": 0, "delayed": 0},
        "0": {"visible": 1, "in_flight": 0, "delayed": 0},
    }
    assert stats.to_dict()["by_priority"]["9"]["visible"] == 1
    for bad in (-1, 10, "9", 1.5, True):
        with pytest.raises(ValidationError):
            sub.send("x", priority=bad)
    client.create_queue("shown.fifo", fifo=True)
    with pytest.raises(ValidationError, match="FIFO"):
        client.queue("shown.fifo", "c").send("x", group_id="g", priority=1)


def test_a_prioritised_message_keeps_its_priority_through_release_and_the_dlq(client: QueueClient, clock) -> None:
    client.create_queue("keep", max_receive_count=1)
    sub = client.queue("keep", "c")
    sent = sub.send("p7", priority=7)
    sub.send("p0")
    message = sub.receive()[0]
    assert message.body == "p7"
    sub.release(message.receipt_handle, delay_seconds=0)
    assert sub.get(sent.message_id).state == "visible"
    clock.advance(1)
    # Over its receive limit: the next receive moves it to the DLQ, and a redrive brings it back at priority 7.
    assert [m.body for m in sub.receive(max_messages=10)] == ["p0"]
    assert [m.priority for m in sub.dlq_list()] == [7]
    assert sub.redrive() == 1
    assert client.queue_wide("keep").receive()[0].body == "p7"


def test_delivery_at_a_future_time_is_exact_with_a_fake_clock(client: QueueClient, clock) -> None:
    client.create_queue("later", retention_seconds=7 * 86400)
    sub = client.queue("later", "c")
    wide = client.queue_wide("later")
    start = clock()
    sub.send("epoch", deliver_at=start + 3 * 86400)
    iso = datetime.datetime.fromtimestamp(start + 4 * 86400, tz=datetime.timezone(datetime.timedelta(hours=2)))
    sub.send("iso", deliver_at=iso.isoformat())
    sub.send("delay", delay_seconds=5 * 86400)
    assert wide.receive(max_messages=10) == [] and sub.receive() == []
    assert sub.stats().delayed == 3
    for day, body in ((3, "epoch"), (4, "iso"), (5, "delay")):
        clock.now = start + day * 86400 - 0.001
        assert wide.receive(max_messages=10) == []
        clock.now = start + day * 86400
        got = wide.receive(max_messages=10)
        assert [m.body for m in got] == [body]
        wide.delete(got[0].receipt_handle)


def test_delivery_beyond_retention_is_refused_with_a_clear_error(client: QueueClient, clock) -> None:
    client.create_queue("short", retention_seconds=3600)
    sub = client.queue("short", "c")
    with pytest.raises(ValidationError, match="retention"):
        sub.send("x", deliver_at=clock() + 3541)
    with pytest.raises(ValidationError, match="3540"):
        sub.send("x", delay_seconds=3541)
    for bad in ("2030-01-01T00:00:00", "tomorrow", [], True, float("nan"), -5):
        with pytest.raises(ValidationError):
            sub.send("x", deliver_at=bad)
    with pytest.raises(ValidationError, match="not both"):
        sub.send("x", deliver_at=clock() + 10, delay_seconds=10)
    assert sub.send("past", deliver_at="2001-01-01T00:00:00Z").message_id
    assert sub.send("edge", delay_seconds=3540).message_id
    assert sub.stats().visible == 1


def test_fifo_across_clients_keeps_each_groups_order_and_one_holder(client: QueueClient) -> None:
    client.create_queue("orders.fifo", fifo=True, visibility_timeout=600, max_receive_count=0)
    expected = {}
    for client_id in ("a", "b", "c"):
        sub = client.queue("orders.fifo", client_id)
        for group in ("g1", "g2"):
            bodies = [f"{client_id}/{group}/{i}" for i in range(4)]
            sub.send_batch([{"body": body, "group_id": group} for body in bodies])
            expected[(client_id, group)] = bodies
    wide = client.queue_wide("orders.fifo")
    seen: dict[tuple[str, str], list[str]] = {}
    while True:
        batch = wide.receive(max_messages=4)
        if not batch:
            break
        held = [(m.client, m.group_id) for m in batch]
        # One holder per group: a second receive now gets none of the groups this one holds.
        other = wide.receive(max_messages=10)
        assert not {(m.client, m.group_id) for m in other} & set(held)
        for message in other:
            wide.release(message.receipt_handle, delay_seconds=0)
        for message in batch:
            seen.setdefault((message.client, message.group_id), []).append(message.body)
            wide.delete(message.receipt_handle)
    assert seen == expected


def test_handles_work_on_both_routes_and_are_checked(client: QueueClient) -> None:
    client.create_queue("both")
    client.create_queue("other")
    sub = client.queue("both", "c")
    sub.send("one")
    sub.send("two")
    wide = client.queue_wide("both")
    first = wide.receive()[0]
    assert first.client == "c"
    sub.delete(first.receipt_handle)  # a queue-wide handle on its client's route
    second = sub.receive()[0]
    assert second.client == "c"
    wide.change_visibility(second.receipt_handle, 60)
    wide.delete(second.receipt_handle)  # a client's handle on the queue-wide route
    sub.send("three")
    third = wide.receive()[0]
    wide.release(third.receipt_handle, delay_seconds=0)
    assert wide.receive()[0].body == "three"
    with pytest.raises(ReceiptHandleStale):
        wide.delete(third.receipt_handle)
    with pytest.raises(ValidationError):
        client.queue_wide("other").delete(first.receipt_handle)
    for bad in ("", "x.y", "not a handle", 5):
        with pytest.raises(ValidationError):
            wide.delete(bad)
    forged = first.receipt_handle[:-4] + "AAAA"
    with pytest.raises(ValidationError):
        wide.delete(forged)


def test_idle_clients_cost_nothing_and_reads_stay_under_two_per_delivered(client: QueueClient, counter) -> None:
    client.create_queue("many", visibility_timeout=600, queue_wide=True)
    for i in range(20):  # clients that sent once and were emptied: idle now
        client.queue("many", f"idle-{i}").send("x")
    wide = client.queue_wide("many")
    assert len(_drain(wide)) == 20
    for i in range(10):
        client.queue("many", f"active-{i}").send_batch([{"body": f"{i}/{n}"} for n in range(5)])
    counter.reset()
    got = _drain(wide)
    assert len(got) == 50
    assert counter.items_read <= 2 * len(got)
    assert not any(message.client.startswith("idle") for message in got)
    # No query named an idle client's partition (message, group or marker keys all carry the client).
    assert counter.queries and not any("#idle-" in value for query in counter.queries for value in query)


def test_messages_of_a_crashed_queue_wide_consumer_come_back_when_their_claim_expires(
    client: QueueClient, clock
) -> None:
    client.create_queue("crash", visibility_timeout=30)
    client.queue("crash", "c").send("work")
    wide = client.queue_wide("crash")
    assert [m.body for m in wide.receive()] == ["work"]  # then the consumer crashes
    clock.advance(29)
    assert wide.receive() == []
    clock.advance(1)
    again = wide.receive()
    assert [m.body for m in again] == ["work"] and again[0].receive_count == 2
    wide.release(again[0].receipt_handle, delay_seconds=120)
    clock.advance(119)
    assert wide.receive() == []
    clock.advance(1)
    assert [m.body for m in wide.receive()] == ["work"]


def test_a_send_racing_a_drain_is_never_left_without_a_marker(client: QueueClient, dynamodb) -> None:
    client.create_queue("race", queue_wide=True)
    sub = client.queue("race", "c")
    sub.send("first")
    wide = client.queue_wide("race")
    wide.delete(wide.receive()[0].receipt_handle)
    # The drain's drop of the marker is applied, its answer lost; meanwhile another process sends.
    other = QueueClient(client.table_name, dynamodb=dynamodb, clock=client._ctx.clock)
    sent = lambda: other.queue("race", "c").send("second")  # noqa: E731
    with attached(dynamodb, LostAnswer("DeleteItem", expression_has("gsi1sk = :gsk"), meanwhile=sent)) as lost:
        got = wide.receive()  # the SDK's repeat of the drop removes the sender's marker; the look puts it back
    assert lost.lost == 1
    assert [m.body for m in got or wide.receive()] == ["second"]


def test_queue_wide_receive_refuses_bad_arguments(client: QueueClient) -> None:
    client.create_queue("args.fifo", fifo=True)
    wide = client.queue_wide("args.fifo")
    for kwargs in ({"max_messages": 0}, {"max_messages": 11}, {"wait_seconds": 21}, {"order": "newest"}):
        with pytest.raises(ValidationError):
            wide.receive(**kwargs)
    with pytest.raises(ValidationError):
        client.queue_wide("bad name")


def test_transactional_sends_and_acks_are_seen_queue_wide(client: QueueClient, clock) -> None:
    """A send committed in the caller's transaction puts its client's ready marker once committed (two sends of
    one client and priority in one transaction, which could not both carry the same marker inside it); a FIFO
    group unlocked by a transactional ack is announced at once, not when the claim's lock runs out."""
    client.create_queue("outbox", visibility_timeout=600, retention_seconds=2 * 86400)
    sub = client.queue("outbox", "t")
    wide = client.queue_wide("outbox")
    start = clock()
    sends = [sub.send_transact_items("a"), sub.send_transact_items("b"), sub.send_transact_items("p", priority=7)]
    later = sub.send_transact_items("later", deliver_at=start + 86400)
    client.transact([*sends, later])
    got = wide.receive(max_messages=10)
    assert [(m.body, m.client, m.priority) for m in got] == [("p", "t", 7), ("a", "t", 0), ("b", "t", 0)]
    wide.delete_batch([m.receipt_handle for m in got])
    assert wide.receive(max_messages=10) == []
    clock.now = start + 86400
    assert [m.body for m in wide.receive(max_messages=10)] == ["later"]

    client.create_queue("outbox.fifo", fifo=True, visibility_timeout=600)
    fifo = client.queue("outbox.fifo", "f")
    wide = client.queue_wide("outbox.fifo")
    for body in ("f0", "f1"):  # one transaction each: a group's sends share its sequence fence
        client.transact([fifo.send_transact_items(body, group_id="g")])
    first = wide.receive(max_messages=1)
    assert [m.body for m in first] == ["f0"]
    assert wide.receive(max_messages=10) == []  # the group is held: the client's marker moves to the lock's end
    client.transact(fifo.delete_transact_items(first[0].receipt_handle))
    assert [m.body for m in wide.receive(max_messages=10)] == ["f1"]


def test_a_send_committed_by_the_callers_own_transact_write_items_is_found_queue_wide_by_the_next_sweep(
    client: QueueClient, dynamodb
) -> None:
    """Committed without `transact`, nothing puts the client's ready marker: its own receives see the message at
    once, and the sweep (the ready set's backstop) announces it to queue-wide receives."""
    client.create_queue("raw", visibility_timeout=600, queue_wide=True)
    sub = client.queue("raw", "t")
    wide = client.queue_wide("raw")
    send = sub.send_transact_items("raw commit")
    dynamodb.transact_write_items(TransactItems=send.items)
    assert wide.receive(max_messages=10) == []
    assert [m.body for m in sub.peek()] == ["raw commit"]
    client.sweep()
    got = wide.receive(max_messages=10)
    assert [(m.body, m.client) for m in got] == [("raw commit", "t")]
    wide.delete(got[0].receipt_handle)

    client.create_queue("raw.fifo", fifo=True, visibility_timeout=600, queue_wide=True)
    fifo = client.queue("raw.fifo", "f")
    fifo_wide = client.queue_wide("raw.fifo")
    dynamodb.transact_write_items(TransactItems=fifo.send_transact_items("in order", group_id="g").items)
    assert fifo_wide.receive(max_messages=10) == []
    client.sweep()
    assert [m.body for m in fifo_wide.receive(max_messages=10)] == ["in order"]


def test_a_receive_reads_no_lower_priority_than_it_needs(client: QueueClient, counter, clock) -> None:
    client.create_queue("bands", visibility_timeout=600)
    sub = client.queue("bands", "p")
    for i in range(3):
        sub.send(f"low{i}")
        sub.send(f"high{i}", priority=9)
    for receiver in (
        lambda: QueueClient(client.table_name, dynamodb=client.dynamodb, clock=clock).queue("bands", "p"),
        lambda: QueueClient(client.table_name, dynamodb=client.dynamodb, clock=clock).queue_wide("bands"),
    ):
        fresh = receiver()  # a process of its own: it learns the client's priorities from the markers
        counter.reset()
        got = fresh.receive(max_messages=3)
        assert [message.body for message in got] == ["high0", "high1", "high2"]
        message_queries = [query[1:] for query in counter.queries if query[0].startswith("M#bands#p#")]
        assert message_queries and all(bound.startswith("P9#") for query in message_queries for bound in query)
        for message in got:
            fresh.change_visibility(message.receipt_handle, 0)


@pytest.mark.parametrize("order", ["newest", "oldest"])
def test_a_client_ready_by_two_markers_is_served_once_and_never_answers_a_message_twice(
    client: QueueClient, clock, order: str
) -> None:
    """A client whose delayed message came due while it was ready already has two markers of one priority (ready
    now, and the time that came). Served once for each, it split its share between two receives of its own, and
    with a claim for no time the second took again what the first had just claimed: one answer carried a message
    twice, its receive count raised twice."""
    client.create_queue("jobs", visibility_timeout=30, queue_wide=True)
    wide = client.queue_wide("jobs")
    wide.receive()
    clock.advance(limits.INDEX_LAG_GRACE_SECONDS + 1)
    client.sweep()
    assert client.get_queue("jobs").markers_built
    sub = client.queue("jobs", "a")
    sub.send("later", delay_seconds=5)
    sub.send_batch([{"body": "m1"}, {"body": "m2"}])
    clock.advance(6)

    got = wide.receive(max_messages=3, visibility_timeout=0, order=order)
    assert sorted(message.body for message in got) == ["later", "m1", "m2"]
    assert all(message.receive_count == 1 for message in got)
