"""Quiet turns (`shard_marks.Marks.quiet_turn`): while shards with news keep giving, every few receives one visits
the quiet shards first, so that a message stored on a quiet shard under a trusted mark is not held back for long,
whatever else the process's receives and sends do."""

from __future__ import annotations

from typing import Any

from queue_core import QueueClient

from tests.core.test_shard_marks import _other, _process_on

SHARDS = 8


def test_a_message_on_a_quiet_shard_comes_though_own_sends_leave_a_shard_to_look_at_again_before_each_turn(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """A consumer of one message at a time follows another process's backlog (a shard with news at each receive)
    and itself sends a message now and then, which it takes from its own shard at once: that shard is emptied
    within the index's grace after its own send, the first quiet shard a later receive visits, once. A message
    stored under a trusted mark on another quiet shard must still come within a few quiet turns: the look at the
    own shard must not take every turn's one quiet visit."""
    client.create_queue("turns", shards=SHARDS)
    consumer_client = _other(client, dynamodb)
    consumer = consumer_client.queue("turns", "t")
    own = consumer.engine().traffic.rotation._next
    quiet_shard, busy_shard = [shard for shard in range(SHARDS) if shard != own][:2]
    quiet = _process_on(client, dynamodb, "turns", quiet_shard)
    busy = _process_on(client, dynamodb, "turns", busy_shard)
    quiet.send("first")  # puts the quiet shard's mark, trusted by its sender for 10 s
    got = consumer.receive(max_messages=10)
    assert [m.body for m in got] == ["first"]
    consumer.delete(got[0].receipt_handle)  # the quiet shard emptied by the consumer
    clock.advance(0.5)
    quiet.send("waiting")  # within its sender's trust: no new mark, so the shard stays quiet to the consumer
    bodies: list[str] = []
    sent = 0
    for step in range(600):  # 60 s of receives 0.1 s apart
        while sent - sum(body.startswith("b") for body in bodies) < 3:
            busy.send(f"b{sent}")
            sent += 1
        if step % 4 == 0:
            consumer.send(f"own{step}")
        for message in consumer.receive(max_messages=1):
            bodies.append(message.body)
            consumer.delete(message.receipt_handle)
        if "waiting" in bodies:
            break
        clock.advance(0.1)
    assert "waiting" in bodies, f"not received in {step * 0.1:.1f} s"
    assert step <= 100, f"received after {step * 0.1:.1f} s"
