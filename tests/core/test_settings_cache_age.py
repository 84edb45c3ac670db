"""A process's cached settings are as old as the read that gave them, not as its answer: every delay until all
processes hold a queue's new settings (`placement_from`, `markers_from`, `retention_from`) counts on no process
serving settings read more than `SETTINGS_CACHE_SECONDS` ago."""

from __future__ import annotations

import time
from typing import Any

import pytest
from queue_core import QueueClient, limits

from tests.conftest import FakeClock

CACHE_SECONDS = 0.6
ANSWER_SECONDS = 0.5


def _other(client: QueueClient, dynamodb: Any) -> QueueClient:
    """Another process: its own core client and caches, the same table and clock."""
    return QueueClient(client.table_name, dynamodb=dynamodb, clock=client._ctx.clock)


def test_settings_whose_answer_came_late_expire_a_cache_time_after_the_read_was_sent(
    client: QueueClient, dynamodb: Any, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader's GetItem is answered with the settings as they were, and the answer takes half a second to come
    back (the SDK retrying, a stalled connection); meanwhile an operator changes them. A look soon after the answer
    is past the cache's time counted from the read, so it reads the new settings instead of serving the old ones
    for a whole cache time more."""
    monkeypatch.setattr(limits, "SETTINGS_CACHE_SECONDS", CACHE_SECONDS)
    client.create_queue("q", visibility_timeout=30)
    reader = _other(client, dynamodb)
    operator = _other(client, dynamodb)
    slowed = [True]

    def late_answer(parsed: dict[str, Any], **_: Any) -> None:
        if slowed[0] and parsed.get("Item", {}).get("pk") == {"S": "Q#q"}:  # the settings' read, no other
            slowed[0] = False
            operator.update_queue("q", visibility_timeout=45)  # after the read was served, before its answer
            time.sleep(ANSWER_SECONDS)

    dynamodb.meta.events.register("after-call.dynamodb.GetItem", late_answer)
    try:
        assert reader._ctx.registry.get("q").visibility_timeout == 30
    finally:
        dynamodb.meta.events.unregister("after-call.dynamodb.GetItem", late_answer)
    assert not slowed[0], "the read was not slowed"
    time.sleep(CACHE_SECONDS - ANSWER_SECONDS + 0.05)
    assert reader._ctx.registry.get("q").visibility_timeout == 45


def test_settings_a_process_wrote_expire_a_cache_time_after_the_write_was_sent(
    client: QueueClient, dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for the settings a process keeps from its own write: another process may change them once the
    write is applied, before its answer comes back."""
    monkeypatch.setattr(limits, "SETTINGS_CACHE_SECONDS", CACHE_SECONDS)
    client.create_queue("q", visibility_timeout=30)
    writer = _other(client, dynamodb)
    operator = _other(client, dynamodb)
    slowed = [True]

    def late_answer(**_: Any) -> None:
        if slowed[0]:
            slowed[0] = False
            operator.update_queue("q", visibility_timeout=60)
            time.sleep(ANSWER_SECONDS)

    writer._ctx.registry.get("q")
    dynamodb.meta.events.register("after-call.dynamodb.TransactWriteItems", late_answer)
    try:
        assert writer.update_queue("q", visibility_timeout=45).visibility_timeout == 45
    finally:
        dynamodb.meta.events.unregister("after-call.dynamodb.TransactWriteItems", late_answer)
    assert not slowed[0], "the write was not slowed"
    time.sleep(CACHE_SECONDS - ANSWER_SECONDS + 0.05)
    assert writer._ctx.registry.get("q").visibility_timeout == 60


def test_the_cache_still_serves_within_its_time(client: QueueClient, dynamodb: Any, counter: Any) -> None:
    """Counting from the read costs nothing in steady state: a second look within the cache's time reads nothing."""
    client.create_queue("q")
    reader = _other(client, dynamodb)
    reader._ctx.registry.get("q")
    counter.reset()
    reader._ctx.registry.get("q")
    assert counter.calls["GetItem"] == 0
