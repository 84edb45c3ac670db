"""Browsing a sub-queue: every waiting message with its state and until when it lasts, page by page, filtered,
bounded, on every shard a message may live under, and without changing anything."""

from __future__ import annotations

import json
from typing import Any

import pytest
from queue_core import QueueClient, SubQueue, ValidationError, limits

from tests.conftest import FakeClock
from tests.dynamo_calls import CallCounter
from tests.release.tables import TABLE as FIXTURE_TABLE
from tests.release.tables import load, restore


def _all_pages(q: SubQueue, limit: int, **filters: Any) -> tuple[list[Any], int]:
    """Every page of a browse: the messages in order, and how many calls it took."""
    found, cursor, calls = [], None, 0
    while True:
        page = q.browse(limit, cursor=cursor, **filters)
        calls += 1
        assert len(page.messages) <= limit
        found += page.messages
        cursor = page.cursor
        if cursor is None:
            return found, calls
        assert calls < 200, "a browse that never ends"


def test_a_browse_lists_visible_in_flight_and_delayed_messages_with_until_and_changes_nothing(
    client: QueueClient, clock: FakeClock
) -> None:
    client.create_queue("orders", shards=3)
    q = client.queue("orders", "tenant-a")
    sent = [q.send(f"m{n}", attributes={"n": str(n)}).message_id for n in range(5)]
    later = q.send("later", delay_seconds=60).message_id
    now = client.now_ms()
    held = {message.message_id for message in q.receive(max_messages=2, visibility_timeout=30)}
    before = (q.stats().to_dict(), {message_id: q.get(message_id).to_dict() for message_id in [*sent, later]})

    page = q.browse(limit=100)
    assert page.cursor is None
    by_id = {message.message_id: message for message in page.messages}
    assert set(by_id) == {*sent, later}
    assert {message_id for message_id, message in by_id.items() if message.state == "in_flight"} == held
    assert all(by_id[message_id].until == now + 30_000 for message_id in held)
    assert (by_id[later].state, by_id[later].until) == ("delayed", now + 60_000)
    visible = set(sent) - held
    assert all(by_id[message_id].state == "visible" and by_id[message_id].until is None for message_id in visible)
    # `get`'s fields, as `get` tells them, and the time the state lasts.
    for message_id, looked in before[1].items():
        assert by_id[message_id].to_dict() == {**looked, "until": by_id[message_id].until}
    # Nothing changed: no receive counted, no claim, and the visible ones are still there to receive.
    assert (q.stats().to_dict(), {message_id: q.get(message_id).to_dict() for message_id in before[1]}) == before
    received: set[str] = set()
    for _ in range(10):  # a receive may stop at a shard that gave fewer than asked
        received |= {message.message_id for message in q.receive(max_messages=10)}
    assert received == visible


