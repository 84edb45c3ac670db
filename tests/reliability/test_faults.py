"""DynamoDB failing underneath one call at a time: what the caller sees, and that nothing is lost or doubled.

A throttle, a 500 or a timeout before the call surfaces as `Throttled` (429) and is never read as a lost claim
race; the SDK retries it first, a bounded number of times with backoff. A write whose answer was lost only delays
its message (a claim) or is made harmless by the dedup id on a retry (a send). A batch write left unprocessed is
retried, and what stays unprocessed is reported, never dropped.
"""

from __future__ import annotations

from collections.abc import Iterator

import botocore.endpoint
import pytest
import queue_core.store
from moto import mock_aws
from queue_core import QueueClient, SubQueue, Throttled
from queue_core.client import default_dynamodb

from tests.conftest import TABLE, FakeClock
from tests.reliability.faults import BEFORE_KINDS, FaultInjector, Kind, Stage

VISIBILITY = 30


@pytest.fixture(params=["standard", "fifo"])
def sub_queue(request: pytest.FixtureRequest, client: QueueClient) -> SubQueue:
    name = "orders" if request.param == "standard" else "orders.fifo"
    client.create_queue(name, visibility_timeout=VISIBILITY, max_receive_count=5)
    return client.queue(name, "tenant-a")


def _send(sub_queue: SubQueue, body: str, dedup_id: str | None = None) -> str:
    group = "g" if sub_queue.settings.fifo else None
    return sub_queue.send(body, group_id=group, dedup_id=dedup_id).message_id


@pytest.fixture
def faults(client: QueueClient) -> Iterator[list[FaultInjector]]:
    """Injectors attached to the core's client by a test; all detached at the end."""
    attached: list[FaultInjector] = []
    yield attached
    for injector in attached:
        injector.detach()


def _inject(faults: list[FaultInjector], client: QueueClient, **options: object) -> FaultInjector:
    injector = FaultInjector(**options).attach(client.dynamodb)  # type: ignore[arg-type]
    faults.append(injector)
    return injector


@pytest.mark.parametrize("kind", BEFORE_KINDS, ids=str)
def test_a_claim_that_fails_before_it_is_applied_raises_throttled_and_is_no_conflict(
    sub_queue: SubQueue, client: QueueClient, faults: list[FaultInjector], kind: Kind
) -> None:
    sent = _send(sub_queue, "m")
    injector = _inject(faults, client, before_rate=1.0, before_kinds=(kind,), operations=frozenset({"UpdateItem"}))

    with pytest.raises(Throttled) as raised:
        sub_queue.receive()
    assert raised.value.status == 429 and raised.value.code == "Throttled"

    injector.enabled = False
    [message] = sub_queue.receive()
    assert (message.message_id, message.receive_count) == (sent, 1), "the failed claim was not applied"
    assert sub_queue.claim_conflicts == 0, "a throttle was counted as a lost claim race"


@pytest.mark.parametrize(
    "kind", [Kind.PROVISIONED_THROUGHPUT, Kind.THROTTLING, Kind.INTERNAL_SERVER_ERROR, Kind.READ_TIMEOUT], ids=str
)
def test_the_sdk_retries_a_persistent_fault_five_times_with_backoff_then_it_is_throttled(
    monkeypatch: pytest.MonkeyPatch, kind: Kind
) -> None:
    """The deployed functions' client (`default_dynamodb`): standard retries, the first attempt and five retries,
    with a randomized exponential backoff before each retry."""
    slept: list[float] = []
    monkeypatch.setattr(botocore.endpoint.time, "sleep", slept.append)
    with mock_aws():
        dynamodb = default_dynamodb()
        core = QueueClient(TABLE, dynamodb=dynamodb)
        core.create_table()
        core.create_queue("orders")
        orders = core.queue("orders", "tenant-a")
        orders.send("m")
        injector = FaultInjector(
            before_rate=1.0, stage=Stage.SEND, before_kinds=(kind,), operations=frozenset({"Query"})
        ).attach(dynamodb)
        slept.clear()

        with pytest.raises(Throttled):
            orders.receive()

        injector.detach()
    assert injector.attempts["Query"] == 6
    assert len(slept) == 5 and all(0 <= delay <= 20 for delay in slept) and sum(slept) > 0


def test_a_short_burst_of_throttles_is_absorbed_by_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(botocore.endpoint.time, "sleep", lambda _seconds: None)
    with mock_aws():
        dynamodb = default_dynamodb()
        core = QueueClient(TABLE, dynamodb=dynamodb)
        core.create_table()
        core.create_queue("orders")
        orders = core.queue("orders", "tenant-a")
        orders.send("m")
        injector = FaultInjector(
            before_rate=1.0,
            stage=Stage.SEND,
            before_kinds=(Kind.THROTTLING,),
            budget=3,
            operations=frozenset({"Query"}),
        ).attach(dynamodb)

        assert [message.body for message in orders.receive()] == ["m"]
        injector.detach()
    assert injector.attempts["Query"] == 4


