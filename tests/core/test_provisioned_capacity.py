"""A queue on a provisioned table, at and past its provisioned units, on the throttling backend (`bench.throttling`
with `Limits.provisioned`, `bench.autoscaling` for Application Auto Scaling).

What holds: a throttle whose reason is the table's or the index's capacity (`...ProvisionedThroughputExceeded`)
is not a hot key. It never grows the shard count, writes no load report and starts no growth decision (each would
add reads and writes to a table already at its limit, and more shards spread keys, not capacity); the caller gets
`Throttled` saying the table is at its capacity, with nothing applied; once auto scaling has raised the units, the
same load goes through, every stored message is received, and no request was spent on the throttling itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from queue_core import QueueClient, Throttled

from bench.autoscaling import DIMENSIONS, AutoScaling, Bounds
from bench.backend import moto_backend
from bench.throttling import Limits, Provisioned, SimClock, Throttler

TABLE = "provisioned"
BODY = "x" * 500  # one write unit an item, table and index alike
START = 1_800_000_000.0


@pytest.fixture
def clock() -> Iterator[SimClock]:
    """Simulated time; the core's own backoffs take simulated time too, as they take real time against DynamoDB."""
    clock = SimClock(START)
    clock.enter()
    with clock.simulated_sleep():
        yield clock
    clock.leave()


def _loaded(backend: Any, clock: SimClock) -> QueueClient:
    admin = QueueClient(TABLE, dynamodb=backend.client, clock=clock)
    admin.create_table()
    admin.create_queue("orders", max_receive_count=0)
    return admin


def _reports_with_throttles(backend: Any) -> list[dict[str, Any]]:
    items = backend.client.scan(TableName=TABLE)["Items"]
    return [item for item in items if "throttles" in item and float(item["throttles"]["N"]) > 0]


def test_a_queue_at_its_tables_provisioned_units_neither_grows_nor_reports_and_refuses_cleanly(clock: SimClock) -> None:
    with moto_backend() as backend:
        admin = _loaded(backend, clock)
        sender = QueueClient(TABLE, dynamodb=backend.client, clock=clock).queue("orders", "c")
        units = Provisioned(table_write=5, table_read=50, index_write=5, index_read=50, burst_seconds=1)
        throttler = Throttler(backend.meter, clock, Limits(provisioned=units)).attach(backend.client)
        start = backend.meter.mark()
        stored, refusals = [], []
        for second in range(30):
            for number in range(12):  # more than twice what the table's write units carry
                body = f"{second}-{number}:{BODY}"
                try:
                    sender.send(body)
                    stored.append(body)
                except Throttled as error:
                    refusals.append(str(error))
            clock.advance(1)
        spent = backend.meter.since(start)
        reasons = set(throttler.stats.refused)
        throttler.set_limits(Limits(provisioned=replace(units, table_read=0, index_read=0)))
        clock.advance(10)
        with pytest.raises(Throttled, match="at its capacity"):
            sender.receive()
        throttler.detach()

        assert refusals and stored
        assert reasons <= {"TableWriteProvisionedThroughputExceeded", "IndexWriteProvisionedThroughputExceeded"}
        # One request a send, whatever its answer (no round of retries), no report of throttles, no decision read.
        assert spent.calls["BatchWriteItem"] == len(stored) + len(refusals)
        assert spent.calls["Query"] == 0
        assert _reports_with_throttles(backend) == []
        assert admin.get_queue("orders").shards == 1
        report = admin.sweep()
        assert report.held == [] and report.shards[0]["shards"] == 1
        # Nothing refused was applied, everything stored is there.
        received = []
        while got := sender.receive(max_messages=10):
            received += [message.body for message in got]
            sender.delete_batch([message.receipt_handle for message in got])
        assert sorted(received) == sorted(stored)


def test_a_hot_key_on_a_provisioned_table_is_still_a_hot_key(clock: SimClock) -> None:
    """The key's own limit keeps its meaning in provisioned mode: its throttles count as before."""
    with moto_backend() as backend:
        sender = _loaded(backend, clock).queue("orders", "c")
        units = Provisioned(table_write=1_000, table_read=1_000, index_write=1_000, index_read=1_000)
        limits = Limits(key_write=3, key_read=3_000, provisioned=units)
        throttler = Throttler(backend.meter, clock, limits).attach(backend.client)
        for number in range(30):
            with contextlib.suppress(Throttled):
                sender.send(f"{number}:{BODY}")
        refused = set(throttler.stats.refused)
        throttler.detach()
        assert refused and refused <= {"TableWriteKeyRangeThroughputExceeded", "IndexWriteKeyRangeThroughputExceeded"}
        assert _reports_with_throttles(backend), "a hot key's throttles are reported, for the shard count"


def _send_minutes(clock: SimClock, sender: Any, scaling: AutoScaling, minutes: int, rate: int) -> dict[str, Any]:
    """`rate` sends a second for `minutes`; a refused send is the caller's to send again, and is not."""
    ledger: dict[str, Any] = {"stored": set(), "refused_by_minute": [], "attempts": 0}
    for minute in range(minutes):
        refused = 0
        for second in range(60):
            for number in range(rate):
                ledger["attempts"] += 1
                body = f"{minute}-{second}-{number}:{BODY}"
                try:
                    sender.send(body)
                    ledger["stored"].add(body)
                except Throttled:
                    refused += 1
            clock.advance(1)
            scaling.tick()
        ledger["refused_by_minute"].append(refused)
    return ledger


def test_auto_scaling_catches_up_with_a_step_and_the_queue_carries_it_after(
    clock: SimClock, request: pytest.FixtureRequest
) -> None:
    """A step to 1 message a second (1 write unit a second on the table and on the index; 4 with --stress) on a
    table provisioned at half that: refused at first, each refusal one request and nothing applied, the units
    raised by auto scaling a step every two minutes (the service's own pace), then carried."""
    stress = request.config.getoption("--stress")
    rate, minutes = (4, 12) if stress else (1, 8)
    with moto_backend() as backend:
        admin = _loaded(backend, clock)
        sender = QueueClient(TABLE, dynamodb=backend.client, clock=clock).queue("orders", "c")
        floor = rate / 2
        units = Provisioned(table_write=floor, table_read=floor, index_write=floor, index_read=floor, burst_seconds=10)
        throttler = Throttler(backend.meter, clock, Limits(provisioned=units)).attach(backend.client)
        scaling = AutoScaling(throttler, {name: Bounds(floor=floor, ceiling=100) for name in DIMENSIONS}, target=0.7)
        start = backend.meter.mark()
        ledger = _send_minutes(clock, sender, scaling, minutes, rate)
        spent = backend.meter.since(start)
        scaling.detach()
        throttler.detach()

        refused = ledger["refused_by_minute"]
        assert refused[0] > 0, "the step must meet the provisioned units"
        assert [change.table_write for _, change in scaling.history] == sorted(
            change.table_write for _, change in scaling.history
        )
        assert refused[-1] == 0, refused
        assert scaling.units.table_write >= rate / 0.7 * 0.9 and scaling.units.index_write >= rate / 0.7 * 0.9
        assert spent.calls["BatchWriteItem"] == ledger["attempts"], "a refused send is one request, not a round"
        assert spent.calls["Query"] == 0 and _reports_with_throttles(backend) == []
        assert admin.get_queue("orders").shards == 1
        received = set()
        while got := sender.receive(max_messages=10):
            received.update(message.body for message in got)
            sender.delete_batch([message.receipt_handle for message in got])
        assert received == ledger["stored"]
