"""An automatic FIFO queue grows to its need once, not past it, while a change is still reaching every process:
groups are placed by a new count only `placement_from` after the change (about 30 s), and until then the load and
the throttles are still those of the old placement."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from queue_core import QueueClient, Throttled, autoshard, limits, load_meter
from queue_core.keys import Space
from queue_core.settings import QueueSettings

from bench.backend import moto_backend
from bench.scenarios.load_step import core_limits_scaled
from bench.throttling import Limits, SimClock, Throttler

SCALE = 50  # DynamoDB's per-key limits and the core's estimates scaled down alike: 20 WU a second a key
TABLE = "settling"
BODY = "x" * 600  # under 1 KB with its keys: four write units of its shard's index key per life

SPREAD_MS = int(limits.SETTINGS_SPREAD_SECONDS * 1000)


def _senders(backend: Any, clock: Any, count: int) -> list[Any]:
    return [QueueClient(TABLE, dynamodb=backend.client, clock=clock).queue("orders.fifo", "c") for _ in range(count)]


def _steady(senders: list[Any], per_second: int, sent: list[int]) -> None:
    """`per_second` sends in turn over the senders and over a hundred groups; a throttled one is not sent again."""
    for _ in range(per_second):
        sent[0] += 1
        try:
            senders[sent[0] % len(senders)].send(f"{sent[0]}:{BODY}", group_id=f"g{sent[0] % 100}")
        except Throttled:
            continue


def test_a_steady_fifo_load_is_sized_once_whatever_the_sweeps_spacing() -> None:
    """A steady 120 % of a key's limit over a hundred groups needs 8 shards; sweeps 25 s apart, while the groups
    are still placed by the old count, keep it there."""
    with moto_backend() as backend, core_limits_scaled() as scale:
        scale(SCALE)
        clock = SimClock(1_800_000_000.0)
        admin = QueueClient(TABLE, dynamodb=backend.client, clock=clock)
        admin.create_table()
        admin.create_queue("orders.fifo", max_receive_count=0)
        senders, sent, counts = _senders(backend, clock, 4), [0], []
        for second in range(100):
            _steady(senders, 6, sent)
            clock.advance(1)
            if second % 25 == 24:
                counts.append(admin.sweep().shards[0]["shards"])
        assert counts == [8, 8, 8, 8]


def _drain(consumer: Any) -> None:
    """Everything visible received and deleted (a throttled call is left for the next second)."""
    try:
        while got := consumer.receive(max_messages=10):
            consumer.delete_batch([message.receipt_handle for message in got])
    except Throttled:
        return


def test_throttled_senders_do_not_grow_a_fifo_queue_again_while_its_change_settles(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Against a DynamoDB that throttles: 160 % of a key's limit over a hundred groups from one process, received as
    it comes, needs 8 shards. A throttled process grows the queue (the consumer, whose claims meet the throttles,
    usually within seconds; else a sweep, every 50 s until then); until the groups are placed by the new count the
    old key still throttles, and its reports still measure the old placement: no second growth, sweeps included.
    After that the backlog keeps most groups at their old place, where they stay while they have messages, and the
    old key throttles on: those throttles, met by calls at old places, are the old count's too. Once the change is
    made, a sweep 13 s after it settles (its longer rate windows straddling the move) and one 50 s after that (the
    new placement's load alone in its rates) close the scenario.

    The load measured at 8 shards, 20 % of a key's limit, reads up to 24 % (a window's reports, whole quanta): the
    old places' throttles, had they been counted, would have grown it to 32 whenever it read 25 %."""
    caplog.set_level(logging.INFO, logger="queue_core")  # the decisions, told when the scenario fails
    with moto_backend() as backend, core_limits_scaled() as scale:
        scale(SCALE)
        start = 1_800_000_000.0
        clock = SimClock(start)
        Throttler(backend.meter, clock, Limits().scaled(SCALE)).attach(backend.client)
        admin = QueueClient(TABLE, dynamodb=backend.client, clock=clock)
        admin.create_table()
        admin.create_queue("orders.fifo", max_receive_count=0)
        senders, sent, counts = _senders(backend, clock, 1), [0], []
        consumer = _senders(backend, clock, 1)[0]
        sweeps: list[int] = []
        for second in range(200):
            _steady(senders, 8, sent)
            _drain(consumer)
            clock.advance(1)
            if second in sweeps or (not sweeps and second % 50 == 49):
                admin.sweep()
            current = admin.get_queue("orders.fifo")
            counts.append(current.shards)
            if not sweeps and current.shards > 1:
                settled = int(current.placement_from / 1000 - start)
                sweeps = [settled + 13, settled + 63]
            if sweeps and second >= sweeps[-1]:
                break
        assert sweeps, f"never grown: {sorted(set(counts))}"
        assert counts[-1] == max(counts) == 8, sorted(set(counts))
        assert "(unexplained)" not in caplog.text  # the old places' throttles are not counted, so none to explain


