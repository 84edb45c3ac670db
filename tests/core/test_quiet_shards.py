"""Quiet shards (`queue_core.shard_looks`): a receive visits at most `QUIET_VISITS` shards its process emptied with
the marks as they are; a message that came to such a shard without a new mark must still come soon."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from queue_core import QueueClient, keys, shard_marks
from queue_core import shards as shards_module

from tests.core.test_shard_marks import PAST_TRUST, _other, _process_on

SHARDS = 8


def _drain_all(consumer: Any) -> int:
    """Receives and deletes until a receive comes back empty; how many messages it took."""
    taken = 0
    while got := consumer.receive(max_messages=10):
        consumer.delete_batch([m.receipt_handle for m in got])
        taken += len(got)
    return taken


def _after_each_query_of(
    monkeypatch: pytest.MonkeyPatch, store: Any, partition: str, meanwhile: Callable[[Any], None]
) -> None:
    """`meanwhile(answer)` runs after each of `store`'s index queries of `partition` has read its answer and before
    the receive acts on it: another process or thread acting while that query runs."""
    original = store.due

    def due(queried: str, *args: Any, **kwargs: Any) -> Any:
        answer = original(queried, *args, **kwargs)
        if queried == partition:
            meanwhile(answer)
        return answer

    monkeypatch.setattr(store, "due", due)


@pytest.mark.parametrize(("queue_wide", "own_jobs"), [(False, False), (True, False), (False, True)])
def test_a_silent_message_on_a_quiet_shard_is_not_starved_by_shards_kept_marked_by_heartbeats(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any, queue_wide: bool, own_jobs: bool
) -> None:
    """A worker holds two long jobs and extends their visibility every 15 s (each extension puts its shard's now
    mark once the 10 s trust has run out): both shards stay marked, never ripen, and are found empty after each
    extension, never taken from by the consumer. A message sent to a third shard within its sender's trust (no
    new mark) still comes within 120 s: a shard found with nothing goes behind the others (`IDLE_AGE_MS`,
    `IDLE_LOOKS`). When each receive spent its one quiet visit on the first of the two, it waited as long as the
    jobs ran. Queue-wide as well, and with the jobs held by the consumer's own process."""
    client.create_queue("hb", shards=SHARDS, visibility_timeout=60, queue_wide=queue_wide)
    z1 = _process_on(client, dynamodb, "hb", 1)
    z2 = _process_on(client, dynamodb, "hb", 2)
    y = _process_on(client, dynamodb, "hb", 3)
    consumer: Any = _other(client, dynamodb)
    worker = consumer.queue("hb", "t") if own_jobs else _other(client, dynamodb).queue("hb", "t")
    consumer = consumer.queue_wide("hb") if queue_wide else consumer.queue("hb", "t")
    z1.send("job1")
    z2.send("job2")
    jobs = worker.receive(max_messages=10)
    jobs += worker.receive(max_messages=10)  # a shard that gave fewer than asked ends a receive
    assert sorted(m.body for m in jobs) == ["job1", "job2"]
    clock.advance(1)
    assert consumer.receive(max_messages=10) == []  # shards 1 and 2 in flight: emptied
    y.send("y0")
    got = consumer.receive(max_messages=10)  # shard 3 gives y0 (fewer than asked): emptied
    assert [m.body for m in got] == ["y0"]
    consumer.delete(got[0].receipt_handle)
    clock.advance(1)
    y.send("y1")  # within the sender's trust of its own put: no new mark
    counter.reset()
    bodies: list[str] = []
    for step in range(240):  # 120 s, a receive every 0.5 s
        if step % 30 == 0:
            worker.change_visibility(jobs[0].receipt_handle, 60)
        if step % 30 == 15:
            worker.change_visibility(jobs[1].receipt_handle, 60)
        for message in consumer.receive(max_messages=10):
            bodies.append(message.body)
            consumer.delete(message.receipt_handle)
        if "y1" in bodies:
            break
        clock.advance(0.5)
    assert "y1" in bodies, f"y1 not received in {step * 0.5} s ({counter.calls['Query'] / (step + 1)} queries a poll)"


