"""The sweep: over-limit messages to the DLQ, crashed FIFO groups freed, expired messages removed, depths."""

from __future__ import annotations

import json
import threading

import boto3
import pytest
from queue_core import QueueClient, limits
from queue_core.models import SweepReport

from tests.conftest import TABLE, FakeClock
from tests.core.answers import Interleave, Refused, attached, refused
from tests.dynamo_calls import CallCounter


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


def _depth_of(report: SweepReport, queue: str, client: str) -> dict:
    [depth] = [d for d in report.depths if (d["queue"], d["client"]) == (queue, client)]
    return {key: value for key, value in depth.items() if key not in ("queue", "client")}


def test_the_depth_counts_what_lies_past_a_full_read_of_expired_messages(
    client: QueueClient, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep deletes a full read's worth of expired messages (one shard, `STATS_SCAN_LIMIT` of them): the
    depth it reports is the sub-queue's as it left it, the live messages after them included, exact."""
    monkeypatch.setattr(limits, "STATS_SCAN_LIMIT", 4)
    client.create_queue("full", retention_seconds=60, shards=1)
    queue = client.queue("full", "c")
    queue.send_batch([{"body": "old"} for _ in range(4)])
    clock.advance(30)
    queue.send_batch([{"body": "new"} for _ in range(2)])
    clock.advance(31)  # the first four past retention, the last two not
    report = client.sweep()
    assert report.expired_deleted == 4
    assert _depth_of(report, "full", "c") == queue.stats().to_dict()
    assert (queue.stats().visible, queue.stats().approximate) == (2, False)


def test_the_depth_counts_the_dlq_past_a_full_read_of_expired_dead_letters(
    client: QueueClient, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for the DLQ: dead letters past retention fill the sweep's read of it, and those after them are
    counted all the same."""
    client.create_queue("dead", retention_seconds=60, shards=1, max_receive_count=1, visibility_timeout=10)
    queue = client.queue("dead", "c")
    queue.send_batch([{"body": "first"} for _ in range(4)])
    queue.receive(max_messages=10)
    clock.advance(11)
    assert client.sweep().moved_to_dlq == 4
    clock.advance(30)
    queue.send_batch([{"body": "later"} for _ in range(2)])
    queue.receive(max_messages=10)
    clock.advance(11)
    assert client.sweep().moved_to_dlq == 2
    clock.advance(25)  # the first four dead letters past retention, the last two not
    monkeypatch.setattr(limits, "STATS_SCAN_LIMIT", 4)
    report = client.sweep()
    assert report.expired_deleted == 4
    assert _depth_of(report, "dead", "c") == queue.stats().to_dict()
    assert (queue.stats().dlq, queue.stats().approximate) == (2, False)


def test_a_message_another_consumer_took_as_the_sweep_moved_it_is_counted_once(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    """The sweep reads a message past its receive limit in the index, and another process's receive gets to it
    first (it moves it to the DLQ itself, or holds it): the sweep's move finds it changed and moves nothing. The
    depth it reports is the sub-queue's as it is then: the message in one place, not visible and somewhere else."""
    client.create_queue("race", max_receive_count=1, visibility_timeout=10, shards=1)
    queue = client.queue("race", "c")
    queue.send("poison")
    queue.receive()
    clock.advance(11)
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("race", "c")

    def message_read(body: dict) -> bool:
        return body.get("Key", {}).get("pk", {}).get("S", "").startswith("M#race#")

    taking = Interleave("GetItem", lambda: other.receive(), message_read)
    with attached(dynamodb, taking):
        report = client.sweep()
    assert taking.done and report.moved_to_dlq == 0
    after = queue.stats()
    assert after.visible + after.in_flight + after.dlq == 1
    assert _depth_of(report, "race", "c") == after.to_dict()


def test_a_queue_made_anew_by_another_process_while_the_sweep_passes_reports_the_new_depth(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    """Another process deletes a queue and creates it again between the sweep's listing and its sweep of the
    queue's sub-queues: the depth the sweep reports is the queue's as it is (the new incarnation's), what its
    stats answer, not the emptied old one's."""
    client.create_queue("a")
    client.queue("a", "x").send("old")
    sweeper = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)

    def clients_of_a(body: dict) -> bool:
        return '"C#a#' in json.dumps(body)

    def made_anew() -> None:
        client.delete_queue("a")
        client.create_queue("a")
        client.queue("a", "x").send("new")

    remaking = Interleave("Query", made_anew, clients_of_a)
    with attached(dynamodb, remaking):
        report = sweeper.sweep()
    assert remaking.done
    stats = client.queue("a", "x").stats()
    assert stats.visible == 1
    assert _depth_of(report, "a", "x") == stats.to_dict()


def test_a_queue_another_process_deleted_while_the_sweep_passes_is_skipped(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    """Deleted by another process after the sweep's listing: the sweep reports no depth for it (no metric for a
    queue that is gone), and the queues after it are swept."""
    for name in ("a", "b"):
        client.create_queue(name)
        client.queue(name, "x").send("m")
    sweeper = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)

    def clients_of_a(body: dict) -> bool:
        return '"C#a#' in json.dumps(body)

    deleting = Interleave("Query", lambda: client.delete_queue("a"), clients_of_a)
    with attached(dynamodb, deleting):
        report = sweeper.sweep()
    assert deleting.done and report.complete
    assert [(depth["queue"], depth["client"]) for depth in report.depths] == [("b", "x")]


def test_the_depth_counts_what_lies_past_a_full_read_of_messages_moved_to_the_dlq(
    client: QueueClient, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep moves a full read's worth of messages past their receive limit to the DLQ: the message after
    them is still counted as visible."""
    monkeypatch.setattr(limits, "STATS_SCAN_LIMIT", 4)
    client.create_queue("moved", max_receive_count=1, visibility_timeout=10, shards=1)
    queue = client.queue("moved", "c")
    queue.send_batch([{"body": "poison"} for _ in range(4)])
    queue.receive(max_messages=10)
    clock.advance(11)
    queue.send("fresh")  # visible from now: after the four in the index
    report = client.sweep()
    assert report.moved_to_dlq == 4
    assert queue.stats().visible == 1
    assert _depth_of(report, "moved", "c") == queue.stats().to_dict()


def test_a_fifo_sub_queues_stats_read_its_group_items_once_and_tell_the_oldest_waiting_message(
    client: QueueClient, clock: FakeClock, counter: CallCounter
) -> None:
    """The stats count the group items and take the heads of the first of them for the oldest message's age: the
    group items are read once, not once for the counts and again for the age."""
    client.create_queue("age.fifo", shards=1)
    jobs = client.queue("age.fifo", "c")
    jobs.send("old", group_id="a")
    clock.advance(30)
    jobs.send("new", group_id="b")
    clock.advance(10)
    counter.reset()
    stats = jobs.stats()
    partitions = [values[0] for values in counter.queries if values]
    assert (stats.visible, stats.oldest_age_seconds) == (2, 40)
    assert len([pk for pk in partitions if pk.startswith("F#age.fifo#c#")]) == 1, partitions


def test_a_standard_sub_queues_depth_comes_from_the_sweeps_own_reads(
    client: QueueClient, clock: FakeClock, counter: CallCounter
) -> None:
    """The sweep reads a standard sub-queue's index and its DLQ once each: the depth it reports is counted from those
    reads (a message moved to the DLQ included), not from a second read of both for the stats."""
    client.create_queue("once", max_receive_count=1, visibility_timeout=10, shards=1)
    queue = client.queue("once", "c")
    queue.send_batch([{"body": "poison"}, {"body": "kept"}])
    queue.receive()
    clock.advance(11)
    counter.reset()
    report = client.sweep()
    partitions = [values[0] for values in counter.queries if values]
    assert report.moved_to_dlq == 1
    assert len([pk for pk in partitions if pk.startswith("M#once#c#")]) == 1, partitions
    assert len([pk for pk in partitions if pk.startswith("D#once#c#")]) == 1, partitions
    assert _depth_of(report, "once", "c") == queue.stats().to_dict()
    assert (queue.stats().visible, queue.stats().dlq) == (1, 1)


def test_a_sub_queue_whose_sweep_fails_for_its_own_data_leaves_the_others_swept(
    client: QueueClient, clock: FakeClock
) -> None:
    """DynamoDB refuses one sub-queue's DLQ read (not a throttle: an error the sweep cannot retry away). The pass
    goes on with every other queue, counts the failure, and keeps the queue's old layouts (not swept whole)."""
    client.create_queue("bad", visibility_timeout=30)
    client.create_queue("other", retention_seconds=60)
    client.queue("bad", "c").send("m")
    other = client.queue("other", "c")
    other.send("old")
    clock.advance(61)  # "old" expired: the sweep deletes it
    dlq_read = Refused("Query", lambda body: "D#bad#" in json.dumps(body), "ValidationException", "refused")
    with refused(client.dynamodb, dlq_read):
        report = client.sweep()
    assert dlq_read.refused >= 1
    assert report.failures >= 1
    assert other.stats().visible == 0 and report.expired_deleted >= 1
