"""Quiet turns (`shard_marks.Marks.quiet_turn`): while shards with news keep giving, every few receives one visits
the quiet shards first, so that a message stored on a quiet shard under a trusted mark is not held back for long,
whatever else the process's receives and sends do."""

from __future__ import annotations

import random
from typing import Any

import pytest
from queue_core import QueueClient, shard_marks

from tests.core.test_shard_marks import _other, _process_on, listed_on_queue_time  # noqa: F401 (a fixture)

SHARDS = 8


def test_a_message_on_a_quiet_shard_comes_though_own_sends_leave_a_shard_to_look_at_again_before_each_turn(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """A consumer of one message at a time follows another process's backlog (a shard with news at each receive)
    and itself sends a message now and then, which it takes from its own shard at once: that shard is emptied
    within the index's grace after its own send, the first quiet shard a later receive visits, once. A message
    stored under a trusted mark on another quiet shard must still come within a few quiet turns: the look at the
    own shard must not take every turn's one quiet visit."""
    client.create_queue("turns", shards=SHARDS)
    consumer_client = _other(client, dynamodb)
    consumer = consumer_client.queue("turns", "t")
    own = consumer.engine().traffic.rotation._next
    quiet_shard, busy_shard = [shard for shard in range(SHARDS) if shard != own][:2]
    quiet = _process_on(client, dynamodb, "turns", quiet_shard)
    busy = _process_on(client, dynamodb, "turns", busy_shard)
    quiet.send("first")  # puts the quiet shard's mark, trusted by its sender for 10 s
    got = consumer.receive(max_messages=10)
    assert [m.body for m in got] == ["first"]
    consumer.delete(got[0].receipt_handle)  # the quiet shard emptied by the consumer
    clock.advance(0.5)
    quiet.send("waiting")  # within its sender's trust: no new mark, so the shard stays quiet to the consumer
    bodies: list[str] = []
    sent = 0
    for step in range(600):  # 60 s of receives 0.1 s apart
        while sent - sum(body.startswith("b") for body in bodies) < 3:
            busy.send(f"b{sent}")
            sent += 1
        if step % 4 == 0:
            consumer.send(f"own{step}")
        for message in consumer.receive(max_messages=1):
            bodies.append(message.body)
            consumer.delete(message.receipt_handle)
        if "waiting" in bodies:
            break
        clock.advance(0.1)
    assert "waiting" in bodies, f"not received in {step * 0.1:.1f} s"
    assert step <= 100, f"received after {step * 0.1:.1f} s"


@pytest.mark.parametrize("layout", [(1, 2, 3, 4, 5), (1, 2, 3, 4, 1)], ids=["five shards", "two senders share one"])
@pytest.mark.usefixtures("listed_on_queue_time")
def test_a_trickle_from_five_standard_senders_in_turn_comes_at_most_a_round_late(
    client: QueueClient, dynamodb: Any, clock: Any, layout: tuple[int, ...]
) -> None:
    """Five senders (processes of their own) in turn, one message each 0.2 s, each trusting its own mark after its
    first send: their shards are quiet to the consumer, whose receive(10) each round visits one of them (and one
    more when it gives a message its last receive could have taken: `shard_looks.behind`)."""
    client.create_queue("five", shards=64)
    senders = [_process_on(client, dynamodb, "five", shard) for shard in layout]
    consumer = _other(client, dynamodb).queue("five", "t")
    late: list[int] = []
    for number in range(30 + 20):
        if number < 30:
            senders[number % 5].send(f"m{number}")
            clock.advance(0.01)  # the receive comes a moment after the send
        elif len(late) == 30:
            break
        for message in consumer.receive(max_messages=10):
            consumer.delete(message.receipt_handle)
            late.append(number - int(message.body[1:]))
        clock.advance(0.2)
    assert len(late) == 30
    assert max(late) <= 2, str(late)


def test_a_send_committed_in_the_callers_own_transaction_is_found_at_once_by_its_own_process(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """The mark of a send built for the caller's own transaction is put (or trusted) before the commit, and this
    process notes the send then (`shard_marks.ahead`): its receives that visit the shard before the commit find
    nothing there. Once committed, the message must come at once, though another shard keeps giving (a receive
    of one message at a time), as it does to a consumer of another process."""
    client.create_queue("outbox", shards=SHARDS)
    process = _other(client, dynamodb)
    sub = process.queue("outbox", "t")
    own = sub.engine().traffic.rotation._next
    busy = _process_on(client, dynamodb, "outbox", next(shard for shard in range(SHARDS) if shard != own))
    first = sub.send_transact_items("first")
    dynamodb.transact_write_items(TransactItems=first.items)
    bodies: list[str] = []
    for number in range(3):
        busy.send(f"b{number}")
    for _ in range(3):  # the own shard emptied, a backlog elsewhere
        for message in sub.receive(max_messages=1):
            bodies.append(message.body)
            sub.delete(message.receipt_handle)
        busy.send(f"b{len(bodies)}")
        clock.advance(0.1)
    assert "first" in bodies, bodies
    send = sub.send_transact_items("second")  # the mark trusted: no new put
    for _ in range(4):  # receives before the commit: the own shard has nothing yet
        for message in sub.receive(max_messages=1):
            bodies.append(message.body)
            sub.delete(message.receipt_handle)
        busy.send(f"b{len(bodies)}")
        clock.advance(0.1)
    dynamodb.transact_write_items(TransactItems=send.items)
    receives = 0
    while "second" not in bodies and receives < 20:
        receives += 1
        for message in sub.receive(max_messages=1):
            bodies.append(message.body)
            sub.delete(message.receipt_handle)
        busy.send(f"b{len(bodies)}")
        clock.advance(0.1)
    assert "second" in bodies and receives <= 2, f"{receives} receives: {bodies}"


@pytest.mark.parametrize("pause", [1.1, 0.1], ids=["a second apart", "fast"])
@pytest.mark.parametrize("receives", [2, 3], ids=["no idle poll", "an idle poll"])
def test_a_message_on_a_quiet_shard_comes_to_a_worker_that_sends_follow_ups_it_takes_itself(
    client: QueueClient, dynamodb: Any, clock: Any, monkeypatch: pytest.MonkeyPatch, receives: int, pause: float
) -> None:
    """A worker receives ten at a time, each receive reading the marks (a second or more apart in real time), and
    sends a follow-up of what it handled, which lands on its own shard and which its next receive takes; then it
    takes a message another producer sent (a process of its own each time, so each puts its mark), looks at its
    own shard again once (the index may not have shown its send), and polls once more. Counted as visits of the
    quiet shards, the look at its own shard and, after that empty receive, the one at the shard it took from last
    kept every quiet turn from coming: a message stored under a trusted mark on another shard it emptied waited
    for good."""
    monkeypatch.setattr(shard_marks, "LIST_SECONDS", 0.0)
    client.create_queue("work", shards=SHARDS)
    worker = _other(client, dynamodb).queue("work", "t")
    own = worker.engine().traffic.rotation._next
    quiet_shard, busy_shard = [shard for shard in range(SHARDS) if shard != own][:2]
    quiet = _process_on(client, dynamodb, "work", quiet_shard)
    quiet.send("first")
    got = worker.receive(max_messages=10)
    assert [m.body for m in got] == ["first"]
    worker.delete(got[0].receipt_handle)
    clock.advance(0.5)
    quiet.send("waiting")  # within its sender's trust: no new mark
    bodies: list[str] = []
    for cycle in range(30):
        worker.send(f"f{cycle}")
        for step in range(receives + 1):
            if step == 1:
                _process_on(client, dynamodb, "work", busy_shard).send(f"x{cycle}")
            for message in worker.receive(max_messages=10):
                bodies.append(message.body)
                worker.delete(message.receipt_handle)
            clock.advance(pause)
        if "waiting" in bodies:
            break
    assert "waiting" in bodies, f"not received in {cycle + 1} cycles: {bodies}"
    assert cycle <= 3, f"received in cycle {cycle + 1}"


_TIES = "with these ties among shards the standard message comes back only after 10 s (4 seeds of 12)"


@pytest.mark.parametrize(
    ("fifo", "seed"),
    [(False, 37), (True, 37), pytest.param(False, 2, marks=pytest.mark.xfail(strict=True, reason=_TIES))],
    ids=["standard", "FIFO", "standard, other ties"],
)
def test_a_message_not_deleted_in_time_comes_back_soon_while_other_shards_keep_giving(
    client: QueueClient, dynamodb: Any, clock: Any, fifo: bool, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A receive of one message takes its shard's last (`shards.Seen.TAKEN`) and the consumer does not delete it:
    when its visibility ends it is back with no write, so no mark says so, on a shard that process emptied. A
    backlog on other shards (other groups) keeps every receive busy, and a burst left 64 shards quiet: the shard
    must be the first quiet one a receive visits once the claim ran out, not wait a round of them (a FIFO group
    whose lock ended came 29 s late). The order of ties among shards is random, and the list of marks a process
    read serves for a second of real time: both are held for the test (`listed_on_queue_time`), a seed apart.
    With some ties (seed 2) the standard message still comes back late: known, not mended."""
    monkeypatch.setattr(shard_marks, "LIST_SECONDS", 3_600.0)
    state = random.getstate()
    random.seed(seed)
    try:
        _comes_back_soon(client, dynamodb, clock, fifo)
    finally:
        random.setstate(state)


def _comes_back_soon(client: QueueClient, dynamodb: Any, clock: Any, fifo: bool) -> None:
    name = "back.fifo" if fifo else "back"
    client.create_queue(name, fifo=fifo, shards=64)
    producer = _other(client, dynamodb).queue(name, "t")
    consumer = _other(client, dynamodb).queue(name, "t")
    for batch in range(10):
        producer.send_batch(
            [{"body": f"b{batch}.{i}", **({"group_id": f"g{batch}.{i}"} if fifo else {})} for i in range(10)]
        )
    drained = 0
    while drained < 100:
        got = consumer.receive(max_messages=10)
        consumer.delete_batch([m.receipt_handle for m in got])
        drained += len(got)
    clock.advance(0.5)
    _other(client, dynamodb).queue(name, "t").send("late", **({"group_id": "late"} if fifo else {}))
    got = consumer.receive(max_messages=1, visibility_timeout=2)
    assert [m.body for m in got] == ["late"]  # not deleted: back in 2 s
    busy = _other(client, dynamodb).queue(name, "t")
    for number in range(100):
        busy.send(f"x{number}", **({"group_id": f"x{number % 5}"} if fifo else {}))
    waited = 0.0
    while waited < 10:
        clock.advance(0.1)
        waited += 0.1
        got = consumer.receive(max_messages=1)
        if got:
            consumer.delete(got[0].receipt_handle)
        if any(m.body == "late" for m in got):
            break
    assert any(m.body == "late" for m in got), "not back within 10 s"
    assert waited <= 3.5, f"back after {waited:.1f} s"
