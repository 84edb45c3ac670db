"""The scheduled sweep resumes: a leased pass that runs out of time leaves where it stopped, the next one starts
there and wraps around, so that every sub-queue is reached however little time each pass has."""

from __future__ import annotations

import boto3
from queue_core import QueueClient

from tests.conftest import TABLE, FakeClock
from tests.core.answers import LostAnswer, attached, expression_has

# Queue "a-b" sorts after "a" though "-" sorts before "/": the order is by queue, then client.
SUB_QUEUES = [("a", "x"), ("a", "y"), ("a-b", "x"), ("b", "x"), ("b", "y"), ("b", "z"), ("c", "x")]
LEASE_KEY = {"pk": {"S": "REGISTRY"}, "sk": {"S": "LEASE#sweep"}}


def _over_their_limit(client: QueueClient, clock: FakeClock) -> None:
    """A message past its receive limit in every sub-queue: what only the sweep moves to the DLQ."""
    for queue in sorted({queue for queue, _ in SUB_QUEUES}):
        client.create_queue(queue, visibility_timeout=10, max_receive_count=1)
    for queue, name in SUB_QUEUES:
        sub = client.queue(queue, name)
        sub.send("m")
        assert sub.receive()
    clock.advance(11)


def _tiny_pass(client: QueueClient) -> list[tuple[str, str]]:
    report = client.sweep(budget_seconds=0, lease_seconds=50)
    assert not report.skipped
    return [(depth["queue"], depth["client"]) for depth in report.depths]


def test_leased_passes_out_of_time_reach_every_sub_queue_in_turn(client: QueueClient, clock: FakeClock) -> None:
    _over_their_limit(client, clock)
    swept = [_tiny_pass(client) for _ in SUB_QUEUES]
    assert swept == [[sub] for sub in SUB_QUEUES]
    for queue, name in SUB_QUEUES:
        assert client.queue(queue, name).stats().dlq == 1
    # And round again, from the first queue.
    assert _tiny_pass(client) == [SUB_QUEUES[0]]


def test_a_queue_with_one_client_gets_its_whole_queue_steps_in_a_pass_out_of_time(client: QueueClient) -> None:
    for queue in sorted({queue for queue, _ in SUB_QUEUES}):
        client.create_queue(queue)
    for queue, name in SUB_QUEUES:
        client.queue(queue, name).send("m")
    decided: set[str] = set()
    for _ in SUB_QUEUES:
        decided |= {shards["queue"] for shards in client.sweep(budget_seconds=0, lease_seconds=50).shards}
    assert decided == {"a-b", "c"}  # a and b: their clients span passes (see the sweep's `_rounds`)


def test_a_resume_point_whose_queue_was_deleted_or_that_is_garbled_is_harmless(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    _over_their_limit(client, clock)
    client.create_queue("a-c")
    client.queue("a-c", "x").send("m")
    for _ in range(3):
        _tiny_pass(client)
    assert _tiny_pass(client) == [("a-c", "x")]
    client.delete_queue("a-c")  # the point left names it
    assert _tiny_pass(client) == [("b", "x")]
    for garbled in ({"N": "7"}, {"S": "no place"}, {"S": ""}):
        dynamodb.put_item(TableName=TABLE, Item={**LEASE_KEY, "lease_until": {"N": "0"}, "resume": garbled})
        assert _tiny_pass(client) == [SUB_QUEUES[0]]
    report = client.sweep(lease_seconds=50)
    assert report.complete and report.failures == 0 and len(report.depths) == len(SUB_QUEUES)


def test_a_lost_answer_on_writing_the_resume_point_or_on_taking_the_lease_loses_no_place(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    _over_their_limit(client, clock)
    with attached(dynamodb, LostAnswer("UpdateItem", expression_has("resume = :r"))) as lost:
        assert _tiny_pass(client) == [SUB_QUEUES[0]]
    assert lost.lost == 1
    with attached(dynamodb, LostAnswer("UpdateItem", expression_has("SET holder"))) as lost:
        assert _tiny_pass(client) == [SUB_QUEUES[1]]
    assert lost.lost == 1
    assert _tiny_pass(client) == [SUB_QUEUES[2]]


def test_a_resume_point_written_after_another_sweep_took_the_lease_leaves_that_sweeps_lease(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    """The write applied, its answer lost, and another sweep took the lease before the SDK's retry: the retry
    fails its condition (not the holder any more) and the other sweep's lease stands."""
    _over_their_limit(client, clock)
    other = QueueClient(TABLE, dynamodb=boto3.client("dynamodb", region_name="us-east-1"), clock=clock)
    taken: list[str | None] = []

    def another_sweep_takes_the_lease() -> None:
        taken.append(other._ctx.registry.take_sweep_lease(other._ctx.now_ms(), 50))

    lost = LostAnswer("UpdateItem", expression_has("resume = :r"), meanwhile=another_sweep_takes_the_lease)
    with attached(dynamodb, lost):
        assert _tiny_pass(client) == [SUB_QUEUES[0]]
    assert taken[0] is not None
    assert client.sweep(budget_seconds=0, lease_seconds=50).skipped
    other._ctx.registry.release_sweep_lease(taken[0], None)  # a complete pass: from the first queue again
    assert _tiny_pass(client) == [SUB_QUEUES[0]]