def _throttled_at(at: float, old_places: bool) -> list[autoshard.Sample]:
    """Twenty seconds before `at` of 60 write units a second over a hundred groups (at 8 shards, about 40 % of a
    key's limit on each key) and 300 throttles a minute, met at the groups' old places or not."""
    return [
        autoshard.Sample(int((at - second - 0.5) * 1000), 60, 5, quantum=60, reporter="p", at_old_places=5 * old_places)
        for second in range(20)
    ]


def test_throttles_met_where_groups_stay_after_a_change_grow_nothing_and_say_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A FIFO queue grown to 8 whose groups are still placed by 1 (their backlog keeps them there): throttles at
    those old places say nothing of the new count, whose keys would carry 40 % of a key's limit. Met at the new places
    they would grow it four times (to 32); met at the old ones the count waits, and says why."""
    settings = QueueSettings(name="orders.fifo", fifo=True).resharded(8, now_ms=1_000_000, spread_ms=SPREAD_MS)
    at = settings.placement_from / 1000 + 30
    with core_limits_scaled() as scale:
        scale(SCALE)
        new_places = autoshard.decision(settings, [autoshard.Reports(_throttled_at(at, False), 0)], int(at * 1000))
        old_places = autoshard.decision(settings, [autoshard.Reports(_throttled_at(at, True), 0)], int(at * 1000))
    assert new_places.shards == 32
    assert (old_places.shards, old_places.held) == (8, "settling")
    assert old_places.throttles_per_minute >= autoshard.THROTTLES_PER_MINUTE


def test_a_report_tells_which_part_of_its_throttles_was_met_at_old_places() -> None:
    """A meter's report carries the part of its throttles met at old places, and starts afresh after it (a
    throttle quantum of one: a report after each call that met throttles)."""
    meter = load_meter.LoadMeter()
    space = Space("orders.fifo", "c", "g")
    calls = ((4, 4), (2, 0), (4, 1))
    made = [meter.record(space, 1_000, 1e9, 1, [], throttles, old) for throttles, old in calls]
    assert [(report.throttles, report.at_old_places) for report in made if report] == [(4, 4), (2, 0), (4, 1)]


def test_throttles_before_every_process_has_the_new_count_are_the_old_counts(client: QueueClient) -> None:
    """A FIFO queue grown to 8 fifteen seconds ago, its groups placed by 8 only from `placement_from` on: the
    throttles its senders meet until then are on the old places, whatever the count says. Counted, they would grow
    it four times more (to 32) on top of its need (16: 2,400 a second over a hundred groups); the count waits, and
    says why."""
    at = 1_000_000.0
    settings = client.create_queue("orders.fifo").resharded(8, now_ms=int((at - 15) * 1000), spread_ms=SPREAD_MS)
    assert settings.placement_from > at * 1000
    samples = [
        autoshard.Sample(int((at - second - 0.5) * 1000), 2_400, 5, quantum=24, reporter="p") for second in range(20)
    ]
    reports = [autoshard.Reports(samples, 0)]
    waiting = autoshard.decision(settings, reports, int(at * 1000))
    assert (waiting.shards, waiting.held) == (8, "settling")
    settled = settings.placement_from / 1000 + 20
    later = [
        autoshard.Sample(int((settled - second - 0.5) * 1000), 2_400, 5, quantum=24, reporter="p")
        for second in range(20)
    ]
    assert autoshard.decision(settings, [autoshard.Reports(later, 0)], int(settled * 1000)).shards == 32
