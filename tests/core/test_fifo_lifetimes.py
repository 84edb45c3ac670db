"""FIFO lifetimes across a change of retention: a DLQ copy keyed by its group and sequence must never outlive
the group item that fences the group's sequence, or a group started again after that item expired reuses a
sequence whose DLQ key is taken; and a raised retention applies once every process's cache has it
(`retention_from`), a wait that an update of anything else meanwhile must not start again."""

from __future__ import annotations

import contextlib
from typing import Any

from queue_core import MessageNotFound, QueueClient, limits
from queue_core.settings import QueueSettings

from tests.conftest import TABLE, FakeClock
from tests.core.answers import Interleave, LostAnswer, attached, expression_has
from tests.reliability.truth import TableTruth


def _items(dynamodb: Any, prefix: str) -> list[dict[str, Any]]:
    return [item for item in dynamodb.scan(TableName=TABLE)["Items"] if item["pk"]["S"].startswith(prefix)]


def test_a_dlq_copy_made_after_a_raised_retention_never_outlives_its_group_item(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A message is sent under an hour's retention, the retention is raised to 14 days, and the message then
    reaches its receive limit: its DLQ copy is kept 14 days from its move, while the group item, last written by
    the send, lives two hours and a dedup window. Once TTL deletes the group item, the next send starts the group
    again at sequence 1, and that message's move to the DLQ meets the first copy's key: it can be neither
    delivered nor moved, and holds its group."""
    client.create_queue("raised-dlq.fifo", retention_seconds=3_600, visibility_timeout=30, max_receive_count=1)
    jobs = client.queue("raised-dlq.fifo", "c")
    jobs.send("m1", group_id="g")
    client.update_queue("raised-dlq.fifo", retention_seconds=14 * 86_400)
    clock.advance(60)  # every process's cache has the raised retention
    jobs = client.queue("raised-dlq.fifo", "c")
    assert [message.body for message in jobs.receive()] == ["m1"]
    clock.advance(31)
    assert jobs.receive() == []  # m1 past its receive limit: moved to the DLQ
    assert [dead.message.body for dead in jobs.dlq_read()] == ["m1"]
    groups = _items(dynamodb, "F#raised-dlq.fifo#")
    copies = _items(dynamodb, "D#raised-dlq.fifo#")
    longest_copy = max((int(item["expires_at"]["N"]) for item in copies), default=0)
    # The invariant: the group item lives at least as long as any DLQ copy of its messages.
    assert all(int(group["expires_at"]["N"]) >= longest_copy for group in groups), (groups, copies)


def test_a_group_started_again_after_its_item_expired_moves_its_messages_to_the_dlq(
    client: QueueClient, clock: FakeClock
) -> None:
    """The consequence of the copy outliving the group item: after TTL, a new message of the group, past its
    receive limit, must still reach the DLQ (and the group go on)."""
    client.create_queue("raised-dlq2.fifo", retention_seconds=3_600, visibility_timeout=30, max_receive_count=1)
    jobs = client.queue("raised-dlq2.fifo", "c")
    jobs.send("m1", group_id="g")
    client.update_queue("raised-dlq2.fifo", retention_seconds=14 * 86_400)
    clock.advance(60)
    jobs = client.queue("raised-dlq2.fifo", "c")
    assert [message.body for message in jobs.receive()] == ["m1"]
    clock.advance(31)
    assert jobs.receive() == []
    clock.advance(2 * 3_600 + limits.MAX_DEDUP_WINDOW_SECONDS + 60)
    TableTruth(TABLE).expire(int(clock() * 1000))  # what DynamoDB's TTL would have deleted by now
    jobs = client.queue("raised-dlq2.fifo", "c")
    jobs.send("m2", group_id="g")
    jobs.send("m3", group_id="g")
    assert [message.body for message in jobs.receive()] == ["m2"]
    clock.advance(31)
    got = jobs.receive()
    assert jobs.stats().stuck == 0  # m2 found its DLQ key taken by m1's copy: neither delivered nor moved
    assert [message.body for message in got] == ["m3"]  # m2 moved to the DLQ, the group went on
    assert sorted(dead.message.body for dead in jobs.dlq_read()) == ["m1", "m2"]


_SPREAD_MS = int(limits.SETTINGS_SPREAD_SECONDS * 1000)


def test_an_update_of_another_setting_during_the_wait_does_not_put_the_raised_retention_off() -> None:
    """Raised at T (in force from T + the spread); the visibility timeout changed 5 s before that, the retention as
    it is. Every process's cache had the raised retention by then already; 5 s after it a message still getting the
    old one, an update every so often (a script, an automatic shard change) would keep it off for good."""
    start = 1_000_000
    settings = QueueSettings.validated("w.fifo", 0, fifo=True, retention_seconds=3_600)
    raised = settings.updated(start, _SPREAD_MS, retention_seconds=86_400)
    assert raised.message_retention(start + _SPREAD_MS - 1) == 3_600
    assert raised.message_retention(start + _SPREAD_MS + 1_000) == 86_400
    touched = raised.updated(start + _SPREAD_MS - 5_000, _SPREAD_MS, visibility_timeout=60)
    assert touched.message_retention(start + _SPREAD_MS + 5_000) == 86_400


def test_a_group_whose_backlog_outlives_its_retention_keeps_a_small_item(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A slow consumer of one group: the group never empties, and every message it reaches past its retention is
    removed by the receive that meets it. Each removal is counted once however often it is said, but a set of the
    removed sequences kept until the group empties grew by one a message: past 1 KB every send, receive and delete
    of the group pays twice the write units, and at 400 KB none can be written. The count stays right."""
    client.create_queue("slow.fifo", retention_seconds=3_600, visibility_timeout=30)
    jobs = client.queue("slow.fifo", "c")
    for round_ in range(6):
        clock.advance(3_601)  # the 19 left of the round before are past their retention
        for number in range(20):
            jobs.send(f"m{round_}.{number}", group_id="g")
        got = jobs.receive()
        while not got:  # each receive removes the expired heads it reads
            got = jobs.receive()
        [fresh] = got
        assert fresh.body == f"m{round_}.0"
        jobs.delete(fresh.receipt_handle)
    [group] = _items(dynamodb, "F#slow.fifo#")
    assert len(group.get("gone", {}).get("SS", [])) <= 1, group.get("gone")
    assert int(group["msg_count"]["N"]) == 19
    assert jobs.stats().visible == 19


def _expired_behind(client: QueueClient, clock: FakeClock) -> tuple[Any, str]:
    """Group `g` holds m1 and m2, past their retention, then m3; the queue and m1's id."""
    client.create_queue("slow.fifo", retention_seconds=3_600, visibility_timeout=30)
    jobs = client.queue("slow.fifo", "c")
    first = jobs.send("m1", group_id="g").message_id
    jobs.send("m2", group_id="g")
    clock.advance(3_601)
    jobs.send("m3", group_id="g")
    return jobs, first


def _count(dynamodb: Any) -> int:
    [group] = _items(dynamodb, "F#slow.fifo#")
    return int(group["msg_count"]["N"])


def test_an_expired_heads_count_whose_answer_was_lost_is_counted_once(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """DynamoDB applies the count of m1's removal and the answer is lost: the SDK's repeat finds it counted."""
    jobs, _ = _expired_behind(client, clock)
    lost = LostAnswer("UpdateItem", expression_has("SET counted_to = :seq"))
    with attached(dynamodb, lost):
        assert [message.body for message in jobs.receive(max_messages=10)] == ["m3"]
    assert lost.lost == 1
    assert _count(dynamodb) == 1


def test_an_expired_head_cancelled_by_id_while_a_receive_removes_it_is_counted_once(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A receive read m1 and m2, past their retention, and is about to remove m1; meanwhile another process
    cancels m1 by its id and counts it. The receive's delete finds nothing and counts it again (it may have been
    its own, an answer lost): that count is refused."""
    jobs, first = _expired_behind(client, clock)

    def cancel() -> None:
        with contextlib.suppress(MessageNotFound):  # removed and counted; past its retention, it was not there
            client.queue("slow.fifo", "c").cancel(first)

    removing = Interleave("DeleteItem", cancel)
    with attached(dynamodb, removing):
        assert [message.body for message in jobs.receive(max_messages=10)] == ["m3"]
    assert removing.done
    assert _count(dynamodb) == 1
