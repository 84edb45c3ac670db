"""Automatic shards under a fleet: the same total load grows a queue whatever the number of processes carrying it
(each its own `QueueClient`, with its own caches and load meter), at a cost in report writes that does not grow
with the fleet, and throttles are never left without growth or a stated reason.

DynamoDB's per-key limit is scaled down (`autoshard.KEY_WRITE_UNITS`), and the load with it, so that moto carries
the scenarios quickly; every figure keeps its ratio to the limit."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from typing import Any

import pytest
from queue_core import QueueClient, Throttled, autoshard, load_meter

from tests.conftest import TABLE, FakeClock
from tests.throttle_hooks import request_body

KEY = 20  # write units a second a key takes, scaled down fifty times
BODY = "x" * 600  # under 1 KB with its keys: four write units of its shard's index key per life
PER_MESSAGE = 4


class ReportWrites:
    """Counts the writes of load reports (any write to a sub-queue's load partition) on a client."""

    def __init__(self) -> None:
        self.count = 0

    def _before_call(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in ("PutItem", "UpdateItem", "BatchWriteItem"):
            body = request_body(params)
            keys = [body.get("Item", {}).get("pk", {}), body.get("Key", {}).get("pk", {})]
            if any(str(key.get("S", "")).startswith("L#") for key in keys):
                self.count += 1

    def attach(self, dynamodb: Any) -> ReportWrites:
        dynamodb.meta.events.register("before-call.dynamodb", self._before_call)
        return self

    def detach(self, dynamodb: Any) -> None:
        dynamodb.meta.events.unregister("before-call.dynamodb", self._before_call)


@pytest.fixture
def report_writes(dynamodb: Any) -> Iterator[ReportWrites]:
    counting = ReportWrites().attach(dynamodb)
    yield counting
    counting.detach(dynamodb)


@pytest.fixture(autouse=True)
def _scaled_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(autoshard, "KEY_WRITE_UNITS", KEY)


class Fleet:
    """`size` sender processes of one sub-queue; with `lifetime`, each is replaced by a new process (empty caches,
    a new meter) every `lifetime` seconds, as short-lived function instances are."""

    def __init__(self, dynamodb: Any, clock: FakeClock, queue: str, size: int, lifetime: int | None = None) -> None:
        self.dynamodb, self.clock, self.queue, self.lifetime = dynamodb, clock, queue, lifetime
        self.senders = [self._new() for _ in range(size)]
        self.turn = 0
        self.sent: list[str] = []
        self.seconds = 0

    def _new(self) -> Any:
        return QueueClient(TABLE, dynamodb=self.dynamodb, clock=self.clock).queue(self.queue, "c")

    def run(self, seconds: int, per_second: float, groups: int = 0) -> None:
        """`per_second` messages each simulated second, in turn over the senders (and over `groups` groups)."""
        owed = 0.0
        for _ in range(seconds):
            if self.lifetime and self.seconds % self.lifetime == 0 and self.seconds:
                self.senders = [self._new() for _ in self.senders]
            owed += per_second
            while owed >= 1:
                owed -= 1
                body = f"{self.turn}:{BODY}"
                sender = self.senders[self.turn % len(self.senders)]
                self.turn += 1
                try:
                    sender.send(body, group_id=f"g{self.turn % groups}" if groups else None)
                except Throttled:
                    continue
                self.sent.append(body)
            self.clock.advance(1)
            self.seconds += 1


def _per_second(share: float) -> float:
    """Messages a second that put `share` of a key's limit on a one-shard queue."""
    return share * KEY / PER_MESSAGE


@pytest.mark.parametrize("senders", [1, 2, 20, 200])
def test_the_same_load_grows_the_queue_whatever_the_number_of_senders(
    client: QueueClient, dynamodb, clock: FakeClock, senders: int
) -> None:
    """72 % of a key's limit, carried by one process or spread over two hundred (each well under the share a
    process once had to carry alone to report): sized for a quarter of the limit, 4 shards, either way."""
    client.create_queue("busy")
    Fleet(dynamodb, clock, "busy", senders).run(20, _per_second(0.72))
    assert client.sweep().shards == [{"queue": "busy", "shards": 4, "auto": True}]


def test_senders_that_live_seconds_grow_the_queue(client: QueueClient, dynamodb, clock: FakeClock) -> None:
    """Twenty processes at a time, each replaced by a new one every two seconds (a report window is five)."""
    client.create_queue("busy")
    Fleet(dynamodb, clock, "busy", 20, lifetime=2).run(20, _per_second(0.72))
    assert client.sweep().shards == [{"queue": "busy", "shards": 4, "auto": True}]


def test_a_queue_grown_by_a_burst_keeps_what_a_fleets_load_needs(
    client: QueueClient, dynamodb, clock: FakeClock
) -> None:
    """A burst grows the queue to 16; a fleet of forty processes then carries a steady 72 % of a key, which needs
    4: the quiet period brings the count down to that, not to one shard."""
    client.create_queue("busy")
    Fleet(dynamodb, clock, "busy", 1).run(10, _per_second(3.0))
    assert client.sweep().shards[0]["shards"] == 16
    fleet = Fleet(dynamodb, clock, "busy", 40)
    counts = []
    for _ in range((autoshard.QUIET_SECONDS + 120) // 60):
        fleet.run(60, _per_second(0.72))
        counts.append(client.sweep().shards[0]["shards"])
    assert counts[-1] in (4, 8), counts
    assert min(counts) >= 4, counts


@pytest.mark.parametrize("senders", [2, 200])
def test_report_writes_stay_bounded_whatever_the_number_of_senders(
    client: QueueClient, dynamodb, clock: FakeClock, report_writes: ReportWrites, senders: int
) -> None:
    """The same load (72 % of a key, 20 s) costs about the same report writes from 2 processes as from 200: about
    one per `REPORT_SHARE` of a key's limit over a report window carried, never one per process."""
    client.create_queue("busy")
    Fleet(dynamodb, clock, "busy", senders).run(20, _per_second(0.72))
    units = 20 * _per_second(0.72) * PER_MESSAGE
    quantum = autoshard.REPORT_SHARE * KEY * autoshard.FLUSH_SECONDS
    assert 0.5 * units / quantum <= report_writes.count <= 1.5 * units / quantum + 3


def _throttle_every(dynamodb: Any, nth: int) -> Any:
    """Answers every `nth` message write (a send) with ProvisionedThroughputExceeded, before DynamoDB sees it."""
    from tests.throttle_hooks import throttle_error

    state = {"seen": 0}

    def before_call(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name not in ("PutItem", "BatchWriteItem", "TransactWriteItems"):
            return
        if "M#" not in str(request_body(params)):
            return
        state["seen"] += 1
        if state["seen"] % nth == 0:
            raise throttle_error(model.name)

    dynamodb.meta.events.register("before-call.dynamodb", before_call)
    return before_call


def test_a_throttled_fleet_grows_the_queue(client: QueueClient, dynamodb, clock: FakeClock) -> None:
    """Forty processes near a key's limit, one send in five throttled (over two a second in all, each process a
    few a minute): the queue grows."""
    client.create_queue("busy")
    hook = _throttle_every(dynamodb, 5)
    try:
        Fleet(dynamodb, clock, "busy", 40).run(25, _per_second(0.96))
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb", hook)
    assert client.sweep().shards[0]["shards"] >= 4


def test_a_throttled_fleet_of_short_lived_senders_grows_the_queue_by_itself(
    client: QueueClient, dynamodb, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forty processes near a key's limit, each replaced every two seconds, one send in five throttled: no process
    meets more than a throttle or two, yet the fleet's throttle reports show throttles going on, and a throttled
    sender that reads them grows the queue within seconds, with no sweep (which may be minutes away, or busy with
    other queues). Each process deciding only on its own throttles, none ever did."""
    monkeypatch.setattr(load_meter, "random", random.Random(34))  # where each new process's report credit starts
    client.create_queue("busy")
    hook = _throttle_every(dynamodb, 5)
    try:
        Fleet(dynamodb, clock, "busy", 40, lifetime=2).run(30, _per_second(0.96))
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb", hook)
    assert client.get_queue("busy").shards >= 4


@pytest.mark.usefixtures("instant_backoff")
def test_throttles_without_growth_say_why(
    client: QueueClient, dynamodb, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Every send throttled but the load a tenth of a key's limit (a table-level quota, say): more shards would not
    help, so the count stays, and the sweep says so, with the reason, in its report and in a log line."""
    client.create_queue("busy")
    hook = _throttle_every(dynamodb, 1)
    try:
        with caplog.at_level(logging.WARNING, logger="queue_core"):
            Fleet(dynamodb, clock, "busy", 10).run(30, _per_second(0.1))
            report = client.sweep()
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb", hook)
    assert report.shards[0]["shards"] == 1
    [held] = report.held
    assert (held["queue"], held["reason"]) == ("busy", "unexplained")
    assert held["throttles_per_minute"] >= autoshard.THROTTLES_PER_MINUTE
    assert any("busy" in record.getMessage() and "unexplained" in record.getMessage() for record in caplog.records)


@pytest.mark.usefixtures("instant_backoff")
def test_throttles_without_growth_say_why_with_no_sweep(
    client: QueueClient, dynamodb, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by the fleet run (a key refused in every half minute for two and a half minutes, its queue's count
    held, no reason said: the sweeps of that span were killed or failed). The throttled processes decided and knew
    why, but said it at debug level only. Now, with no sweep at all, they say it in a warning within seconds, each
    at most once a minute."""
    client.create_queue("busy")
    hook = _throttle_every(dynamodb, 1)
    try:
        with caplog.at_level(logging.DEBUG, logger="queue_core"):
            Fleet(dynamodb, clock, "busy", 10).run(30, _per_second(0.1))
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb", hook)
    held = [record for record in caplog.records if "queue busy: throttled" in record.getMessage()]
    said = [record for record in held if record.levelno >= logging.WARNING]
    assert said, [record.getMessage() for record in held]
    assert "shards stay 1 (unexplained)" in said[0].getMessage()
    assert len(said) <= 10, "each process says it at most once a minute"
    assert client.get_queue("busy").shards == 1
