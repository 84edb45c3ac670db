"""A process's cached settings are as old as the read that gave them, not as its answer: every delay until all
processes hold a queue's new settings (`placement_from`, `markers_from`, `retention_from`) counts on no process
serving settings read more than `SETTINGS_CACHE_SECONDS` ago.

The cache's age is the registry's monotonic time, which these tests move on by hand (`Monotonic`), as a slow
answer would, instead of sleeping through it."""

from __future__ import annotations

import time
from typing import Any

import pytest
from queue_core import QueueClient, limits, registry

# An answer that comes back most of a cache time after its call was sent (the SDK retrying, a stalled connection).
ANSWER_SECONDS = 0.8 * limits.SETTINGS_CACHE_SECONDS
# A look this long after that answer: within the cache's time counted from the answer, past it counted from the call.
LOOK_AFTER_SECONDS = 0.3 * limits.SETTINGS_CACHE_SECONDS


class Monotonic:
    """The registry's `time`: only `monotonic`, which moves when a test says."""

    def __init__(self) -> None:
        self.now = time.monotonic()

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def monotonic(monkeypatch: pytest.MonkeyPatch) -> Monotonic:
    clock = Monotonic()
    monkeypatch.setattr(registry, "time", clock)
    return clock


def _other(client: QueueClient, dynamodb: Any) -> QueueClient:
    """Another process: its own core client and caches, the same table and clock."""
    return QueueClient(client.table_name, dynamodb=dynamodb, clock=client._ctx.clock)


def _late(change: Any, monotonic: Monotonic, only: Any = lambda parsed: True) -> Any:
    """A hook for a call's `after-call` event: once, after the call was served, `change()` (another process
    changes the settings), then the answer takes `ANSWER_SECONDS` to come back."""
    pending = [True]

    def late_answer(parsed: dict[str, Any], **_: Any) -> None:
        if pending[0] and only(parsed):
            pending[0] = False
            change()
            monotonic.now += ANSWER_SECONDS

    late_answer.pending = pending  # type: ignore[attr-defined]
    return late_answer


def test_settings_whose_answer_came_late_expire_a_cache_time_after_the_read_was_sent(
    client: QueueClient, dynamodb: Any, monotonic: Monotonic
) -> None:
    """The reader's GetItem is answered with the settings as they were, and the answer comes back late; meanwhile
    an operator changes them. A look soon after the answer is past the cache's time counted from the read, so it
    reads the new settings instead of serving the old ones for a whole cache time more."""
    client.create_queue("q", visibility_timeout=30)
    reader = _other(client, dynamodb)
    operator = _other(client, dynamodb)
    hook = _late(
        lambda: operator.update_queue("q", visibility_timeout=45),
        monotonic,
        only=lambda parsed: parsed.get("Item", {}).get("pk") == {"S": "Q#q"},  # the settings' read, no other
    )
    dynamodb.meta.events.register("after-call.dynamodb.GetItem", hook)
    try:
        assert reader._ctx.registry.get("q").visibility_timeout == 30
    finally:
        dynamodb.meta.events.unregister("after-call.dynamodb.GetItem", hook)
    assert not hook.pending[0], "the read was not slowed"
    monotonic.now += LOOK_AFTER_SECONDS
    assert reader._ctx.registry.get("q").visibility_timeout == 45


def test_settings_a_process_wrote_expire_a_cache_time_after_the_write_was_sent(
    client: QueueClient, dynamodb: Any, monotonic: Monotonic
) -> None:
    """The same for the settings a process keeps from its own write: another process may change them once the
    write is applied, before its answer comes back."""
    client.create_queue("q", visibility_timeout=30)
    writer = _other(client, dynamodb)
    operator = _other(client, dynamodb)
    writer._ctx.registry.get("q")
    hook = _late(lambda: operator.update_queue("q", visibility_timeout=60), monotonic)
    dynamodb.meta.events.register("after-call.dynamodb.TransactWriteItems", hook)
    try:
        assert writer.update_queue("q", visibility_timeout=45).visibility_timeout == 45
    finally:
        dynamodb.meta.events.unregister("after-call.dynamodb.TransactWriteItems", hook)
    assert not hook.pending[0], "the write was not slowed"
    monotonic.now += LOOK_AFTER_SECONDS
    assert writer._ctx.registry.get("q").visibility_timeout == 60


def test_the_cache_still_serves_within_its_time(
    client: QueueClient, dynamodb: Any, counter: Any, monotonic: Monotonic
) -> None:
    """Counting from the read costs nothing in steady state: a look within the cache's time reads nothing, one
    past it reads once."""
    client.create_queue("q")
    reader = _other(client, dynamodb)
    reader._ctx.registry.get("q")
    counter.reset()
    monotonic.now += 0.9 * limits.SETTINGS_CACHE_SECONDS
    reader._ctx.registry.get("q")
    assert counter.calls["GetItem"] == 0
    monotonic.now += 0.2 * limits.SETTINGS_CACHE_SECONDS
    reader._ctx.registry.get("q")
    assert counter.calls["GetItem"] == 1
