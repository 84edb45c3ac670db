"""Writes built from a process's cached settings are sent while those settings are young enough, or not at all.

Every process holds a change of a queue's settings, and every write built from the older ones has landed, within
`limits.SETTINGS_SPREAD_SECONDS` of the change: FIFO groups are placed by a new count from then on. That rests on
bounds the core enforces (`Store.sent_by`): a send goes out, each of the SDK's attempts included, at most
`SEND_GRACE_SECONDS` after its settings' time in the cache, and a change of the settings at most
`SETTINGS_WRITE_GRACE_SECONDS` after the time it counts from. A send held back is built again from settings read
afresh; one held back after an attempt whose answer was lost is reported as possibly applied, never built again.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError
from queue_core import QueueClient, limits, registry
from queue_core.store import OutcomeUnknown, Overdue, Store

from tests.conftest import TABLE, FakeClock

AGED = limits.SETTINGS_CACHE_SECONDS + limits.SEND_GRACE_SECONDS + 1


def _aged(client: QueueClient, name: str) -> None:
    """This process's cached settings, still served by its cache, but read longer ago than a send may go out on:
    how a process looks whose send began at the end of its cache time and was slowed by the SDK's retries."""
    registry = client._ctx.registry
    settings = registry.get(name, fresh=True)
    registry._cache[name] = (time.monotonic(), replace(settings, read_at=time.monotonic() - AGED))


def _group_items(dynamodb: Any, queue: str, group: str) -> list[dict[str, Any]]:
    found = dynamodb.scan(TableName=TABLE)["Items"]
    return [
        item
        for item in found
        if item["pk"]["S"].startswith(f"F#{queue}#") and item["sk"]["S"] == group and "moved" not in item
    ]


def _sent_attempts(dynamodb: Any, operation: str) -> list[int]:
    """Counts the attempts of `operation` that went past the core's deadline (a handler on the same event after
    it: one on a narrower event would run first)."""
    attempts = [0]

    def count(request: Any, **_: Any) -> None:
        if (request.headers.get("X-Amz-Target") or b"").decode().endswith(f".{operation}"):
            attempts[0] += 1

    dynamodb.meta.events.register("before-send.dynamodb", count)
    return attempts


def test_a_new_group_is_never_started_at_a_place_only_older_settings_give(
    client: QueueClient, dynamodb: Any, clock: FakeClock
) -> None:
    """Another process grows a FIFO queue to 8 shards; once every process places groups by 8, it starts group g
    at its new place. This process still has the settings of 1 shard in its cache, read longer ago than a send
    may go out on: its send of g is not sent as they place it (at shard 0, a second place and a second sequence
    1), but placed again by the settings read afresh, behind the other's message in the one group item."""
    client.create_queue("orders.fifo", fifo=True, shards=1)
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)
    _aged(client, "orders.fifo")
    other.update_queue("orders.fifo", shards=8)
    clock.advance(limits.SETTINGS_SPREAD_SECONDS + 1)
    first = other.queue("orders.fifo", "c").send("first", group_id="g")
    second = client.queue("orders.fifo", "c").send("second", group_id="g")
    items = _group_items(dynamodb, "orders.fifo", "g")
    assert len(items) == 1, items
    assert int(items[0]["last_seq"]["N"]) == 2
    assert first.sequence < second.sequence
    got = other.queue("orders.fifo", "c").receive(max_messages=10)
    assert [message.body for message in got] == ["first", "second"]


def test_a_standard_send_on_settings_too_old_is_built_again_by_fresh_ones(client: QueueClient, dynamodb: Any) -> None:
    """A standard send picks its shard by the cached count. Held back, nothing of it was sent: it is built again
    from the settings read afresh (another process changed the count meanwhile) and stored once, a plain batch and
    a send with a dedup id alike."""
    client.create_queue("jobs", shards=4)
    jobs = client.queue("jobs", "c")
    _aged(client, "jobs")
    QueueClient(TABLE, dynamodb=dynamodb).update_queue("jobs", shards=1)
    batches = _sent_attempts(dynamodb, "BatchWriteItem")
    outcome = jobs.send_batch([{"body": "a"}, {"body": "b"}])
    assert not outcome.failed and len(outcome.successful) == 2
    assert batches[0] == 1, "the batch held back never reached DynamoDB"
    assert client._ctx.registry.get("jobs").shards == 1, "read afresh"
    _aged(client, "jobs")
    transactions = _sent_attempts(dynamodb, "TransactWriteItems")
    jobs.send("c", dedup_id="d")
    assert transactions[0] == 1
    assert sorted(message.body for message in jobs.peek()) == ["a", "b", "c"]


