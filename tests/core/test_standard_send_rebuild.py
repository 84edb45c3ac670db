"""A standard send held back by its deadline (`Overdue`: nothing of it sent) is built again from the settings read
afresh, and that means all of what it is placed by: the shard count it goes round, not only the retention. Built
at a shard only the older settings had, it could land after the sweep dropped that layout, where no receive looks
again. And the fresh read is part of the send: its failure fails the entries, not the call."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest
from queue_core import QueueClient, Throttled, limits
from queue_core.keys import MessageRef, Space

from tests.conftest import TABLE, FakeClock

AGED = limits.SETTINGS_CACHE_SECONDS + limits.SEND_GRACE_SECONDS + 1


def _aged(client: QueueClient, name: str) -> None:
    """This process's cached settings, still served by its cache, but read longer ago than a send may go out on."""
    registry = client._ctx.registry
    settings = registry.get(name, fresh=True)
    registry._cache[name] = (time.monotonic(), replace(settings, read_at=time.monotonic() - AGED))


def _at_last_old_shard(client: QueueClient, name: str, sub: str) -> None:
    """This process's send rotation for the queue's cached layout stands at its last shard (it starts at a random
    one): where only the older settings place anything."""
    settings = client._ctx.registry.get(name)
    space = Space(settings.name, sub, settings.generation)
    client._ctx.traffic(space, settings.read_shards, settings.shards).rotation._next = settings.shards - 1


def test_a_batch_built_again_goes_round_the_shards_of_the_fresh_settings(client: QueueClient, dynamodb: Any) -> None:
    """4 shards cached, 1 since another process's change: the batch held back is built again at shard 0."""
    client.create_queue("jobs", shards=4)
    jobs = client.queue("jobs", "c")
    _aged(client, "jobs")
    _at_last_old_shard(client, "jobs", "c")
    QueueClient(TABLE, dynamodb=dynamodb).update_queue("jobs", shards=1)
    outcome = jobs.send_batch([{"body": "a"}, {"body": "b"}])
    assert not outcome.failed
    assert [MessageRef.parse(sent["message_id"]).shard for sent in outcome.successful] == [0, 0]


def test_a_send_with_a_dedup_id_built_again_goes_round_the_shards_of_the_fresh_settings(
    client: QueueClient, dynamodb: Any
) -> None:
    client.create_queue("jobs", shards=4)
    jobs = client.queue("jobs", "c")
    _aged(client, "jobs")
    _at_last_old_shard(client, "jobs", "c")
    QueueClient(TABLE, dynamodb=dynamodb).update_queue("jobs", shards=1)
    sent = jobs.send("c", dedup_id="d")
    assert MessageRef.parse(sent.message_id).shard == 0


def test_a_batch_built_again_after_the_old_layout_was_dropped_is_received(
    client: QueueClient, dynamodb: Any, clock: FakeClock
) -> None:
    """The send was held back long enough (the SDK's backoff before its held-back attempt) for the change to
    settle and the sweep to drop the 4-shard layout, nothing being left there: what it reports stored must be
    found by a receive."""
    client.create_queue("jobs", shards=4)
    jobs = client.queue("jobs", "c")
    _aged(client, "jobs")
    _at_last_old_shard(client, "jobs", "c")
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)
    other.update_queue("jobs", shards=1)
    clock.advance(limits.SETTINGS_SPREAD_SECONDS + limits.INDEX_LAG_GRACE_SECONDS + 1)
    current = other._ctx.registry.get("jobs", fresh=True)
    assert other._ctx.registry.prune_layouts(current, int(clock() * 1000), old_places_empty=True)
    assert other._ctx.registry.get("jobs", fresh=True).read_shards == 1
    outcome = jobs.send_batch([{"body": "a"}, {"body": "b"}])
    assert not outcome.failed and len(outcome.successful) == 2
    got = other.queue("jobs", "c").receive(max_messages=10)
    assert sorted(m.body for m in got) == ["a", "b"], "reported stored, never received"


def test_a_failed_fresh_read_fails_the_entries_not_the_call(
    client: QueueClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held back, the batch reads the settings afresh; that read throttled, each entry fails as the held-back
    write did (nothing stored), and the call answers for each entry, as `Engine.send` promises."""
    client.create_queue("jobs")
    jobs = client.queue("jobs", "c")
    _aged(client, "jobs")
    registry = client._ctx.registry
    plain_get = registry.get

    def throttled_when_fresh(name: str, fresh: bool = False) -> Any:
        if fresh:
            raise Throttled("the settings read was throttled")
        return plain_get(name, fresh)

    monkeypatch.setattr(registry, "get", throttled_when_fresh)
    outcome = jobs.send_batch([{"body": "a"}, {"body": "b"}])
    assert len(outcome.failed) == 2 and not outcome.successful


def test_a_send_held_back_while_its_queue_was_deleted_and_created_again_is_not_reported_stored_in_the_old_one(
    client: QueueClient, dynamodb: Any
) -> None:
    """The settings read afresh are another generation's: the send's keys are the old generation's, which nothing
    receives from and the sweep removes. Built again there, it is reported stored where no receive finds it."""
    client.create_queue("jobs")
    jobs = client.queue("jobs", "c")
    _aged(client, "jobs")
    other = QueueClient(TABLE, dynamodb=dynamodb)
    other.delete_queue("jobs")
    other.create_queue("jobs")
    outcome = jobs.send_batch([{"body": "a"}])
    stored = [sent["message_id"] for sent in outcome.successful]
    got = [m.body for m in other.queue("jobs", "c").receive(max_messages=10)]
    assert not stored or got == ["a"], "reported stored, never received"


def test_a_fifo_send_held_back_while_its_queue_was_deleted_and_created_again_is_not_reported_stored_in_the_old_one(
    client: QueueClient, dynamodb: Any
) -> None:
    """As a standard send: placed again by the new generation's settings, but at the old generation's keys."""
    client.create_queue("orders.fifo", fifo=True)
    orders = client.queue("orders.fifo", "c")
    _aged(client, "orders.fifo")
    other = QueueClient(TABLE, dynamodb=dynamodb)
    other.delete_queue("orders.fifo")
    other.create_queue("orders.fifo", fifo=True)
    outcome = orders.send_batch([{"body": "a", "group_id": "g"}])
    stored = [sent["message_id"] for sent in outcome.successful]
    got = [m.body for m in other.queue("orders.fifo", "c").receive(max_messages=10)]
    assert not stored or got == ["a"], "reported stored, never received"
    assert len(outcome.failed) == 1
