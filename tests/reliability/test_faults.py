"""DynamoDB failing underneath one call at a time: what the caller sees, and that nothing is lost or doubled.

A throttle, a 500 or a timeout before the call surfaces as `Throttled` (429) and is never read as a lost claim
race; the SDK retries it first, a bounded number of times with backoff. A write whose answer was lost only delays
its message (a claim) or is made harmless by the dedup id on a retry (a send). A batch write left unprocessed is
retried, and what stays unprocessed is reported, never dropped.

A write applied, its answer lost and sent again by the SDK reaches the core as the retry's answer, often a failed
condition caused by its own first attempt: the core must read that as its own success, never as a conflict, and
never count, ack or store twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import botocore.endpoint
import pytest
import queue_core.store
from botocore.exceptions import ReadTimeoutError
from moto import mock_aws
from queue_core import QueueClient, ReceivedMessage, SubQueue, Throttled
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
        # A fixed shard count: an automatic one may read load reports after throttles, a Query this test
        # does not count as the receive's.
        core.create_queue("orders", shards=1)
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
        # A fixed shard count: an automatic one may read load reports after throttles, a Query this test
        # does not count as the receive's.
        core.create_queue("orders", shards=1)
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


def test_a_send_whose_answer_was_lost_learns_its_message_id_and_is_stored_once(
    sub_queue: SubQueue, client: QueueClient, faults: list[FaultInjector]
) -> None:
    """The transaction is sent again with its token: DynamoDB answers with the first commit, not a second one."""
    injector = _inject(faults, client, after_rate=1.0, budget=1, operations=frozenset({"TransactWriteItems"}))
    sent = _send(sub_queue, "m", dedup_id="order-17")
    assert injector.counts == {Kind.ANSWER_LOST: 1}

    group = "g" if sub_queue.settings.fifo else None
    again = sub_queue.send("m", group_id=group, dedup_id="order-17")

    assert again.duplicate
    assert again.message_id == sent
    [message] = sub_queue.receive(max_messages=10)
    assert message.message_id == sent
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


def test_compressed_bodies_left_unprocessed_are_stored_as_sent_by_the_retry(
    client: QueueClient, faults: list[FaultInjector], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The unprocessed items an answer carries are what the SDK parsed (binary values as bytes), so the retry
    that sends them again stores each compressed body exactly as the first request carried it."""
    monkeypatch.setattr(queue_core.store, "_backoff", lambda _attempt: None)
    client.create_queue("orders")
    orders = client.queue("orders", "tenant-a")
    sent = [f"m{n} " + "the same line of a chatty log, again and again; " * 80 for n in range(6)]
    injector = _inject(
        faults, client, before_rate=1.0, before_kinds=(), budget=1, operations=frozenset({"BatchWriteItem"})
    )

    result = orders.send_batch([{"body": body} for body in sent])

    assert injector.counts == {Kind.UNPROCESSED_ITEMS: 1}
    assert len(result.successful) == 6 and result.failed == []
    assert sorted(message.body for message in orders.receive(max_messages=10)) == sorted(sent)


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
    assert _counts(jobs) == (0, 0, 0)


# The injector's own lost-and-retried answers, on raw DynamoDB calls.
ITEM_KEY = {"pk": {"S": "fault-test"}, "sk": {"S": "item"}}


def _raw_item(dynamodb: Any) -> dict[str, Any]:
    return dynamodb.get_item(TableName=TABLE, Key=ITEM_KEY, ConsistentRead=True)["Item"]


