"""Two threads of one process read a queue's settings at once: the read sent first may be answered last. Its
settings are no newer than the other's, so they must not replace the newer ones in the cache (the process would
serve a change and then its undoing)."""

from __future__ import annotations

import threading
from typing import Any

from queue_core import QueueClient


def test_a_read_sent_earlier_and_answered_later_does_not_replace_newer_cached_settings(
    client: QueueClient, dynamodb: Any
) -> None:
    """Thread A's GetItem is served before an update and answered after it; meanwhile thread B of the same
    process makes the update (its own write caches the new settings). Once A's answer is in, the process still
    serves the new settings."""
    client.create_queue("q", visibility_timeout=30)
    process = QueueClient(client.table_name, dynamodb=dynamodb, clock=client._ctx.clock)
    process._ctx.registry.get("q")
    served, updated = threading.Event(), threading.Event()
    slowed = [True]

    def late_answer(parsed: dict[str, Any], **_: Any) -> None:
        if slowed[0] and parsed.get("Item", {}).get("pk") == {"S": "Q#q"} and threading.current_thread() is reader:
            slowed[0] = False
            served.set()
            assert updated.wait(10)

    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(process._ctx.registry.get("q", fresh=True).visibility_timeout))
    dynamodb.meta.events.register("after-call.dynamodb.GetItem", late_answer)
    try:
        reader.start()
        assert served.wait(10)
        process.update_queue("q", visibility_timeout=45)
        updated.set()
        reader.join(10)
    finally:
        dynamodb.meta.events.unregister("after-call.dynamodb.GetItem", late_answer)
    assert seen == [30], "the read was not answered with the settings before the update"
    assert process._ctx.registry.get("q").visibility_timeout == 45
