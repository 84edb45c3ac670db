"""The order in which a receive visits the marked shards of a queue of 64 (`shard_marks._visit`, `shard_looks`):
shards with news before quiet ones, a steady sender's shard first, a process's own sends, a receive of one message
that empties its shard. Counted as a test's loop would: one message sent and received at once, the fake clock still
(so a standard sender of more than ten a second moves to the next shard every ten messages)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from queue_core import QueueClient

from tests.core.test_shard_marks import _other, listed_on_queue_time  # noqa: F401 (a fixture)
from tests.index_lag import IndexLag

SHARDS = 64
MESSAGES = 40

Groups = Callable[[int], dict[str, str]]


def _standard(_: int) -> dict[str, str]:
    return {}


def _one_group(_: int) -> dict[str, str]:
    return {"group_id": "g"}


def _three_groups(number: int) -> dict[str, str]:
    return {"group_id": f"g{number % 3}"}


def _a_group_each(number: int) -> dict[str, str]:
    return {"group_id": f"u{number}"}


def _loop(producer: Any, consumer: Any, groups: Groups, most: int = 10) -> int:
    """`MESSAGES` messages, each sent and received (up to `most`) at once, and up to ten receives more for what
    came late (a receive right after a sender moved to another shard may not find its message yet); how many
    were delivered."""
    delivered = 0
    for number in range(MESSAGES + 10):
        if number < MESSAGES:
            producer.send(f"m{number}", **groups(number))
        elif delivered == MESSAGES:
            break
        got = consumer.receive(max_messages=most)
        if got:
            consumer.delete_batch([m.receipt_handle for m in got])
        delivered += len(got)
    return delivered


def _pair(client: QueueClient, dynamodb: Any, fifo: bool, same: bool) -> tuple[Any, Any]:
    name = "order.fifo" if fifo else "order"
    client.create_queue(name, fifo=fifo, shards=SHARDS)
    producer = _other(client, dynamodb).queue(name, "t")
    consumer = producer if same else _other(client, dynamodb).queue(name, "t")
    assert consumer.receive(max_messages=10) == []
    return producer, consumer


@pytest.mark.usefixtures("listed_on_queue_time")
@pytest.mark.parametrize("same", [True, False], ids=["one process", "two processes"])
def test_a_tight_loop_of_a_standard_sender_costs_at_most_one_and_a_half_queries_a_message(
    client: QueueClient, dynamodb: Any, counter: Any, same: bool
) -> None:
    """The sender moves to the next shard every ten messages. Its own process knows where it sent: the shard of
    its last send goes before the shards it emptied (2.7 queries a message while those stayed news for the
    index's grace after each own send). Another process follows it: the shard its last two receives took from
    goes first, and after the move, the shard its mark led to (1.9 when the shard taken from longest ago went
    first)."""
    producer, consumer = _pair(client, dynamodb, False, same)
    counter.reset()
    assert _loop(producer, consumer, _standard) == MESSAGES
    assert counter.calls["Query"] / MESSAGES <= 1.5, counter.queries


@pytest.mark.usefixtures("listed_on_queue_time")
@pytest.mark.parametrize(
    ("groups", "same"),
    [(_one_group, False), (_three_groups, False), (_three_groups, True), (_a_group_each, True)],
    ids=["one group", "three groups", "three groups, one process", "a group each, one process"],
)
def test_a_tight_loop_of_a_fifo_sender_costs_at_most_three_queries_a_message(
    client: QueueClient, dynamodb: Any, counter: Any, groups: Groups, same: bool
) -> None:
    """A FIFO message costs its shard's query and its group's: three with the marks' read. A process that sends
    to a new group (a new shard) at each message knows where: 5.3 queries a message while the shards it sent to
    stayed news for the index's grace."""
    producer, consumer = _pair(client, dynamodb, True, same)
    counter.reset()
    assert _loop(producer, consumer, groups) == MESSAGES
    assert counter.calls["Query"] / MESSAGES <= 3, counter.queries


@pytest.mark.usefixtures("listed_on_queue_time")
@pytest.mark.parametrize("fifo", [False, True])
def test_a_receive_of_one_message_that_takes_its_shards_last_leaves_the_shard_quiet(
    client: QueueClient, dynamodb: Any, counter: Any, fifo: bool
) -> None:
    """A receive of one reads one entry more than it takes, so that it knows it took the last: the shard is then
    one it emptied, visited after those with news. Before, a shard that gave as many as asked stayed news, and
    each receive went there first (FIFO over three groups: 3.15 queries a message)."""
    producer, consumer = _pair(client, dynamodb, fifo, False)
    counter.reset()
    assert _loop(producer, consumer, _three_groups if fifo else _standard, most=1) == MESSAGES
    assert counter.calls["Query"] / MESSAGES <= (2.5 if fifo else 1.5), counter.queries


def test_an_own_send_the_index_did_not_show_yet_is_the_first_quiet_shard_visited(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """A process sends and at once receives; the index lags, so the receive's query of that shard finds nothing
    and it empties the shard with the marks as they are. The shard is visited first among the quiet ones by the
    next receive, once, so the message comes as soon as the index shows it, though the marks named no news."""
    client.create_queue("echo", shards=SHARDS)
    process = _other(client, dynamodb).queue("echo", "t")
    others = [_other(client, dynamodb).queue("echo", "t") for _ in range(3)]
    for number, other in enumerate(others):  # quiet shards, emptied by the process, taken from before its send
        other.send(f"o{number}")
        got = process.receive(max_messages=10)
        assert [m.body for m in got] == [f"o{number}"]
        process.delete(got[0].receipt_handle)
        clock.advance(0.1)
    with IndexLag(1, clock):
        clock.advance(0.5)
        process.send("mine")
        clock.advance(0.1)
        assert process.receive(max_messages=10) == []  # the index does not show it yet
        clock.advance(1)
        assert [m.body for m in process.receive(max_messages=10)] == ["mine"]


@pytest.mark.usefixtures("listed_on_queue_time")
def test_a_receive_from_an_old_list_stops_guessing_when_its_guesses_miss(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any
) -> None:
    """Each message comes from a new sender on a shard of its own, under a new mark the consumer's list (read
    earlier, kept) does not have. A guess at the quiet shards it emptied before misses each time, then it reads
    the marks anyway: after a few such misses it reads them first (`Marks.guessing`). 2.4 queries a message here;
    2.95 when it guessed at every receive."""
    _, consumer = _pair(client, dynamodb, False, False)
    for number in range(5):  # five shards the consumer empties: quiet ones to guess at
        _other(client, dynamodb).queue("order", "t").send(f"w{number}")
        got = consumer.receive(max_messages=10)
        assert [m.body for m in got] == [f"w{number}"]
        consumer.delete(got[0].receipt_handle)
    counter.reset()
    for number in range(20):
        clock.advance(0.05)  # a mark put again on a shard another sender used is a newer one
        _other(client, dynamodb).queue("order", "t").send(f"m{number}")
        got = consumer.receive(max_messages=10)
        assert [m.body for m in got] == [f"m{number}"], counter.queries[-6:]
        consumer.delete(got[0].receipt_handle)
    assert counter.calls["Query"] / 20 <= 2.6, counter.queries
