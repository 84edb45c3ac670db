"""Scenarios at the edges of the engines: ready markers after a change of visibility or a lost answer, FIFO
sends whose answer was lost, messages given back unseen, and FIFO messages that can go nowhere."""

from __future__ import annotations

import json

import pytest
from queue_core import QueueClient, ReceiptHandleStale, ValidationError

from tests.core.answers import (
    AnswerNeverCame,
    Interleave,
    LostAnswer,
    Refused,
    attached,
    expression_has,
    never_answered,
    refused,
    transaction_of_group,
)


def _marker_for_later(client: QueueClient, queue: str) -> None:
    """A queue-wide poll while the only message is held: the client's marker now says "ready when the claim
    ends"."""
    assert client.queue_wide(queue).receive() == []


def test_a_fifo_message_made_visible_by_its_holder_is_found_queue_wide_at_once(client: QueueClient) -> None:
    client.create_queue("jobs.fifo")
    sub = client.queue("jobs.fifo", "c")
    sub.send("work", group_id="g")
    [held] = sub.receive(visibility_timeout=300)
    _marker_for_later(client, "jobs.fifo")
    sub.change_visibility(held.receipt_handle, 0)
    assert [m.body for m in client.queue_wide("jobs.fifo").receive()] == ["work"]


def test_a_standard_release_whose_answer_was_lost_is_found_queue_wide_at_once(client: QueueClient, dynamodb) -> None:
    client.create_queue("jobs")
    sub = client.queue("jobs", "c")
    sub.send("work")
    [held] = sub.receive(visibility_timeout=300)
    _marker_for_later(client, "jobs")
    with attached(dynamodb, LostAnswer("UpdateItem", expression_has("released_by"))) as lost:
        sub.release(held.receipt_handle, delay_seconds=0)
    assert lost.lost == 1
    assert [m.body for m in client.queue_wide("jobs").receive()] == ["work"]


def _batch_of_two_groups(sub, clock, dynamodb, slowed: float, later: float, lost_sends: int):
    """A FIFO batch of two groups: the first group's transaction takes `slowed` seconds, the second's is applied
    and its answer lost, `later` seconds passing before the producer hears of it; so are the answers of the next
    `lost_sends - 1` sends of that transaction."""
    slow = Interleave("TransactWriteItems", lambda: clock.advance(slowed), transaction_of_group("a"))
    passing = [later]
    lost = AnswerNeverCame(
        "TransactWriteItems",
        transaction_of_group("b"),
        times=lost_sends,
        meanwhile=lambda: clock.advance(passing.pop() if passing else 0),
    )
    with attached(dynamodb, slow), never_answered(dynamodb, lost):
        result = sub.send_batch(
            [{"body": "A", "group_id": "a", "dedup_id": "A"}, {"body": "B", "group_id": "b", "dedup_id": "B"}]
        )
    assert lost.lost >= 1
    return result


def _stored_bodies(sub) -> list[str]:
    bodies = []
    while batch := sub.receive(max_messages=10):
        bodies += [m.body for m in batch]
        sub.delete_batch([m.receipt_handle for m in batch])
    return sorted(bodies)


def test_a_fifo_send_whose_answer_was_lost_learns_its_message_id_and_is_stored_once(
    client: QueueClient, clock, dynamodb
) -> None:
    client.create_queue("events.fifo", dedup_window_seconds=300)
    sub = client.queue("events.fifo", "c")
    result = _batch_of_two_groups(sub, clock, dynamodb, slowed=184, later=175, lost_sends=1)
    assert not result.failed and len(result.successful) == 2
    second = result.successful[1]["message_id"]
    assert sub.get(second).body == "B"
    assert _stored_bodies(sub) == ["A", "B"]


