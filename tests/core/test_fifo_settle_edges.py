"""FIFO settles at their edges: a stale delete whose answer was lost after a later claim removed more than one
message, a release whose give-back DynamoDB refuses for the item's size inside a transaction, and a group item
written by a process whose cached settings are from before the retention was raised."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from queue_core import QueueClient

from tests.conftest import TABLE, FakeClock
from tests.core.answers import LostAnswer, attached, too_large_in_a_transaction
from tests.core.test_fifo_removal_records import _in_the_group


def _process(clock: FakeClock) -> QueueClient:
    """Another process on the same table: its own DynamoDB client, its own cached settings."""
    return QueueClient(TABLE, dynamodb=boto3.client("dynamodb", region_name="us-east-1"), clock=clock)


def _items(dynamodb: Any, prefix: str) -> list[dict[str, Any]]:
    return [item for item in dynamodb.scan(TableName=TABLE)["Items"] if item["pk"]["S"].startswith(prefix)]


def _stale_delete_with_its_answer_lost_counts_nothing(jobs: Any, handle: str, dynamodb: object) -> None:
    """The group holds one message; the stale handle's delete, its answer lost and sent again, leaves it so."""
    assert _in_the_group(jobs) == 1
    with attached(dynamodb, LostAnswer("DeleteItem")) as lost:
        jobs.delete(handle)
    assert lost.lost == 1
    assert _in_the_group(jobs) == 1


# A stale delete whose answer was lost counts nothing a later holder counted.
@pytest.mark.parametrize("later", ["one claim of two", "two claims of one"])
def test_a_stale_delete_whose_answer_was_lost_after_later_holders_removed_two_messages_counts_nothing(
    client: QueueClient, dynamodb: object, later: str
) -> None:
    """A claim gives its message back; later holders receive it and the message after it and delete both (one
    claim of two messages, or two claims of one). The first claim's handle then deletes its message, the answer is
    lost and the SDK sends the delete again: neither attempt removed anything (the message was gone), yet the
    repeat counts a removal, because the holders' last removal was another message. `stats` then reports the
    group's third message as gone while it waits to be received."""
    client.create_queue("pairs.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("pairs.fifo", "c")
    jobs.send_batch([{"body": body, "group_id": "g"} for body in ("a", "b", "c")])
    (first,) = jobs.receive(max_messages=1)
    jobs.release(first.receipt_handle, delay_seconds=0)
    if later == "one claim of two":
        taken = jobs.receive(max_messages=2)
        assert [message.body for message in taken] == ["a", "b"]
        for message in taken:
            jobs.delete(message.receipt_handle)
    else:
        for body in ("a", "b"):
            (message,) = jobs.receive(max_messages=1)
            assert message.body == body
            jobs.delete(message.receipt_handle)
    _stale_delete_with_its_answer_lost_counts_nothing(jobs, first.receipt_handle, dynamodb)
    assert [message.body for message in jobs.receive(max_messages=10)] == ["c"]


def test_a_stale_delete_whose_answer_was_lost_after_a_later_claim_moved_its_message_and_deleted_the_next(
    client: QueueClient, dynamodb: object, clock: FakeClock
) -> None:
    """A later claim moves the first claim's message to the DLQ (its receive limit reached) and takes the next
    one, which it deletes: the record of the move must outlive that delete, or the first claim's repeated stale
    delete counts the moved message a second time."""
    client.create_queue("moved2.fifo", fifo=True, visibility_timeout=30, max_receive_count=1)
    jobs = client.queue("moved2.fifo", "c")
    jobs.send_batch([{"body": body, "group_id": "g"} for body in ("a", "b", "c")])
    (first,) = jobs.receive(max_messages=1)
    clock.advance(31)
    (next_one,) = jobs.receive(max_messages=1)
    assert next_one.body == "b"
    assert [dead.message.body for dead in jobs.dlq_read()] == ["a"]
    jobs.delete(next_one.receipt_handle)
    _stale_delete_with_its_answer_lost_counts_nothing(jobs, first.receipt_handle, dynamodb)


# A reason that does not fit is dropped, whatever write carries it.
@pytest.mark.parametrize("held", [1, 2])
def test_a_fifo_release_whose_reason_makes_the_item_too_large_drops_its_reasons(
    client: QueueClient, dynamodb: Any, held: int
) -> None:
    """A FIFO release with a reason, of a message whose item has no room for it: DynamoDB cancels the release's
    transaction (give-back and group) for the item's size. As with a release written alone, the reasons are
    dropped and the message given back; it must not fail as an internal error, its message held on."""
    client.create_queue("roomy.fifo", fifo=True, visibility_timeout=30)
    jobs = client.queue("roomy.fifo", "c")
    jobs.send_batch([{"body": body, "group_id": "g"} for body in ("a", "b")[:held]])
    got = jobs.receive(max_messages=held)
    assert len(got) == held
    reason = "z" * 1500
    with too_large_in_a_transaction(dynamodb, reason) as hook:
        jobs.release(got[0].receipt_handle, delay_seconds=0, reason=reason)
    assert hook.refused == 1
    assert jobs.get(got[0].message_id).reasons_dropped >= 1
    for message in got[1:]:
        jobs.delete(message.receipt_handle)
    assert [message.body for message in jobs.receive()] == ["a"]


# A group item never lives shorter than a message of its group.
def test_a_send_with_settings_cached_from_before_a_raised_retention_never_shortens_the_group_item(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """The retention is raised; a process whose cached settings are from before (an hour) sends to a group right
    after another sent to it under the new settings (four days). Its group item's time, written from the cached
    retention alone, would be shorter than the first message's, were that message kept four days: TTL would delete
    the item while the message lived, and the group would never hand it out. A raised retention applies to
    messages sent once every process's cache has it (as SQS says an attribute's change takes up to a minute)."""
    client.create_queue("raised.fifo", retention_seconds=3_600)
    stale = _process(clock).queue("raised.fifo", "c")
    assert stale.settings.retention_seconds == 3_600  # cached in that process
    client.update_queue("raised.fifo", retention_seconds=4 * 86_400)
    jobs = client.queue("raised.fifo", "c")
    assert jobs.settings.retention_seconds == 4 * 86_400
    jobs.send("m1", group_id="g")
    stale.send("m2", group_id="g")
    (group,) = _items(dynamodb, "F#raised.fifo#")
    messages = _items(dynamodb, "G#raised.fifo#")
    assert len(messages) == 2
    assert all(int(group["expires_at"]["N"]) >= int(message["expires_at"]["N"]) for message in messages)
    clock.advance(60)  # every process's cache has the raised retention
    sent_at = clock()
    jobs.send("m3", group_id="g")
    (group,) = _items(dynamodb, "F#raised.fifo#")
    longest = max(int(message["expires_at"]["N"]) for message in _items(dynamodb, "G#raised.fifo#"))
    assert longest >= sent_at + 4 * 86_400 and int(group["expires_at"]["N"]) >= longest
