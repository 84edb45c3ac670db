"""A sub-queue of one shard is swept without its shard marks (`shard_marks.backstop` with `read_shards` 1): a
message whose mark could not be put must still be found after the first sweep pass once the queue has several
shards, whatever settings the sweeping process had cached from before the growth."""

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
