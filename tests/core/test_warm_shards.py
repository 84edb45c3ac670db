"""Warm shards (`shard_marks.Marks.warm`): a receive whose list of marks is old visits first the shard its process's
last receives took from; what waits elsewhere must still come within `WARM_RECEIVES` receives more."""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from queue_core import QueueClient, QueueError, shard_marks

from tests.conftest import TABLE
from tests.core.test_quiet_shards import _drained, _take, lists_always_old  # noqa: F401 (a fixture)
from tests.core.test_shard_marks import PAST_TRUST, _other, _process_on
from tests.throttle_hooks import ThrottleAll, throttling

SHARDS = 8
# The most receives a message sent under a trusted mark waited in the steady sender's test below (seeded), with
# every receive reading the marks.
SLOWEST_READING = 26


def _warmed(
    client: QueueClient, dynamodb: Any, clock: Any, name: str, shard: int, priority: int = 0
) -> tuple[Any, Any]:
    """A sender on `shard` and a consumer whose receives of `priority` go to that shard first (`Marks.warm`)."""
    client.create_queue(name, shards=SHARDS)
    sender = _process_on(client, dynamodb, name, shard)
    consumer = _other(client, dynamodb).queue(name, "t")
    for n in range(3):
        sender.send(f"w{n}", priority=priority)
        assert _take(consumer) == [f"w{n}"]
        clock.advance(0.2)
    marks = shard_marks._marks(consumer.engine().ctx, consumer.engine().space)
    assert marks.goes_warm(priority, int(clock() * 1000))
    return sender, consumer


def _partition_query(pk: str) -> Any:
    def match(body: dict[str, Any]) -> bool:
        return body.get("ExpressionAttributeValues", {}).get(":qpk", {}).get("S") == pk

    return match


@pytest.mark.usefixtures("lists_always_old")
def test_a_throttled_warm_shard_does_not_hide_a_message_on_another(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """The warm shard's partition throttles while a message waits on another shard. The warm visit lists that
    shard alone, so its receive raises the throttle at once; the next receive must read the marks and visit the
    others (a receive of a list it read visits every listed shard before it raises a throttle), not go warm
    again while the throttle lasts."""
    _, consumer = _warmed(client, dynamodb, clock, "hotwarm", 2)
    _process_on(client, dynamodb, "hotwarm", 6).send("y")
    hot = consumer.space.message_pk(2)
    answers: list[Any] = []
    with throttling(dynamodb, ThrottleAll("Query", _partition_query(hot))):
        for _ in range(2):  # the throttled warm visit; then a receive that reads the marks
            try:
                answers.append(_take(consumer))
            except QueueError as error:
                answers.append(type(error).__name__)
            clock.advance(0.2)
    assert ["y"] in answers, answers


def _claims_of(pk: str, sk: str) -> Any:
    def match(body: dict[str, Any]) -> bool:
        key = body.get("Key", {})
        return key.get("pk", {}).get("S") == pk and key.get("sk", {}).get("S") == sk

    return match


def _item_sk(dynamodb: Any, pk: str, body: str) -> str:
    items = dynamodb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": pk}},
    )["Items"]
    return next(item["sk"]["S"] for item in items if item.get("body", {}).get("S") == body)