def test_an_own_send_during_a_receives_query_of_its_shard_leaves_the_shard_not_quiet(
    client: QueueClient, dynamodb: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A send of this process (another thread) stored while a receive's query of that shard runs, and missed by
    it: the receive's note that it emptied the shard lands after the send, and must not make the shard quiet with
    this process's own message in it (`ShardLooks.emptied` compares the note's time with the last send's)."""
    client.create_queue("own", shards=SHARDS)
    consumer_client = _other(client, dynamodb)
    consumer = consumer_client.queue("own", "t")
    shard = consumer.engine().traffic.rotation._next
    sender = _process_on(client, dynamodb, "own", shard)
    sender.send("first")
    got = consumer.receive(max_messages=10)
    assert [m.body for m in got] == ["first"]
    consumer.delete(got[0].receipt_handle)
    sent: list[str] = []

    def send_once(_: Any) -> None:
        if not sent:
            sent.append(consumer.send("own message").message_id)  # another thread of this process, meanwhile

    with monkeypatch.context() as patch:
        _after_each_query_of(patch, consumer_client._ctx.store, consumer.engine().space.message_pk(shard), send_once)
        assert consumer.receive(max_messages=10) == []  # its query ran before the send
    assert sent, "the hook did not run on the shard's query"
    assert sent[0].startswith(f"S{shard}"), sent
    space = consumer.engine().space
    marks = shard_marks._marks(consumer_client._ctx, space)
    listed = [m for m in shard_marks.read(consumer_client._ctx, space) if m.shard == shard and m.at == 0]
    assert marks.looks.order(0, {shard: shard_marks._signature(listed)})[0] == []


def test_a_shard_whose_messages_a_receive_left_visible_is_not_quiet(client: QueueClient, dynamodb: Any) -> None:
    """A receive with a visibility of 0 takes the shard's one message and leaves it visible at once: fewer than
    asked, yet the shard is not emptied, and must not count as quiet."""
    client.create_queue("peek", shards=SHARDS)
    consumer_client = _other(client, dynamodb)
    consumer = consumer_client.queue("peek", "t")
    sender = _process_on(client, dynamodb, "peek", 5)
    sender.send("stays visible")
    got = consumer.receive(max_messages=10, visibility_timeout=0)
    assert [m.body for m in got] == ["stays visible"]
    space = consumer.engine().space
    marks = shard_marks._marks(consumer_client._ctx, space)
    listed = [m for m in shard_marks.read(consumer_client._ctx, space) if m.shard == 5 and m.at == 0]
    assert marks.looks.order(0, {5: shard_marks._signature(listed)})[0] == []


def _drained(client: QueueClient, dynamodb: Any, name: str, fifo: bool) -> tuple[Any, dict[int, Any]]:
    """A consumer (a process of its own) of a queue of 16 shards whose messages, sent a moment ago to ten shards,
    it received and deleted; and per shard, what sends there (a standard process staying on it, a FIFO group)."""
    client.create_queue(name, fifo=fifo, shards=16)
    consumer = _other(client, dynamodb).queue(name, "t")
    senders: dict[int, Any] = {}
    if fifo:
        producer = _other(client, dynamodb).queue(name, "t")
        for number in range(200):
            group = f"g{number}"
            shard = keys.group_shard(group, 16)
            if shard < 10 and shard not in senders:
                senders[shard] = functools.partial(producer.send, group_id=group)
    else:
        senders = {shard: _process_on(client, dynamodb, name, shard).send for shard in range(10)}
    for shard, send in senders.items():
        send(f"m{shard}")
    assert _drain_all(consumer) == 10
    return consumer, senders


@pytest.mark.parametrize("fifo", [False, True])
def test_polls_of_a_queue_just_drained_of_ten_shards_cost_two_queries_each(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any, fifo: bool
) -> None:
    """Its process emptied the ten shards with the marks as they are: each poll visits one of them besides the
    marks (each visited all ten, 11 queries a poll, until the marks could go 25 s later); once they may go, each
    poll's visit is the drain's look, and the marks are gone after ten polls."""
    consumer, _ = _drained(client, dynamodb, "drained.fifo" if fifo else "drained", fifo)
    for _ in range(20):
        clock.advance(0.5)
        counter.reset()
        assert consumer.receive(max_messages=10) == []
        assert counter.calls["Query"] <= 2, counter.queries
    clock.advance(PAST_TRUST)
    for _ in range(10):
        counter.reset()
        assert consumer.receive(max_messages=10) == []
        assert counter.calls["Query"] <= 2, counter.queries
        clock.advance(1)
    assert [m for m in _marks(consumer) if m.at <= clock.now_ms()] == []


def _marks(consumer: Any) -> list[shard_marks.Mark]:
    return shard_marks.read(consumer.engine().ctx, consumer.space)


@pytest.mark.parametrize("fifo", [False, True])
@pytest.mark.parametrize("shard", [0, 9])
def test_a_message_sent_under_a_trusted_mark_to_one_of_ten_emptied_shards_comes_within_a_round_of_them(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any, fifo: bool, shard: int
) -> None:
    """Sent within its sender's trust of its own put (no new mark), to a shard the consumer emptied: each receive
    visits one such shard, so it comes within two rounds of the ten (a shard visited twice with nothing goes
    behind the others), each receive two queries at most besides what it found."""
    consumer, senders = _drained(client, dynamodb, "silent.fifo" if fifo else "silent", fifo)
    clock.advance(1)
    before = len(_marks(consumer))
    senders[shard]("again")
    assert len(_marks(consumer)) == before  # trusted: no mark put
    got: list[Any] = []
    receives = 0
    while not got and receives <= 2 * 10:
        clock.advance(0.2)
        counter.reset()
        got = consumer.receive(max_messages=10)
        receives += 1
        # A FIFO message costs its group's read besides its shard's; the receive that finds it may visit one more
        # quiet shard (`shard_looks.behind`).
        assert counter.calls["Query"] <= 2 + len(got) * (2 if fifo else 1), counter.queries
    assert [m.body for m in got] == ["again"], f"not received in {receives} receives"


def test_a_message_the_consumers_own_process_sends_to_a_shard_it_emptied_comes_at_once(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """A process knows what it sent: its own send makes the shard one to visit, whatever it knew of it."""
    consumer, _ = _drained(client, dynamodb, "own-send", False)
    clock.advance(1)
    sent = consumer.send("mine")
    assert int(sent.message_id[1:].split(".")[0]) < 16
    assert [m.body for m in consumer.receive(max_messages=10)] == ["mine"]


def test_a_silent_message_on_a_quiet_shard_is_not_starved_while_a_backlog_elsewhere_fills_every_receive(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """The consumer is busy: it receives one message at a time, ten a second, and a producer keeps a backlog on
    shard 4, so that every receive takes its message there. Two shards another worker's jobs are in flight on
    (emptied by this process, never taken from by it) go behind the others once looked at (`IDLE_AGE_MS`),
    though no receive finds nothing at all, and a message sent under a trusted mark to a third emptied shard
    comes within 50 receives. Counted only in receives that found nothing at all, those looks left it 120-200
    receives behind the two shards."""
    client.create_queue("busy", shards=SHARDS, visibility_timeout=60)
    z1 = _process_on(client, dynamodb, "busy", 1)
    z2 = _process_on(client, dynamodb, "busy", 2)
    y = _process_on(client, dynamodb, "busy", 3)
    producer = _process_on(client, dynamodb, "busy", 4)
    consumer = _other(client, dynamodb).queue("busy", "t")
    worker = _other(client, dynamodb).queue("busy", "t")
    z1.send("job1")
    z2.send("job2")
    jobs = worker.receive(max_messages=10)
    jobs += worker.receive(max_messages=10)
    assert sorted(m.body for m in jobs) == ["job1", "job2"]
    clock.advance(1)
    assert consumer.receive(max_messages=10) == []  # shards 1 and 2 in flight: emptied
    y.send("y0")
    got = consumer.receive(max_messages=10)
    assert [m.body for m in got] == ["y0"]
    consumer.delete(got[0].receipt_handle)
    for second in range(3):  # a backlog of 30 on shard 4 (ten a second keeps a sender on its shard)
        clock.advance(1)
        assert not producer.send_batch([{"body": f"b{second}.{n}"} for n in range(10)]).failed
    clock.advance(0.5)
    y.send("y1")  # within the sender's trust of its own put: no new mark
    bodies: list[str] = []
    for step in range(50):  # a receive of one message every 0.1 s, one new message on shard 4 (or 5) each
        got = consumer.receive()
        bodies += [m.body for m in got]
        if got:
            consumer.delete(got[0].receipt_handle)
        if "y1" in bodies:
            break
        clock.advance(0.1)
        producer.send(f"c{step}")
    assert "y1" in bodies, f"y1 not received in 50 receives ({len(bodies)} messages of the backlog taken)"


def test_a_shard_left_with_a_backlog_by_a_receive_that_lost_claims_to_another_consumer_is_not_quiet(
    client: QueueClient, dynamodb: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two consumers (processes) poll a backlog on one shard: while one receive's queries run, the other claims the
    same oldest entries, so the first takes fewer than it asked though the shard still holds messages. That shard
    is not emptied (claims were lost meanwhile), so the next receive finds the backlog. Noted as emptied,
    it went behind the 31 other shards emptied a moment before, and the backlog waited 63 receives."""
    client.create_queue("contended", shards=32)
    consumer_client = _other(client, dynamodb)
    consumer = consumer_client.queue("contended", "t")
    spread = _other(client, dynamodb).queue("contended", "t")
    for batch in range(32):  # ten a batch, one second: the sender moves to the next shard every ten messages
        assert not spread.send_batch([{"body": f"s{batch}.{n}"} for n in range(10)]).failed
    assert _drain_all(consumer) == 320
    shard = 3
    producers = [_process_on(client, dynamodb, "contended", shard) for _ in range(3)]
    for second in range(6):  # 180 messages on the shard, ten a second from each of three senders
        clock.advance(1)
        for number, producer in enumerate(producers):
            assert not producer.send_batch([{"body": f"b{number}.{second}.{n}"} for n in range(10)]).failed
    other = _other(client, dynamodb).queue("contended", "t")
    races: list[int] = []

    def claim_what_it_read(answer: Any) -> None:
        # The other consumer, meanwhile, claims what this query read: all but two the first time, all after.
        wanted, taken = len(answer[0]) - (0 if races else 2), 0
        while taken < wanted and (got := other.receive(max_messages=min(10, wanted - taken))):
            taken += len(got)
        races.append(taken)

    with monkeypatch.context() as patch:
        target = consumer.engine().space.message_pk(shard)
        _after_each_query_of(patch, consumer_client._ctx.store, target, claim_what_it_read)
        got = consumer.receive(max_messages=10)
    assert 0 < len(got) < 10, (len(got), races)
    consumer.delete_batch([m.receipt_handle for m in got])
    left = 180 - len(got) - sum(races)
    assert left >= 10, (len(got), races)
    clock.advance(0.1)
    # The next receive: after an empty one, the shard taken from last would come first anyway.
    assert consumer.receive(max_messages=10), f"{left} messages of shard {shard} not found by the next receive"


def test_an_idle_clients_ready_marker_goes_while_another_workers_extended_jobs_keep_shards_quiet(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any
) -> None:
    """Queue-wide, nearly nothing to receive: a worker holds three long jobs on shards 1-3 and extends each every
    15 s, 5 s apart (each extension puts its shard's now mark again, so none ripens), and the wide consumer finds
    each shard empty after its extension, so at any poll two or three are quiet. A receive that finds nothing in
    the client's sub-queue drops its ready marker (`ready.drain`, a look at every shard), quiet shards left
    unvisited or not: polls stay at about 3 queries. Kept while shards were left unvisited, every "ready at"
    marker of the extensions stayed too, each served at every poll: 20 to 41 queries a poll after 150 s."""
    client.create_queue("held", shards=SHARDS, visibility_timeout=60, queue_wide=True)
    wide = _other(client, dynamodb).queue_wide("held")
    assert wide.receive(max_messages=10) == []  # markers switched on
    zs = [_process_on(client, dynamodb, "held", shard) for shard in (1, 2, 3)]
    y = _process_on(client, dynamodb, "held", 4)
    worker = _other(client, dynamodb).queue("held", "t")
    for number, z in enumerate(zs):
        z.send(f"job{number}")
    jobs: list[Any] = []
    while len(jobs) < 3 and (got := worker.receive(max_messages=10)):
        jobs += got
    assert sorted(m.body for m in jobs) == ["job0", "job1", "job2"]
    per_poll: list[int] = []
    delivered: list[str] = []
    for step in range(150):  # 150 s, a poll a second
        if step % 5 == 0:
            worker.change_visibility(jobs[(step // 5) % 3].receipt_handle, 60)
        if step == 30:
            y.send("y0")
        counter.reset()
        for message in wide.receive(max_messages=10):
            delivered.append(message.body)
            wide.delete(message.receipt_handle)
        per_poll.append(counter.calls["Query"])
        clock.advance(1)
    assert delivered == ["y0"]
    markers = [m for m in wide._rotation().markers if m.client == "t"]
    last = per_poll[-60:]
    # Dropping the marker (before: the drain's look at every shard after each extension's marker came due) cost
    # 3.3 a poll here; kept, the extensions' "ready at" markers come due one by one and none is drained.
    assert sum(last) / len(last) <= 4, f"queries a poll over the last 60 s: {last}; {len(markers)} markers of t"


@pytest.mark.parametrize("shards", [32])  # 64: the same, in twice the time
def test_a_steady_trusting_sender_is_not_a_round_of_the_emptied_shards_late_at_every_message(
    client: QueueClient, dynamodb: Any, clock: Any, shards: int
) -> None:
    """A burst spread over every shard was just drained, and one sender keeps sending to shard 3, a message every
    0.5 s, within the trust of its own put (a new mark once per 10 s); the consumer receives every 0.1 s. Shard 3
    is emptied at each take, so it is quiet nearly always, and the one taken from last. Every message comes
    within 10 receives: after an odd number of empty receives in a row, the shard taken from last is visited
    first. Without that, each message waited a round of the burst's quiet shards (30-40 receives at 32 shards, up
    to 60 at 64) until their marks could go, 25 s after the burst."""
    client.create_queue("trickle", shards=shards)
    consumer = _other(client, dynamodb).queue("trickle", "t")
    spread = _other(client, dynamodb).queue("trickle", "t")
    for batch in range(shards):  # ten a batch, one second: the sender moves to the next shard every ten messages
        assert not spread.send_batch([{"body": f"s{batch}.{n}"} for n in range(10)]).failed
    assert _drain_all(consumer) == 10 * shards
    clock.advance(0.1)  # the sender's first put is later than the burst's (a mark's put_at only rises)
    sender = _process_on(client, dynamodb, "trickle", 3)
    waited: dict[str, int] = {}
    sent: dict[str, int] = {}
    for step in range(200):  # 20 s
        if step % 5 == 0:
            body = f"t{step}"
            sender.send(body)
            sent[body] = step
        for message in consumer.receive(max_messages=10):
            waited[message.body] = step - sent[message.body]
            consumer.delete(message.receipt_handle)
        clock.advance(0.1)
    lost = {body for body, step in sent.items() if body not in waited and step < 200 - 10}
    assert not lost, f"not received in 10 receives or more: {sorted(lost)}"
    late = {body: receives for body, receives in waited.items() if receives > 10}
    assert not late, f"{len(late)} of {len(waited)} received a second or more late (receives waited): {waited}"


@pytest.fixture
def lists_always_old(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every receive finds the marks it read before too old to serve (`LIST_SECONDS`), as a consumer whose receives
    come a second or more apart does (an HTTP poller, a consumer started per request)."""
    monkeypatch.setattr(shard_marks, "LIST_SECONDS", 0.0)
    monkeypatch.setattr(shards_module, "BANDS_SECONDS", 0.0)


def _take(consumer: Any, most: int = 10) -> list[str]:
    """One receive of up to `most`, each message deleted; their bodies."""
    got = consumer.receive(max_messages=most)
    if got:
        consumer.delete_batch([m.receipt_handle for m in got])
    return [m.body for m in got]


def _marks_queries(counter: Any) -> int:
    return len([values for values in counter.queries if values and values[0].startswith("K#")])


def test_a_consumer_of_a_steady_sender_goes_to_its_shard_before_reading_the_marks(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any, lists_always_old: None
) -> None:
    """Receives a second or more apart each read the marks and then the sender's shard: 2 queries a message. The
    shard the last two receives took from is visited first, the marks read only when it gives nothing or after
    `WARM_RECEIVES` such receives in a row: at most 1.5 queries a message, and never a message missed."""
    client.create_queue("warm", shards=SHARDS)
    sender = _process_on(client, dynamodb, "warm", 5)
    consumer = _other(client, dynamodb).queue("warm", "t")
    for n in range(3):  # the consumer learns where the sender's messages come
        sender.send(f"m{n}")
        _take(consumer)
        clock.advance(0.2)
    counter.reset()
    delivered = []
    for n in range(3, 23):
        sender.send(f"m{n}")
        delivered += _take(consumer)
        clock.advance(0.2)
    assert delivered == [f"m{n}" for n in range(3, 23)]
    assert counter.calls["Query"] / len(delivered) <= 1.5, counter.queries
    assert _marks_queries(counter) >= len(delivered) // (shard_marks.WARM_RECEIVES + 1)
    # The stream stops: the poll that finds the warm shard empty reads the marks and visits no shard it emptied.
    marks = shard_marks._marks(consumer.engine().ctx, consumer.engine().space)
    if not marks.goes_warm(0, int(clock() * 1000)):
        sender.send("one more")
        _take(consumer)
        clock.advance(0.2)
    assert marks.goes_warm(0, int(clock() * 1000))
    counter.reset()
    assert consumer.receive(max_messages=10) == []
    assert counter.calls["Query"] <= 2, counter.queries


def test_a_message_on_another_shard_waits_at_most_the_warm_receives(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any, lists_always_old: None
) -> None:
    """While the warm shard keeps giving a message at each receive, a message sent to another shard comes within
    `WARM_RECEIVES` receives more than it would with the marks read first; and once the streams stop, a poll that
    finds nothing costs two queries at most."""
    client.create_queue("fair", shards=SHARDS)
    steady = _process_on(client, dynamodb, "fair", 2)
    other = _process_on(client, dynamodb, "fair", 6)
    consumer = _other(client, dynamodb).queue("fair", "t")
    for n in range(4):
        steady.send(f"s{n}")
        _take(consumer)
        clock.advance(0.2)
    other.send("elsewhere")
    rounds = 0
    while True:
        steady.send("more")
        rounds += 1
        if "elsewhere" in _take(consumer):
            break
        assert rounds <= shard_marks.WARM_RECEIVES + 1, "the other shard's message waited past the warm receives"
        clock.advance(0.2)
    # The streams stop. A poll that finds the warm shard empty, even one not emptied by the receives before it
    # (receives of one message), reads the marks and visits no shard its process emptied: an empty receive costs
    # two queries at most.
    marks = shard_marks._marks(consumer.engine().ctx, consumer.engine().space)
    clock.advance(PAST_TRUST)  # the other shard's mark may go: a warm shard is taken only with no other marked
    while _take(consumer):
        clock.advance(0.2)
    for n in range(2):
        steady.send(f"last {n}")
        assert _take(consumer, 1) == [f"last {n}"]  # all it asked for: the shard is not taken for emptied
    assert marks.goes_warm(0, int(clock() * 1000))
    clock.advance(0.2)
    counter.reset()
    assert consumer.receive(max_messages=1) == []
    assert counter.calls["Query"] <= 2, counter.queries
