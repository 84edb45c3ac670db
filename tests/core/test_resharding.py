"""Changing `shards` on a live queue loses nothing and keeps FIFO order."""

from __future__ import annotations

import pytest
from queue_core import QueueClient, ValidationError

from tests.conftest import FakeClock


def _drain(queue) -> list[str]:
    bodies = []
    while got := queue.receive(max_messages=10):
        bodies += [m.body for m in got]
        queue.delete_batch([m.receipt_handle for m in got])
    return bodies


def test_standard_queue_grows_and_shrinks_without_losing_a_message(client: QueueClient) -> None:
    client.create_queue("grow", shards=1)
    queue = client.queue("grow", "c")
    queue.send_batch([{"body": f"a{i}"} for i in range(10)])
    assert client.update_queue("grow", shards=8).shards == 8
    queue.send_batch([{"body": f"b{i}"} for i in range(20)])
    client.update_queue("grow", shards=2)
    queue.send_batch([{"body": f"c{i}"} for i in range(5)])
    assert queue.stats().visible == 35
    assert sorted(_drain(queue)) == sorted([f"a{i}" for i in range(10)] + [f"b{i}" for i in range(20)] +
                                          [f"c{i}" for i in range(5)])  # fmt: skip


def test_fifo_groups_keep_their_order_across_a_change_of_shards(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("move.fifo", shards=1, max_receive_count=0)
    queue = client.queue("move.fifo", "c")
    groups = [f"g{i}" for i in range(6)]
    for number in range(3):
        queue.send_batch([{"body": f"{g}:{number}", "group_id": g} for g in groups])
    client.update_queue("move.fifo", shards=4)
    for number in range(3, 5):
        queue.send_batch([{"body": f"{g}:{number}", "group_id": g} for g in groups])
    clock.advance(60)
    [held] = queue.receive()
    for number in range(5, 8):
        queue.send_batch([{"body": f"{g}:{number}", "group_id": g} for g in groups])
    queue.delete(held.receipt_handle)
    seen: dict[str, list[int]] = {}
    for body in [held.body, *_drain(queue)]:
        group, number = body.split(":")
        seen.setdefault(group, []).append(int(number))
    assert seen == {g: list(range(8)) for g in groups}
    for number in range(8, 10):
        queue.send_batch([{"body": f"{g}:{number}", "group_id": g} for g in groups])
    seen = {}
    for body in _drain(queue):
        group, number = body.split(":")
        seen.setdefault(group, []).append(int(number))
    assert seen == {g: [8, 9] for g in groups}


def test_only_some_settings_change_on_a_live_queue(client: QueueClient) -> None:
    client.create_queue("fixed")
    with pytest.raises(ValidationError):
        client.update_queue("fixed", fifo=True)
    with pytest.raises(ValidationError):
        client.update_queue("fixed", shards=0)
    assert client.update_queue("fixed", visibility_timeout=60).visibility_timeout == 60


def test_a_sweep_out_of_time_does_not_look_through_every_old_shard(client: QueueClient, clock: FakeClock) -> None:
    """After a shrink from hundreds of shards, the check that old shards are empty costs two queries per old shard
    and client: past the sweep's budget it is left for a later pass (the layout kept), so a sweep never runs past
    its function's time on it."""
    client.create_queue("wide", shards=256)
    queue = client.queue("wide", "c")
    queue.send("x")
    [message] = queue.receive()
    queue.delete(message.receipt_handle)
    client.update_queue("wide", shards=1)
    clock.advance(600)
    # Sweeping the one client visits 256 shards three times (seconds against moto): well past this budget, so the
    # queue's own steps come after the deadline.
    report = client.sweep(budget_seconds=0.25)
    assert report.sub_queues == 1
    assert client.get_queue("wide").read_shards == 256
    # Without a budget the same check finds the old shards empty and the layout goes.
    client.sweep()
    assert client.get_queue("wide").read_shards == 1