def test_a_transactional_send_built_on_settings_too_old_is_built_again_when_committed(
    client: QueueClient, dynamodb: Any
) -> None:
    """Built while the settings were young and committed after they aged: the send is built again from settings
    read afresh (as after another sender moved its group), and committed once."""
    client.create_queue("orders.fifo", fifo=True)
    sub = client.queue("orders.fifo", "c")
    _aged(client, "orders.fifo")
    aged = client._ctx.registry.get("orders.fifo").read_at
    send = sub.send_transact_items("x", group_id="g")
    attempts = _sent_attempts(dynamodb, "TransactWriteItems")
    client.transact([send])
    assert attempts[0] == 1
    assert client._ctx.registry.get("orders.fifo").read_at > aged, "built again from settings read afresh"
    assert [message.body for message in sub.receive(max_messages=10)] == ["x"]


def test_a_change_of_settings_not_sent_in_time_changes_nothing(
    client: QueueClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change of `shards` sets `placement_from` from the time it was made: sent later than the grace allows,
    processes could be placing groups by it before every process holds it. It is not sent, and says to retry."""
    client.create_queue("orders.fifo", fifo=True)
    before = client.get_queue("orders.fifo")
    monkeypatch.setattr(limits, "SETTINGS_WRITE_GRACE_SECONDS", -1.0)
    with pytest.raises(Overdue):
        client.update_queue("orders.fifo", shards=8)
    monkeypatch.undo()
    after = client._ctx.registry.get("orders.fifo", fresh=True)
    assert (after.shards, after.version) == (before.shards, before.version)


def test_a_retry_held_back_after_a_lost_answer_is_reported_as_possibly_applied(dynamodb: Any) -> None:
    """The first attempt timed out (applied, perhaps) and the SDK's retry would go out past the deadline: the
    caller must not build the write again as if nothing were sent (a second copy), so the outcome is unknown."""
    QueueClient(TABLE, dynamodb=dynamodb).create_table()
    store = Store(dynamodb, TABLE)
    lost = [0]

    def time_out_first(request: Any, **_: Any) -> None:
        if not (request.headers.get("X-Amz-Target") or b"").decode().endswith(".TransactWriteItems"):
            return
        lost[0] += 1
        if lost[0] == 1:
            time.sleep(0.3)
            raise ReadTimeoutError(endpoint_url="https://dynamodb")

    dynamodb.meta.events.register("before-send.dynamodb", time_out_first)
    item = {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "x"}, "sk": {"S": "y"}}}}
    with pytest.raises(OutcomeUnknown), store.sent_by(time.monotonic() + 0.2):
        store.transact_items([item])
    assert lost[0] == 1, "the retry was held back"
    with store.sent_by(time.monotonic() - 1), pytest.raises(Overdue):
        store.transact_items([item])
    assert lost[0] == 1


def test_an_automatic_change_not_sent_in_time_is_made_again_by_the_next_decision(
    client: QueueClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An automatic change of `shards` held back is not a queue that may not grow (`layouts_full`): nothing is
    written, and the next decision writes it."""
    client.create_queue("orders.fifo", fifo=True)
    monkeypatch.setattr(limits, "SETTINGS_WRITE_GRACE_SECONDS", -1.0)
    assert client.reshard_automatically("orders.fifo", 8) is None
    assert client._ctx.registry.get("orders.fifo", fresh=True).shards == 1
    monkeypatch.undo()
    assert client.reshard_automatically("orders.fifo", 8) == 8


def test_a_change_held_back_is_made_again_from_a_new_present(
    client: QueueClient, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change whose write was held back (a throttled write the SDK retried past its deadline) sent nothing: it is
    made again, its times counted from the present of its new write, not from the first one's."""
    client.create_queue("orders.fifo", fifo=True)
    start = clock()
    held = [True]

    def deadline() -> float:
        if held:  # the first write: its present passes while it is held back
            held.pop()
            clock.advance(3)
            return time.monotonic() - 1
        return time.monotonic() + limits.SETTINGS_WRITE_GRACE_SECONDS

    monkeypatch.setattr(registry, "_deadline", deadline)
    changed = client.update_queue("orders.fifo", shards=8)
    assert changed.shards == 8
    assert changed.placement_from == int((start + 3) * 1000) + int(limits.SETTINGS_SPREAD_SECONDS * 1000)
