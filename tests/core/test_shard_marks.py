"""Shard marks: a receive on a queue of many shards visits the shards that may hold messages, and no message is
ever left where no receive looks (`queue_core.shard_marks`)."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from queue_core import QueueClient, QueueError, keys, limits, shard_marks
from queue_core import shards as shards_module

from tests.core.answers import (
    AnswerNeverCame,
    Interleave,
    LostAnswer,
    Refused,
    attached,
    expression_has,
    never_answered,
    refused,
)
from tests.dynamo_calls import CallCounter
from tests.index_lag import IndexLag
from tests.throttle_hooks import ThrottleAll, throttling

SHARDS = 64
PAST_TRUST = shard_marks.MARK_SECONDS + shard_marks.SKEW_SECONDS + limits.INDEX_LAG_GRACE_SECONDS + 1


def _other(client: QueueClient, dynamodb: Any) -> QueueClient:
    """Another process: its own core client and caches, the same table and clock."""
    return QueueClient(client.table_name, dynamodb=dynamodb, clock=client._ctx.clock)


def _a_mark(body: dict[str, Any]) -> bool:
    return str(body.get("Item", {}).get("pk", {}).get("S", "")).startswith("K#")


def _marks_query(body: dict[str, Any]) -> bool:
    """A query of a sub-queue's shard marks."""
    return str(body.get("ExpressionAttributeValues", {}).get(":qpk", {}).get("S", "")).startswith("K#")


def _marks(client: QueueClient, queue: str, tenant: str) -> list[shard_marks.Mark]:
    return shard_marks.read(client._ctx, client.queue(queue, tenant).space)


