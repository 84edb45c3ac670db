"""The edges of the send deadline (`Store.sent_by`): what it must not hold back, and the writes built from a
queue's settings that must land before another process acts on a change of them.

A deadline bounds when a write built from cached settings may still land; a read lands nothing, and the read that
tells which puts of a batch whose answer was lost were stored must still go out, or stored messages are reported as
not stored and sent again.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError
from moto.core.models import botocore_stubber
from queue_core import QueueClient, limits, registry, shard_marks, store
from queue_core.store import Overdue, Store

from tests.conftest import TABLE, FakeClock
from tests.core.answers import LostAnswer, attached


class ClockTime:
    """The `time` of the registry and the store, whose monotonic time moves with the test's clock: the settings'
    age in the cache and the deadlines of writes built from them pass as the queue's time does."""

    def __init__(self, clock: FakeClock) -> None:
        self._clock = clock
        self._start = (time.monotonic(), clock())

    def monotonic(self) -> float:
        return self._start[0] + self._clock() - self._start[1]

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(seconds)


@pytest.fixture
def clock_time(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> ClockTime:
    moved = ClockTime(clock)
    monkeypatch.setattr(registry, "time", moved)
    monkeypatch.setattr(store, "time", moved)
    return moved


def _deadline_in(client: QueueClient, name: str, seconds: float) -> None:
    """This process's cached settings of `name`, as read so long ago that a write built from them must be sent
    within `seconds` from now."""
    registry = client._ctx.registry
    settings = registry.get(name, fresh=True)
    read_at = time.monotonic() - limits.SETTINGS_CACHE_SECONDS - limits.SEND_GRACE_SECONDS + seconds
    registry._cache[name] = (time.monotonic(), replace(settings, read_at=read_at))


def test_the_puts_of_a_batch_whose_answer_was_lost_past_the_deadline_are_found_stored(
    client: QueueClient, dynamodb: Any
) -> None:
    """A batch of puts is applied and its answer lost, and the deadline passes while it waits for it (a stalled
    connection). The SDK sends no batch of puts again; the store reads which were stored instead. That read lands
    nothing and must go out whatever the deadline: held back, every entry is reported as perhaps not stored, and
    the caller, told to send it again, stores each message twice."""
    client.create_queue("jobs", shards=1)
    jobs = client.queue("jobs", "c")
    jobs.send("warm")  # the client's registration, out of the way
    jobs.receive()
    _deadline_in(client, "jobs", 0.2)
    lost = [0]

    def apply_then_time_out(request: Any, event_name: str, **_: Any) -> None:
        if not event_name.endswith(".BatchWriteItem") or lost[0]:
            return
        lost[0] += 1
        botocore_stubber(event_name=event_name, request=request)  # applied
        time.sleep(0.3)  # the answer never comes; the deadline passes meanwhile
        raise ReadTimeoutError(endpoint_url=request.url)

    dynamodb.meta.events.register("before-send.dynamodb", apply_then_time_out)
    try:
        outcome = jobs.send_batch([{"body": "a"}, {"body": "b"}])
    finally:
        dynamodb.meta.events.unregister("before-send.dynamodb", apply_then_time_out)
    assert lost[0] == 1
    stored = sorted(message.body for message in jobs.peek())
    assert stored == ["a", "b"]
    assert not outcome.failed, f"stored, yet reported as perhaps not stored (to be sent again): {outcome.failed}"
    assert len(outcome.successful) == 2


def _group_item(dynamodb: Any, queue: str, group: str) -> dict[str, Any]:
    found = dynamodb.scan(TableName=TABLE)["Items"]
    items = [item for item in found if item["pk"]["S"].startswith(f"F#{queue}#") and item["sk"]["S"] == group]
    assert len(items) == 1, items
    return items[0]


def test_a_dead_letter_moved_by_a_receive_begun_on_the_lower_retention_keeps_its_group_item_alive(
    client: QueueClient, dynamodb: Any, clock: FakeClock, clock_time: ClockTime
) -> None:
    """A FIFO queue's retention is raised: messages sent from `retention_from` on live longer, and every group item
    written from then on must outlive them (the item fences the group's sequence). A receive holds the settings it
    began with for its whole wait (up to `MAX_WAIT_SECONDS`), and began with the lower retention, read just before
    the change (its cache still serves them). Its move of a head to the DLQ, after `retention_from`, must not set
    the group item's time from the lower retention, below a message sent meanwhile for longer."""
    client.create_queue("orders.fifo", fifo=True, retention_seconds=60, max_receive_count=1, visibility_timeout=20)
    receiver = client.queue("orders.fifo", "c")
    receiver.send("a", group_id="g")
    assert [message.body for message in receiver.receive()] == ["a"]  # received once: the next claim moves it
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)
    other.update_queue("orders.fifo", retention_seconds=limits.MAX_RETENTION_SECONDS)
    # This process read the settings just before the change; its cache serves them to a receive begun 9 s later,
    # whose poll 19 s after that comes past `retention_from`.
    started, polled = limits.SETTINGS_CACHE_SECONDS - 1, limits.MAX_WAIT_SECONDS - 1
    clock.advance(started)
    queries = [0]

    def meanwhile(event_name: str, **_: Any) -> None:
        if not event_name.endswith(".Query") or queries[0]:
            return
        queries[0] += 1
        clock.advance(polled)  # the receive waits on; meanwhile a message is sent for the raised retention
        sender = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)
        sender.queue("orders.fifo", "c").send("b", group_id="g")

    dynamodb.meta.events.register("before-send.dynamodb", meanwhile)
    try:
        got = receiver.receive(wait_seconds=limits.MAX_WAIT_SECONDS)
    finally:
        dynamodb.meta.events.unregister("before-send.dynamodb", meanwhile)
    assert [message.body for message in got] == ["b"]  # "a" went to the DLQ
    assert [letter.body for letter in receiver.dlq_list()] == ["a"]
    item = _group_item(dynamodb, "orders.fifo", "g")
    b_expires = _expires_of(dynamodb, "b")
    assert int(item["expires_at"]["N"]) >= b_expires, "the group item expires before a message of its group"


