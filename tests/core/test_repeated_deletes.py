"""A delete its client repeats long after it was applied changes nothing, whatever the SDK did on the way: the
group's count is the messages it holds."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from moto import mock_aws
from queue_core import QueueClient

from tests.conftest import FakeClock
from tests.reliability.faults import FaultInjector, Kind, Stage


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def core(clock: FakeClock) -> Iterator[QueueClient]:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        client = QueueClient("repeated-deletes", clock=clock)
        client.create_table()
        client.create_queue("jobs.fifo", visibility_timeout=30)
        yield client


def _total(core: QueueClient) -> int:
    stats = core.queue("jobs.fifo", "c").stats()
    return stats.visible + stats.in_flight + stats.delayed


# A delete repeated by its client long after it was applied and the group passed on (an SQS answer lost, the
# client's own retry) is no error and must change nothing. A throttle on that repeat's first attempt, retried by
# the SDK, is no sign that an earlier attempt of this request removed the message: it never counts it again.
def test_a_repeated_delete_whose_request_the_sdk_retried_counts_nothing_twice(core: QueueClient) -> None:
    jobs = core.queue("jobs.fifo", "c")
    jobs.send("m1", group_id="g", dedup_id="1")
    jobs.send("m2", group_id="g", dedup_id="2")
    [first] = jobs.receive(1)
    jobs.delete(first.receipt_handle)
    [second] = jobs.receive(1)  # the group passed on: m2 held by another claim
    assert _total(core) == 1
    throttle_once = FaultInjector(
        before_rate=1.0,
        stage=Stage.SEND,
        before_kinds=(Kind.PROVISIONED_THROUGHPUT,),
        operations=frozenset({"DeleteItem"}),
        budget=1,
    ).attach(core.dynamodb)
    try:
        jobs.delete(first.receipt_handle)  # the client's repeat: already deleted, nothing to do
    finally:
        throttle_once.detach()
    assert throttle_once.total == 1
    assert _total(core) == 1, "m2 is still held: the count must not drop"
    jobs.delete(second.receipt_handle)
    assert _total(core) == 0


def test_a_repeated_delete_without_a_throttle_counts_nothing(core: QueueClient) -> None:
    jobs = core.queue("jobs.fifo", "c")
    jobs.send("m1", group_id="g", dedup_id="1")
    jobs.send("m2", group_id="g", dedup_id="2")
    [first] = jobs.receive(1)
    jobs.delete(first.receipt_handle)
    jobs.receive(1)
    jobs.delete(first.receipt_handle)
    assert _total(core) == 1
