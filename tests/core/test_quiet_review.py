"""Review probes of the order of quiet visits (`shard_marks._visit`, `shard_looks.ShardLooks.quiet`)."""

from __future__ import annotations

from typing import Any

import pytest
from queue_core import QueueClient, shard_marks

from tests.core.test_shard_marks import _other, _process_on

SHARDS = 8


def test_a_worker_that_sends_follow_ups_does_not_starve_a_quiet_shard(
    client: QueueClient, dynamodb: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker receives ten at a time, a second or more apart (each receive reads the marks), and for some of
    the messages it handles sends a follow-up to the queue, which lands on its own shard and which it takes at
    once. Other producers, each a process of its own that sends now and then (so each puts its mark), keep a
    shard with news. A message stored under a trusted mark on another shard the worker emptied must come."""
    monkeypatch.setattr(shard_marks, "LIST_SECONDS", 0.0)  # receives a second or more apart: each reads the list
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
    quiet.send("waiting")  # trusted by its sender: no new mark
    bodies: list[str] = []

    def receive() -> list[str]:
        got = worker.receive(max_messages=10)
        for message in got:
            worker.delete(message.receipt_handle)
        bodies.extend(m.body for m in got)
        clock.advance(1.1)
        return [m.body for m in got]

    for cycle in range(30):
        worker.send(f"f{cycle}")  # a follow-up of what it handled
        receive()
        _process_on(client, dynamodb, "work", busy_shard).send(f"x{cycle}")
        receive()
        receive()
        if "waiting" in bodies:
            break
    assert "waiting" in bodies, f"not received in {cycle + 1} cycles ({3 * 1.1 * (cycle + 1):.0f} s): {bodies}"
