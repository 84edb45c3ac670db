"""Shard changes close together, seen by processes whose cached settings are of different ages: a FIFO group has
one place and one sequence whatever the number and spacing of the changes.

Each process is its own `QueueClient` over the same table (its own settings cache, load meter and clock reading). A
process holds the settings it last read for up to `limits.SETTINGS_CACHE_SECONDS`; the scenarios keep to that: a
process is used with the settings of a change only until the next change plus that cache time."""

from __future__ import annotations

import pytest
from queue_core import QueueClient, keys, limits

from tests.conftest import TABLE, FakeClock

QUEUE = "orders.fifo"


def _process(dynamodb, clock: FakeClock) -> QueueClient:
    return QueueClient(TABLE, dynamodb=dynamodb, clock=clock)


def _drain(queue) -> list:
    got_all = []
    while got := queue.receive(max_messages=10):
        got_all += got
        queue.delete_batch([m.receipt_handle for m in got])
    return got_all


def test_two_changes_twenty_seconds_apart_keep_one_place_and_one_sequence(
    client: QueueClient, dynamodb, clock: FakeClock
) -> None:
    """1 -> 4, then 4 -> 16 twenty seconds later. A process with the newest settings sends m1 (received and
    deleted), then X; a process still on the first change's settings sends Y. Y is not m1 again (same id,
    sequence 1) and is not delivered before X."""
    client.create_queue(QUEUE, max_receive_count=0)
    newest, first_change = _process(dynamodb, clock), _process(dynamodb, clock)
    assert client.reshard_automatically(QUEUE, 4) == 4
    first_change.get_queue(QUEUE)  # read now, cached from here on
    clock.advance(20)
    client.reshard_automatically(QUEUE, 16)  # made, or waiting until it can be made safely
    newest.get_queue(QUEUE)
    sender = newest.queue(QUEUE, "c")
    m1 = sender.send("m1", group_id="g")
    [got] = sender.receive()
    assert got.message_id == m1.message_id
    sender.delete(got.receipt_handle)
    x = sender.send("X", group_id="g")
    y = first_change.queue(QUEUE, "c").send("Y", group_id="g")
    assert len({m1.message_id, x.message_id, y.message_id}) == 3, "one sequence: no id handed out twice"
    assert int(m1.sequence) < int(x.sequence) < int(y.sequence)
    received = _drain(client.queue(QUEUE, "c"))
    assert [m.body for m in received] == ["X", "Y"], "one place: the group's order holds"


@pytest.mark.parametrize("spacing", [0, 5, 20, 39, 45])
def test_a_group_keeps_one_place_and_one_sequence_through_many_changes(
    client: QueueClient, dynamodb, clock: FakeClock, spacing: int
) -> None:
    """Four changes `spacing` seconds apart (1 -> 4 -> 16 -> 2 -> 8); at every second until all have settled, a
    process holding the settings of one of them (the oldest any process may still hold) or the newest sends to
    one group, and now and then the group is drained, so that it moves between places. Every message has its own
    id and sequence, and the group is delivered in the order sent."""
    client.create_queue(QUEUE, max_receive_count=0)
    counts = [4, 16, 2, 8]
    # processes[k] holds the settings of change k (0: before any change) and is used only while it may.
    processes = [_process(dynamodb, clock) for _ in range(len(counts) + 1)]
    for process in processes:
        process.get_queue(QUEUE)
    start = clock()
    changed_at = [start]
    sent, received, ids = [], [], set()
    cache = int(limits.SETTINGS_CACHE_SECONDS)
    total = spacing * len(counts) + 70
    for second in range(total):
        made = len(changed_at) - 1
        while made < len(counts) and second >= spacing * made:
            client.reshard_automatically(QUEUE, counts[made])
            changed_at.append(clock())
            processes[made + 1].get_queue(QUEUE)
            made += 1
        now = clock()
        # The oldest settings a process may still hold now: a change's settings replace the ones before it in every
        # process within a cache's time.
        oldest = min(k for k in range(len(changed_at)) if k + 1 == len(changed_at) or now - changed_at[k + 1] < cache)
        holder = processes[oldest if second % 2 else len(changed_at) - 1]
        body = f"{second}"
        result = holder.queue(QUEUE, "c").send(body, group_id="g")
        assert result.message_id not in ids, f"second {second}: id {result.message_id} handed out twice"
        ids.add(result.message_id)
        sent.append(body)
        if second % 7 == 6:
            received += [m.body for m in _drain(processes[oldest].queue(QUEUE, "c"))]
        clock.advance(1)
    clock.advance(60)
    received += [m.body for m in _drain(client.queue(QUEUE, "c"))]
    assert received == sent


