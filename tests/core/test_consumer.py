"""The consumer loop: delete on success, release on failure, heartbeats, shutdown."""

from __future__ import annotations

import threading
import time

from queue_core import Consumer, QueueClient, ReceivedMessage


def _wait_until(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_success_deletes_and_exception_releases(client: QueueClient) -> None:
    client.create_queue("w", max_receive_count=0)
    queue = client.queue("w", "c")
    queue.send_batch([{"body": "ok"}, {"body": "fail"}])
    done: list[str] = []

    def handler(message: ReceivedMessage) -> None:
        if message.body == "fail":
            raise RuntimeError("boom")
        done.append(message.body)

    consumer = Consumer(queue, handler, concurrency=2)
    consumer.start()
    _wait_until(lambda: consumer.report.failed >= 1 and done)
    report = consumer.shutdown(timeout=5)
    assert done == ["ok"] and report.succeeded == 1 and report.failed >= 1
    stats = queue.stats()
    assert stats.visible + stats.delayed == 1 and stats.in_flight == 0


def test_heartbeat_keeps_a_slow_handlers_message(client: QueueClient, clock) -> None:
    client.create_queue("slow", visibility_timeout=2, max_receive_count=0)
    queue = client.queue("slow", "c")
    sent = queue.send("slow")
    started = threading.Event()
    finish = threading.Event()

    def handler(message: ReceivedMessage) -> None:
        started.set()
        finish.wait(5)

    consumer = Consumer(queue, handler, concurrency=1, heartbeat_seconds=0.1)
    consumer.start()
    started.wait(5)
    _wait_until(lambda: consumer.report.heartbeats >= 2)
    clock.advance(1.5)
    time.sleep(0.3)
    clock.advance(1.5)
    time.sleep(0.3)
    assert queue.get(sent.message_id).state == "in_flight"
    assert queue.receive() == []
    finish.set()
    report = consumer.shutdown(timeout=5)
    assert report.succeeded == 1 and report.heartbeats >= 2


def test_shutdown_releases_unstarted_messages_and_returns_in_time(client: QueueClient) -> None:
    client.create_queue("sd", visibility_timeout=300, max_receive_count=0)
    queue = client.queue("sd", "c")
    queue.send_batch([{"body": str(i)} for i in range(6)])
    gate = threading.Event()

    def handler(message: ReceivedMessage) -> None:
        gate.wait(0.5)

    consumer = Consumer(queue, handler, concurrency=1, batch_size=5)
    consumer.start()
    _wait_until(lambda: consumer.report.received >= 2)
    started = time.monotonic()
    report = consumer.shutdown(timeout=3)
    assert time.monotonic() - started < 3.5
    assert report.released_unstarted >= 1
    assert report.succeeded + report.released_unstarted == report.received
    assert queue.stats().in_flight == 0


def test_fifo_group_is_processed_in_order_never_in_parallel(client: QueueClient) -> None:
    client.create_queue("cf.fifo", max_receive_count=0)
    queue = client.queue("cf.fifo", "c")
    for group in ("a", "b"):
        queue.send_batch([{"body": f"{group}{i}", "group_id": group} for i in range(5)])
    seen: list[str] = []
    running: set[str] = set()
    overlaps = []
    lock = threading.Lock()

    def handler(message: ReceivedMessage) -> None:
        with lock:
            if message.group_id in running:
                overlaps.append(message.body)
            running.add(message.group_id or "")
        time.sleep(0.01)
        with lock:
            running.discard(message.group_id or "")
            seen.append(message.body)

    consumer = Consumer(queue, handler, concurrency=4, batch_size=10)
    consumer.start()
    _wait_until(lambda: len(seen) >= 10)
    consumer.shutdown(timeout=5)
    assert overlaps == []
    for group in ("a", "b"):
        assert [body for body in seen if body[0] == group] == [f"{group}{i}" for i in range(5)]
