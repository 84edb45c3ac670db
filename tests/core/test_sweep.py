"""The sweep: over-limit messages to the DLQ, crashed FIFO groups freed, expired messages removed, depths."""

from __future__ import annotations

import json
import threading

import boto3
from queue_core import QueueClient

from tests.conftest import TABLE, FakeClock
from tests.core.answers import Interleave, attached


def test_sweep_moves_expired_over_limit_messages(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("s", max_receive_count=1, visibility_timeout=10)
    queue = client.queue("s", "c")
    queue.send("poison")
    queue.receive()
    clock.advance(11)
    report = client.sweep()
    assert report.moved_to_dlq == 1 and report.complete
    assert queue.stats().dlq == 1
    [depth] = report.depths
    assert (depth["queue"], depth["client"], depth["dlq"]) == ("s", "c", 1)


def test_sweep_frees_a_crashed_fifo_group(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("g.fifo", visibility_timeout=10, max_receive_count=0)
    queue = client.queue("g.fifo", "c")
    queue.send("a", group_id="g")
    queue.receive()
    clock.advance(11)
    report = client.sweep()
    assert report.groups_freed == 1
    assert [m.body for m in queue.receive()] == ["a"]


def test_sweep_deletes_messages_past_retention(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("old", retention_seconds=60)
    queue = client.queue("old", "c")
    queue.send_batch([{"body": "x"} for _ in range(5)])
    clock.advance(61)
    report = client.sweep()
    assert report.expired_deleted == 5
    assert client.dynamodb.scan(TableName=client.table_name, FilterExpression="begins_with(pk, :m)",
                                ExpressionAttributeValues={":m": {"S": "M#old#"}})["Count"] == 0  # fmt: skip


def test_sweep_budget_stops_and_resumes(client: QueueClient) -> None:
    client.create_queue("b")
    for name in ("c1", "c2", "c3"):
        client.queue("b", name).send("x")
    first = client.sweep(max_items=0)
    assert not first.complete and first.sub_queues == 0
    partial = client.sweep(budget_seconds=60, cursor="b/c1")
    assert partial.complete and partial.sub_queues == 2


def test_two_concurrent_sweeps_do_no_harm(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("cc", max_receive_count=1, visibility_timeout=10)
    queue = client.queue("cc", "c")
    queue.send_batch([{"body": str(i)} for i in range(10)])
    queue.receive(max_messages=10)
    clock.advance(11)
    reports = []
    threads = [threading.Thread(target=lambda: reports.append(client.sweep())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(report.moved_to_dlq for report in reports) == 10
    stats = queue.stats()
    assert (stats.visible, stats.dlq) == (0, 10)


def test_a_sweep_that_overlaps_a_running_one_skips_it_and_the_next_one_runs(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    """The scheduled sweeper takes a lease (one conditional write) and gives it back at the end: a sweep that
    starts while another runs does nothing rather than read every sub-queue twice; a finished sweep, or one that
    crashed once its lease ran out, never holds up the next."""
    client.create_queue("leased")
    client.queue("leased", "c").send("x")
    other = QueueClient(TABLE, dynamodb=boto3.client("dynamodb", region_name="us-east-1"), clock=clock)
    overlapping = []
    with attached(dynamodb, Interleave("Query", lambda: overlapping.append(other.sweep(lease_seconds=50)))):
        first = client.sweep(budget_seconds=50, lease_seconds=50)
    assert not first.skipped and first.sub_queues == 1
    assert overlapping[0].skipped and overlapping[0].sub_queues == 0
    assert not client.sweep(lease_seconds=50).skipped
    assert client._ctx.registry.take_sweep_lease(client._ctx.now_ms(), 50) is not None  # a sweep that crashed
    assert client.sweep(lease_seconds=50).skipped
    clock.advance(51)
    assert not client.sweep(lease_seconds=50).skipped


def test_a_queue_deleted_while_the_sweep_passes_is_skipped_and_the_queues_after_it_are_swept(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    for name in ("a", "b"):
        client.create_queue(name, visibility_timeout=30, max_receive_count=1)
    client.queue("a", "x").send("m")
    later = client.queue("b", "x")
    later.send("m")
    later.receive()
    clock.advance(31)  # past its receive limit: the sweep moves it to the DLQ

    def clients_of_a(body: dict) -> bool:
        return '"C#a#' in json.dumps(body)

    deleting = Interleave("Query", lambda: client.delete_queue("a"), clients_of_a)
    with attached(dynamodb, deleting):
        report = client.sweep()

    assert deleting.done
    assert report.complete
    assert later.stats().dlq == 1