@pytest.fixture
def listed_on_queue_time(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The cost tests count queries on the queue's clock, which only the test moves. A process reuses the marks it
    read for `shard_marks.LIST_SECONDS` of real time: on a loaded machine the same steps would cross that time at
    random and read the marks more often. Held for the test, and the visiting order seeded, the counts are those
    of a consumer whose receives come within that time of each other (the bench's idle scenario also measures
    receives that each read the marks)."""
    monkeypatch.setattr(shard_marks, "LIST_SECONDS", 3_600.0)
    state = random.getstate()
    random.seed(37)
    yield
    random.setstate(state)


@pytest.mark.parametrize("fifo", [False, True])
@pytest.mark.usefixtures("listed_on_queue_time")
def test_an_empty_receive_costs_at_most_two_queries_at_64_shards(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any, fifo: bool
) -> None:
    name = "idle.fifo" if fifo else "idle"
    client.create_queue(name, fifo=fifo, shards=SHARDS)
    producer = client.queue(name, "t")
    group = {"group_id": "g"} if fifo else {}
    consumer = _other(client, dynamodb).queue(name, "t")
    for round_ in range(3):
        producer.send(f"m{round_}", **group)
        got = consumer.receive(max_messages=10)
        assert [m.body for m in got] == [f"m{round_}"]
        consumer.delete(got[0].receipt_handle)
        clock.advance(1)
    for when in (0, PAST_TRUST):
        clock.advance(when)
        consumer.receive(max_messages=10)  # the first poll after the trust drains what it may
        counter.reset()
        for _ in range(5):
            assert consumer.receive(max_messages=10) == []
        assert counter.calls["Query"] <= 2 * 5, counter.queries


@pytest.mark.parametrize("fifo", [False, True])
@pytest.mark.usefixtures("listed_on_queue_time")
def test_a_receive_at_low_load_on_64_shards_costs_few_queries_per_message(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any, fifo: bool
) -> None:
    name = "low.fifo" if fifo else "low"
    client.create_queue(name, fifo=fifo, shards=SHARDS)
    consumer = _other(client, dynamodb).queue(name, "t")
    counter.reset()
    delivered = _trickle([client.queue(name, "t")], consumer, clock, 20, 2 if fifo else 0, 0.5)
    assert delivered == 20
    assert counter.calls["Query"] / delivered <= (3 if fifo else 1.5), counter.calls


def _trickle(senders: list[Any], consumer: Any, clock: Any, count: int, groups: int, pause: float) -> int:
    """`count` messages, one at a time from the senders in turn (over `groups` FIFO groups in turn, 0: standard),
    each received and deleted before the next, and up to three receives more for a message that came a round late
    (a sender that shares its shard with another is a round ahead of the consumer's guess until two come at once:
    `test_quiet_turns.py` bounds how late); how many were delivered."""
    delivered = 0
    for number in range(count + 3):
        if number < count:
            group = {"group_id": f"g{number % groups}"} if groups else {}
            senders[number % len(senders)].send(f"m{number}", **group)
        elif delivered == count:
            break
        for message in consumer.receive(max_messages=10):
            consumer.delete(message.receipt_handle)
            delivered += 1
        clock.advance(pause)
    return delivered


@pytest.mark.parametrize("fifo", [False, True])
@pytest.mark.usefixtures("listed_on_queue_time")
def test_a_receive_at_low_load_from_five_senders_visits_the_shard_emptied_longest_ago_first(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any, fifo: bool
) -> None:
    """Five senders (processes of their own) in turn, each on its own shard (FIFO: three groups in turn, each at
    its own place); in random order a receive met two or three shards emptied a moment ago before the one that
    holds the new message (3.2-3.4 queries per message, standard)."""
    name = "five.fifo" if fifo else "five"
    client.create_queue(name, fifo=fifo, shards=SHARDS)
    senders = [_other(client, dynamodb).queue(name, "t") for _ in range(5)]
    consumer = _other(client, dynamodb).queue(name, "t")
    counter.reset()
    delivered = _trickle(senders, consumer, clock, 30, 3 if fifo else 0, 0.2)
    assert delivered == 30
    # Headroom for a loaded machine: real-time caches (settings, 10 s) that run out mid-test add a few queries.
    assert counter.calls["Query"] / delivered <= (2.6 if fifo else 2.0), counter.calls


@pytest.fixture
def marks_read_at_each_receive(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Receives a second or more apart in real time: neither the marks' list nor the priorities are reused."""
    monkeypatch.setattr(shard_marks, "LIST_SECONDS", 0.0)
    monkeypatch.setattr(shards_module, "BANDS_SECONDS", 0.0)
    yield


@pytest.mark.usefixtures("marks_read_at_each_receive")
def test_a_receive_a_second_after_the_last_reads_the_marks_and_the_shard_and_nothing_more(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any
) -> None:
    """Its priorities come from the marks it reads anyway: the ready markers' query besides made it three queries
    a message, and an idle poll two. (Its warm shard, `Marks.warm`, makes it fewer: counted in test_quiet_shards.)"""
    client.create_queue("apart", shards=SHARDS)
    consumer = _other(client, dynamodb).queue("apart", "t")
    counter.reset()
    delivered = _trickle([client.queue("apart", "t")], consumer, clock, 10, 0, 2)
    assert delivered == 10
    assert counter.calls["Query"] / delivered <= 2, counter.queries
    clock.advance(PAST_TRUST)
    costs = []
    for _ in range(3):  # the warm shard's visit; a poll that drains the sender's mark; an idle poll
        counter.reset()
        assert consumer.receive(max_messages=10) == []
        costs.append(counter.calls["Query"])
    assert max(costs) <= 2 and costs[-1] == 1, costs


@pytest.mark.usefixtures("marks_read_at_each_receive")
def test_a_receive_of_many_shards_takes_another_process_priority_from_the_marks(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    client.create_queue("ranked", shards=SHARDS)
    client.queue("ranked", "t").send("low")
    consumer = _other(client, dynamodb).queue("ranked", "t")
    assert consumer.receive(max_messages=1, visibility_timeout=5)[0].body == "low"
    _other(client, dynamodb).queue("ranked", "t").send("high", priority=7)
    _other(client, dynamodb).queue("ranked", "t").send("middle", priority=3)
    clock.advance(6)
    assert [m.body for m in consumer.receive(max_messages=10)] == ["high", "middle", "low"]


@pytest.mark.usefixtures("listed_on_queue_time")
def test_a_process_knows_the_marks_it_put_before_it_reads_them_again(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any
) -> None:
    """A process that sends and receives (the console, a worker that requeues) finds its own message without
    reading the marks again, and a priority it sent at once."""
    client.create_queue("own", shards=SHARDS)
    sub = client.queue("own", "t")
    sub.send("first")
    sub.delete(sub.receive(max_messages=10)[0].receipt_handle)
    sub.send("low")
    sub.send("high", priority=4)
    counter.reset()
    assert [m.body for m in sub.receive(max_messages=10)] == ["high", "low"]
    assert not [q for q in counter.queries if "K#" in str(q)], counter.queries


def test_receives_of_one_process_visit_a_shard_another_is_visiting_last(client: QueueClient) -> None:
    marks = shard_marks.Marks()
    marks.note_taken(0, 3, 100)
    marks.note_taken(0, 5, 50)
    assert marks.way(0, [3, 5, 7]) == [7, 5, 3]
    marks.visiting(0, 7, 1)
    marks.visiting(0, 5, 1)
    assert marks.way(0, [3, 5, 7]) == [3, 7, 5]
    marks.visiting(0, 7, -1)
    marks.visiting(0, 5, -1)
    assert marks.way(0, [3, 5, 7]) == [7, 5, 3]


@pytest.mark.usefixtures("listed_on_queue_time")
def test_a_message_on_a_shard_emptied_once_is_not_left_behind_another_shards_backlog(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """A consumer of one message at a time (SQS's default) while a sender keeps a backlog on its shard: a message
    on a shard this consumer once emptied comes within a few receives. When only an emptied shard was noted, the
    backlog's shard (never emptied by receives of one) went first every time and the message waited for the
    backlog to end."""
    client.create_queue("q", shards=SHARDS)
    quiet = _other(client, dynamodb).queue("q", "t")
    busy = _other(client, dynamodb).queue("q", "t")
    consumer = _other(client, dynamodb).queue("q", "t")
    quiet.send("q0")
    bodies: list[str] = []
    sent = 0

    def backlog_of(count: int) -> None:
        nonlocal sent
        while sent - sum(body.startswith("b") for body in bodies) < count:
            busy.send(f"b{sent}")
            sent += 1

    backlog_of(3)
    while "q0" not in bodies:  # both shards listed: q0 comes alone (its shard emptied) when visited first
        for message in consumer.receive(max_messages=2):
            bodies.append(message.body)
            consumer.delete(message.receipt_handle)
        backlog_of(3)
        clock.advance(0.2)
    quiet.send("x")
    for _ in range(30):
        for message in consumer.receive(max_messages=1):
            bodies.append(message.body)
            consumer.delete(message.receipt_handle)
        backlog_of(3)
        clock.advance(0.2)
    assert "x" in bodies, bodies


def test_a_send_trusting_its_mark_while_a_receive_drains_it_is_found(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """The sender put its shard's mark and trusts it; a receive finds the shard empty and would drop the mark
    just as the sender sends again without putting it: the drop lands only past the trust and the index's grace,
    so the message stays found at every moment of the trust."""
    client.create_queue("race", shards=SHARDS)
    producer = client.queue("race", "t")
    consumer = _other(client, dynamodb).queue("race", "t")
    for step in range(int(shard_marks.MARK_SECONDS) + 2):
        producer.send(f"m{step}")
        got = consumer.receive(max_messages=10)
        assert [m.body for m in got] == [f"m{step}"], step
        consumer.delete(got[0].receipt_handle)
        assert consumer.receive() == []  # the shard found empty: a drain, when the mark is old enough
        clock.advance(1 + limits.INDEX_LAG_GRACE_SECONDS / 4)


def test_a_send_between_a_drains_query_and_its_drop_is_found(client: QueueClient, dynamodb: Any, clock: Any) -> None:
    client.create_queue("between", shards=SHARDS)
    producer = client.queue("between", "t")
    consumer = _other(client, dynamodb).queue("between", "t")
    producer.send("first")
    consumer.delete(consumer.receive()[0].receipt_handle)
    clock.advance(PAST_TRUST)
    # Past its trust, the sender puts the mark again with its send; the drop, already decided, must not land.
    sent = Interleave("DeleteItem", lambda: producer.send("second"), expression_has("put_at <= :cutoff"))
    with attached(dynamodb, sent):
        assert consumer.receive() == []
    assert sent.done
    assert [m.body for m in consumer.receive()] == ["second"]


def test_a_mark_put_repeated_after_a_lost_answer_never_looks_older(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    client.create_queue("repeat")  # one shard: both processes put the same mark
    producer = client.queue("repeat", "t")
    later = _other(client, dynamodb).queue("repeat", "t")

    def newer_put() -> None:
        clock.advance(5)
        later.send("from another process")

    # The first process's put is applied, its answer lost; another process puts the same mark later; then the
    # SDK repeats the first put, which must not bring the mark's time back.
    with attached(dynamodb, LostAnswer("PutItem", _a_mark, meanwhile=newer_put)) as lost:
        producer.send("first")
    assert lost.lost == 1
    stamps = [mark.put_at for mark in _marks(client, "repeat", "t") if mark.at == 0]
    assert stamps and max(stamps) == int(clock() * 1000)


def test_a_drop_repeated_after_a_lost_answer_changes_nothing_more(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    client.create_queue("dropped", shards=SHARDS)
    producer = client.queue("dropped", "t")
    consumer = _other(client, dynamodb).queue("dropped", "t")
    producer.send("first")
    consumer.delete(consumer.receive()[0].receipt_handle)
    clock.advance(PAST_TRUST)
    with attached(dynamodb, LostAnswer("DeleteItem", expression_has("put_at <= :cutoff"))) as lost:
        assert consumer.receive() == []
    assert lost.lost == 1
    assert _marks(client, "dropped", "t") == []
    producer.send("second")
    assert [m.body for m in consumer.receive()] == ["second"]


def test_a_message_in_flight_leaves_a_mark_for_when_its_claim_ends(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    client.create_queue("crash", shards=SHARDS, visibility_timeout=60)
    client.queue("crash", "t").send("held by a consumer that crashes")
    consumer = _other(client, dynamodb).queue("crash", "t")
    assert len(consumer.receive()) == 1
    clock.advance(PAST_TRUST)
    assert consumer.receive() == []  # drained: the now mark leaves, an at mark for the claim's end comes
    marks = _marks(client, "crash", "t")
    assert len(marks) == 1 and marks[0].at > 0
    clock.advance(60)
    assert [m.body for m in consumer.receive()] == ["held by a consumer that crashes"]


@pytest.mark.parametrize("fifo", [False, True])
def test_a_message_whose_mark_was_never_written_is_found_after_a_sweep(
    client: QueueClient, dynamodb: Any, clock: Any, fifo: bool
) -> None:
    """A mark that could not be put (throttled, or the process killed between its write and the mark's) is put
    by the sweep, which reads every shard anyway."""
    name = "lost.fifo" if fifo else "lost"
    client.create_queue(name, fifo=fifo, shards=SHARDS)
    sub = client.queue(name, "t")
    sub.send("unmarked", **({"group_id": "g"} if fifo else {}))
    client._ctx.store.delete_partition(sub.space.shard_marks_pk())
    consumer = _other(client, dynamodb).queue(name, "t")
    assert consumer.receive() == []
    client.sweep()
    assert [m.body for m in consumer.receive()] == ["unmarked"]


@pytest.mark.parametrize("fifo", [False, True])
def test_a_one_shard_sub_queue_is_swept_without_its_marks_and_the_pass_after_it_grows_puts_them(
    client: QueueClient, dynamodb: Any, clock: Any, counter: CallCounter, fifo: bool
) -> None:
    """Receives of a sub-queue of one shard read the shard, not the marks: its sweep reads no marks. Once the queue
    has several shards, the next pass puts the mark of a message whose own could not be put."""
    name = "small.fifo" if fifo else "small"
    client.create_queue(name, fifo=fifo, shards=1)
    sub = client.queue(name, "t")
    sub.send("unmarked", **({"group_id": "g"} if fifo else {}))
    client._ctx.store.delete_partition(sub.space.shard_marks_pk())
    counter.reset()
    client.sweep()
    assert [values for values in counter.queries if values and values[0].startswith("K#")] == []
    client.update_queue(name, shards=4)
    clock.advance(3_600)  # every process has the new count, and a FIFO group may take its new place
    consumer = _other(client, dynamodb).queue(name, "t")
    assert consumer.receive() == []
    client.sweep()
    assert [m.body for m in consumer.receive()] == ["unmarked"]


@pytest.mark.parametrize("fifo", [False, True])
def test_releases_and_unlocks_put_their_shards_marks(
    client: QueueClient, dynamodb: Any, clock: Any, fifo: bool
) -> None:
    """A message given back (or a FIFO group unlocked) after its shard's marks were drained is found at once."""
    name = "back.fifo" if fifo else "back"
    client.create_queue(name, fifo=fifo, shards=SHARDS, visibility_timeout=600)
    client.queue(name, "t").send("m", **({"group_id": "g"} if fifo else {}))
    consumer = _other(client, dynamodb).queue(name, "t")
    [held] = consumer.receive()
    clock.advance(PAST_TRUST)
    assert consumer.receive() == []  # drained: only an at mark for the claim's end is left
    clock.advance(PAST_TRUST)
    _other(client, dynamodb).queue(name, "t").change_visibility(held.receipt_handle, 0)
    assert [m.body for m in consumer.receive()] == ["m"]


def test_a_steady_low_rate_sender_stays_on_one_shard(client: QueueClient, clock: Any) -> None:
    client.create_queue("steady", shards=SHARDS)
    sub = client.queue("steady", "t")
    for number in range(30):
        sub.send(f"m{number}")
        clock.advance(0.2)
    assert len({mark.shard for mark in _marks(client, "steady", "t")}) == 1
    assert len(sub.receive(max_messages=10)) == 10


def _send_again_at_the_end_of_the_trust(producer: Any, consumer: Any, clock: Any, lag: float, before: float) -> float:
    """ "first" sent (its mark put) and taken by the consumer once the index shows it; "second" sent `before` seconds
    short of the end of the sender's trust in its mark, so without a put. Returns when "first" was sent."""
    start = clock()
    producer.send("first")
    clock.advance(lag)
    consumer.delete(consumer.receive()[0].receipt_handle)
    clock.now = start + shard_marks.MARK_SECONDS - before
    producer.send("second")  # trusted: no mark put
    return start


def test_a_trusting_send_just_before_a_drain_is_found_when_the_index_lags(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """The sender trusts its mark until `MARK_SECONDS` after its put and sends at the end of that trust; a drain
    just after reads an index that does not show that send yet. The mark must stay until the index's grace has
    passed after the trust, else the message waits for a sweep."""
    lag = 2
    client.create_queue("lagging", shards=SHARDS)
    producer = client.queue("lagging", "t")
    consumer = _other(client, dynamodb).queue("lagging", "t")
    with IndexLag(lag, clock):
        start = _send_again_at_the_end_of_the_trust(producer, consumer, clock, lag, 0.5)
        clock.now = start + max(shard_marks.MARK_SECONDS, limits.INDEX_LAG_GRACE_SECONDS) + 0.1
        assert consumer.receive() == []  # the index does not show it yet
        clock.advance(lag + 1)
        assert [m.body for m in consumer.receive()] == ["second"]


def test_a_send_committed_in_the_callers_own_transaction_is_found_at_once(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """A caller that commits `send_transact_items` with its own `transact_write_items` (no `QueueClient.transact`
    to put the mark after the commit) finds the message received at once: the mark is put when the items are
    built, and trusted long enough for a commit that follows."""
    client.create_queue("outbox", shards=SHARDS)
    sub = client.queue("outbox", "t")
    consumer = _other(client, dynamodb).queue("outbox", "t")
    for body in ("first", "second"):
        send = sub.send_transact_items(body)
        clock.advance(shard_marks.AHEAD_SECONDS - 0.5)
        dynamodb.transact_write_items(TransactItems=send.items)
        got = consumer.receive()
        assert [m.body for m in got] == [body]
        consumer.delete(got[0].receipt_handle)
        clock.advance(shard_marks.MARK_SECONDS + limits.INDEX_LAG_GRACE_SECONDS)
        assert consumer.receive() == []


@pytest.mark.parametrize("shards", [1, 8])
def test_a_fifo_receive_attempt_repeated_with_a_shorter_visibility_is_found_when_it_ends(
    client: QueueClient, dynamodb: Any, clock: Any, shards: int
) -> None:
    """The repeat holds the group again for its own, shorter visibility: the group is available long before the
    at mark a drain put for the first claim's end, so the repeat puts the shard's mark."""
    client.create_queue("att.fifo", fifo=True, shards=shards, visibility_timeout=300)
    sub = client.queue("att.fifo", "t")
    sub.send("m", group_id="g")
    first = sub.receive_attempt("A", max_messages=1, visibility_timeout=300)
    clock.advance(PAST_TRUST)
    other = _other(client, dynamodb).queue("att.fifo", "t")
    assert other.receive() == []  # drained: an at mark for the lock's end
    again = sub.receive_attempt("A", max_messages=1, visibility_timeout=5)
    assert [m.receipt_handle for m in again] == [first[0].receipt_handle]
    clock.advance(6)
    assert [m.body for m in other.receive()] == ["m"]


def test_a_throttled_marks_read_visits_every_shard_instead_of_failing(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    client.create_queue("hot", shards=8)
    client.queue("hot", "t").send("m")
    consumer = _other(client, dynamodb).queue("hot", "t")

    with throttling(dynamodb, ThrottleAll("Query", _marks_query)):
        assert [m.body for m in consumer.receive(max_messages=10)] == ["m"]
    client.queue("hot", "t").send("high", priority=2)
    client.queue("hot", "t").send("low")
    with throttling(dynamodb, ThrottleAll("Query", _marks_query)):
        # The priorities from the ready markers instead.
        assert [m.body for m in _other(client, dynamodb).queue("hot", "t").receive(max_messages=10)] == ["high", "low"]


@pytest.mark.parametrize("fifo", [False, True])
def test_a_dedup_send_whose_answers_were_all_lost_and_repeated_is_found(
    client: QueueClient, dynamodb: Any, clock: Any, fifo: bool
) -> None:
    """The first send was stored and every answer lost (the SDK gave up); the caller's repeat is answered with
    the first message: between them, the shard's mark is put."""
    name = "lost.fifo" if fifo else "lost"
    client.create_queue(name, fifo=fifo, shards=8)
    sub = client.queue(name, "t")
    group = {"group_id": "g"} if fifo else {}
    with never_answered(dynamodb, AnswerNeverCame("TransactWriteItems", times=100)) as hook, pytest.raises(QueueError):
        sub.send("m", dedup_id="d1", **group)
    assert hook.lost >= 1
    assert sub.send("m", dedup_id="d1", **group).duplicate
    assert [m.body for m in _other(client, dynamodb).queue(name, "t").receive(max_messages=10)] == ["m"]


def _process_on(client: QueueClient, dynamodb: Any, name: str, shard: int) -> Any:
    """A process whose sends go to `shard` (its rotation starts at a random shard and stays there at low rate)."""
    for _ in range(200):
        sub = _other(client, dynamodb).queue(name, "t")
        if sub.engine().traffic.rotation._next == shard:
            return sub
    raise AssertionError("no process on that shard")


def test_at_marks_never_pile_up_when_later_sends_are_due_sooner(client: QueueClient, dynamodb: Any, clock: Any) -> None:
    """Each drain sees an earlier first entry than the last (messages due sooner than those sent before them):
    its at mark replaces the later ones, so a shard keeps one at mark, and the capped read of the marks never
    grows past a few per shard."""
    client.create_queue("sched", shards=2)
    early = _process_on(client, dynamodb, "sched", 0)
    consumer = _other(client, dynamodb).queue("sched", "t")
    base = clock.now + 100_000
    for step in range(8):
        early.send(f"later{step}", deliver_at=base - 1000 * step)
        clock.advance(PAST_TRUST)
        assert consumer.receive() == []
    at_marks = [m for m in _marks(client, "sched", "t") if m.shard == 0 and m.at]
    assert len(at_marks) == 1 and at_marks[0].at == int((base - 7000) * 1000), at_marks
    clock.now = base - 7
    assert [m.body for m in consumer.receive()] == ["later7"]


def test_a_fifo_ack_committed_in_the_callers_own_transaction_frees_the_group_for_receives(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    client.create_queue("own.fifo", fifo=True, shards=8, visibility_timeout=300)
    sub = client.queue("own.fifo", "t")
    sub.send("m1", group_id="g")
    sub.send("m2", group_id="g")
    first = sub.receive(max_messages=1)
    clock.advance(PAST_TRUST)
    consumer = _other(client, dynamodb).queue("own.fifo", "t")
    assert consumer.receive() == []  # the group is locked: an at mark for the lock's end
    ack = sub.delete_transact_items(first[0].receipt_handle)
    dynamodb.transact_write_items(TransactItems=[dict(item) for item in ack])
    clock.advance(1)
    assert [m.body for m in consumer.receive()] == ["m2"]


class _MarkPuts:
    """Counts the shard marks put through a DynamoDB client (its `PutItem`s on `K#` partitions)."""

    def __init__(self, dynamodb: Any) -> None:
        self.dynamodb = dynamodb
        self.count = 0

    def _put(self, params: dict[str, Any], **_: Any) -> None:
        self.count += str(params.get("Item", {}).get("pk", {}).get("S", "")).startswith("K#")

    def __enter__(self) -> _MarkPuts:
        self.dynamodb.meta.events.register("provide-client-params.dynamodb.PutItem", self._put)
        return self

    def __exit__(self, *_: object) -> None:
        self.dynamodb.meta.events.unregister("provide-client-params.dynamodb.PutItem", self._put)


def test_a_busy_sender_reads_the_marks_once_and_trusts_those_others_put(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any
) -> None:
    """Fast senders each going round many shards put every shard's mark each, all into one partition; once a
    sender has put `BUSY_PUTS` marks within a second, it reads the list and trusts the marks others put."""
    shards = 8
    client.create_queue("busy", shards=shards)
    for shard in range(shards):
        _process_on(client, dynamodb, "busy", shard).send(f"from {shard}")
    busy = _process_on(client, dynamodb, "busy", 0)
    counter.reset()
    with _MarkPuts(dynamodb) as puts:
        for number in range(shards * shards_module.SendRotation.RUN):
            busy.send(f"busy {number}")  # runs of 10 on each shard in turn, all in one second
    assert puts.count == shard_marks.BUSY_PUTS, puts.count  # 8 before: one per shard
    assert len([q for q in counter.queries if q[0].startswith("K#")]) == 1, counter.queries
    consumer = _other(client, dynamodb).queue("busy", "t")
    received = []
    while got := consumer.receive(max_messages=10):
        received += [m.body for m in got]
        consumer.delete_batch([m.receipt_handle for m in got])
    assert len(received) == shards + shards * shards_module.SendRotation.RUN


def test_another_process_mark_is_trusted_as_long_as_its_own() -> None:
    marks = shard_marks.Marks()
    put_at = 1_000_000
    marks.note_listed([shard_marks.Mark(0, 3, 0, put_at, "0#00003#0")], 0.0, 0)
    trust = shard_marks.MARK_SECONDS * 1000
    assert marks.trusted(0, 3, put_at + trust - 1)
    assert not marks.trusted(0, 3, put_at + trust)
    assert not marks.trusted(0, 4, put_at)
    marks.note_listed([shard_marks.Mark(0, 3, 5_000, put_at, "0#00003#5000")], 0.0, 0)  # an at mark: nobody trusts one
    assert not marks.trusted(0, 3, put_at + trust)


def test_a_send_trusting_another_process_mark_just_before_a_drain_is_found_when_the_index_lags(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """A process that read another's mark (with its receives) sends at the end of its trust of it, with no put; a
    drain just after reads an index that does not show that send yet. The mark must stay until the index's grace
    has passed after that trust."""
    lag = 2
    client.create_queue("shared", shards=8)
    first = _process_on(client, dynamodb, "shared", 5)
    second = _process_on(client, dynamodb, "shared", 5)
    consumer = _other(client, dynamodb).queue("shared", "t")
    with IndexLag(lag, clock):
        start = clock()
        first.send("first")
        clock.advance(lag)
        second.delete(second.receive()[0].receipt_handle)  # its receive read first's mark
        clock.now = start + shard_marks.MARK_SECONDS - 0.5
        with _MarkPuts(dynamodb) as puts:
            second.send("second")
        assert puts.count == 0  # trusted: no mark put
        clock.now = start + PAST_TRUST
        assert [m.body for m in consumer.receive()] == ["second"]
        clock.advance(limits.INDEX_LAG_GRACE_SECONDS)
        assert consumer.receive() == []


def test_a_drain_noted_after_a_newer_read_leaves_the_mark_put_again_in_that_read(
    client: QueueClient, dynamodb: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thread X drains shard s (drops its now mark); another process sends to s again (the mark is back); thread
    Z of X's process begins a receive and reads the marks (s listed, fresh for Z); then X notes its drain. Taking
    the dropped mark off by its sort key alone took the mark put again off Z's list, and Z answered empty."""
    monkeypatch.setattr(shard_marks, "LIST_SECONDS", 0.0)
    client.create_queue("race", shards=SHARDS)
    sender = _other(client, dynamodb).queue("race", "t")
    consumer = client.queue("race", "t")
    sender.send("m0")
    consumer.delete(consumer.receive(max_messages=10)[0].receipt_handle)
    clock.advance(PAST_TRUST)
    real_drained, real_priorities = shard_marks.Marks.note_drained, shard_marks.priorities
    z_read, drained = threading.Event(), threading.Event()
    z_got: list[Any] = []
    noted = []

    def z_priorities(*args: Any, **kwargs: Any) -> Any:
        known = real_priorities(*args, **kwargs)
        if threading.current_thread().name == "Z":
            z_read.set()
            drained.wait(10)
        return known

    def x_drained(self: Any, priority: int, dropped: set[Any], added: Any) -> None:
        if threading.current_thread() is threading.main_thread() and not noted:
            noted.append(dropped)
            sender.send("m1")  # the mark put again: the sender's trust ran out
            z = threading.Thread(target=lambda: z_got.extend(consumer.receive(max_messages=10)), name="Z")
            z.start()
            assert z_read.wait(10)
            real_drained(self, priority, dropped, added)
            drained.set()
            z.join(10)
            return
        real_drained(self, priority, dropped, added)

    monkeypatch.setattr(shard_marks, "priorities", z_priorities)
    monkeypatch.setattr(shard_marks.Marks, "note_drained", x_drained)
    assert consumer.receive(max_messages=10) == []  # X: visits s, nothing due, drains
    assert noted and noted[0], "X's drop should have landed"
    assert [m.body for m in z_got] == ["m1"]


@pytest.mark.usefixtures("listed_on_queue_time")
def test_an_empty_receive_visits_a_priority_its_second_read_of_the_marks_names(
    client: QueueClient, dynamodb: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shards_module, "BANDS_SECONDS", 3_600.0)
    client.create_queue("late", shards=SHARDS)
    consumer = client.queue("late", "t")
    consumer.send("x")
    consumer.delete(consumer.receive(max_messages=10)[0].receipt_handle)  # reads the list
    assert consumer.receive(max_messages=10) == []
    _other(client, dynamodb).queue("late", "t").send("high", priority=5)
    assert [m.body for m in consumer.receive(max_messages=10)] == ["high"]


def test_a_receive_reads_throttled_marks_once(client: QueueClient, dynamodb: Any, clock: Any) -> None:
    """Its priorities from the ready markers, then every shard: not a second try of the hot partition."""
    client.create_queue("hot", shards=8)
    sub = client.queue("hot", "t")
    sub.send("m")
    consumer = _other(client, dynamodb).queue("hot", "t")

    with throttling(dynamodb, ThrottleAll("Query", _marks_query)) as hook:
        with pytest.raises(QueueError):
            shard_marks.read(client._ctx, sub.space)
        one_read = hook.thrown
        assert [m.body for m in consumer.receive(max_messages=10)] == ["m"]
    assert hook.thrown == 2 * one_read, (hook.thrown, one_read)


def _ten_shards_emptied(client: QueueClient, dynamodb: Any, name: str) -> Any:
    """A consumer of a queue of 16 shards whose list names ten shards, marked a moment ago and emptied since."""
    client.create_queue(name, shards=16)
    consumer = _other(client, dynamodb).queue(name, "t")
    for shard in range(10):
        _process_on(client, dynamodb, name, shard).send(f"m{shard}")
    while got := consumer.receive(max_messages=10):
        consumer.delete_batch([m.receipt_handle for m in got])
    return consumer


@pytest.mark.usefixtures("listed_on_queue_time")
def test_a_receive_reads_the_marks_again_after_a_few_empty_shards_of_a_list_it_did_not_read(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any
) -> None:
    """Ten shards marked a moment ago and emptied since, then a message on an eleventh: a receive with the list
    read before it visits at most `STALE_VISITS` of the ten, reads the marks again and finds the new one (it
    visited all ten first)."""
    consumer = _ten_shards_emptied(client, dynamodb, "many")
    _process_on(client, dynamodb, "many", 12).send("new")
    counter.reset()
    assert [m.body for m in consumer.receive(max_messages=10)] == ["new"]
    assert counter.calls["Query"] <= 3 + 2, counter.queries  # three empty shards, the marks, the new shard


@pytest.mark.parametrize("ahead", [0, 2])
def test_a_trusting_send_is_found_by_a_drain_whose_clock_runs_ahead_when_the_index_lags(
    client: QueueClient, dynamodb: Any, clock: Any, ahead: float
) -> None:
    """The sender trusts its mark until `MARK_SECONDS` after its put on its clock; a consumer whose clock runs 2 s
    ahead dropped the mark at the trust plus the grace on its own clock, 2 s short of the grace after that send,
    and an index lagging 9 s hid the send from the drain: the message waited for a sweep. The drop waits for
    `SKEW_SECONDS` more."""
    lag = limits.INDEX_LAG_GRACE_SECONDS - 1
    client.create_queue("skew", shards=SHARDS)
    producer = client.queue("skew", "t")
    consumer = QueueClient(client.table_name, dynamodb=dynamodb, clock=lambda: clock() + ahead).queue("skew", "t")
    with IndexLag(lag, clock):
        start = _send_again_at_the_end_of_the_trust(producer, consumer, clock, lag, 0.1)
        clock.now = start + shard_marks.MARK_SECONDS + limits.INDEX_LAG_GRACE_SECONDS - 1.5
        assert consumer.receive() == []  # within the grace after "second": the index does not show it yet
    clock.advance(1)
    assert [m.body for m in consumer.receive(max_messages=10)] == ["second"]


def test_a_busy_read_that_fails_leaves_the_send_done_and_its_mark_put(
    client: QueueClient, dynamodb: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read before a put, refused otherwise than by a throttle (access denied), failed the send of a message
    already stored, and put no mark."""
    monkeypatch.setattr(shard_marks, "BUSY_PUTS", 0)
    client.create_queue("err", shards=8)
    producer = client.queue("err", "t")

    with refused(dynamodb, Refused("Query", _marks_query, code="AccessDeniedException", message="denied")):
        producer.send("m")
    assert [m.body for m in _other(client, dynamodb).queue("err", "t").receive(max_messages=10)] == ["m"]


def test_a_receive_from_a_list_it_did_not_read_reads_throttled_marks_once(
    client: QueueClient, dynamodb: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The list read by an earlier receive names priorities 5 and 0, whose messages another consumer holds: each
    priority that gave nothing read the marks again, throttled each time."""
    monkeypatch.setattr(shard_marks, "LIST_SECONDS", 3_600.0)
    client.create_queue("hot", shards=8, visibility_timeout=300)
    sub = client.queue("hot", "t")
    sub.send("p5", priority=5)
    sub.send("p0")
    consumer = _other(client, dynamodb).queue("hot", "t")
    assert consumer.receive(max_messages=1)  # its list names priorities 5 and 0
    _other(client, dynamodb).queue("hot", "t").receive(max_messages=10)  # the rest held elsewhere

    with throttling(dynamodb, ThrottleAll("Query", _marks_query)) as hook:
        with pytest.raises(QueueError):
            shard_marks.read(client._ctx, sub.space)
        one_read = hook.thrown
        assert consumer.receive(max_messages=10) == []
    assert hook.thrown == 2 * one_read, (hook.thrown, one_read)


@pytest.mark.usefixtures("listed_on_queue_time")
def test_a_throttled_shard_among_those_of_an_old_list_does_not_hide_a_message_on_another(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """Ten shards marked and emptied, the consumer's list names them all; a message on the one it visits last, and
    the first one's partition throttled. Stopping after three empty shards, the receive raised the throttle with
    nothing and never read the marks again: once a throttle is to be raised, every listed shard is visited."""
    consumer = _ten_shards_emptied(client, dynamodb, "hot")
    _process_on(client, dynamodb, "hot", 9).send("y")
    ctx = consumer.engine().ctx
    marks = shard_marks._marks(ctx, consumer.space)
    listed = shard_marks.read(ctx, consumer.space)
    for rank, shard in enumerate(range(10)):  # visiting order: 0 first, 9 last (the emptied ones' too)
        marks.note_taken(0, shard, 10 + rank)
        of_shard = [mark for mark in listed if mark.shard == shard and mark.at <= ctx.now_ms()]
        marks.looks.emptied(0, shard, ctx.now_ms() + rank, shard_marks._signature(of_shard), took=True)
    marks.looks.ended(0, found=True)  # its last receive found messages: the order above, not the steady shard
    hot = consumer.space.message_pk(0)

    def shard_0(body: dict[str, Any]) -> bool:
        return body.get("ExpressionAttributeValues", {}).get(":qpk", {}).get("S") == hot

    with throttling(dynamodb, ThrottleAll("Query", shard_0)) as hook:
        got = consumer.receive(max_messages=10)
    assert hook.thrown >= 1
    assert [m.body for m in got] == ["y"]


def _sharing(group: str, shards: int) -> str:
    """Another FIFO group on the shard of `group`."""
    return next(f"h{n}" for n in range(100_000) if keys.group_shard(f"h{n}", shards) == keys.group_shard(group, shards))


@pytest.mark.parametrize(("rate", "spread"), [(8, True), (2, False)])
def test_a_steady_fifo_sender_pays_one_mark_write_per_shard_per_mark_seconds(
    client: QueueClient, dynamodb: Any, clock: Any, rate: int, spread: bool
) -> None:
    """The module's promise for a steady sender, FIFO: one mark write per shard per `MARK_SECONDS`, not one per
    message, whatever groups its messages go to. `spread`: a new group for every message (a fleet's containers
    each sending a few messages a second to many groups, each container a process); otherwise two groups that
    share a shard, in turn. The marks of a sub-queue are one partition key (about 1,000 writes a second): a
    sender that put a mark per message, up to `BUSY_PUTS` a second, would let about 200 such containers fill it
    whatever the shard count."""
    shards, seconds = 4, 20
    client.create_queue("steady.fifo", fifo=True, shards=shards)
    sender = _other(client, dynamodb).queue("steady.fifo", "t")
    pair = ["a", _sharing("a", shards)]
    with _MarkPuts(dynamodb) as puts:
        for number in range(seconds * rate):
            sender.send(f"m{number}", group_id=f"g{number}" if spread else pair[number % 2])
            clock.advance(1 / rate)
    assert puts.count <= shards * (seconds // shard_marks.MARK_SECONDS + 1), puts.count
