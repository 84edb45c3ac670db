"""Every delivery time a send accepts leaves its message deliverable for `MIN_DELIVERY_WINDOW_SECONDS`; a later
one is refused with a `ValidationError` (400), whatever the millisecond the send happens at."""

from __future__ import annotations

from typing import Any

import pytest
from queue_core import QueueClient, ValidationError, limits

from tests.conftest import FakeClock

RETENTION = 3600
WINDOW = limits.MIN_DELIVERY_WINDOW_SECONDS
LATEST = RETENTION - WINDOW


def receiver(client: QueueClient, how: str, queue: str) -> Any:
    return client.queue(queue, "c") if how == "client" else client.queue_wide(queue)


@pytest.mark.parametrize("how", ["client", "queue_wide"])
@pytest.mark.parametrize("start", [1_800_000_000.0, 1_800_000_000.5, 1_800_000_000.999], ids=["whole", "mid", "end"])
@pytest.mark.parametrize("field", ["delay_seconds", "deliver_at"])
def test_the_latest_delivery_time_accepted_is_deliverable_for_the_whole_window(
    client: QueueClient, clock: FakeClock, how: str, start: float, field: str
) -> None:
    clock.now = start
    client.create_queue("later", retention_seconds=RETENTION)
    sub = client.queue("later", "c")

    def send(seconds: int) -> Any:
        at = {"delay_seconds": seconds} if field == "delay_seconds" else {"deliver_at": start + seconds}
        return sub.send(f"in {seconds}", **at)

    for refused in (LATEST + 1, RETENTION, RETENTION + 1):
        with pytest.raises(ValidationError, match=f"{WINDOW} s"):
            send(refused)
    send(LATEST - 1)
    send(LATEST)
    assert sub.stats().delayed == 2
    got = receiver(client, how, "later")
    clock.now = start + LATEST - 1
    [first] = got.receive(max_messages=10)
    assert first.body == f"in {LATEST - 1}"
    got.delete(first.receipt_handle)
    # The last millisecond of the window: the message sent for the latest time is still there to receive.
    clock.now = start + LATEST + WINDOW - 0.001
    assert [message.body for message in got.receive(max_messages=10)] == [f"in {LATEST}"]


@pytest.mark.parametrize("how", ["client", "queue_wide"])
def test_a_deliver_at_in_the_middle_of_a_second_one_millisecond_past_the_latest_is_refused(
    client: QueueClient, clock: FakeClock, how: str
) -> None:
    clock.now = 1_800_000_000.25
    client.create_queue("edge", retention_seconds=RETENTION)
    sub = client.queue("edge", "c")
    with pytest.raises(ValidationError):
        sub.send("late", deliver_at=clock() + LATEST + 0.001)
    sub.send("latest", deliver_at=clock() + LATEST)
    clock.now += LATEST + WINDOW - 0.001
    assert [message.body for message in receiver(client, how, "edge").receive()] == ["latest"]


def test_a_queue_default_delay_must_leave_the_window_too(client: QueueClient) -> None:
    with pytest.raises(ValidationError, match="delay_seconds"):
        client.create_queue("tight", retention_seconds=120, delay_seconds=61)
    client.create_queue("tight", retention_seconds=120, delay_seconds=60)
    with pytest.raises(ValidationError, match="delay_seconds"):
        client.update_queue("tight", retention_seconds=119)
