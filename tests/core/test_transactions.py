"""Sends and acks inside the caller's own DynamoDB transaction: the outbox and exactly-once effects."""

from __future__ import annotations

import threading
import time
from typing import Any

import boto3
import pytest
import queue_core.transactions
from queue_core import (
    Consumer,
    DuplicateMessage,
    QueueClient,
    ReceiptHandleStale,
    ReceivedMessage,
    Throttled,
    TransactionConditionFailed,
    ValidationError,
)

from tests.conftest import FakeClock
from tests.core.answers import AnswerNeverCame, Interleave, LostAnswer, attached, never_answered

ORDERS = "orders"


@pytest.fixture
def orders(dynamodb: Any) -> str:
    """The caller's own table, beside the queue's."""
    dynamodb.create_table(
        TableName=ORDERS,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return ORDERS


def new_order(order_id: str) -> dict[str, Any]:
    return {
        "Put": {
            "TableName": ORDERS,
            "Item": {"id": {"S": order_id}, "state": {"S": "placed"}},
            "ConditionExpression": "attribute_not_exists(id)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


def bump(counter_id: str) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": ORDERS,
            "Key": {"id": {"S": counter_id}},
            "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }


def order(dynamodb: Any, order_id: str) -> dict[str, Any] | None:
    return dynamodb.get_item(TableName=ORDERS, Key={"id": {"S": order_id}}, ConsistentRead=True).get("Item")


def table_items(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    return dynamodb.scan(TableName=table)["Items"]


# Sending.
def test_a_message_sent_in_a_transaction_exists_once_it_commits(client: QueueClient, orders: str) -> None:
    client.create_queue("events")
    queue = client.queue("events", "shop")
    send = queue.send_transact_items("order o1 placed", attributes={"kind": "placed"})
    assert len(send.items) == 1 and queue.peek() == []
    client.transact([new_order("o1"), *send.items])
    [message] = queue.receive()
    assert (message.message_id, message.body) == (send.message_id, "order o1 placed")
    assert message.attributes == {"kind": "placed"}
    assert order(client.dynamodb, "o1")["state"] == {"S": "placed"}


def test_the_items_join_the_callers_own_transact_write_items(client: QueueClient, orders: str) -> None:
    client.create_queue("events.fifo")
    queue = client.queue("events.fifo", "shop")
    send = queue.send_transact_items("o2 placed", group_id="o2", dedup_id="o2-placed")
    assert len(send.items) == 3  # the group's sequence fence, the dedup item, the message
    client.dynamodb.transact_write_items(TransactItems=[new_order("o2"), *send.items])
    [message] = queue.receive()
    assert message.message_id == send.message_id and message.group_id == "o2"


@pytest.mark.parametrize("queue_name", ["typed", "typed.fifo"])
def test_a_transactional_send_stores_what_a_plain_send_stores(
    client: QueueClient, orders: str, queue_name: str
) -> None:
    client.create_queue(queue_name)
    queue = client.queue(queue_name, "shop")
    group = "g" if queue_name.endswith(".fifo") else None
    fields = {"attributes": {"n": "42", "kind": "placed"}, "attribute_types": {"n": "Number"}, "group_id": group}
    plain = queue.send("same", **fields)
    send = queue.send_transact_items("same", **fields)
    client.transact([new_order("o8"), send])
    first, second = queue.receive(max_messages=10) if group is None else [*queue.receive(), None]
    if group is not None:
        queue.delete(first.receipt_handle)
        [second] = queue.receive()
    assert (first.message_id, second.message_id) == (plain.message_id, send.message_id)
    assert first.to_dict() | {"message_id": "", "receipt_handle": "", "sequence": "", "sent_at": 0} == (
        second.to_dict() | {"message_id": "", "receipt_handle": "", "sequence": "", "sent_at": 0}
    )


def test_a_failed_business_condition_leaves_no_message_and_nothing_half_written(
    client: QueueClient, orders: str
) -> None:
    client.create_queue("events.fifo")
    queue = client.queue("events.fifo", "shop")
    client.transact([new_order("o3")])
    send = queue.send_transact_items("o3 placed again", group_id="o3", dedup_id="o3-again")
    before = table_items(client.dynamodb, client.table_name)  # the build wrote the client's registration only
    with pytest.raises(TransactionConditionFailed) as failed:
        client.transact([new_order("o3"), *send.items])
    assert failed.value.index == 0 and failed.value.item == {"id": "o3", "state": "placed"}
    assert table_items(client.dynamodb, client.table_name) == before
    assert queue.receive() == [] and queue.stats().visible == 0


@pytest.mark.parametrize(
    ("name", "group_id", "added", "whole"), [("events", None, 2, False), ("events.fifo", "g", 3, True)]
)
def test_a_duplicate_dedup_id_cancels_the_transaction_names_the_first_message_and_keeps_the_queue_as_it_was(
    client: QueueClient, orders: str, name: str, group_id: str | None, added: int, whole: bool
) -> None:
    """On a FIFO queue the group's count and fence stay as they were: the first message is delivered, and after
    its delete nothing else is (the caller passes the `TransactSend` itself there, its items on the other)."""
    client.create_queue(name)
    queue = client.queue(name, "shop")
    first = queue.send("o4 placed", group_id=group_id, dedup_id="o4")
    send = queue.send_transact_items("o4 placed again", group_id=group_id, dedup_id="o4")
    assert len(send.items) == added
    with pytest.raises(DuplicateMessage) as duplicate:
        client.transact([new_order("o4"), *([send] if whole else send.items)])
    assert duplicate.value.message_id == first.message_id and first.message_id in duplicate.value.message
    assert duplicate.value.sequence == first.sequence
    assert order(client.dynamodb, "o4") is None
    got = queue.receive(max_messages=10)
    assert [(m.message_id, m.body) for m in got] == [(first.message_id, "o4 placed")]
    queue.delete(got[0].receipt_handle)
    assert queue.receive(max_messages=10) == []


def test_two_sends_to_one_fifo_group_in_one_transaction_are_refused_and_write_nothing(
    client: QueueClient, orders: str
) -> None:
    """Both write the group's item: DynamoDB refuses a transaction that names one item twice."""
    client.create_queue("events.fifo")
    queue = client.queue("events.fifo", "shop")
    first = queue.send_transact_items("a", group_id="g")
    second = queue.send_transact_items("b", group_id="g")
    before = table_items(client.dynamodb, client.table_name)
    with pytest.raises(ValidationError):
        client.transact([new_order("o7"), first, second])
    assert order(client.dynamodb, "o7") is None
    assert table_items(client.dynamodb, client.table_name) == before
    assert queue.receive(max_messages=10) == []


def test_fifo_sends_in_transactions_keep_group_order_when_another_sender_moves_the_fence(
    client: QueueClient, clock: FakeClock, orders: str
) -> None:
    client.create_queue("events.fifo")
    queue = client.queue("events.fifo", "shop")
    other = QueueClient(client.table_name, dynamodb=client.dynamodb, clock=clock).queue("events.fifo", "shop")
    queue.send("first", group_id="g")
    send = queue.send_transact_items("third", group_id="g")
    planned = send.message_id
    # Another process sends to the group between the build and the commit: the fence is stale.
    sneak = Interleave(
        "TransactWriteItems", lambda: other.send("second", group_id="g"), match=lambda body: ORDERS in str(body)
    )
    with attached(client.dynamodb, sneak):
        client.transact([new_order("o5"), send])
    assert sneak.done and send.message_id != planned
    bodies = []
    while got := queue.receive(max_messages=10):
        bodies += [m.body for m in got]
        assert got[-1].message_id == send.message_id or "third" not in [m.body for m in got]
        queue.delete_batch([m.receipt_handle for m in got])
    assert bodies == ["first", "second", "third"]
    assert order(client.dynamodb, "o5") is not None


def test_many_transactional_fifo_senders_keep_each_group_in_commit_order(
    client: QueueClient, clock: FakeClock, orders: str
) -> None:
    client.create_queue("events.fifo")
    committed: list[tuple[str, str]] = []
    lock = threading.Lock()

    def sender(name: str) -> None:
        queue = QueueClient(client.table_name, dynamodb=client.dynamodb, clock=clock).queue("events.fifo", "shop")
        for i in range(6):
            send = queue.send_transact_items(f"{name}-{i}", group_id="g")
            queue.transact([new_order(f"{name}-{i}"), send])
            with lock:
                committed.append((send.sequence, f"{name}-{i}"))

    threads = [threading.Thread(target=sender, args=(f"s{n}",)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    queue = client.queue("events.fifo", "shop")
    bodies = []
    while got := queue.receive(max_messages=10):
        bodies += [m.body for m in got]
        queue.delete_batch([m.receipt_handle for m in got])
    assert bodies == [body for _, body in sorted(committed)] and len(bodies) == 18
    for name in ("s0", "s1", "s2"):
        assert [b for b in bodies if b.startswith(name)] == [f"{name}-{i}" for i in range(6)]


def test_more_than_a_transaction_holds_is_refused_before_anything_is_written(client: QueueClient, orders: str) -> None:
    client.create_queue("events")
    queue = client.queue("events", "shop")
    send = queue.send_transact_items("too many")
    with pytest.raises(ValidationError, match="at most 100"):
        client.transact([*(bump(f"c{i}") for i in range(100)), send])
    assert table_items(client.dynamodb, ORDERS) == [] and queue.peek() == []


def test_a_send_split_across_transactions_is_refused(client: QueueClient, orders: str) -> None:
    client.create_queue("events.fifo")
    send = client.queue("events.fifo", "shop").send_transact_items("half", group_id="g")
    with pytest.raises(ValidationError, match="all be in the transaction"):
        client.transact([new_order("o6"), send.items[1]])
    assert order(client.dynamodb, "o6") is None


# Acknowledging.
@pytest.mark.parametrize("queue_name", ["work", "work.fifo"])
def test_an_effect_and_its_ack_commit_together(client: QueueClient, orders: str, queue_name: str) -> None:
    client.create_queue(queue_name)
    queue = client.queue(queue_name, "c")
    fifo = queue_name.endswith(".fifo")
    queue.send("one", group_id="g" if fifo else None)
    queue.send("two", group_id="g" if fifo else None)
    [message] = queue.receive()
    ack = queue.delete_transact_items(message.receipt_handle)
    assert len(ack) == (2 if fifo else 1) and ack.message_id == message.message_id
    client.transact([bump(message.message_id), *ack])
    assert order(client.dynamodb, message.message_id)["n"] == {"N": "1"}
    # The FIFO group was released by the same transaction: its next message is there at once.
    assert [m.body for m in queue.receive()] == ["two"]


@pytest.mark.parametrize("queue_name", ["work", "work.fifo"])
def test_an_ack_after_the_message_was_received_again_applies_nothing(
    client: QueueClient, clock: FakeClock, orders: str, queue_name: str
) -> None:
    client.create_queue(queue_name, visibility_timeout=10, max_receive_count=0)
    queue = client.queue(queue_name, "c")
    queue.send("slow", group_id="g" if queue_name.endswith(".fifo") else None)
    [first] = queue.receive()
    effect = bump(first.message_id)
    ack = queue.delete_transact_items(first.receipt_handle)
    clock.advance(11)  # the slow holder's claim runs out
    [second] = queue.receive()
    with pytest.raises(ReceiptHandleStale):
        client.transact([effect, *ack])
    assert order(client.dynamodb, first.message_id) is None
    assert queue.get(first.message_id).state == "in_flight"
    client.transact([bump(second.message_id), *queue.delete_transact_items(second.receipt_handle)])
    assert order(client.dynamodb, first.message_id)["n"] == {"N": "1"}
    assert queue.receive() == [] and queue.stats().visible == 0


def test_a_commit_repeated_by_the_sdk_after_a_lost_answer_succeeds_once(client: QueueClient, orders: str) -> None:
    client.create_queue("work.fifo")
    queue = client.queue("work.fifo", "c")
    queue.send("once", group_id="g")
    queue.send("next", group_id="g")
    [message] = queue.receive()
    lost = LostAnswer("TransactWriteItems")
    with attached(client.dynamodb, lost):
        client.transact([bump(message.message_id), *queue.delete_transact_items(message.receipt_handle)])
    assert lost.lost == 1
    assert order(client.dynamodb, message.message_id)["n"] == {"N": "1"}
    assert [m.body for m in queue.receive()] == ["next"]


def test_a_transactional_send_repeated_by_the_sdk_stores_one_message(client: QueueClient, orders: str) -> None:
    client.create_queue("events.fifo")
    queue = client.queue("events.fifo", "shop")
    send = queue.send_transact_items("o7 placed", group_id="o7")
    lost = LostAnswer("TransactWriteItems")
    with attached(client.dynamodb, lost):
        client.transact([new_order("o7"), send])
    assert lost.lost == 1
    assert [m.message_id for m in queue.receive(max_messages=10)] == [send.message_id]
    assert queue.stats().in_flight == 1 and queue.stats().visible == 0


def test_the_callers_own_retry_with_its_token_learns_the_first_commit_succeeded(
    client: QueueClient, orders: str
) -> None:
    client.create_queue("work")
    queue = client.queue("work", "c")
    queue.send("m")
    [message] = queue.receive()
    items = [bump("effect"), *queue.delete_transact_items(message.receipt_handle)]
    client.transact(items, token="order-effect-1")
    client.transact(items, token="order-effect-1")  # its answer was lost, say: the same token answers success
    assert order(client.dynamodb, "effect")["n"] == {"N": "1"}
    with pytest.raises(ReceiptHandleStale):
        client.transact(items)  # without the token it is a new transaction, and the message is gone
    with pytest.raises(ValidationError, match="same client token"):
        client.transact([bump("another")], token="order-effect-1")
    assert order(client.dynamodb, "another") is None


def test_fifo_acks_of_several_held_messages_release_the_group_when_the_last_commits(
    client: QueueClient, orders: str
) -> None:
    client.create_queue("work.fifo")
    queue = client.queue("work.fifo", "c")
    for body in ("a", "b", "c"):
        queue.send(body, group_id="g")
    held = queue.receive(max_messages=2)
    assert [m.body for m in held] == ["a", "b"]
    for message in reversed(held):
        client.transact([bump(message.message_id), *queue.delete_transact_items(message.receipt_handle)])
    assert [m.body for m in queue.receive()] == ["c"]


# The consumer.
def _wait_until(condition: Any, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_transactional_consumer_commits_each_effect_with_its_ack(client: QueueClient, orders: str) -> None:
    client.create_queue("jobs.fifo", max_receive_count=0)
    queue = client.queue("jobs.fifo", "c")
    for i in range(6):
        queue.send(f"job-{i}", group_id=f"g{i % 2}")

    def handler(message: ReceivedMessage) -> list[dict[str, Any]]:
        return [bump(message.body)]

    consumer = Consumer(queue, handler, concurrency=2, transactional=True)
    consumer.start()
    _wait_until(lambda: consumer.report.succeeded >= 6)
    report = consumer.shutdown(timeout=5)
    assert report.succeeded == 6 and report.stale_acks == 0
    assert {item["id"]["S"]: item["n"]["N"] for item in table_items(client.dynamodb, ORDERS)} == {
        f"job-{i}": "1" for i in range(6)
    }
    assert queue.stats().visible == 0 and queue.stats().in_flight == 0


def test_a_transactional_queue_wide_consumer_applies_every_clients_effects_once(
    client: QueueClient, orders: str
) -> None:
    client.create_queue("jobs", max_receive_count=0)
    for tenant in ("a", "b", "c"):
        client.queue("jobs", tenant).send_batch([{"body": f"{tenant}-{i}"} for i in range(4)])

    def handler(message: ReceivedMessage) -> list[dict[str, Any]]:
        return [bump(message.body)]

    everyone = client.queue_wide("jobs")
    consumer = Consumer(everyone, handler, concurrency=2, transactional=True)
    consumer.start()
    _wait_until(lambda: consumer.report.succeeded >= 12)
    report = consumer.shutdown(timeout=5)
    assert report.succeeded == 12 and report.failed == 0 and report.stale_acks == 0
    assert {item["id"]["S"]: item["n"]["N"] for item in table_items(client.dynamodb, ORDERS)} == {
        f"{tenant}-{i}": "1" for tenant in ("a", "b", "c") for i in range(4)
    }
    for tenant in ("a", "b", "c"):
        stats = client.queue("jobs", tenant).stats()
        assert stats.visible == 0 and stats.in_flight == 0


def test_a_transactional_consumer_refuses_an_effect_too_big_for_one_transaction(
    client: QueueClient, orders: str
) -> None:
    client.create_queue("jobs", max_receive_count=0)
    queue = client.queue("jobs", "c")
    sent = queue.send("big")

    def handler(message: ReceivedMessage) -> list[dict[str, Any]]:
        return [bump(f"c{i}") for i in range(100)]

    consumer = Consumer(queue, handler, concurrency=1, transactional=True)
    consumer.start()
    _wait_until(lambda: consumer.report.failed >= 1)
    report = consumer.shutdown(timeout=5)
    assert report.failed >= 1 and report.succeeded == 0
    assert table_items(client.dynamodb, ORDERS) == []
    assert queue.get(sent.message_id).state in ("visible", "delayed")


def test_a_slow_transactional_consumer_leaves_the_message_to_its_new_holder(
    client: QueueClient, clock: FakeClock, orders: str
) -> None:
    client.create_queue("jobs", visibility_timeout=5, max_receive_count=0)
    queue = client.queue("jobs", "c")
    queue.send("slow")
    started, finish = threading.Event(), threading.Event()
    taken: list[ReceivedMessage] = []

    def handler(message: ReceivedMessage) -> list[dict[str, Any]]:
        started.set()
        finish.wait(5)
        return [bump(message.body)]

    # A heartbeat far apart: the claim runs out while the handler works.
    consumer = Consumer(queue, handler, concurrency=1, transactional=True, heartbeat_seconds=60)
    consumer.start()
    assert started.wait(5)
    clock.advance(6)
    taken += queue.receive()
    finish.set()
    _wait_until(lambda: consumer.report.stale_acks >= 1)
    report = consumer.shutdown(timeout=5)
    assert report.stale_acks == 1 and report.succeeded == 0
    assert order(client.dynamodb, "slow") is None
    client.transact([bump("slow"), *queue.delete_transact_items(taken[0].receipt_handle)])
    assert order(client.dynamodb, "slow")["n"] == {"N": "1"}


# Commits whose every answer was lost, and commits repeated by the caller.
def _all_messages(queue: Any) -> list[str]:
    bodies = []
    while batch := queue.receive(max_messages=10):
        bodies += [m.body for m in batch]
        queue.delete_batch([m.receipt_handle for m in batch])
    return bodies


def test_a_fifo_send_retried_with_its_token_after_a_lost_commit_of_a_rebuilt_attempt_is_stored_once(
    client: QueueClient, orders: str
) -> None:
    client.create_queue("events.fifo")
    queue = client.queue("events.fifo", "shop")
    queue.send("earlier", group_id="o7")
    send = queue.send_transact_items("o7 placed", group_id="o7")
    # Another process (its own connection) appends to the group just before the first commit: its fence moves,
    # the send is built again, and the answers of that second attempt never come.
    other = QueueClient(
        client.table_name, dynamodb=boto3.client("dynamodb", region_name="us-east-1"), clock=client._ctx.clock
    )
    moved = Interleave("TransactWriteItems", lambda: other.queue("events.fifo", "shop").send("other", group_id="o7"))
    lost = AnswerNeverCame("TransactWriteItems", lambda body: moved.done, times=1_000)
    with attached(client.dynamodb, moved), never_answered(client.dynamodb, lost), pytest.raises(Throttled):
        client.transact([new_order("o7"), send], token="place-o7")
    client.transact([new_order("o7"), send], token="place-o7")  # the caller's retry
    assert queue.get(send.message_id).body == "o7 placed"
    assert _all_messages(queue) == ["earlier", "other", "o7 placed"]
    assert order(client.dynamodb, "o7")["state"] == {"S": "placed"}


def test_a_standard_send_committed_again_without_its_token_is_stored_once(client: QueueClient, orders: str) -> None:
    client.create_queue("events")
    queue = client.queue("events", "shop")
    send = queue.send_transact_items("o8 placed")
    lost = AnswerNeverCame("TransactWriteItems", times=1_000)
    with never_answered(client.dynamodb, lost), pytest.raises(Throttled):
        client.transact([bump("o8"), send])
    client.transact([bump("o8"), send])  # the caller's retry, without a token: the very request, answered once
    with pytest.raises(DuplicateMessage) as again:
        client.transact([bump("o8"), send])  # a commit that succeeded, repeated: refused, nothing applied
    assert again.value.message_id == send.message_id
    assert _all_messages(queue) == ["o8 placed"]
    assert order(client.dynamodb, "o8")["n"] == {"N": "1"}


def test_a_standard_send_whose_message_is_stored_is_never_rebuilt_under_a_new_id(
    client: QueueClient, orders: str
) -> None:
    client.create_queue("events")
    queue = client.queue("events", "shop")
    send = queue.send_transact_items("o9 placed")
    items = [bump("o9"), *send.items]
    client.transact(items)
    with pytest.raises(DuplicateMessage) as again:
        client.transact(items)  # the same entries, as plain dicts of the caller's, committed once more
    assert again.value.message_id == send.message_id
    assert _all_messages(queue) == ["o9 placed"]


def test_a_send_whose_commit_may_have_applied_cannot_join_another_transaction(client: QueueClient, orders: str) -> None:
    client.create_queue("events.fifo")
    queue = client.queue("events.fifo", "shop")
    send = queue.send_transact_items("o10 placed", group_id="o10")
    with never_answered(client.dynamodb, AnswerNeverCame("TransactWriteItems", times=1_000)), pytest.raises(Throttled):
        client.transact([new_order("o10"), send])
    with pytest.raises(ValidationError, match="exactly the same items"):
        client.transact([bump("o10"), send])
    client.transact([new_order("o10"), send])
    assert _all_messages(queue) == ["o10 placed"]


def test_a_commit_whose_outcome_dynamodb_no_longer_knows_is_refused_not_applied_again(
    client: QueueClient, orders: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB forgets a token after ten minutes: a retry past that would be a second commit."""
    client.create_queue("events")
    queue = client.queue("events", "shop")
    send = queue.send_transact_items("o11 placed")
    lost = AnswerNeverCame("TransactWriteItems", times=1_000)
    with never_answered(client.dynamodb, lost), pytest.raises(Throttled):
        client.transact([bump("o11"), send])
    [worked] = queue.receive()
    queue.delete(worked.receipt_handle)
    monkeypatch.setattr(queue_core.transactions, "TOKEN_REUSE_SECONDS", -1)  # the token's ten minutes are over
    with pytest.raises(ValidationError, match="no longer tells its outcome"):
        client.transact([bump("o11"), send])
    assert queue.receive() == []
    assert order(client.dynamodb, "o11")["n"] == {"N": "1"}


def test_a_callers_table_that_does_not_exist_is_a_validation_error_naming_it(client: QueueClient) -> None:
    """The README's outbox run before its `shop-orders` table exists: a 400 that names the table, not an
    internal error, and neither the order nor the message is written."""
    client.create_queue("events")
    queue = client.queue("events", "shop")
    send = queue.send_transact_items("order o9 placed")
    place = {"Put": {"TableName": "shop-orders", "Item": {"pk": {"S": "order#o9"}}}}
    with pytest.raises(ValidationError, match="table 'shop-orders' does not exist") as raised:
        client.transact([place, send])
    assert raised.value.status == 400
    assert queue.peek() == [] and queue.stats().visible == 0


def test_a_missing_table_that_cannot_be_described_is_still_a_400_naming_the_candidates(client: QueueClient) -> None:
    """A function granted only its items' actions may not call DescribeTable: the refusal (AccessDenied) is not
    taken for a missing table, and the answer still names the transaction's tables."""
    client.create_queue("events")
    send = client.queue("events", "shop").send_transact_items("order o9 placed")
    place = {"Put": {"TableName": "shop-orders", "Item": {"pk": {"S": "order#o9"}}}}
    denied = {"Error": {"Code": "AccessDeniedException", "Message": "not authorized: dynamodb:DescribeTable"}}

    def refuse(**_: Any) -> tuple[Any, dict[str, Any]]:
        return type("Refused", (), {"status_code": 400})(), denied

    events = client.dynamodb.meta.events
    events.register("before-call.dynamodb.DescribeTable", refuse, unique_id="refuse-describe")
    try:
        with pytest.raises(ValidationError) as raised:
            client.transact([place, send])
    finally:
        events.unregister("before-call.dynamodb.DescribeTable", unique_id="refuse-describe")
    message = str(raised.value)
    assert "'shop-orders'" in message and f"'{client.table_name}'" in message
    assert "table 'shop-orders' does not exist" not in message  # not claimed as known: it could not be described