@pytest.mark.usefixtures("lists_always_old")
def test_warm_receives_that_meet_a_throttle_after_a_message_still_read_the_marks(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """Each warm receive takes the steady sender's new message and meets a throttle on the warm shard's partition
    (a claim there refused), and answers what it took. It still counts among the warm receives in a row, and the
    receive after it reads the marks: a message on another shard comes."""
    sender, consumer = _warmed(client, dynamodb, clock, "partwarm", 2)
    hot = consumer.space.message_pk(2)
    sender.send("stuck")
    stuck = _item_sk(dynamodb, hot, "stuck")
    _process_on(client, dynamodb, "partwarm", 6).send("y")
    delivered: list[str] = []
    with throttling(dynamodb, ThrottleAll("UpdateItem", _claims_of(hot, stuck))):
        for n in range(3):  # a warm visit taking a message, then throttled; then a receive that reads the marks
            sender.send(f"s{n}")
            with contextlib.suppress(QueueError):
                delivered += _take(consumer)
            clock.advance(0.2)
    assert "y" in delivered, delivered


@pytest.mark.usefixtures("lists_always_old")
def test_a_warm_miss_does_not_give_a_lower_priority_before_one_its_own_read_names(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """The consumer's warm shard is of priority 5 and gives nothing now; another process sent a message of priority
    3 (first used) and one of 0. The receive reads the marks after its warm miss, and they name priority 3: it
    visits it before priority 0, as a receive that read the marks first does, not in the order of its old list."""
    _, consumer = _warmed(client, dynamodb, clock, "ranks", 2, priority=5)
    _process_on(client, dynamodb, "ranks", 6).send("mid", priority=3)
    _process_on(client, dynamodb, "ranks", 4).send("low")
    first = _take(consumer)
    assert "mid" in first, first


@pytest.mark.usefixtures("lists_always_old")
def test_an_empty_receive_whose_warm_shard_another_process_drained_costs_two_queries_at_most(
    client: QueueClient, dynamodb: Any, clock: Any, counter: Any
) -> None:
    """The consumer took one message at a time from the sender's shard (never emptying it); another process took
    the rest, and once the marks could go, its empty receive dropped them. The consumer's list still names them:
    its warm visit queries the shard and finds nothing. It must not drain with those marks (a look at the shard's
    first entry, for marks already gone) before it reads the marks: two queries at most."""
    client.create_queue("drained", shards=SHARDS)
    sender = _process_on(client, dynamodb, "drained", 2)
    consumer = _other(client, dynamodb).queue("drained", "t")
    other = _other(client, dynamodb).queue("drained", "t")
    for n in range(4):
        sender.send(f"m{n}")
    for _ in range(2):
        assert len(_take(consumer, 1)) == 1
        clock.advance(0.2)
    marks = shard_marks._marks(consumer.engine().ctx, consumer.engine().space)
    assert marks.goes_warm(0, int(clock() * 1000))
    assert len(_take(other)) == 2
    clock.advance(PAST_TRUST)
    assert _take(other) == []  # drops the shard's marks
    assert [mark for mark in shard_marks.read(client._ctx, consumer.space) if mark.shard == 2] == []
    counter.reset()
    assert consumer.receive(max_messages=1) == []
    assert counter.calls["Query"] <= 2, counter.queries


@pytest.fixture
def seeded() -> Iterator[None]:
    """The visiting order (random among ties) and the senders' shards, the same at each run."""
    state = random.getstate()
    random.seed(37)
    yield
    random.setstate(state)


@pytest.mark.parametrize("shard", [2, 7])
@pytest.mark.usefixtures("lists_always_old", "seeded")
def test_a_message_sent_under_a_trusted_mark_to_an_emptied_shard_is_not_held_back_by_a_steady_senders_shard(
    client: QueueClient, dynamodb: Any, clock: Any, shard: int
) -> None:
    """Ten shards emptied by the consumer; a steady sender on another shard gives a message at each receive; a
    message sent under a trusted mark to one of the ten. Receives that read the marks each visit one of the ten
    (the message came within `SLOWEST_READING` receives on every shard when each receive read them). Warm
    receives would visit none of them, and one of the ten came every five receives (up to 48 late): while the
    list names other shards than the warm one, a receive reads the marks first."""
    consumer, senders = _drained(client, dynamodb, "steadyquiet", False)
    steady = _process_on(client, dynamodb, "steadyquiet", 12)
    marks = shard_marks._marks(consumer.engine().ctx, consumer.engine().space)
    for n in range(20):  # until the consumer's receives go to the steady sender's shard first
        steady.send(f"w{n}")
        _take(consumer)
        clock.advance(0.2)
        if n >= 5 and marks.goes_warm(0, int(clock() * 1000)):
            break
    senders[shard]("again")
    receives = 0
    got: list[str] = []
    while "again" not in got and receives < 100:
        steady.send(f"s{receives}")
        got = _take(consumer)
        receives += 1
        clock.advance(0.2)
    assert receives <= SLOWEST_READING + shard_marks.WARM_RECEIVES, f"received after {receives} receives"


@pytest.mark.usefixtures("lists_always_old")
def test_concurrent_receives_of_one_process_read_the_marks_after_the_warm_receives(
    client: QueueClient, dynamodb: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Receives of one process share its warm shard. Counted only when they end, receives that overlap all went
    there, however many of them, and a message of a priority first used by another process waited behind them
    all; each counts itself when it begins, so that at most `WARM_RECEIVES` of them go warm."""
    sender, consumer = _warmed(client, dynamodb, clock, "threads", 2)
    for n in range(20):
        sender.send(f"b{n}")
    _process_on(client, dynamodb, "threads", 6).send("high", priority=4)
    overlapping = 2 * shard_marks.WARM_RECEIVES
    together = threading.Barrier(overlapping)
    store = consumer.engine().ctx.store
    original = store.due
    warm_partition = consumer.space.message_pk(2)

    def due(partition: str, *args: Any, **kwargs: Any) -> Any:
        if partition == warm_partition:
            with contextlib.suppress(threading.BrokenBarrierError):
                together.wait(timeout=1)  # every receive is under way before any ends
        return original(partition, *args, **kwargs)

    monkeypatch.setattr(store, "due", due)
    answers: list[list[str]] = []

    def receive() -> None:
        answers.append([m.body for m in consumer.receive(max_messages=1)])

    threads = [threading.Thread(target=receive) for _ in range(overlapping)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert ["high"] in answers, answers


@pytest.mark.usefixtures("lists_always_old")
def test_a_warm_miss_of_priority_0_gives_a_higher_priority_its_own_read_names_first(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """The consumer's warm shard is of priority 0 and gives nothing now; another process sent a message of priority
    5 (first used) and one of 0, each to another shard. The receive reads the marks after its warm miss, and they
    name priority 5: a receive of one message must give it, not the priority 0 one."""
    _, consumer = _warmed(client, dynamodb, clock, "inverted", 2)
    _process_on(client, dynamodb, "inverted", 6).send("high", priority=5)
    _process_on(client, dynamodb, "inverted", 4).send("low")
    assert _take(consumer, 1) == ["high"]


@pytest.mark.usefixtures("lists_always_old")
def test_a_receive_planned_warm_whose_shard_went_cold_meanwhile_gives_the_higher_priority_first(
    client: QueueClient, dynamodb: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`warm_priorities` plans the receive from the old list (priority 0 alone); before it visits, other receives of
    its process use up the warm receives in a row, so `warm` says no and it reads the marks before any shard. They
    name priority 5: a receive of one message must give it, as any receive that read the marks first does."""
    _, consumer = _warmed(client, dynamodb, clock, "cold", 2)
    _process_on(client, dynamodb, "cold", 6).send("high", priority=5)
    _process_on(client, dynamodb, "cold", 4).send("low")
    planned = shard_marks.Marks.warm_priorities

    def then_others_go_warm(marks: shard_marks.Marks, now: int) -> list[int] | None:
        known = planned(marks, now)
        for _ in range(shard_marks.WARM_RECEIVES):
            marks.warm(0, now)  # the other receives' places in the count
        return known

    monkeypatch.setattr(shard_marks.Marks, "warm_priorities", then_others_go_warm)
    assert _take(consumer, 1) == ["high"]
