"""The sweep and a process's cached settings: a pass reads a queue's settings again when its cache is older than the
pass's listing. A sub-queue of one shard is swept without its shard marks (`shard_marks.backstop` with
`read_shards` 1), so a message whose mark could not be put must still be found after the first pass once the queue
has several shards, whatever settings the sweeping process had cached from before the growth; a queue changed or
deleted since the cache costs at most one read more, and the others are swept."""

from __future__ import annotations

from typing import Any

import pytest
from queue_core import QueueClient

from tests.conftest import FakeClock


def _other(client: QueueClient, dynamodb: Any) -> QueueClient:
    """Another process: its own core client and caches, the same table and clock."""
    return QueueClient(client.table_name, dynamodb=dynamodb, clock=client._ctx.clock)


@pytest.mark.parametrize("fifo", [False, True])
def test_the_first_pass_after_a_growth_puts_the_missing_mark_even_from_settings_cached_before_it(
    client: QueueClient, dynamodb: Any, clock: FakeClock, fifo: bool
) -> None:
    """The sweeper sent to the queue a moment before an operator's process grew it (its settings, of one shard, are
    cached for `SETTINGS_CACHE_SECONDS`); receivers that read the new count go by the marks at once. The pass that
    follows the growth reads the shard from the sweeper's cached settings and puts no mark: the message stays
    hidden from them until the pass after."""
    name = "small.fifo" if fifo else "small"
    client.create_queue(name, fifo=fifo, shards=1)
    sub = client.queue(name, "t")
    sub.send("unmarked", **({"group_id": "g"} if fifo else {}))
    client._ctx.store.delete_partition(sub.space.shard_marks_pk())  # its mark was never put (throttled)
    _other(client, dynamodb).update_queue(name, shards=4)
    clock.advance(60)
    consumer = _other(client, dynamodb).queue(name, "t")
    assert consumer.receive() == []
    client.sweep()  # the first pass after the growth
    assert [m.body for m in consumer.receive()] == ["unmarked"]


def _gets(counter: Any, client: QueueClient) -> int:
    counter.reset()
    client.sweep()
    return counter.calls["GetItem"]


def test_a_changed_queue_costs_one_read_more_in_one_pass(
    client: QueueClient, dynamodb: Any, clock: FakeClock, counter: Any
) -> None:
    client.create_queue("q", shards=2)
    for name in ("a", "b", "c"):
        client.queue("q", name).send("m")  # the sweeper's cache: the settings before the change
    steady = _gets(counter, client)
    _other(client, dynamodb).update_queue("q", visibility_timeout=45)
    changed = _gets(counter, client)
    after = _gets(counter, client)
    assert (changed - steady, after - steady) == (1, 0), (steady, changed, after)


def test_a_queue_deleted_after_the_listing_leaves_the_others_swept(
    client: QueueClient, dynamodb: Any, clock: FakeClock, monkeypatch: Any
) -> None:
    client.create_queue("a", shards=2)
    client.create_queue("b", shards=2)
    client.queue("a", "x").send("m")
    client.queue("b", "x").send("m")
    _other(client, dynamodb).update_queue("a", visibility_timeout=45)
    real = client._ctx.registry.clients

    def clients(name: str, generation: str) -> list[str]:
        found = real(name, generation)
        if name == "a":
            _other(client, dynamodb).delete_queue("a")
        return found

    monkeypatch.setattr(client._ctx.registry, "clients", clients)
    report = client.sweep()
    assert [depth["queue"] for depth in report.depths] == ["b"]