def test_a_process_whose_settings_are_older_than_the_cache_time_does_not_start_the_group_again(
    client: QueueClient, dynamodb, clock: FakeClock
) -> None:
    """Past what the scenarios above keep to: a process holds the settings of 1 -> 8 for minutes, through 8 -> 16
    (a container thawed whose monotonic clock stood still while it was frozen, as the fleet run's do; a call that
    stalled). Meanwhile the group, emptied at its first place, moved to its place by 16 with a process on the
    newest settings, which sent X. The old process knows neither that place nor that count: its own place for the
    group by 8 never held it. Its send Y still joins the group behind X, with a sequence of its own, not m1's."""
    group = next(
        name
        for name in (f"g{number}" for number in range(100))
        if len({keys.group_shard(name, 1), keys.group_shard(name, 8), keys.group_shard(name, 16)}) == 3
    )
    client.create_queue(QUEUE, max_receive_count=0)
    first = _process(dynamodb, clock).queue(QUEUE, "c")
    m1 = first.send("m1", group_id=group)
    [got] = first.receive()
    first.delete(got.receipt_handle)
    assert client.reshard_automatically(QUEUE, 8) == 8
    clock.advance(45)
    old = _process(dynamodb, clock)
    old.get_queue(QUEUE)  # placed by 8 (its place for the group holds nothing), the group's first place old
    clock.advance(60)
    assert client.reshard_automatically(QUEUE, 16) == 16
    clock.advance(45)
    x = _process(dynamodb, clock).queue(QUEUE, "c").send("X", group_id=group)
    y = old.queue(QUEUE, "c").send("Y", group_id=group)
    assert len({m1.message_id, x.message_id, y.message_id}) == 3, "one sequence: no id handed out twice"
    assert int(m1.sequence) < int(x.sequence) < int(y.sequence)
    assert [m.body for m in _drain(client.queue(QUEUE, "c"))] == ["X", "Y"], "one place: the group's order holds"


def test_a_sweep_on_settings_older_than_its_listing_keeps_the_layout_a_group_still_lives_at(
    client: QueueClient, dynamodb, clock: FakeClock
) -> None:
    """A sweeper whose cached settings are from before a change (1 shard) lists the queue after it (8, the old
    layout kept): it looked for groups at old places by its own count, where the group's place is the current one,
    and the layout was dropped while the group still lived there; a process with the new settings then started the
    group again at its place by 8, with sequence 1 (found by the fleet run: a message delivered before the one sent
    ahead of it)."""
    client.create_queue(QUEUE, max_receive_count=0)
    stale_sweeper = _process(dynamodb, clock)
    group = next(name for name in (f"g{n}" for n in range(100)) if keys.group_shard(name, 8) != 0)
    stale_sweeper.queue(QUEUE, "c").send("m1", group_id=group)
    assert client.reshard_automatically(QUEUE, 8) == 8
    clock.advance(limits.SETTINGS_CACHE_SECONDS + limits.INDEX_LAG_GRACE_SECONDS + 60)
    stale_sweeper.sweep()
    fresh = _process(dynamodb, clock)
    m2 = fresh.queue(QUEUE, "c").send("m2", group_id=group)
    assert int(m2.sequence) == 2, "one sequence"
    assert [m.body for m in _drain(fresh.queue(QUEUE, "c"))] == ["m1", "m2"], "one place: the group's order holds"
