"""Dead letters moved into another queue (SQS's move task with a destination): each DLQ copy becomes one message
there, once, whatever is retried or run twice at once."""

from __future__ import annotations

import threading

import pytest
from queue_core import QueueClient

from tests.conftest import FakeClock
from tests.reliability.faults import FaultInjector, Kind


def _dead_letters(client: QueueClient, clock: FakeClock, name: str, count: int) -> None:
    client.create_queue(name, max_receive_count=1, visibility_timeout=10)
    queue = client.queue(name, "a")
    for n in range(count):
        queue.send(f"m{n}", attributes={"n": str(n)}, **({"group_id": f"g{n % 2}"} if name.endswith(".fifo") else {}))
    while queue.receive(max_messages=10):
        clock.advance(11)
    assert queue.stats().dlq == count


@pytest.mark.parametrize("suffix", ["", ".fifo"])
def test_a_move_whose_every_answer_was_lost_moves_each_dead_letter_once(
    client: QueueClient, clock: FakeClock, suffix: str
) -> None:
    _dead_letters(client, clock, f"source{suffix}", 4)
    client.create_queue(f"destination{suffix}")
    faults = FaultInjector(retried_rate=1.0, operations=frozenset({"TransactWriteItems"})).attach(client.dynamodb)
    try:
        moved = client.queue(f"source{suffix}", "a").move_dead_letters(client.queue(f"destination{suffix}", "a"))
    finally:
        faults.detach()
    assert faults.counts[Kind.ANSWER_LOST_RETRIED] == 4
    assert moved == 4
    destination = client.queue(f"destination{suffix}", "a")
    got = destination.receive(max_messages=10)
    assert sorted(message.body for message in got) == ["m0", "m1", "m2", "m3"]
    assert {message.body: message.attributes for message in got}["m2"] == {"n": "2"}
    assert client.queue(f"source{suffix}", "a").stats().dlq == 0


def test_a_move_of_n_dead_letters_moves_n_whatever_the_shard_count(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("sharded", max_receive_count=1, visibility_timeout=10, shards=2)
    queue = client.queue("sharded", "a")
    for n in range(6):
        queue.send(f"m{n}")
    while queue.receive(max_messages=10):
        clock.advance(11)
    assert queue.stats().dlq == 6
    client.create_queue("sharded-destination")
    source, destination = client.queue("sharded", "a"), client.queue("sharded-destination", "a")
    assert source.move_dead_letters(destination, max_messages=3) == 3
    assert source.stats().dlq == 3 and len(destination.receive(max_messages=10)) == 3


def test_two_moves_at_once_move_each_dead_letter_once(client: QueueClient, clock: FakeClock) -> None:
    _dead_letters(client, clock, "racing", 4)
    client.create_queue("racing-destination")
    source, destination = client.queue("racing", "a"), client.queue("racing-destination", "a")
    counts: list[int] = []
    threads = [threading.Thread(target=lambda: counts.append(source.move_dead_letters(destination))) for _ in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(counts) == 4
    assert sorted(message.body for message in destination.receive(max_messages=10)) == [f"m{n}" for n in range(4)]
    assert destination.receive(max_messages=10) == []


def test_a_create_that_cannot_name_a_target_finds_a_source_the_same(client: QueueClient) -> None:
    """The REST API's idempotent create passes only the fields it knows: a queue whose SQS RedrivePolicy names a
    target is the same queue to it."""
    client.create_queue("again-dlq")
    client.create_queue("again-source", max_receive_count=2, dead_letter_target="again-dlq")
    again = client.create_queue("again-source", max_receive_count=2)
    assert not again.created
    assert again.dead_letter_target == "again-dlq"