def test_a_retried_conditional_update_answers_with_the_condition_its_first_attempt_broke(
    client: QueueClient, faults: list[FaultInjector]
) -> None:
    dynamodb = client.dynamodb
    dynamodb.put_item(TableName=TABLE, Item={**ITEM_KEY, "v": {"N": "0"}})
    injector = _inject(faults, client, retried_rate=1.0, budget=1)

    with pytest.raises(dynamodb.exceptions.ConditionalCheckFailedException) as failed:
        dynamodb.update_item(
            TableName=TABLE,
            Key=ITEM_KEY,
            UpdateExpression="SET v = :new",
            ConditionExpression="v = :old",
            ExpressionAttributeValues={":new": {"N": "1"}, ":old": {"N": "0"}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )

    assert failed.value.response["Item"]["v"] == {"N": "1"}, "the retry read what the first attempt wrote"
    assert _raw_item(dynamodb)["v"] == {"N": "1"}
    assert injector.counts == {Kind.ANSWER_LOST_RETRIED: 1}


def test_a_retried_unconditional_add_is_applied_twice(client: QueueClient, faults: list[FaultInjector]) -> None:
    dynamodb = client.dynamodb
    injector = _inject(faults, client, retried_rate=1.0, budget=1)

    answer = dynamodb.update_item(
        TableName=TABLE,
        Key=ITEM_KEY,
        UpdateExpression="ADD n :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="ALL_NEW",
    )

    assert answer["Attributes"]["n"] == {"N": "2"}, "the caller reads the retry's answer"
    assert _raw_item(dynamodb)["n"] == {"N": "2"}
    assert injector.counts == {Kind.ANSWER_LOST_RETRIED: 1}


def test_a_retried_transaction_is_applied_once_its_token_makes_the_retry_a_no_op(
    client: QueueClient, faults: list[FaultInjector]
) -> None:
    dynamodb = client.dynamodb
    tokens: list[str | None] = []
    injector = _inject(faults, client, retried_rate=1.0, budget=1)
    dynamodb.meta.events.register(
        "before-call.dynamodb.TransactWriteItems",
        lambda params, **_: tokens.append(json.loads(params["body"]).get("ClientRequestToken")),
    )

    dynamodb.transact_write_items(
        TransactItems=[
            {
                "Update": {
                    "TableName": TABLE,
                    "Key": ITEM_KEY,
                    "UpdateExpression": "ADD n :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            }
        ]
    )

    assert _raw_item(dynamodb)["n"] == {"N": "1"}
    assert injector.counts == {Kind.ANSWER_LOST_RETRIED: 1}
    assert len(tokens) == 1 and tokens[0], "botocore sent the transaction with an idempotency token"


def test_a_write_the_sdk_is_told_not_to_send_again_is_applied_once_and_its_caller_reads_the_timeout(
    client: QueueClient, faults: list[FaultInjector]
) -> None:
    dynamodb = client.dynamodb
    dynamodb.meta.events.register("needs-retry.dynamodb.UpdateItem", lambda **_: False, unique_id="no-retry-in-test")
    injector = _inject(faults, client, retried_rate=1.0, budget=1)
    try:
        with pytest.raises(ReadTimeoutError):
            dynamodb.update_item(
                TableName=TABLE,
                Key=ITEM_KEY,
                UpdateExpression="ADD n :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
    finally:
        dynamodb.meta.events.unregister("needs-retry.dynamodb.UpdateItem", unique_id="no-retry-in-test")

    assert _raw_item(dynamodb)["n"] == {"N": "1"}
    assert injector.counts == {Kind.ANSWER_LOST: 1}


def test_what_happens_between_the_two_attempts_runs_without_faults(
    client: QueueClient, faults: list[FaultInjector]
) -> None:
    dynamodb = client.dynamodb
    seen: list[dict[str, Any]] = []

    def meanwhile() -> None:
        dynamodb.update_item(
            TableName=TABLE,
            Key=ITEM_KEY,
            UpdateExpression="SET m = :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
        seen.append(_raw_item(dynamodb))

    injector = _inject(faults, client, retried_rate=1.0, meanwhile=meanwhile)
    dynamodb.put_item(TableName=TABLE, Item={**ITEM_KEY, "v": {"N": "7"}})

    assert seen == [{**ITEM_KEY, "v": {"N": "7"}, "m": {"N": "1"}}], "the first attempt was applied before"
    assert _raw_item(dynamodb) == {**ITEM_KEY, "v": {"N": "7"}}, "the retry put the item again, over the update"
    assert injector.counts == {Kind.ANSWER_LOST_RETRIED: 1}


# One core call at a time applied, its answer lost and retried by the SDK.
def _retried(
    faults: list[FaultInjector],
    client: QueueClient,
    operation: str,
    selects: Any = None,
    meanwhile: Any = None,
) -> FaultInjector:
    return _inject(
        faults,
        client,
        retried_rate=1.0,
        budget=1,
        operations=frozenset({operation}),
        selects=selects,
        meanwhile=meanwhile,
    )


def _counts(sub_queue: SubQueue) -> tuple[int, int, int]:
    stats = sub_queue.stats()
    return stats.visible, stats.in_flight, stats.delayed


@pytest.mark.parametrize("operation", ["DeleteItem", "UpdateItem"], ids=["message delete", "group ack"])
def test_a_fifo_delete_answered_by_its_retry_keeps_the_group_locked_while_its_holder_holds_the_next_message(
    client: QueueClient, clock: FakeClock, faults: list[FaultInjector], operation: str
) -> None:
    client.create_queue("jobs.fifo", visibility_timeout=VISIBILITY)
    jobs = client.queue("jobs.fifo", "tenant-a")
    for step in ("first", "second", "third"):
        jobs.send(step, group_id="g")
    first, second = jobs.receive(max_messages=2)
    injector = _retried(faults, client, operation)

    jobs.delete(first.receipt_handle)

    assert injector.counts == {Kind.ANSWER_LOST_RETRIED: 1}
    assert jobs.receive(max_messages=10) == [], "another consumer got the group while its holder holds 'second'"
    assert _counts(jobs) == (1, 1, 0), "'second' held, 'third' waiting behind it"
    jobs.delete(second.receipt_handle)
    clock.advance(VISIBILITY + 1)
    [third] = jobs.receive()
    assert third.body == "third"
    jobs.delete(third.receipt_handle)
    assert _counts(jobs) == (0, 0, 0)


def test_a_fifo_receive_whose_mark_was_answered_by_its_retry_counts_one_receive(
    client: QueueClient, faults: list[FaultInjector]
) -> None:
    client.create_queue("jobs.fifo", visibility_timeout=VISIBILITY, max_receive_count=2)
    jobs = client.queue("jobs.fifo", "tenant-a")
    jobs.send("m", group_id="g")
    injector = _retried(
        faults, client, "UpdateItem", selects=lambda _, request: "receive_count" in request.get("UpdateExpression", "")
    )

    [message] = jobs.receive()

    assert injector.counts == {Kind.ANSWER_LOST_RETRIED: 1}
    assert message.receive_count == 1
    jobs.release(message.receipt_handle, delay_seconds=0)
    [again] = jobs.receive()
    assert (again.body, again.receive_count) == ("m", 2), "one receive left before the DLQ, not none"
    assert jobs.stats().dlq == 0


def test_a_claim_answered_by_its_retry_delivers_once_or_frees_the_message_within_the_visibility_timeout(
    sub_queue: SubQueue, client: QueueClient, clock: FakeClock, faults: list[FaultInjector]
) -> None:
    sent = _send(sub_queue, "m")
    injector = _retried(faults, client, "UpdateItem")

    got = sub_queue.receive()

    assert injector.counts == {Kind.ANSWER_LOST_RETRIED: 1}
    assert sub_queue.receive() == [], "nobody else gets the message while a claim on it may be held"
    if got:
        [message] = got
        assert (message.message_id, message.receive_count) == (sent, 1)
        sub_queue.delete(message.receipt_handle)
    else:
        clock.advance(VISIBILITY + 1)
        [message] = sub_queue.receive()
        assert message.message_id == sent
        sub_queue.delete(message.receipt_handle)
    assert _counts(sub_queue) == (0, 0, 0)


def test_a_claim_answered_by_its_retry_counts_one_receive_even_with_no_visibility_timeout(
    sub_queue: SubQueue, client: QueueClient, clock: FakeClock, faults: list[FaultInjector]
) -> None:
    """With a visibility timeout of 0 the message is visible again at once (a FIFO group stays locked for a second):
    the retry's condition may still hold."""
    _send(sub_queue, "m")
    injector = _retried(
        faults, client, "UpdateItem", selects=lambda _, request: "receive_count" in request.get("UpdateExpression", "")
    )

    [message] = sub_queue.receive(visibility_timeout=0)

    assert injector.counts == {Kind.ANSWER_LOST_RETRIED: 1}
    assert message.receive_count == 1
    clock.advance(1)
    [again] = sub_queue.receive()
    assert again.receive_count == 2


def test_a_release_answered_by_its_retry_is_no_stale_receipt_handle(
    sub_queue: SubQueue, client: QueueClient, faults: list[FaultInjector]
) -> None:
    sent = _send(sub_queue, "m")
    [message] = sub_queue.receive()
    # a FIFO release gives back and unlocks in one transaction
    injector = _retried(faults, client, "TransactWriteItems" if sub_queue.settings.fifo else "UpdateItem")

    sub_queue.release(message.receipt_handle, delay_seconds=0)

    assert injector.counts == {Kind.ANSWER_LOST_RETRIED: 1}
    [again] = sub_queue.receive()
    assert (again.message_id, again.receive_count) == (sent, 2)


def test_a_batch_send_whose_answer_was_lost_stores_each_message_once_and_resets_none_already_received(
    client: QueueClient, faults: list[FaultInjector]
) -> None:
    client.create_queue("orders", visibility_timeout=VISIBILITY)
    orders = client.queue("orders", "tenant-a")
    held: list[ReceivedMessage] = []
    injector = _retried(faults, client, "BatchWriteItem", meanwhile=lambda: held.extend(orders.receive()))

    result = orders.send_batch([{"body": f"m{n}"} for n in range(3)])

    # A client may tell its SDK not to send a batch of puts again: the lost answer then reaches the core instead.
    assert injector.total == 1
    assert len(result.successful) == 3 and result.failed == []
    [first] = held
    assert _counts(orders) == (2, 1, 0), "three messages stored once each, the one received still in flight"
    others = orders.receive(max_messages=10)
    assert sorted(message.body for message in others) == sorted({"m0", "m1", "m2"} - {first.body})
    orders.delete(first.receipt_handle)
    for message in others:
        orders.delete(message.receipt_handle)
    assert _counts(orders) == (0, 0, 0)


def test_a_batch_send_whose_answer_was_lost_never_brings_back_nor_disowns_a_message_deleted_meanwhile(
    client: QueueClient, faults: list[FaultInjector]
) -> None:
    """Each message is received and deleted while the batch's answer is on its way. Stored again, it would come
    back from the dead; reported as not stored ("send it again"), the producer's resend would deliver it twice."""
    client.create_queue("orders", visibility_timeout=VISIBILITY)
    orders = client.queue("orders", "tenant-a")
    consumed: list[str] = []

    def consume() -> None:
        for message in orders.receive(max_messages=10):
            orders.delete(message.receipt_handle)
            consumed.append(message.body)

    injector = _retried(faults, client, "BatchWriteItem", meanwhile=consume)
    entries = [{"body": f"m{n}"} for n in range(3)]

    result = orders.send_batch(entries)

    assert injector.total == 1 and sorted(consumed) == ["m0", "m1", "m2"]
    # A lost answer cannot tell "never stored" from "stored and consumed meanwhile": such entries are reported
    # unconfirmed (may or may not be stored), never as surely not stored, and never written again.
    assert all("may not be stored" in failure["message"] for failure in result.failed)
    assert _counts(orders) == (0, 0, 0) and orders.receive(max_messages=10) == [], "a deleted message came back"
