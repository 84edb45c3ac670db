"""The archive of acknowledged messages: off means no read and no write; on, every acknowledgement is archived
once, in the transaction of its delete, found by id and listed by time range a page at a time."""

from __future__ import annotations

import pytest
from queue_core import MessageNotFound, QueueClient, ReceiptHandleStale

from tests.dynamo_calls import CallCounter


@pytest.fixture(params=["standard", "fifo"])
def queue(request: pytest.FixtureRequest, client: QueueClient):
    fifo = request.param == "fifo"
    name = "orders.fifo" if fifo else "orders"
    client.create_queue(name, fifo=fifo, archive_days=7, max_receive_count=5)
    return client.queue(name, "a")


def _send(queue, body: str, group: str = "g") -> str:
    return queue.send(body, group_id=group if queue.settings.fifo else None, attributes={"k": body}).message_id


def test_off_means_no_read_and_no_write(client: QueueClient, counter: CallCounter) -> None:
    client.create_queue("plain")
    queue = client.queue("plain", "a")
    queue.send("m")
    (got,) = queue.receive()
    counter.reset()
    queue.delete(got.receipt_handle)
    assert dict(counter.calls) == {"DeleteItem": 1}
    assert queue.archive_list().messages == []


def test_each_acknowledgement_is_archived_once_with_its_attempts(queue, clock) -> None:
    message_id = _send(queue, "order-1")
    (first,) = queue.receive()
    queue.release(first.receipt_handle, 0, reason="KeyError: 'customer_id'")
    (second,) = queue.receive()
    clock.advance(1)
    queue.delete(second.receipt_handle)
    queue.delete(second.receipt_handle)  # a repeat: done already, archives nothing more
    (kept,) = queue.archive_get(message_id)
    assert (kept.body, kept.attributes, kept.client, kept.receive_count) == ("order-1", {"k": "order-1"}, "a", 2)
    assert kept.acked_at == queue._now() and kept.sent_at < kept.acked_at
    assert [a["reason"] for a in kept.attempts] == ["KeyError: 'customer_id'"]
    assert [m.message_id for m in queue.archive_list().messages] == [message_id]


def test_a_stale_handle_archives_nothing(queue, clock) -> None:
    message_id = _send(queue, "m")
    (first,) = queue.receive(visibility_timeout=1)
    clock.advance(2)
    (second,) = queue.receive()
    with pytest.raises(ReceiptHandleStale):
        queue.delete(first.receipt_handle)
    with pytest.raises(MessageNotFound):
        queue.archive_get(message_id)
    queue.delete(second.receipt_handle)
    assert len(queue.archive_get(message_id)) == 1


def test_batch_and_transactional_acks_are_archived(queue, client: QueueClient) -> None:
    ids = [_send(queue, f"m{n}", group=f"g{n}") for n in range(3)]
    got = queue.receive(max_messages=3)
    if len(got) < 3:
        got += queue.receive(max_messages=3 - len(got))
    by_id = {message.message_id: message for message in got}
    assert queue.delete_batch([by_id[ids[0]].receipt_handle, by_id[ids[1]].receipt_handle]).failed == []
    client.transact(list(queue.delete_transact_items(by_id[ids[2]].receipt_handle)))
    assert sorted(m.message_id for m in queue.archive_list(limit=10).messages) == sorted(ids)


def test_listed_by_time_range_newest_or_oldest_first_page_by_page(queue, clock) -> None:
    times = {}
    for n in range(7):
        message_id = _send(queue, f"m{n}", group=f"g{n}")
        (got,) = queue.receive()
        queue.delete(got.receipt_handle)
        times[message_id] = queue._now()
        clock.advance(10)
    ordered = sorted(times, key=times.get)
    pages, cursor = [], None
    while True:
        page = queue.archive_list(order="oldest", limit=3, cursor=cursor)
        pages.append([m.message_id for m in page.messages])
        cursor = page.cursor
        if cursor is None:
            break
    assert [i for page in pages for i in page] == ordered and max(len(p) for p in pages) == 3
    newest = queue.archive_list(order="newest", limit=2)
    assert [m.message_id for m in newest.messages] == ordered[::-1][:2]
    window = queue.archive_list(since=times[ordered[2]], until=times[ordered[4]], order="oldest")
    assert [m.message_id for m in window.messages] == ordered[2:5]


def test_queue_wide_listing_merges_every_client(client: QueueClient, clock) -> None:
    client.create_queue("shop", archive_days=1)
    for name in ("a", "b"):
        sub = client.queue("shop", name)
        sub.send(name)
        (got,) = sub.receive()
        sub.delete(got.receipt_handle)
        clock.advance(1)
    listed = client.queue_wide("shop").archive_list(order="oldest")
    assert [(m.client, m.body) for m in listed.messages] == [("a", "a"), ("b", "b")]


def test_archive_expires_after_its_days(client: QueueClient, clock) -> None:
    client.create_queue("short", archive_days=1)
    queue = client.queue("short", "a")
    message_id = queue.send("m").message_id
    (got,) = queue.receive()
    queue.delete(got.receipt_handle)
    (kept,) = queue.archive_get(message_id)
    assert kept.expires_at == (kept.acked_at // 1000 + 86_400) * 1000
    clock.advance(86_401)
    assert queue.archive_list().messages == []
