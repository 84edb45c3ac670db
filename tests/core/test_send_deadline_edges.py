"""The edges of the send deadline (`Store.sent_by`): what it must not hold back, and the writes built from a
queue's settings that must land before another process acts on a change of them.

A deadline bounds when a write built from cached settings may still land; a read lands nothing, and the read that
tells which puts of a batch whose answer was lost were stored must still go out, or stored messages are reported as
not stored and sent again.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from botocore.exceptions import ReadTimeoutError
from moto.core.models import botocore_stubber
from queue_core import QueueClient, limits


def _deadline_in(client: QueueClient, name: str, seconds: float) -> None:
    """This process's cached settings of `name`, as read so long ago that a write built from them must be sent
    within `seconds` from now."""
    registry = client._ctx.registry
    settings = registry.get(name, fresh=True)
    read_at = time.monotonic() - limits.SETTINGS_CACHE_SECONDS - limits.SEND_GRACE_SECONDS + seconds
    registry._cache[name] = (time.monotonic(), replace(settings, read_at=read_at))


def test_the_puts_of_a_batch_whose_answer_was_lost_past_the_deadline_are_found_stored(
    client: QueueClient, dynamodb: Any
) -> None:
    """A batch of puts is applied and its answer lost, and the deadline passes while it waits for it (a stalled
    connection). The SDK sends no batch of puts again; the store reads which were stored instead. That read lands
    nothing and must go out whatever the deadline: held back, every entry is reported as perhaps not stored, and
    the caller, told to send it again, stores each message twice."""
    client.create_queue("jobs", shards=1)
    jobs = client.queue("jobs", "c")
    jobs.send("warm")  # the client's registration, out of the way
    jobs.receive()
    _deadline_in(client, "jobs", 0.2)
    lost = [0]

    def apply_then_time_out(request: Any, event_name: str, **_: Any) -> None:
        if not event_name.endswith(".BatchWriteItem") or lost[0]:
            return
        lost[0] += 1
        botocore_stubber(event_name=event_name, request=request)  # applied
        time.sleep(0.3)  # the answer never comes; the deadline passes meanwhile
        raise ReadTimeoutError(endpoint_url=request.url)

    dynamodb.meta.events.register("before-send.dynamodb", apply_then_time_out)
    try:
        outcome = jobs.send_batch([{"body": "a"}, {"body": "b"}])
    finally:
        dynamodb.meta.events.unregister("before-send.dynamodb", apply_then_time_out)
    assert lost[0] == 1
    stored = sorted(message.body for message in jobs.peek())
    assert stored == ["a", "b"]
    assert not outcome.failed, f"stored, yet reported as perhaps not stored (to be sent again): {outcome.failed}"
    assert len(outcome.successful) == 2
