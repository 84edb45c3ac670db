"""A throttle stops one step of the sweep, never the pass; a priority's marker outlives a throttled put.

Under steady throttling a pass that stopped at the first throttle would almost never reach the queues after it,
and what only the sweep restores would stay missing. Each test throttles chosen requests with a `before-call`
hook (the core sees them without the SDK's retries, as when they ran out).
"""

from __future__ import annotations

from typing import Any

from queue_core import QueueClient

from tests.conftest import FakeClock
from tests.core.test_markers_on_use import BUILD_AFTER_SECONDS
from tests.throttle_hooks import ThrottleAll, ThrottleOne, throttled, throttling


def values_have(text: str) -> Any:
    return lambda params: text in str(params.get("ExpressionAttributeValues", {}))


def item_has(text: str) -> Any:
    return lambda params: text in str(params.get("Item", {}))


def poison(client: QueueClient, queue: str, sub_queue: str) -> None:
    """A message past its receive limit, for the sweep to move to the DLQ once its visibility ends."""
    client.queue(queue, sub_queue).send("poison")
    client.queue(queue, sub_queue).receive()


def test_a_throttled_sub_queue_leaves_the_rest_of_the_pass_swept(
    client: QueueClient, dynamodb, clock: FakeClock
) -> None:
    for queue in ("a", "b"):
        client.create_queue(queue, max_receive_count=1, visibility_timeout=10)
    for queue, sub_queue in (("a", "c1"), ("a", "c2"), ("b", "c1")):
        poison(client, queue, sub_queue)
    clock.advance(11)
    # The index query of a/c1's messages: that sub-queue's sweep stops there.
    with throttled(dynamodb, ThrottleOne("Query", values_have("M#a#c1#"))):
        report = client.sweep()
    assert report.complete and report.failures == 1
    assert report.moved_to_dlq == 2
    dlq = {(q, c): client.queue(q, c).stats().dlq for q, c in (("a", "c1"), ("a", "c2"), ("b", "c1"))}
    assert dlq == {("a", "c1"): 0, ("a", "c2"): 1, ("b", "c1"): 1}
    again = client.sweep()
    assert again.failures == 0 and again.moved_to_dlq == 1
    assert client.queue("a", "c1").stats().dlq == 1


def test_a_throttled_client_listing_leaves_the_other_queues_swept(
    client: QueueClient, dynamodb, clock: FakeClock
) -> None:
    for queue in ("a", "b"):
        client.create_queue(queue, max_receive_count=1, visibility_timeout=10)
        poison(client, queue, "c")
    clock.advance(11)
    with throttled(dynamodb, ThrottleOne("Query", values_have("C#a#"))):
        report = client.sweep()
    assert report.complete and report.failures == 1
    assert (client.queue("a", "c").stats().dlq, client.queue("b", "c").stats().dlq) == (0, 1)
    assert client.sweep().failures == 0
    assert client.queue("a", "c").stats().dlq == 1


def test_markers_count_as_built_only_once_every_one_was_put(client: QueueClient, dynamodb, clock: FakeClock) -> None:
    client.create_queue("late")
    client.create_queue("other")
    # Delayed past the build: only the build marks it (the sweep's backstop marks what is visible).
    client.queue("late", "a").send("later", delay_seconds=900)
    client.update_queue("late", queue_wide=True)
    client.update_queue("other", queue_wide=True)
    client.queue("other", "a").send("x")
    clock.advance(BUILD_AFTER_SECONDS + 1)
    with throttling(dynamodb, ThrottleAll("PutItem", item_has("R#late#"))):
        report = client.sweep()
    assert report.failures == 1
    assert not client._ctx.registry.get("late", fresh=True).markers_built
    assert client._ctx.registry.get("other", fresh=True).markers_built
    assert client.sweep().failures == 0
    assert client._ctx.registry.get("late", fresh=True).markers_built


def test_a_priority_sent_while_its_marker_put_is_throttled_reaches_other_receivers(
    client: QueueClient, dynamodb, clock: FakeClock
) -> None:
    """A per-client receive learns a sub-queue's priorities above 0 from its markers alone: the send puts it
    again rather than leave the message to the next sweep that reaches the sub-queue."""
    client.create_queue("p")
    sender = client.queue("p", "c")
    sender.send("warm")  # registration and settings in place: the next send's puts are the message and marker
    with throttled(dynamodb, ThrottleOne("PutItem", item_has("R#p#c#"))):
        sender.send("urgent", priority=3)
    other = QueueClient(client.table_name, dynamodb=dynamodb, clock=clock)  # knows nothing this one sent
    got = other.queue("p", "c").receive(max_messages=10)
    assert sorted(m.body for m in got) == ["urgent", "warm"]