@pytest.mark.parametrize(("slowed", "later"), [(0, 100), (200, 101), (184, 175)])
def test_a_producers_resend_after_a_lost_answer_is_a_duplicate_for_a_whole_window_after_the_commit(
    client: QueueClient, clock, dynamodb, slowed: int, later: int
) -> None:
    """Every answer of the second group's transaction lost: the producer hears `Throttled` `later` seconds after
    the commit, `slowed + later` after the batch began, and sends again with the same dedup id."""
    client.create_queue("events.fifo", dedup_window_seconds=300)
    sub = client.queue("events.fifo", "c")
    result = _batch_of_two_groups(sub, clock, dynamodb, slowed=slowed, later=later, lost_sends=1_000)
    assert [f["code"] for f in result.failed] == ["Throttled"]
    resent = sub.send("B", group_id="b", dedup_id="B")
    assert resent.duplicate
    assert _stored_bodies(sub) == ["A", "B"]


def test_a_message_given_back_unseen_keeps_its_receive_count_and_never_reaches_the_dlq(
    client: QueueClient, clock, dynamodb
) -> None:
    client.create_queue("jobs", max_receive_count=1)
    sub = client.queue("jobs", "c")
    sent = sub.send("work")
    for _ in range(3):  # claimed, never handed to anyone, given back: the lost answer's repeat changes nothing
        [claimed] = sub.receive(visibility_timeout=300)
        with attached(dynamodb, LostAnswer("UpdateItem", expression_has("released_by"))) as lost:
            sub.return_unseen(claimed.receipt_handle)
        assert lost.lost == 1
        assert sub.get(sent.message_id).state == "visible"
        clock.advance(5)
    [delivered] = sub.receive()
    assert (delivered.body, delivered.receive_count) == ("work", 1)
    assert delivered.first_received_at == client._ctx.now_ms()
    assert sub.stats().dlq == 0


def test_a_fifo_message_given_back_unseen_unlocks_its_group_uncounted_and_in_order(client: QueueClient, clock) -> None:
    client.create_queue("jobs.fifo", max_receive_count=1)
    sub = client.queue("jobs.fifo", "c")
    sub.send_batch([{"body": "first", "group_id": "g"}, {"body": "second", "group_id": "g"}])
    wide = client.queue_wide("jobs.fifo")
    held = wide.receive(max_messages=2, visibility_timeout=300)
    assert [m.body for m in held] == ["first", "second"]
    wide.delete(held[0].receipt_handle)  # the first was handed out and done; the second never left
    wide.return_unseen(held[1].receipt_handle)
    clock.advance(5)
    [again] = wide.receive()
    assert (again.body, again.receive_count, again.first_received_at) == ("second", 1, client._ctx.now_ms())
    assert sub.stats().dlq == 0


def test_a_give_back_of_a_message_received_again_since_is_refused_and_changes_nothing(
    client: QueueClient, clock
) -> None:
    client.create_queue("jobs", visibility_timeout=30)
    sub = client.queue("jobs", "c")
    sub.send("work")
    [old] = sub.receive()
    clock.advance(31)
    [new] = sub.receive()
    with pytest.raises(ReceiptHandleStale):
        sub.return_unseen(old.receipt_handle)
    with pytest.raises(ValidationError):
        sub.return_unseen(old.receipt_handle[:-2] + "xx")
    assert sub.stats().in_flight == 1
    sub.delete(new.receipt_handle)


def _to_the_dlq(body: dict) -> bool:
    """A transaction that puts a DLQ item."""
    return any(
        action.get("Put", {}).get("Item", {}).get("pk", {}).get("S", "").startswith("D#")
        for action in body.get("TransactItems", [])
    )


def _mark_of(group: str, sequence: str):
    """A FIFO claim's mark of the message of `group` at `sequence`."""

    def match(body: dict) -> bool:
        key = body.get("Key", {})
        return (
            key.get("pk", {}).get("S", "").endswith(f"#{group}")
            and key.get("sk", {}).get("S") == sequence
            and "ADD receive_count" in body.get("UpdateExpression", "")
        )

    return match


