"""`dq migrate` on tables written by earlier releases' code (`fixtures/`, made by `fixtures/write_fixture.py`):
layout 1 (the generation-keyed registry) and layout 2 without a layout record (the release before records were
kept). After the upgrade every message is delivered once, FIFO order holds, the DLQ and the settings are as they
were, and the receipt handles issued before the upgrade still settle their messages."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import pytest
from queue_core import QueueClient, TableLayoutMismatch, Throttled, migration
from queue_core.layout import CURRENT_LAYOUT

from tests.conftest import FakeClock
from tests.release.tables import TABLE, load, restore, scan
from tests.reliability.faults import FaultInjector, Kind
from tests.throttle_hooks import throttle_error

LAYOUTS = ("layout1", "layout2")


def restored(dynamodb: Any, name: str) -> tuple[QueueClient, FakeClock, dict[str, Any]]:
    dump = load(name)
    restore(dynamodb, dump)
    clock = FakeClock(dump["clock_end"])
    return QueueClient(TABLE, dynamodb=dynamodb, clock=clock), clock, dump


def drain_queue_wide(client: QueueClient, queue: str) -> list[tuple[str, str]]:
    """Every message the queue's clients have, received queue-wide and deleted: (client, body) in receive order."""
    wide = client.queue_wide(queue)
    got: list[tuple[str, str]] = []
    while batch := wide.receive(max_messages=10):
        for message in batch:
            got.append((message.client, message.body))
            wide.delete(message.receipt_handle)
    return got


@pytest.mark.parametrize("fixture", LAYOUTS)
def test_a_dry_run_says_what_it_would_change_and_changes_nothing(dynamodb: Any, fixture: str) -> None:
    client, _, _ = restored(dynamodb, fixture)
    before = scan(dynamodb)
    report = client.migrate(dry_run=True)
    assert scan(dynamodb) == before
    assert report.found.layout is None and not report.upgraded
    assert report.sub_queues == 6 and report.markers == 4
    assert report.changes[-1].startswith(f"would record layout {CURRENT_LAYOUT}")
    assert "orders/tenant-a: would put a ready marker (priority 0, due now)" in report.changes


@pytest.mark.parametrize("fixture", LAYOUTS)
def test_after_the_upgrade_every_message_is_delivered_once_in_order_with_handles_settings_and_dlq_kept(
    dynamodb: Any, fixture: str
) -> None:
    client, clock, dump = restored(dynamodb, fixture)
    report = client.migrate()
    assert report.upgraded and client.table_layout().layout == CURRENT_LAYOUT

    orders, events = client.get_queue("orders"), client.get_queue("events.fifo")
    assert (orders.fifo, orders.visibility_timeout, orders.max_receive_count, orders.shards) == (False, 60, 2, 2)
    assert (events.fifo, events.visibility_timeout, events.max_receive_count) == (True, 60, 2)

    # Handles issued before the upgrade: one deletes its message, one gives it back, the FIFO one deletes the head.
    deleted, given_back = dump["handles"]["orders/tenant-a"]
    client.queue("orders", "tenant-a").delete(deleted["handle"])
    client.queue("orders", "tenant-a").change_visibility(given_back["handle"], 0)
    [head] = dump["handles"]["events.fifo/tenant-a"]
    client.queue("events.fifo", "tenant-a").delete(head["handle"])

    got = Counter(drain_queue_wide(client, "orders"))
    expected = {("tenant-a", f"orders/tenant-a/{n}") for n in range(1, 7)} - {("tenant-a", deleted["body"])}
    expected |= {("tenant-b", f"orders/tenant-b/{n}") for n in range(1, 4)}
    assert got == Counter(expected)

    order: dict[tuple[str, str], list[int]] = defaultdict(list)
    for client_id, body in drain_queue_wide(client, "events.fifo"):
        _, _, group, number = body.split("/")
        order[(client_id, group)].append(int(number))
    assert head["body"] == "events/tenant-a/g1/1"
    assert dict(order) == {("tenant-a", "g1"): [2, 3, 4], ("tenant-a", "g2"): [1, 2, 3], ("tenant-b", "g1"): [1, 2, 3]}

    for queue in ("orders", "events.fifo"):
        poisoned = client.queue(queue, "tenant-c")
        assert [message.body for message in poisoned.dlq_list()] == [f"{queue.split('.')[0]}/tenant-c/poison"]
        assert poisoned.redrive() == 1
        [again] = poisoned.receive()
        poisoned.delete(again.receipt_handle)
        for tenant in ("tenant-a", "tenant-b", "tenant-c"):
            stats = client.queue(queue, tenant).stats()
            assert (stats.visible, stats.in_flight, stats.delayed, stats.dlq) == (0, 0, 0, 0)
    clock.advance(1)


def test_a_second_run_has_nothing_to_do(dynamodb: Any) -> None:
    client, _, _ = restored(dynamodb, "layout1")
    client.migrate()
    before = scan(dynamodb)
    report = client.migrate()
    assert (report.found.layout, report.sub_queues, report.changes, report.upgraded) == (CURRENT_LAYOUT, 0, [], False)
    assert scan(dynamodb) == before