def _expires_of(dynamodb: Any, body: str) -> int:
    found = dynamodb.scan(TableName=TABLE)["Items"]
    return next(int(item["expires_at"]["N"]) for item in found if item.get("body", {}).get("S") == body)


def test_a_standard_redrive_longer_than_its_settings_deadline_moves_every_dead_letter(
    client: QueueClient, dynamodb: Any, clock: FakeClock, clock_time: ClockTime
) -> None:
    """A redrive moves its dead letters one transaction each, by the settings its process had when it began. A long
    one (thousands of dead letters, or begun near the end of the cache's time) outlives their deadline: the rest is
    moved by settings read afresh, as a FIFO redrive does, instead of the whole call failing as a throttle halfway
    (what it moved untold)."""
    client.create_queue("jobs", max_receive_count=1, shards=2)
    jobs = client.queue("jobs", "c")
    for n in range(3):
        jobs.send(f"m{n}")
    for message in jobs.receive(max_messages=10):
        jobs.release(message.receipt_handle, 0)
    assert jobs.receive(max_messages=10) == []  # each over its limit: moved to the DLQ
    assert len(jobs.dlq_list()) == 3
    clock.advance(limits.SETTINGS_CACHE_SECONDS - 1)  # the cache still serves them
    moves = [0]

    def slow(event_name: str, **_: Any) -> None:
        if event_name.endswith(".TransactWriteItems"):
            moves[0] += 1
            if moves[0] == 1:
                clock.advance(limits.SEND_GRACE_SECONDS + 2)  # the first moves took their time: past the deadline

    dynamodb.meta.events.register("before-send.dynamodb", slow)
    try:
        moved = jobs.redrive()
    finally:
        dynamodb.meta.events.unregister("before-send.dynamodb", slow)
    assert moved == 3
    assert jobs.dlq_list() == []
    assert sorted(message.body for message in jobs.peek()) == ["m0", "m1", "m2"]


def test_a_process_whose_clock_runs_ahead_never_starts_a_group_where_a_late_send_cannot_find_it(
    client: QueueClient, dynamodb: Any, clock: FakeClock
) -> None:
    """`placement_from` is a time of the changing process's clock, and each process compares it with its own: one
    whose clock runs ahead (by up to `shard_marks.SKEW_SECONDS`, as the core allows elsewhere) places groups by the
    new count that much sooner. A send built from the older settings lands up to the sum of the enforced and
    assumed bounds after the change; the delay must cover that sum on the fastest clock too, or the two start
    one group at two places, each with its own sequence (the second hands out the first's sequence again, and the
    first's message id with it)."""
    client.create_queue("orders.fifo", fifo=True, shards=1)
    late = client.queue("orders.fifo", "c")  # this process read the settings just before the change
    changer = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)
    changer.update_queue("orders.fifo", shards=8)
    bounds = (
        limits.SETTINGS_WRITE_GRACE_SECONDS
        + limits.SETTINGS_CACHE_SECONDS
        + limits.SEND_GRACE_SECONDS
        + 2 * limits.LANDING_SECONDS
    )
    clock.advance(bounds - 0.5)  # a send built from the older settings may still land now
    ahead = QueueClient(TABLE, dynamodb=dynamodb, clock=lambda: clock() + shard_marks.SKEW_SECONDS)
    early = ahead.queue("orders.fifo", "c")
    first = early.send("first", group_id="g")
    (got,) = early.receive()
    early.delete(got.receipt_handle)  # its key free again
    second = late.send("second", group_id="g")  # sent in time, landing now
    items = [
        item
        for item in dynamodb.scan(TableName=TABLE)["Items"]
        if item["pk"]["S"].startswith("F#orders.fifo#") and item["sk"]["S"] == "g" and "moved" not in item
    ]
    assert len(items) == 1, f"group g has {len(items)} places"
    assert first.sequence < second.sequence


def test_an_attempt_held_back_reaches_no_handler_of_its_operation(dynamodb: Any) -> None:
    """The scenario tests' stubs (`tests.core.answers`) hang on an operation's own `before-send` event, which
    botocore runs before the service-wide one: the deadline must hold an attempt back before them, or a stub
    applies a write the core refused, and the tests see what DynamoDB never would."""
    QueueClient(TABLE, dynamodb=dynamodb).create_table()
    kept = Store(dynamodb, TABLE)
    item = {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "x"}, "sk": {"S": "y"}}}}
    lost = LostAnswer("TransactWriteItems")
    with attached(dynamodb, lost), pytest.raises(Overdue), kept.sent_by(time.monotonic() - 1):
        kept.transact_items([item])
    assert lost.lost == 0
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": "x"}, "sk": {"S": "y"}})