def test_a_claim_whose_answer_was_lost_only_delays_the_message_until_its_visibility_expires(
    sub_queue: SubQueue, client: QueueClient, clock: FakeClock, faults: list[FaultInjector]
) -> None:
    sent = _send(sub_queue, "m")
    _inject(faults, client, after_rate=1.0, budget=1, operations=frozenset({"UpdateItem"}))

    with pytest.raises(Throttled):
        sub_queue.receive()
    assert sub_queue.receive() == [], "the claim was applied: nobody else may hold the message"
    assert sub_queue.stats().in_flight == 1

    clock.advance(VISIBILITY + 1)
    [message] = sub_queue.receive()
    assert message.message_id == sent
    assert sub_queue.claim_conflicts == 0


def test_a_send_whose_answer_was_lost_is_sent_again_with_its_dedup_id_and_stored_once(
    sub_queue: SubQueue, client: QueueClient, faults: list[FaultInjector]
) -> None:
    _inject(faults, client, after_rate=1.0, budget=1, operations=frozenset({"TransactWriteItems"}))
    with pytest.raises(Throttled):
        _send(sub_queue, "m", dedup_id="order-17")

    group = "g" if sub_queue.settings.fifo else None
    again = sub_queue.send("m", group_id=group, dedup_id="order-17")

    assert again.duplicate
    [message] = sub_queue.receive(max_messages=10)
    assert message.message_id == again.message_id
    assert sub_queue.stats().visible + sub_queue.stats().in_flight == 1


def test_a_transaction_cancelled_by_throttling_is_throttled_never_a_duplicate(
    sub_queue: SubQueue, client: QueueClient, faults: list[FaultInjector]
) -> None:
    injector = _inject(
        faults,
        client,
        before_rate=1.0,
        before_kinds=(),
        budget=1,
        operations=frozenset({"TransactWriteItems"}),
    )
    with pytest.raises(Throttled):
        _send(sub_queue, "m", dedup_id="order-18")
    assert injector.counts == {Kind.TRANSACTION_THROTTLED: 1}

    group = "g" if sub_queue.settings.fifo else None
    assert not sub_queue.send("m", group_id=group, dedup_id="order-18").duplicate, "the first send wrote nothing"


def test_a_batch_left_partly_unprocessed_is_retried_until_everything_is_stored(
    client: QueueClient, faults: list[FaultInjector], monkeypatch: pytest.MonkeyPatch
) -> None:
    retries: list[int] = []
    monkeypatch.setattr(queue_core.store, "_backoff", retries.append)
    client.create_queue("orders")
    orders = client.queue("orders", "tenant-a")
    injector = _inject(
        faults, client, before_rate=1.0, before_kinds=(), budget=3, operations=frozenset({"BatchWriteItem"})
    )

    result = orders.send_batch([{"body": f"m{n}"} for n in range(10)])

    assert injector.counts == {Kind.UNPROCESSED_ITEMS: 3}
    assert len(result.successful) == 10 and result.failed == []
    assert retries == [0, 1, 2]
    bodies = sorted(message.body for message in orders.receive(max_messages=10))
    assert bodies == sorted(f"m{n}" for n in range(10))


def test_what_stays_unprocessed_is_reported_as_throttled_and_not_stored(
    client: QueueClient, faults: list[FaultInjector], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queue_core.store, "_backoff", lambda _attempt: None)
    client.create_queue("orders")
    orders = client.queue("orders", "tenant-a")
    injector = _inject(
        faults,
        client,
        before_rate=1.0,
        before_kinds=(),
        unprocessed_share=0.5,
        operations=frozenset({"BatchWriteItem"}),
    )

    result = orders.send_batch([{"body": f"m{n}"} for n in range(8)])
    injector.enabled = False

    stored = {entry["index"] for entry in result.successful}
    refused = {entry["index"] for entry in result.failed}
    assert stored and refused and stored | refused == set(range(8)) and not stored & refused
    assert {entry["code"] for entry in result.failed} == {"Throttled"}
    received = {message.body for message in orders.receive(max_messages=10)}
    assert received == {f"m{n}" for n in stored}, "exactly the entries reported stored were stored"


def test_a_fifo_delete_whose_answer_was_lost_is_done_once_when_retried(
    client: QueueClient, clock: FakeClock, faults: list[FaultInjector]
) -> None:
    client.create_queue("jobs.fifo", visibility_timeout=VISIBILITY)
    jobs = client.queue("jobs.fifo", "tenant-a")
    for step in ("first", "second"):
        jobs.send(step, group_id="g")
    [first] = jobs.receive()
    _inject(faults, client, after_rate=1.0, budget=1, operations=frozenset({"DeleteItem"}))

    with pytest.raises(Throttled):
        jobs.delete(first.receipt_handle)
    jobs.delete(first.receipt_handle)

    [second] = jobs.receive()  # the retried delete found the message gone and still unlocked the group
    assert second.body == "second"
    jobs.delete(second.receipt_handle)
    stats = jobs.stats()
    assert (stats.visible, stats.in_flight, stats.delayed) == (0, 0, 0)
