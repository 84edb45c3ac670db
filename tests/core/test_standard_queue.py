"""Standard sub-queues: send, receive, delete, visibility, isolation, order, purge, stats."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from queue_core import MessageNotFound, QueueClient, QueueNotFound, QueueStats, ReceiptHandleStale, ValidationError

from tests.conftest import FakeClock


@pytest.fixture
def orders(client: QueueClient):
    client.create_queue("orders", visibility_timeout=30, max_receive_count=0)
    return client.queue("orders", "tenant-a")


def test_send_receive_delete_round_trip(orders) -> None:
    sent = orders.send("hello", attributes={"kind": "greeting"})
    [message] = orders.receive()
    assert (message.message_id, message.body, message.attributes) == (
        sent.message_id,
        "hello",
        {"kind": "greeting"},
    )
    assert message.receive_count == 1 and message.first_received_at is not None
    orders.delete(message.receipt_handle)
    assert orders.receive() == []
    with pytest.raises(MessageNotFound):
        orders.get(sent.message_id)


def test_clients_of_one_queue_and_queues_are_isolated(client: QueueClient, orders) -> None:
    client.create_queue("invoices")
    other_client = client.queue("orders", "tenant-b")
    other_queue = client.queue("invoices", "tenant-a")
    orders.send("for a")
    assert other_client.receive() == [] and other_queue.receive() == []
    other_client.send("for b")
    assert [m.body for m in orders.receive(max_messages=10)] == ["for a"]
    assert [m.body for m in other_client.receive(max_messages=10)] == ["for b"]


def test_fifty_messages_sent_fast_come_oldest_first(orders) -> None:
    for i in range(50):
        orders.send(f"m{i}")
    bodies = [m.body for _ in range(5) for m in orders.receive(max_messages=10)]
    assert bodies == [f"m{i}" for i in range(50)]


def test_newest_first_receive(orders, clock: FakeClock) -> None:
    for i in range(5):
        orders.send(f"m{i}")
        clock.advance(0.01)
    assert [m.body for m in orders.receive(max_messages=5, order="newest")] == ["m4", "m3", "m2", "m1", "m0"]


def test_not_redelivered_before_visibility_timeout_then_redelivered(orders, clock: FakeClock) -> None:
    orders.send("x")
    [first] = orders.receive(visibility_timeout=10)
    clock.advance(9.9)
    assert orders.receive() == []
    clock.advance(0.2)
    [again] = orders.receive()
    assert again.message_id == first.message_id and again.receive_count == 2


def test_change_visibility_extends_and_shortens(orders, clock: FakeClock) -> None:
    orders.send("x")
    [message] = orders.receive(visibility_timeout=10)
    orders.change_visibility(message.receipt_handle, 100)
    clock.advance(50)
    assert orders.receive() == []
    orders.change_visibility(message.receipt_handle, 0)
    assert [m.body for m in orders.receive()] == ["x"]


def test_release_makes_visible_after_backoff(orders, clock: FakeClock) -> None:
    orders.send("x")
    [message] = orders.receive(visibility_timeout=60)
    visible_at = orders.release(message.receipt_handle)
    assert orders.receive() == []
    assert orders.get(message.message_id).state == "delayed"
    clock.advance((visible_at - clock() * 1000) / 1000 + 0.001)
    assert [m.body for m in orders.receive()] == ["x"]


def test_release_with_explicit_delay_and_handle_dies(orders, clock: FakeClock) -> None:
    orders.send("x")
    [message] = orders.receive()
    orders.release(message.receipt_handle, delay_seconds=0)
    with pytest.raises(ReceiptHandleStale):
        orders.delete(message.receipt_handle)
    assert [m.body for m in orders.receive()] == ["x"]


def test_delay_holds_a_message_back_until_due(orders, clock: FakeClock) -> None:
    orders.send("later", delay_seconds=60)
    orders.send("now")
    [now] = orders.receive(max_messages=10)
    assert now.body == "now"
    orders.delete(now.receipt_handle)
    clock.advance(60)
    assert [m.body for m in orders.receive(max_messages=10)] == ["later"]


def test_queue_default_delay_applies(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("slow", delay_seconds=5)
    slow = client.queue("slow", "c")
    slow.send("x")
    assert slow.receive() == []
    clock.advance(5)
    assert len(slow.receive()) == 1


def test_expired_messages_are_never_delivered_peeked_or_counted(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("short", retention_seconds=60)
    short = client.queue("short", "c")
    sent = short.send("old")
    clock.advance(61)
    assert short.receive() == [] and short.peek() == [] and short.stats().visible == 0
    with pytest.raises(MessageNotFound):
        short.get(sent.message_id)


def test_stale_handle_after_reclaim_is_refused_and_does_not_delete(orders, clock: FakeClock) -> None:
    orders.send("x")
    [first] = orders.receive(visibility_timeout=5)
    clock.advance(6)
    [second] = orders.receive(visibility_timeout=30)
    with pytest.raises(ReceiptHandleStale):
        orders.delete(first.receipt_handle)
    with pytest.raises(ReceiptHandleStale):
        orders.change_visibility(first.receipt_handle, 10)
    assert orders.get(second.message_id).state == "in_flight"
    orders.delete(second.receipt_handle)


def test_delete_is_idempotent_for_its_own_handle(orders) -> None:
    sent = orders.send("x")
    [message] = orders.receive()
    orders.delete(message.receipt_handle)
    orders.delete(message.receipt_handle)
    with pytest.raises(MessageNotFound):
        orders.get(sent.message_id)
    assert orders.stats().to_dict() | {"oldest_age_seconds": None} == QueueStats().to_dict()


def test_forged_and_cross_client_handles_are_refused(client: QueueClient, orders) -> None:
    orders.send("x")
    [message] = orders.receive()
    handle = message.receipt_handle
    tampered = handle[:10] + ("A" if handle[10] != "A" else "B") + handle[11:]
    for bad in ("nonsense", "", "a.b", tampered, handle + "x"):
        with pytest.raises(ValidationError):
            orders.delete(bad)
    with pytest.raises(ValidationError):
        client.queue("orders", "tenant-b").delete(handle)
    client.create_queue("other")
    with pytest.raises(ValidationError):
        client.queue("other", "tenant-a").delete(handle)
    assert orders.get(message.message_id).state == "in_flight"


def test_batch_of_25_accepted_and_26_refused_with_nothing_written(orders) -> None:
    result = orders.send_batch([{"body": f"m{i}"} for i in range(25)])
    assert len(result.successful) == 25 and result.failed == []
    assert [entry["index"] for entry in result.successful] == list(range(25))
    with pytest.raises(ValidationError, match="1 to 25"):
        orders.send_batch([{"body": "x"}] * 26)
    assert orders.stats().visible == 25


def test_batch_reports_bad_entries_and_stores_the_good_ones(orders) -> None:
    result = orders.send_batch([{"body": "ok"}, {"body": ""}, {"body": "x", "delay_seconds": 345_601}, {"nope": 1}])
    assert [s["index"] for s in result.successful] == [0]
    assert [(f["index"], f["code"]) for f in result.failed] == [
        (1, "ValidationError"),
        (2, "ValidationError"),
        (3, "ValidationError"),
    ]


def test_delete_batch_reports_each_handle(orders) -> None:
    orders.send_batch([{"body": "a"}, {"body": "b"}])
    handles = [m.receipt_handle for m in orders.receive(max_messages=2)]
    result = orders.delete_batch([*handles, "garbage"])
    assert [s["index"] for s in result.successful] == [0, 1]
    assert [(f["index"], f["code"]) for f in result.failed] == [(2, "ValidationError")]


def test_eight_threads_drain_250_messages_none_twice_none_lost(client: QueueClient) -> None:
    client.create_queue("busy", visibility_timeout=300)
    busy = client.queue("busy", "c")
    for start in range(0, 250, 25):
        busy.send_batch([{"body": str(i)} for i in range(start, start + 25)])
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def drain() -> None:
        while True:
            got = busy.receive(max_messages=10)
            if not got:
                if busy.stats().visible == 0:
                    return
                continue
            with lock:
                seen.update(m.body for m in got)
            busy.delete_batch([m.receipt_handle for m in got])

    threads = [threading.Thread(target=drain) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seen, key=int) == [str(i) for i in range(250)]
    assert max(seen.values()) == 1


def test_purge_removes_a_thousand(orders) -> None:
    for _start in range(0, 1000, 25):
        orders.send_batch([{"body": "x"} for _ in range(25)])
    orders.receive(max_messages=10)
    assert orders.purge() == 1000
    assert orders.stats().visible == 0 and orders.receive() == []


def test_stats_in_each_state(orders, clock: FakeClock) -> None:
    orders.send("visible-1")
    clock.advance(1)
    orders.send("visible-2")
    orders.send("delayed", delay_seconds=100)
    orders.send("in-flight")
    [claimed] = orders.receive()
    clock.advance(2)
    stats = orders.stats()
    assert (stats.visible, stats.in_flight, stats.delayed, stats.dlq) == (2, 1, 1, 0)
    assert stats.oldest_age_seconds == 3
    assert claimed.body == "visible-1"


def test_peek_get_and_cancel(orders, clock: FakeClock) -> None:
    first = orders.send("a")
    orders.send("b", delay_seconds=30)
    assert [m.body for m in orders.peek()] == ["a"]
    assert orders.get(first.message_id).state == "visible"
    assert orders.cancel(first.message_id) is True
    with pytest.raises(MessageNotFound):
        orders.cancel(first.message_id)
    assert orders.peek() == []


def test_long_poll_returns_as_soon_as_a_message_arrives(orders) -> None:
    timer = threading.Timer(0.3, lambda: orders.send("late"))
    timer.start()
    got = orders.receive(wait_seconds=5)
    timer.join()
    assert [m.body for m in got] == ["late"]


def test_receive_of_ten_reads_at_most_15_items_behind_1000_hidden(client: QueueClient, clock, counter) -> None:
    client.create_queue("deep", visibility_timeout=3600, max_receive_count=0)
    deep = client.queue("deep", "c")
    for _start in range(0, 500, 25):
        deep.send_batch([{"body": "flight"} for _ in range(25)])
    while deep.receive(max_messages=10):
        pass
    for _start in range(0, 500, 25):
        deep.send_batch([{"body": "later", "delay_seconds": 900} for _ in range(25)])
    clock.advance(1)
    deep.send_batch([{"body": f"v{i}"} for i in range(10)])
    counter.reset()
    got = deep.receive(max_messages=10)
    assert len(got) == 10
    assert counter.items_read <= 15
    # One index query, and at most one small read a second of the sub-queue's priorities (its ready markers).
    assert counter.calls["Query"] <= 2


def test_unknown_queue_and_bad_names(client: QueueClient) -> None:
    with pytest.raises(QueueNotFound):
        client.queue("missing", "c").send("x")
    for bad in ("", "a" * 81, "has space", "semi;colon"):
        with pytest.raises(ValidationError):
            client.queue(bad, "c")
        with pytest.raises(ValidationError):
            client.queue("q", bad)