def test_a_fifo_message_that_can_be_neither_claimed_nor_dead_lettered_stays_and_holds_only_its_group(
    client: QueueClient, clock, dynamodb, caplog
) -> None:
    client.create_queue("jobs.fifo", max_receive_count=3)
    sub = client.queue("jobs.fifo", "c")
    stuck = sub.send("too big to claim", group_id="g")
    sub.send("after it", group_id="g")
    sub.send("other group", group_id="h")
    with (
        refused(dynamodb, Refused("UpdateItem", _mark_of("g", stuck.sequence))),
        refused(dynamodb, Refused("TransactWriteItems", _to_the_dlq)),
    ):
        [other] = sub.receive(max_messages=10)
        assert other.body == "other group"
        sub.delete(other.receipt_handle)
        assert sub.get(stuck.message_id).body == "too big to claim"
        assert sub.stats().stuck == 1 and sub.stats().dlq == 0
        assert stuck.message_id in caplog.text and "neither delivered nor moved to the DLQ" in caplog.text
        clock.advance(3600)  # tried again, still stuck: the group waits
        assert sub.receive(max_messages=10) == []
        assert sub.stats().stuck == 1 and client.queue_stats("jobs.fifo").to_dict()["stuck"] == 1
    assert sub.cancel(stuck.message_id)  # the operator acts
    assert sub.stats().stuck == 0
    clock.advance(3600)
    assert [m.body for m in sub.receive(max_messages=10)] == ["after it"]


def test_a_fifo_message_past_its_receive_limit_whose_dlq_copy_fails_is_never_overtaken(
    client: QueueClient, clock, dynamodb
) -> None:
    client.create_queue("jobs.fifo", max_receive_count=1, visibility_timeout=30)
    sub = client.queue("jobs.fifo", "c")
    first = sub.send("first", group_id="g")
    sub.send("second", group_id="g")
    assert [m.body for m in sub.receive()] == ["first"]  # its consumer crashes
    clock.advance(31)
    with refused(dynamodb, Refused("TransactWriteItems", _to_the_dlq)):
        assert sub.receive(max_messages=10) == []
        assert sub.stats().stuck == 1
    clock.advance(3600)
    # Tried again: now it goes to the DLQ, and the group goes on.
    assert [m.body for m in sub.receive(max_messages=10)] == ["second"]
    assert [m.message_id for m in sub.dlq_list()] == [first.message_id]
    assert sub.stats().stuck == 0


def test_a_claim_stalled_past_its_lock_takes_nothing_after_the_next_holder_gave_the_message_back_unseen(
    client: QueueClient, clock, dynamodb
) -> None:
    """The next holder's give-back restores the receive count the stalled claim read: the count is no fence."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    sub = client.queue("jobs.fifo", "c")
    sub.send("m1", group_id="g", dedup_id="1")
    next_holder: list[str] = []

    def next_holder_takes_it_and_gives_it_back() -> None:
        clock.advance(31)  # the stalled claim's lock runs out
        [taken] = sub.receive(visibility_timeout=30)
        next_holder.append(taken.body)
        sub.return_unseen(taken.receipt_handle)

    stall = Interleave("UpdateItem", next_holder_takes_it_and_gives_it_back, expression_has("first_received_at"))
    with attached(dynamodb, stall):
        stalled = sub.receive(visibility_timeout=30)

    assert next_holder == ["m1"]
    assert stalled == []
    [again] = sub.receive(visibility_timeout=30)
    assert (again.body, again.receive_count) == ("m1", 1)


def test_a_claim_stalled_between_its_lock_and_its_read_takes_nothing_from_the_next_holder(
    client: QueueClient, clock, dynamodb
) -> None:
    """The stalled claim reads the head after the next holder marked it: what it reads agrees with the table, and
    only the time of the lock that marked it tells that a later lock took it."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    sub = client.queue("jobs.fifo", "c")
    sub.send("m1", group_id="g", dedup_id="1")
    next_holder = []

    def next_holder_takes_it() -> None:
        clock.advance(31)  # the stalled claim's lock runs out
        next_holder.extend(sub.receive(visibility_timeout=300))

    def group_head_read(body: dict) -> bool:
        return '"G#jobs.fifo#c#' in json.dumps(body)

    with attached(dynamodb, Interleave("Query", next_holder_takes_it, group_head_read)):
        stalled = sub.receive(visibility_timeout=30)

    assert [m.body for m in next_holder] == ["m1"]
    assert stalled == []
    sub.delete(next_holder[0].receipt_handle)  # still the holder's
    assert sub.stats().in_flight == 0
