"""Scenarios on an index that lags as DynamoDB's does (`tests.index_lag`): what a read of a lagging index may
cost is a moment's delay, never a message lost, held twice, or left undeliverable for longer than the lag."""

from __future__ import annotations

from queue_core import QueueClient, limits

from tests.conftest import TABLE, FakeClock
from tests.core.answers import Interleave, LostAnswer, attached
from tests.index_lag import IndexLag

LAG_SECONDS = 1


def test_the_lag_hides_a_new_entry_and_still_shows_a_removed_one_until_it_has_passed(
    client: QueueClient, clock: FakeClock
) -> None:
    client.create_queue("jobs")
    jobs = client.queue("jobs", "a")
    with IndexLag(LAG_SECONDS, clock) as lag:
        jobs.send("first")
        assert jobs.receive() == []
        clock.advance(LAG_SECONDS)
        (received,) = jobs.receive()
        jobs.delete(received.receipt_handle)
        assert jobs.stats().visible == 1
        with lag.settled():
            assert jobs.stats().visible == 0
        clock.advance(LAG_SECONDS)
        assert jobs.stats().visible == 0


def test_a_send_just_before_a_drain_keeps_its_marker_when_the_index_lags(client: QueueClient, clock: FakeClock) -> None:
    """A client's marker is dropped by a queue-wide receive that found nothing there, and put back for the next
    entry the index shows. A send committed a moment before (its marker the same "ready now" item) is not in the
    index yet: queue-wide receives must find it once the drain's grace has passed (the drop leaves a reminder for then),
    not wait for the claim of an earlier message to run out."""
    client.create_queue("jobs", visibility_timeout=300, queue_wide=True)
    jobs, wide = client.queue("jobs", "a"), client.queue_wide("jobs")
    with IndexLag(LAG_SECONDS, clock):
        jobs.send("first")
        clock.advance(LAG_SECONDS)
        assert [message.body for message in jobs.receive()] == ["first"]
        clock.advance(LAG_SECONDS)
        jobs.send("second")
        assert wide.receive() == []  # the index does not show it yet: a moment's delay is allowed
        clock.advance(limits.INDEX_LAG_GRACE_SECONDS + 1)
        assert [message.body for message in wide.receive()] == ["second"]


def test_a_client_first_seen_just_before_fifo_groups_move_keeps_its_groups_after_the_sweep(
    client: QueueClient, clock: FakeClock
) -> None:
    """A FIFO queue going from 2 shards to 1 keeps reading the old layout until the sweep has found no group left
    there in any client. A client whose first send lands at an old place just before groups are placed by the new
    count is not in the lagging index's list of clients yet: the sweep must not drop the old layout then, or that
    client's groups are never read again."""
    client.create_queue("shrink.fifo", fifo=True, shards=2, max_receive_count=0)
    client.update_queue("shrink.fifo", shards=1)
    groups = [f"g{number}" for number in range(6)]  # some of them live at the shard that goes away
    # Sends are placed by the old count until every process has read the new one.
    clock.advance(2 * limits.SETTINGS_CACHE_SECONDS + 20 - LAG_SECONDS / 2)
    with IndexLag(LAG_SECONDS, clock):
        late = client.queue("shrink.fifo", "late")
        late.send_batch([{"body": group, "group_id": group} for group in groups])
        clock.advance(LAG_SECONDS / 2)
        client.sweep()
        clock.advance(LAG_SECONDS)
        received = []
        while batch := late.receive(max_messages=10):
            received += [message.body for message in batch]
            late.delete_batch([message.receipt_handle for message in batch])
    assert sorted(received) == groups


def test_a_drain_whose_drop_lost_its_answer_still_comes_back_for_a_send_just_before(
    client: QueueClient, dynamodb: object, clock: FakeClock
) -> None:
    """As above, with the drop applied and its answer lost: the SDK's retry finds the marker gone, so the drain
    cannot read when it was put, and must come back as if it had been put just now."""
    client.create_queue("jobs", visibility_timeout=300, queue_wide=True)
    jobs, wide = client.queue("jobs", "a"), client.queue_wide("jobs")
    marker_drop = LostAnswer("DeleteItem", lambda body: body["Key"]["pk"]["S"].startswith("R#"))
    with IndexLag(LAG_SECONDS, clock):
        jobs.send("first")
        clock.advance(LAG_SECONDS)
        assert [message.body for message in jobs.receive()] == ["first"]
        clock.advance(LAG_SECONDS)
        jobs.send("second")
        with attached(dynamodb, marker_drop):
            assert wide.receive() == []
        assert marker_drop.lost == 1
        clock.advance(limits.INDEX_LAG_GRACE_SECONDS + 1)
        assert [message.body for message in wide.receive()] == ["second"]


def test_an_idle_client_drained_by_two_consumers_at_once_is_left_without_reminders(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    """The drain that removed the marker decides on a reminder; the one that found it gone leaves none, or two
    consumers racing would keep an idle client's reminders coming for ever."""
    client.create_queue("jobs", visibility_timeout=30, queue_wide=True)
    client.queue("jobs", "a").send("hello")
    clock.advance(2 * limits.INDEX_LAG_GRACE_SECONDS)
    first, second = client.queue_wide("jobs"), client.queue_wide("jobs")
    [message] = first.receive()
    first.delete(message.receipt_handle)
    clock.advance(limits.INDEX_LAG_GRACE_SECONDS + 2)

    def a_marker_drop(body: dict) -> bool:
        return body.get("Key", {}).get("pk", {}).get("S", "").startswith("R#")

    racing = Interleave("DeleteItem", lambda: second.receive(), a_marker_drop)
    with attached(dynamodb, racing):
        assert first.receive() == []

    assert racing.done
    markers = [item for item in dynamodb.scan(TableName=TABLE)["Items"] if item["pk"]["S"].startswith("R#")]
    assert markers == []