def test_a_browse_keeps_one_state_or_one_priority_and_a_filtered_page_may_be_short(
    client: QueueClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.create_queue("ranked", shards=2)
    q = client.queue("ranked", "tenant-a")
    by_priority = {p: [q.send(f"p{p}-{n}", priority=p).message_id for n in range(3)] for p in (0, 4, 9)}
    delayed = q.send("later", delay_seconds=120, priority=4).message_id
    [taken] = q.receive(max_messages=1)
    assert {m.message_id for m in q.browse(100, state="delayed").messages} == {delayed}
    assert {m.message_id for m in q.browse(100, state="in_flight").messages} == {taken.message_id}
    assert {m.message_id for m in q.browse(100, priority=4).messages} == {*by_priority[4], delayed}
    assert {m.message_id for m in q.browse(100, priority=4, state="visible").messages} == set(by_priority[4]) - {
        taken.message_id
    }
    assert q.browse(100, priority=7).messages == []

    # A call reads a bounded part: with a small budget a filtered page comes back short, with a cursor to go on.
    monkeypatch.setattr(limits, "BROWSE_READ_ITEMS", 3)
    first = q.browse(10, state="delayed")
    assert first.cursor is not None and len(first.messages) <= 1
    found, calls = _all_pages(q, 10, state="delayed")
    assert [m.message_id for m in found] == [delayed] and calls > 1


def test_pages_cover_every_message_once_on_every_shard(client: QueueClient, counter: CallCounter) -> None:
    client.create_queue("wide", shards=4)
    q = client.queue("wide", "tenant-a")
    sent = {q.send(f"m{n}", delay_seconds=60 * (n % 3 == 0)).message_id for n in range(23)}
    counter.reset()
    found, calls = _all_pages(q, 5)
    ids = [m.message_id for m in found]
    assert len(ids) == len(set(ids)) == 23 and set(ids) == sent
    assert calls == 5  # full pages, and the last one says it is the end
    assert "Scan" not in counter.calls and set(counter.calls) == {"Query"}
    assert counter.calls["Query"] <= calls * limits.BROWSE_QUERIES
    # Within a shard, in send order.
    for shard in {m.message_id.split(".")[0] for m in found}:
        sequences = [m.sequence for m in found if m.message_id.startswith(shard + ".")]
        assert sequences == sorted(sequences)


def test_a_fifo_browse_tells_a_held_head_from_its_waiting_group_and_filters_by_group(
    client: QueueClient, clock: FakeClock
) -> None:
    client.create_queue("events.fifo", fifo=True, shards=2)
    q = client.queue("events.fifo", "tenant-a")
    sent = {group: [q.send(f"{group}-{n}", group_id=group).message_id for n in range(3)] for group in ("g1", "g2")}
    later = q.send("g3-0", group_id="g3", delay_seconds=90).message_id
    now = client.now_ms()
    [head] = q.receive(max_messages=1, visibility_timeout=45)
    group = head.group_id
    assert group is not None and head.message_id == sent[group][0]

    found, _ = _all_pages(q, 2)
    states = {m.message_id: (m.state, m.until) for m in found}
    assert states[head.message_id] == ("in_flight", now + 45_000)
    assert states[later] == ("delayed", now + 90_000)
    waiting = [message_id for ids in sent.values() for message_id in ids if message_id != head.message_id]
    assert all(states[message_id] == ("visible", None) for message_id in waiting)
    assert len(found) == len(states) == 7
    for ids in sent.values():  # each group in its order
        assert [m.message_id for m in found if m.message_id in ids] == ids

    assert [m.message_id for m in _all_pages(q, 1, group=group)[0]] == sent[group]
    assert [m.message_id for m in q.browse(10, group="g2", state="visible").messages] == [
        message_id for message_id in sent["g2"] if message_id != head.message_id
    ]
    assert [m.message_id for m in q.browse(10, state="in_flight").messages] == [head.message_id]
    assert q.browse(10, group="none").messages == []
    assert q.get(head.message_id).receive_count == 1  # browsing counted nothing


def test_a_browse_reads_the_shards_of_earlier_layouts(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("orders", shards=3)
    client.create_queue("jobs.fifo", fifo=True, shards=3)
    orders, jobs = client.queue("orders", "a"), client.queue("jobs.fifo", "a")
    first = {orders.send(f"first-{n}").message_id for n in range(6)}
    first_jobs = {jobs.send(f"first-{n}", group_id=f"g{n}").message_id for n in range(6)}
    client.update_queue("orders", shards=1)
    client.update_queue("jobs.fifo", shards=1)
    clock.advance(120)
    second = {orders.send(f"second-{n}").message_id for n in range(3)}
    second_jobs = {jobs.send(f"second-{n}", group_id=f"g{n}").message_id for n in range(3)}
    assert {m.message_id for m in _all_pages(orders, 4)[0]} == first | second
    assert {m.message_id for m in _all_pages(jobs, 4)[0]} == first_jobs | second_jobs


def test_a_table_written_by_an_earlier_release_is_browsed_as_it_is(dynamodb: Any) -> None:
    dump = load("layout1")
    restore(dynamodb, dump)
    client = QueueClient(FIXTURE_TABLE, dynamodb=dynamodb, clock=FakeClock(dump["clock_end"]))
    standard = client.queue("orders", "tenant-a").browse(100).messages
    assert sorted((m.body, m.state) for m in standard) == sorted(
        [(m.body, "in_flight" if m.receive_count else "visible") for m in standard]
    )
    assert [m.state for m in standard].count("in_flight") == 2 and len(standard) == 6
    fifo = client.queue("events.fifo", "tenant-a").browse(100).messages
    assert [(m.group_id, m.state) for m in fifo] == [
        ("g1", "in_flight"),
        *[("g1", "visible")] * 3,
        *[("g2", "visible")] * 3,
    ]
    assert fifo[0].until is not None and fifo[0].until > client.now_ms()


BAD_INPUT = [
    ("orders", {"limit": 0}, "limit"),
    ("orders", {"limit": 101}, "limit"),
    ("orders", {"limit": "10"}, "limit"),
    ("orders", {"state": "dlq"}, "state must be one of visible, in_flight, delayed"),
    ("orders", {"priority": 10}, "priority"),
    ("orders", {"priority": "1"}, "priority"),
    ("orders", {"group": "g1"}, "group is only for FIFO queues"),
    ("jobs.fifo", {"priority": 1}, "priority is only for standard queues"),
    ("jobs.fifo", {"group": "\n"}, "group_id"),
    ("orders", {"cursor": "not a cursor"}, "cursor"),
    ("orders", {"cursor": "eyJnIjoxfQ"}, "cursor"),
    ("orders", {"cursor": "x" * 2000}, "cursor"),
]


def test_bad_input_is_a_validation_error_that_reads_nothing(client: QueueClient, counter: CallCounter) -> None:
    client.create_queue("orders")
    client.create_queue("jobs.fifo", fifo=True)
    for queue, arguments, words in BAD_INPUT:
        q = client.queue(queue, "a")
        q.browse()  # settings and layout read
        counter.reset()
        with pytest.raises(ValidationError, match=words):
            q.browse(**arguments)
        assert counter.calls == {}, (queue, arguments)


def test_a_cursor_of_a_queue_deleted_and_created_again_is_refused(client: QueueClient) -> None:
    client.create_queue("orders")
    q = client.queue("orders", "a")
    for n in range(3):
        q.send(f"m{n}")
    cursor = q.browse(1).cursor
    assert cursor is not None
    client.delete_queue("orders")
    client.create_queue("orders")
    with pytest.raises(ValidationError, match="cursor"):
        client.queue("orders", "a").browse(1, cursor=cursor)


def test_a_page_ends_before_its_answer_would_pass_what_a_lambda_answer_carries(client: QueueClient) -> None:
    """A hundred bodies of 1 MiB could not leave a 6 MB Lambda answer: a page stops at `BROWSE_ANSWER_BYTES` of
    answered JSON, and the next page goes on with the message that did not fit."""
    client.create_queue("big", shards=2)
    client.create_queue("big.fifo", fifo=True)
    for name, group in (("big", None), ("big.fifo", "g")):
        q = client.queue(name, "a")
        sent = [q.send(f"{n}" + "x" * 300_000, group_id=group).message_id for n in range(40)]
        found, calls = _all_pages(q, 100)
        assert sorted(m.message_id for m in found) == sorted(sent) and len(found) == 40
        assert calls == 3  # 16 of these bodies weigh less than 5 MB, 17 more
        first = q.browse(100)
        assert 0 < len(first.messages) == 16 and first.cursor is not None
        assert len(json.dumps(json.dumps(first.to_dict()))) <= limits.BROWSE_ANSWER_BYTES + 1000
        assert len(q.browse(100, state="visible").messages) == 16
        assert [m.message_id for m in _all_pages(q, 100, **({"group": "g"} if group else {}))[0]] == [
            m.message_id for m in found
        ]