def test_a_run_stopped_halfway_is_finished_by_the_next_from_where_it_stopped(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migration, "PROGRESS_EVERY", 1)
    client, _, _ = restored(dynamodb, "layout1")

    def crash_on_the_second(step: str) -> None:
        if step.startswith("orders/tenant-a"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        client.migrate(on_step=crash_on_the_second)
    halfway = client.table_layout()
    assert (halfway.layout, halfway.migrating_to, halfway.cursor) == (None, CURRENT_LAYOUT, "events.fifo/tenant-c")
    # The table is served meanwhile.
    assert client.queue("orders", "tenant-b").stats().visible == 3

    report = client.migrate()
    assert report.resumed_after == "events.fifo/tenant-c"
    assert report.sub_queues == 3 and report.upgraded
    done = client.table_layout()
    assert (done.layout, done.migrating_to, done.cursor) == (CURRENT_LAYOUT, None, None)
    assert Counter(client for client, _ in drain_queue_wide(client, "orders")) == {"tenant-a": 4, "tenant-b": 3}


ORDER = (
    "events.fifo/tenant-a",
    "events.fifo/tenant-b",
    "events.fifo/tenant-c",
    "orders/tenant-a",
    "orders/tenant-b",
    "orders/tenant-c",
)


def throttle_puts(dynamodb: Any, first: int, times: int) -> Callable[[], None]:
    """From the `first`-th PutItem on (a ready marker), `times` PutItems in a row fail with
    ProvisionedThroughputExceededException before DynamoDB sees them; returns the detach."""
    seen = 0

    def before_call(**_: Any) -> None:
        nonlocal seen
        seen += 1
        if first <= seen < first + times:
            raise throttle_error("PutItem")

    event = "before-call.dynamodb.PutItem"
    dynamodb.meta.events.register(event, before_call)
    return lambda: dynamodb.meta.events.unregister(event, before_call)


def test_a_throttle_midway_is_retried_within_the_run(dynamodb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(migration, "STEP_BACKOFF_SECONDS", 0.0)
    client, _, _ = restored(dynamodb, "layout1")
    detach = throttle_puts(dynamodb, first=2, times=migration.STEP_ATTEMPTS - 1)
    try:
        report = client.migrate()
    finally:
        detach()
    assert report.upgraded and report.sub_queues == 6 and report.markers == 4
    assert client.table_layout().layout == CURRENT_LAYOUT
    assert Counter(client for client, _ in drain_queue_wide(client, "orders")) == {"tenant-a": 4, "tenant-b": 3}


def test_a_run_throttled_midway_leaves_its_cursor_and_the_next_run_resumes_and_records_the_layout(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migration, "STEP_BACKOFF_SECONDS", 0.0)
    client, _, _ = restored(dynamodb, "layout1")
    dynamodb.delete_item(TableName=TABLE, Key={"pk": {"S": "META"}, "sk": {"S": "LAYOUT"}})
    steps: list[str] = []
    detach = throttle_puts(dynamodb, first=3, times=migration.STEP_ATTEMPTS)
    try:
        with pytest.raises(Throttled):
            client.migrate(on_step=steps.append)
    finally:
        detach()
    stopped_at = steps[-1].split(":")[0]  # the sub-queue whose marker was throttled
    halfway = client.table_layout()
    assert (halfway.layout, halfway.migrating_to) == (None, CURRENT_LAYOUT)
    assert halfway.cursor == ORDER[ORDER.index(stopped_at) - 1]

    report = client.migrate()
    assert report.resumed_after == halfway.cursor and report.upgraded
    assert report.sub_queues == len(ORDER) - ORDER.index(stopped_at)
    done = client.table_layout()
    assert (done.layout, done.migrating_to, done.cursor) == (CURRENT_LAYOUT, None, None)
    assert Counter(client for client, _ in drain_queue_wide(client, "orders")) == {"tenant-a": 4, "tenant-b": 3}


def test_a_run_throttled_at_its_last_write_is_finished_by_the_next_without_reading_a_sub_queue_again(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migration, "STEP_BACKOFF_SECONDS", 0.0)
    client, _, _ = restored(dynamodb, "layout1")
    updates = 0

    def throttle_the_finish(**_: Any) -> None:
        nonlocal updates
        updates += 1
        if 2 <= updates < 2 + migration.STEP_ATTEMPTS:  # begin, then every try of finish
            raise throttle_error("UpdateItem")

    dynamodb.meta.events.register("before-call.dynamodb.UpdateItem", throttle_the_finish)
    try:
        with pytest.raises(Throttled):
            client.migrate()
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb.UpdateItem", throttle_the_finish)
    assert client.table_layout().cursor == ORDER[-1]
    report = client.migrate()
    assert (report.resumed_after, report.sub_queues, report.upgraded) == (ORDER[-1], 0, True)
    assert client.table_layout().layout == CURRENT_LAYOUT


def test_every_write_applied_then_repeated_by_the_sdk_after_a_lost_answer_leaves_the_same_upgrade(
    dynamodb: Any,
) -> None:
    client, _, _ = restored(dynamodb, "layout1")
    faults = FaultInjector(retried_rate=1.0, operations=frozenset({"PutItem", "UpdateItem"})).attach(dynamodb)
    try:
        report = client.migrate()
    finally:
        faults.detach()
    assert faults.counts[Kind.ANSWER_LOST_RETRIED] >= 6  # begin, 4 markers, finish
    assert report.upgraded and client.table_layout().layout == CURRENT_LAYOUT
    assert len(drain_queue_wide(client, "orders")) == 7  # two of tenant-a's are in flight


def test_a_table_of_a_newer_layout_is_not_migrated_back(dynamodb: Any) -> None:
    client, _, _ = restored(dynamodb, "layout2")
    dynamodb.put_item(
        TableName=TABLE, Item={"pk": {"S": "META"}, "sk": {"S": "LAYOUT"}, "layout": {"N": str(CURRENT_LAYOUT + 1)}}
    )
    before = scan(dynamodb)
    with pytest.raises(TableLayoutMismatch, match=f"layout {CURRENT_LAYOUT + 1}"):
        client.migrate()
    assert scan(dynamodb) == before
