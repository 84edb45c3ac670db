"""A receive that meets a throttle partway keeps what it had already claimed.

Claims run in parallel and a receive visits shards, priorities and clients in turn: a throttle answered to one
claim must not throw away the others, or those messages stay in flight unreturned until their visibility ends
(and, under sustained throttling, reach the DLQ without ever being delivered). Each test throttles exactly one
chosen request with a `before-call` hook (the core sees it without the SDK's retries, as when they ran out) and
checks that nothing is held that the receive did not return.
"""

from __future__ import annotations

from typing import Any

import pytest
from queue_core import QueueClient, Throttled

from tests.throttle_hooks import Match, ThrottleOne, throttled

_CLAIM = "visible_at <= :now AND expires_at"  # a standard claim's condition
_MARK = "receive_count = :seen"  # a FIFO message's mark
_LOCK = "available_at <= :now AND attribute_exists(gsi1sk)"  # a FIFO group's lock


def condition_has(text: str, pk_has: str = "") -> Match:
    return lambda params: text in params.get("ConditionExpression", "") and pk_has in str(params.get("Key", {}))


def test_one_throttled_claim_of_a_batch_keeps_the_others(client: QueueClient, dynamodb: Any) -> None:
    client.create_queue("one", visibility_timeout=600)
    queue = client.queue("one", "c")
    queue.send_batch([{"body": f"m{i}"} for i in range(5)])
    with throttled(dynamodb, ThrottleOne("UpdateItem", condition_has(_CLAIM), nth=3)):
        got = queue.receive(max_messages=5)
    assert len(got) == 4
    assert queue.stats().in_flight == len(got)
    assert len(queue.receive(max_messages=5)) == 1  # the throttled one was never claimed


def test_a_throttled_claim_in_one_shard_leaves_the_others_to_other_shards(client: QueueClient, dynamodb: Any) -> None:
    client.create_queue("wide", visibility_timeout=600, shards=2)
    queue = client.queue("wide", "c")
    queue.send_batch([{"body": f"m{i}"} for i in range(10)])
    with throttled(dynamodb, ThrottleOne("UpdateItem", condition_has(_CLAIM), nth=2)):
        got = queue.receive(max_messages=5)
    assert 4 <= len(got) <= 5
    assert queue.stats().in_flight == len(got)


def test_a_throttle_in_a_lower_priority_keeps_the_higher_ones(client: QueueClient, dynamodb: Any) -> None:
    client.create_queue("prio", visibility_timeout=600)
    queue = client.queue("prio", "c")
    queue.send_batch([{"body": f"high{i}", "priority": 5} for i in range(2)])
    queue.send_batch([{"body": f"low{i}"} for i in range(5)])
    with throttled(dynamodb, ThrottleOne("UpdateItem", condition_has(_CLAIM), nth=3)):
        got = queue.receive(max_messages=5)
    assert {message.body for message in got} >= {"high0", "high1"}
    assert len(got) == 4
    assert queue.stats().in_flight == len(got)


def test_a_throttled_query_of_a_later_claim_round_keeps_the_first_round(
    client: QueueClient, dynamodb: Any, clock: Any
) -> None:
    """The first round's window is mostly messages past their receive limit (moved to the DLQ, not claimed), so a
    second round reads again: that read is throttled."""
    client.create_queue("rounds", visibility_timeout=600, max_receive_count=1)
    queue = client.queue("rounds", "c")
    queue.send_batch([{"body": f"old{i}"} for i in range(6)])
    assert len(queue.receive(max_messages=6, visibility_timeout=1)) == 6
    clock.advance(2)
    queue.send_batch([{"body": f"m{i}"} for i in range(6, 10)])  # visible after the six old ones
    with throttled(dynamodb, ThrottleOne("Query", lambda body: "IndexName" in body, nth=2)):
        got = queue.receive(max_messages=5)
    assert [message.body for message in got] == ["m6"]
    assert queue.stats().in_flight == len(got)


def test_a_throttle_with_nothing_claimed_raises_and_holds_nothing(client: QueueClient, dynamodb: Any) -> None:
    client.create_queue("none", visibility_timeout=600)
    queue = client.queue("none", "c")
    queue.send("only")
    with throttled(dynamodb, ThrottleOne("UpdateItem", condition_has(_CLAIM))), pytest.raises(Throttled):
        queue.receive(max_messages=5)
    assert queue.stats().in_flight == 0
    assert [message.body for message in queue.receive()] == ["only"]


def test_queue_wide_keeps_what_a_throttled_client_claimed(client: QueueClient, dynamodb: Any) -> None:
    client.create_queue("jobs", visibility_timeout=600)
    for name in ("a", "b"):
        client.queue("jobs", name).send_batch([{"body": f"{name}{i}"} for i in range(3)])
    wide = client.queue_wide("jobs")
    with throttled(dynamodb, ThrottleOne("UpdateItem", condition_has(_CLAIM, "#jobs#a#"), nth=2)):
        got = wide.receive(max_messages=5)
    assert 1 <= len([message for message in got if message.client == "a"]) <= 2  # a was asked 3, or 2 after b
    assert len(got) >= 4
    assert wide.stats().in_flight == len(got)


@pytest.mark.parametrize("where", ["lock", "mark"])
def test_fifo_keeps_the_groups_it_marked_when_another_is_throttled(
    client: QueueClient, dynamodb: Any, where: str
) -> None:
    client.create_queue("orders.fifo", fifo=True, visibility_timeout=600)
    queue = client.queue("orders.fifo", "c")
    for group in ("ga", "gb"):
        queue.send_batch([{"body": f"{group}-{i}", "group_id": group} for i in range(3)])
    match = condition_has(_LOCK, "gb") if where == "lock" else condition_has(_MARK, "gb")
    with throttled(dynamodb, ThrottleOne("UpdateItem", match)):
        got = queue.receive(max_messages=5)
    assert [message.body for message in got if message.body.startswith("ga")] == ["ga-0", "ga-1", "ga-2"]
    # A FIFO group held by a receive counts one message in flight: only groups that delivered are held.
    assert queue.stats().in_flight == len({message.body.split("-")[0] for message in got})
    if not any(message.body.startswith("gb") for message in got):
        assert [message.body for message in queue.receive(max_messages=5)] == ["gb-0", "gb-1", "gb-2"]
