"""Scenarios that each need one clause of a conditional write of the store: without that clause the scenario
fails (`python -m tests.reliability.ablation`, docs/testing.md)."""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError
from queue_core import (
    MessageNotFound,
    QueueClient,
    QueueError,
    QueueExists,
    ReceiptHandleStale,
    ReceivedMessage,
    TableLayoutMismatch,
    keys,
    limits,
    migration,
    reasons,
)
from queue_core.layout import CURRENT_LAYOUT
from queue_core.store.write import serialize
from queue_core.subqueue import SubQueue

from tests.conftest import TABLE, FakeClock
from tests.core.answers import (
    AnswerNeverCame,
    Interleave,
    LostAnswer,
    Refused,
    attached,
    expression_has,
    never_answered,
    refused,
)
from tests.index_lag import IndexLag


def test_a_claim_with_no_visibility_applied_twice_by_the_sdk_counts_one_receive(
    client: QueueClient, dynamodb: object
) -> None:
    """With a visibility of 0 the message is visible again as soon as it is claimed: the SDK's repeat of the very
    claim after a lost answer must fail on the claim's own token, not count a second receive."""
    client.create_queue("jobs")
    jobs = client.queue("jobs", "c")
    jobs.send("work")

    with attached(dynamodb, LostAnswer("UpdateItem", expression_has("ADD receive_count"))) as lost:
        [first] = jobs.receive(visibility_timeout=0)
    [second] = jobs.receive()

    assert lost.lost == 1
    assert (first.receive_count, second.receive_count) == (1, 2)


def test_a_late_delete_by_a_fifo_dlq_handle_leaves_its_group_held_by_the_claim_that_took_it_since(
    client: QueueClient, clock: FakeClock
) -> None:
    """A's claim of a FIFO DLQ's group runs out and B's takes the group and its dead letter; A's delete removes
    nothing, and gives back nothing of B's claim: B still holds the group, and makes its hold longer."""
    client.create_queue("jobs.fifo", max_receive_count=1)
    queue = client.queue("jobs.fifo", "c")
    queue.send("work", group_id="g")
    queue.receive(visibility_timeout=0)
    clock.advance(1)
    assert queue.receive() == []  # past its receive limit: to the DLQ
    [first] = queue.dlq_receive(1, visibility_timeout=30)
    clock.advance(31)
    [second] = queue.dlq_receive(1, visibility_timeout=30)

    assert queue.dlq_delete(first.receipt_handle) is False

    queue.dlq_change_visibility(second.receipt_handle, 60)
    clock.advance(45)
    assert queue.dlq_receive(1, visibility_timeout=30) == [], "B still holds the group"
    assert queue.dlq_delete(second.receipt_handle) is True


def _dead_letters_of_one_group(client: QueueClient, clock: FakeClock, *bodies: str) -> SubQueue:
    """A FIFO queue whose group `g` has `bodies` in its DLQ, in that order."""
    client.create_queue("jobs.fifo", max_receive_count=1)
    queue = client.queue("jobs.fifo", "c")
    for body in bodies:
        queue.send(body, group_id="g")
    queue.receive(max_messages=10, visibility_timeout=0)
    clock.advance(1)
    assert queue.receive(max_messages=10) == []  # past their receive limit: to the DLQ
    return queue


def test_a_fifo_dlq_group_stays_held_until_the_latest_time_of_the_dead_letters_its_claim_still_holds(
    client: QueueClient, clock: FakeClock
) -> None:
    """A claim holds x and y until 30 s; x's handle makes its hold 60 s, y's makes its own 5 s, then x is
    deleted. The claim still holds y, so the group is held until 60 s (the latest time asked while it held
    others), never by y's shorter time nor by the claim's first; then the next receive takes y."""
    queue = _dead_letters_of_one_group(client, clock, "x", "y")
    x, y = queue.dlq_receive(10, visibility_timeout=30)
    queue.dlq_change_visibility(x.receipt_handle, 60)
    queue.dlq_change_visibility(y.receipt_handle, 5)
    assert queue.dlq_delete(x.receipt_handle) is True

    clock.advance(10)
    assert queue.dlq_receive(10) == [], "held until 60 s, not until y's 5 s"
    clock.advance(30)
    assert queue.dlq_receive(10) == [], "held until 60 s, not until the claim's first 30 s"
    clock.advance(21)
    assert [dead.message.body for dead in queue.dlq_receive(10)] == ["y"]


def test_a_fifo_dlq_claim_of_one_dead_letter_frees_its_group_at_the_shorter_time_its_handle_asks(
    client: QueueClient, clock: FakeClock
) -> None:
    queue = _dead_letters_of_one_group(client, clock, "x")
    [x] = queue.dlq_receive(1, visibility_timeout=30)
    queue.dlq_change_visibility(x.receipt_handle, 5)

    clock.advance(6)
    assert [dead.message.body for dead in queue.dlq_receive(1)] == ["x"]


def test_a_stale_fifo_dlq_handle_moves_nothing_while_the_next_claim_takes_the_group(
    client: QueueClient, clock: FakeClock, dynamodb: object
) -> None:
    """A's claim runs out; B's receive takes the group and, before it stamps the dead letter, A's handle asks
    for more time. The group is B's: A's handle is stale, and B gets the dead letter."""
    queue = _dead_letters_of_one_group(client, clock, "x")
    [first] = queue.dlq_receive(1, visibility_timeout=30)
    clock.advance(31)
    late: list[BaseException | None] = []
    a_asks_for_more_time = _outcome_into(late, lambda: queue.dlq_change_visibility(first.receipt_handle, 1))

    stamp = expression_has("SET dlq_tok = :tok")
    with attached(dynamodb, Interleave("UpdateItem", lambda: _elsewhere(a_asks_for_more_time), stamp)):
        second = queue.dlq_receive(1, visibility_timeout=30)

    assert [type(outcome) for outcome in late] == [ReceiptHandleStale]
    assert [dead.message.body for dead in second] == ["x"]


def _outcome_into(outcomes: list[BaseException | None], action: Callable[[], object]) -> Callable[[], None]:
    """`action`, its outcome kept: None, or the `ReceiptHandleStale` it raised."""

    def run() -> None:
        try:
            action()
            outcomes.append(None)
        except ReceiptHandleStale as error:
            outcomes.append(error)

    return run


def _elsewhere(action: Callable[[], None]) -> None:
    """`action` on a thread of its own, as another process would run it; waited for."""
    thread = threading.Thread(target=action)
    thread.start()
    thread.join()


@pytest.mark.parametrize("held", [2, 1], ids=["one of two", "alone"])
def test_a_fifo_message_cancelled_while_held_leaves_its_groups_count_once_when_its_holder_deletes_it_too(
    client: QueueClient, held: int
) -> None:
    """One claim holds x (and y); x is cancelled by its id (counted out of the group then), and its holder's
    delete finds it gone: that delete (an ack, or the claim's end when x is held alone) counts nothing again. The
    group still counts the message after the claim's, and delivers it."""
    client.create_queue("jobs.fifo")
    queue = client.queue("jobs.fifo", "c")
    bodies = ["x", "y", "z"][: held + 1]
    for body in bodies:
        queue.send(body, group_id="g")
    taken = queue.receive(max_messages=held)

    assert queue.cancel(taken[0].message_id) is True
    for message in taken:
        queue.delete(message.receipt_handle)

    assert queue.stats().visible == 1
    assert [message.body for message in queue.receive(max_messages=10)] == bodies[-1:]


def test_a_fifo_group_given_back_with_a_longer_delay_after_a_shorter_one_waits_for_the_longer(
    client: QueueClient, clock: FakeClock
) -> None:
    """One claim holds three messages: the first is given back for 10 s, the second for 100 s, the third is
    deleted. The group waits for the longest delay asked, whichever came first."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c")
    for body in ("first", "second", "third"):
        jobs.send(body, group_id="g")
    first, second, third = jobs.receive(max_messages=3)

    jobs.release(first.receipt_handle, delay_seconds=10)
    jobs.release(second.receipt_handle, delay_seconds=100)
    jobs.delete(third.receipt_handle)

    clock.advance(11)
    assert jobs.receive(max_messages=2) == []
    clock.advance(90)
    assert [message.body for message in jobs.receive(max_messages=2)] == ["first", "second"]


def test_a_late_delete_by_a_fifo_claim_that_ran_out_leaves_the_next_claims_lock_alone(
    client: QueueClient, clock: FakeClock
) -> None:
    """A holds x, y and z and runs out of time; B takes the group with x and y. A's late delete of z (taken by
    nobody since) must not count towards B's claim: B's delete of x leaves the group locked while B holds y."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c")
    for body in ("x", "y", "z"):
        jobs.send(body, group_id="g")
    _, _, z = jobs.receive(max_messages=3)
    clock.advance(31)
    x, _ = jobs.receive(max_messages=2)

    jobs.delete(z.receipt_handle)
    jobs.delete(x.receipt_handle)

    assert jobs.receive(max_messages=10) == [], "B still holds y"


def test_a_redriven_message_past_its_new_retention_is_not_claimed_from_its_earlier_lifes_index_entry(
    client: QueueClient, clock: FakeClock
) -> None:
    """A message goes to the DLQ and back after its queue's retention was cut to a minute: its new life ends
    sooner than its first. A receive whose lagging index still shows the first life's entry (same key, its later
    expiry) must not deliver it past the new retention."""
    client.create_queue("jobs", retention_seconds=3600)
    jobs = client.queue("jobs", "c")
    sent = jobs.send("work")
    with IndexLag(2):  # the index two changes behind: the move's removal and the redrive's entry not in it yet
        assert jobs.move_to_dlq(sent.message_id)
        client.update_queue("jobs", retention_seconds=60)
        assert jobs.redrive() == 1
        clock.advance(61)

        assert jobs.receive() == []


def test_a_standard_claim_raced_by_another_receive_never_counts_a_receive_past_the_limit(
    client: QueueClient, dynamodb: object
) -> None:
    """A receive reads the message at its first receive of two allowed; before its claim lands, another receive
    takes the last one. The first claim must fail: no third receive."""
    client.create_queue("jobs", max_receive_count=2, visibility_timeout=0)
    jobs = client.queue("jobs", "c")
    jobs.send("work")
    jobs.receive()
    got: list[ReceivedMessage] = []

    def another_receive() -> None:
        got.extend(jobs.receive())

    claim = expression_has("ADD receive_count")
    with attached(dynamodb, Interleave("UpdateItem", lambda: _elsewhere(another_receive), claim)):
        got.extend(jobs.receive())

    assert [message.receive_count for message in got] == [2]


def test_a_redriven_message_is_not_removed_for_the_expiry_its_earlier_lifes_index_entry_shows(
    client: QueueClient, clock: FakeClock
) -> None:
    """A message goes to the DLQ and back after its queue's retention grew: its new life ends later than its
    first. A receive whose lagging index still shows the first life's entry, past its expiry, must leave the
    message in place, and it is delivered once the index catches up."""
    client.create_queue("jobs", retention_seconds=60)
    jobs = client.queue("jobs", "c")
    sent = jobs.send("work")
    with IndexLag(2) as index:  # the move's removal and the redrive's entry not in the index yet
        clock.advance(1)
        assert jobs.move_to_dlq(sent.message_id)
        client.update_queue("jobs", retention_seconds=3600)
        assert jobs.redrive() == 1
        clock.advance(61)

        assert jobs.receive() == []
        with index.settled():
            assert [message.body for message in jobs.receive()] == ["work"]


def test_a_fifo_group_whose_old_place_is_current_again_after_everything_of_it_expired_takes_sends_there(
    client: QueueClient, clock: FakeClock
) -> None:
    """A group moves to a second shard and back to the first after its messages are gone; once everything of it
    has expired (the layouts it lived under dropped by the sweep), the mark its first move left where it is now
    placed is only an item TTL has not removed yet: a send starts the group there afresh."""
    group = next(name for name in (f"g{i}" for i in range(100)) if keys.group_shard(name, 2) == 1)
    client.create_queue("jobs.fifo", shards=1)
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("first", group_id=group)
    client.update_queue("jobs.fifo", shards=2)
    clock.advance(60)
    [first] = jobs.receive()
    jobs.delete(first.receipt_handle)
    jobs.send("second", group_id=group)  # moves the group to the second shard, marking its first place
    client.update_queue("jobs.fifo", shards=1)
    clock.advance(60)
    [second] = jobs.receive()
    jobs.delete(second.receipt_handle)
    clock.advance(10 * 24 * 3600)
    client.sweep()

    jobs.send("third", group_id=group)

    assert [message.body for message in jobs.receive()] == ["third"]


def test_a_send_by_another_process_to_a_fifo_group_whose_messages_all_expired_goes_on_from_its_last_sequence(
    client: QueueClient, clock: FakeClock, dynamodb: object
) -> None:
    """Everything of a group has expired, its items not yet removed by TTL. A process that never sent to it
    guesses a new group, and learns its last sequence from the refusal: the message is stored after it, never
    under a sequence the group handed out already."""
    client.create_queue("jobs.fifo", retention_seconds=60)
    client.queue("jobs.fifo", "c").send("old", group_id="g")
    clock.advance(3 * 24 * 3600)  # past its retention, its time in a DLQ and the longest dedup window
    jobs = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs.fifo", "c")

    sent = jobs.send("new", group_id="g")

    assert (sent.duplicate, int(sent.sequence)) == (False, 2)
    assert [message.body for message in jobs.receive()] == ["new"]


def test_a_fifo_send_placed_before_its_group_moved_follows_the_group_to_its_new_place(
    client: QueueClient, clock: FakeClock, dynamodb: object
) -> None:
    """A process that never sent to the group places its send by the shard count in force; before the send
    lands, the count's change takes effect and another send moves the group to its new shard. The late send
    must follow the group there, after that send, not start the group again at its old place."""
    group = next(name for name in (f"g{i}" for i in range(100)) if keys.group_shard(name, 2) == 1)
    client.create_queue("jobs.fifo", shards=1)
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("first", group_id=group)
    [first] = jobs.receive()
    jobs.delete(first.receipt_handle)
    client.update_queue("jobs.fifo", shards=2)
    late = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs.fifo", "c")

    def the_group_moves() -> None:
        clock.advance(60)
        jobs.send("second", group_id=group)

    with attached(dynamodb, Interleave("TransactWriteItems", lambda: _elsewhere(the_group_moves))):
        late.send("third", group_id=group)

    received = jobs.receive(max_messages=10)
    assert [message.body for message in received] == ["second", "third"]
    assert [int(message.sequence) for message in received] == [2, 3]


def _layout_record(dynamodb: Any, **attributes: Any) -> None:
    """The table's layout record as an earlier or another release left it: none, or these attributes."""
    dynamodb.delete_item(TableName=TABLE, Key=serialize(keys.layout_key()))
    if attributes:
        dynamodb.put_item(TableName=TABLE, Item=serialize({**keys.layout_key(), **attributes}))


@pytest.mark.parametrize("recorded", [None, 1], ids=["no record", "layout 1"])
def test_a_migration_that_another_run_finishes_before_it_begins_stops_and_says_so(
    client: QueueClient, clock: FakeClock, dynamodb: Any, recorded: int | None
) -> None:
    """Two runs of `dq migrate` read the table at its old layout; the second finishes before the first records
    its start. The first must stop (run it again), not start a migration of a table already upgraded."""
    _layout_record(dynamodb, **({"layout": recorded, "written_by": "0.1.0"} if recorded else {}))
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)

    begin = expression_has("SET migrating_to")
    with (
        attached(dynamodb, Interleave("UpdateItem", lambda: _elsewhere(other.migrate), begin)),
        pytest.raises(TableLayoutMismatch),
    ):
        client.migrate()

    found = client.table_layout()
    assert (found.layout, found.migrating_to) == (CURRENT_LAYOUT, None)


def test_a_migration_that_another_release_starts_to_another_layout_before_it_begins_stops_and_says_so(
    client: QueueClient, dynamodb: Any
) -> None:
    """A run reads a table with no record; before it records its start, a run of another release records its
    own migration to a later layout. The first must stop, leaving the other's migration as it is."""
    _layout_record(dynamodb)

    def another_release_begins() -> None:
        _layout_record(dynamodb, migrating_to=CURRENT_LAYOUT + 1, migrating_by="99.0.0")

    begin = expression_has("SET migrating_to")
    with (
        attached(dynamodb, Interleave("UpdateItem", another_release_begins, begin)),
        pytest.raises(TableLayoutMismatch),
    ):
        client.migrate()

    assert client.table_layout().migrating_to == CURRENT_LAYOUT + 1


def _two_held(client: QueueClient, attempt: str | None = None) -> tuple[SubQueue, list[ReceivedMessage]]:
    """A FIFO queue whose group `g` holds m1 and m2, both taken by one receive (under `attempt`, when given)."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c")
    for body in ("m1", "m2"):
        jobs.send(body, group_id="g")
    held = jobs.receive_attempt(attempt, max_messages=10) if attempt else jobs.receive(max_messages=10)
    assert [message.body for message in held] == ["m1", "m2"]
    return jobs, held


def test_a_receive_repeated_after_its_holder_gave_one_of_its_messages_back_is_a_new_receive(
    client: QueueClient,
) -> None:
    """m1 of a claim of two is given back with visibility 0 (parked: still the claim's, its group's lock
    untouched). SQS answers a repeat only while none of its messages was modified: the repeat is a new receive,
    which finds the group held for m2."""
    jobs, [m1, _] = _two_held(client, attempt="poll-1")
    jobs.change_visibility(m1.receipt_handle, 0)

    assert jobs.receive_attempt("poll-1", max_messages=10) == []


def test_a_receive_repeated_for_a_message_an_earlier_claim_had_given_back_answers_it_again(
    client: QueueClient, clock: FakeClock
) -> None:
    """m1 was given back with visibility 0 by an earlier claim of two (its item says so), then taken by a receive
    under an attempt id. A repeat of that receive answers m1 again, with the same handle: the earlier claim's
    give-back is no modification of this one's."""
    jobs, [m1, m2] = _two_held(client)
    jobs.change_visibility(m1.receipt_handle, 0)
    jobs.delete(m2.receipt_handle)
    clock.advance(1)
    [again] = jobs.receive_attempt("poll-2")

    repeat = jobs.receive_attempt("poll-2")

    assert [(message.body, message.receipt_handle) for message in repeat] == [("m1", again.receipt_handle)]


def test_a_visibility_of_zero_for_a_fifo_message_cancelled_while_held_finds_it_gone_and_writes_nothing(
    client: QueueClient, dynamodb: Any
) -> None:
    """A claim holds m1 and m2; m1 is cancelled by its id. Its handle's visibility of 0 finds no message: it
    says so, and leaves no item where m1 was."""
    jobs, [m1, m2] = _two_held(client)
    assert jobs.cancel(m1.message_id) is True
    before = _items(dynamodb)

    with pytest.raises(MessageNotFound):
        jobs.change_visibility(m1.receipt_handle, 0)

    assert _items(dynamodb) == before
    jobs.delete(m2.receipt_handle)
    assert jobs.stats().visible == 0


def _items(dynamodb: Any) -> list[dict[str, Any]]:
    return sorted(dynamodb.scan(TableName=TABLE)["Items"], key=lambda item: (item["pk"]["S"], item["sk"]["S"]))


def test_a_receive_repeated_while_the_next_claim_takes_the_group_is_a_new_receive(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A's claim of m1 runs out; B's receive locks the group and, before it takes m1, A repeats its receive with
    its attempt id. m1 still names A's claim, but the group is B's: A's repeat is a new receive (nothing), and m1
    goes to B alone."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("m1", group_id="g")
    jobs.receive_attempt("poll-a")
    clock.advance(31)
    repeat: list[ReceivedMessage] = []
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs.fifo", "c")

    def a_repeats() -> None:
        repeat.extend(other.receive_attempt("poll-a"))

    take = expression_has("ADD receive_count :one, marks :one")
    with attached(dynamodb, Interleave("UpdateItem", lambda: _elsewhere(a_repeats), take)):
        second = jobs.receive()

    assert [message.body for message in second] == ["m1"]
    assert repeat == []


def test_a_shorter_visibility_for_one_of_several_held_fifo_messages_never_shortens_the_groups_lock(
    client: QueueClient, clock: FakeClock
) -> None:
    """A claim holds m1 and m2; m2's handle asks for 300 s, then m1's for 10 s. While m2 is out the group stays
    locked for its 300 s: a receive 31 s later finds nothing, not m1 and m2 a second time. (Nothing of the claim
    is acked yet: the lock's condition must not take the size of an absent `acked`, which moto refuses.)"""
    jobs, [m1, m2] = _two_held(client)
    jobs.change_visibility(m2.receipt_handle, 300)
    jobs.change_visibility(m1.receipt_handle, 10)
    clock.advance(31)

    assert jobs.receive(max_messages=10) == []


def _dead_lettered_now(jobs: SubQueue) -> None:
    """The queue's one message (a receive limit of 1) goes to the DLQ at the clock's present millisecond."""
    jobs.receive(visibility_timeout=0)
    assert jobs.receive() == []  # past its receive limit: to the DLQ


def test_a_look_handle_of_a_dlq_copy_from_before_copy_ids_never_deletes_a_later_copy_of_the_same_time(
    client: QueueClient, dynamodb: Any
) -> None:
    """A DLQ copy written by a release before copies carried an id is named by its key and time alone. Its look
    handle must not delete a later copy of the same message (redriven, dead-lettered again under the same key)
    that another process's clock stamped with the same millisecond: the later copy has an id."""
    client.create_queue("jobs", max_receive_count=1)
    jobs = client.queue("jobs", "c")
    jobs.send("work")
    _dead_lettered_now(jobs)
    [item] = [item for item in dynamodb.scan(TableName=TABLE)["Items"] if "dlq_id" in item]
    dynamodb.update_item(TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]}, UpdateExpression="REMOVE dlq_id")
    [look] = jobs.dlq_read()
    assert jobs.redrive() == 1
    _dead_lettered_now(jobs)  # the clock has not moved: the same moved_at

    assert jobs.dlq_delete(look.receipt_handle) is False
    assert [message.body for message in jobs.dlq_list()] == ["work"]


def test_a_shorter_visibility_after_one_of_three_held_fifo_messages_was_deleted_keeps_the_lock_for_the_third(
    client: QueueClient, clock: FakeClock
) -> None:
    """A claim holds m1, m2 and m3; m1 is deleted, m3's handle asks for 300 s, then m2's for 10 s. m2 is not the
    last one out (m3 is): the group stays locked for m3's 300 s."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c")
    for body in ("m1", "m2", "m3"):
        jobs.send(body, group_id="g")
    m1, m2, m3 = jobs.receive(max_messages=10)
    jobs.delete(m1.receipt_handle)
    jobs.change_visibility(m3.receipt_handle, 300)
    jobs.change_visibility(m2.receipt_handle, 10)
    clock.advance(31)

    assert jobs.receive(max_messages=10) == []


def test_a_stale_fifo_handle_moves_nothing_while_the_next_claim_takes_the_group(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A's claim of m1 runs out; B's receive locks the group and, before it takes m1, A's handle asks for 1 s.
    m1 still names A's claim, but the group is B's: A's handle is stale and B's lock keeps its 30 s."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("m1", group_id="g")
    [first] = jobs.receive()
    clock.advance(31)
    late: list[BaseException | None] = []
    a_asks_for_one_second = _outcome_into(late, lambda: jobs.change_visibility(first.receipt_handle, 1))

    take = expression_has("ADD receive_count :one, marks :one")
    with attached(dynamodb, Interleave("UpdateItem", lambda: _elsewhere(a_asks_for_one_second), take)):
        second = jobs.receive()
    clock.advance(2)

    assert [type(outcome) for outcome in late] == [ReceiptHandleStale]
    assert [message.body for message in second] == ["m1"]
    assert jobs.receive() == [], "B still holds m1"


def _a_process_behind_a_change_of_shards(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> tuple[str, SubQueue, SubQueue]:
    """A FIFO queue of one shard whose group (first at shard 0, at shard 1 of 2) had `first` sent, received and
    deleted by a process (`client`'s), its settings cached since; another process has changed the count to 2,
    in effect now. The group, the process behind the change and the other."""
    group = next(name for name in (f"g{i}" for i in range(100)) if keys.group_shard(name, 2) == 1)
    client.create_queue("jobs.fifo", shards=1)
    behind = client.queue("jobs.fifo", "c")
    behind.send("first", group_id=group)
    [first] = behind.receive()
    behind.delete(first.receipt_handle)
    elsewhere = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)
    elsewhere.update_queue("jobs.fifo", shards=2)
    clock.advance(60)
    return group, behind, elsewhere.queue("jobs.fifo", "c")


def test_a_fifo_send_by_a_process_behind_a_change_of_shards_never_reuses_a_sequence_where_its_group_moved_from(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A process sent to the group and remembers its last sequence, its settings cached from before the shard
    count changed. Another process, knowing the change, sends once it takes effect: the group moves away, and
    that message is received and deleted. The old place still ends at the remembered sequence: the first
    process's next send must follow the group, after the sequence it handed out, never reuse it."""
    group, jobs, other = _a_process_behind_a_change_of_shards(client, clock, dynamodb)
    assert int(other.send("second", group_id=group).sequence) == 2
    [second] = other.receive()
    other.delete(second.receipt_handle)

    assert int(jobs.send("third", group_id=group).sequence) == 3
    assert [message.body for message in other.receive(max_messages=10)] == ["third"]


def _lock_of_a_group() -> Callable[[dict[str, Any]], bool]:
    return expression_has("SET available_at = :until, gsi1sk = :gsk, tok = :tok")


def test_a_fifo_receive_that_found_a_group_available_never_locks_it_after_another_receive_did(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A's receive finds the group available; before its lock lands, B's receive locks the group and takes m1.
    A's lock must fail: m1 has one holder."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("m1", group_id="g")
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs.fifo", "c")
    got_b: list[ReceivedMessage] = []

    with attached(
        dynamodb,
        Interleave("UpdateItem", lambda: _elsewhere(lambda: got_b.extend(other.receive())), _lock_of_a_group()),
    ):
        got_a = jobs.receive()

    assert ([message.body for message in got_b], got_a) == (["m1"], [])


def test_a_fifo_send_fenced_by_a_stale_remembered_sequence_takes_the_next_one_never_a_spent_one(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A process sent `a` and remembers the group's last sequence; another process sent `b` after it, and both
    were received and deleted (their items gone). The first process's next send guesses from what it remembers:
    the guess must fail and the send take the sequence after `b`'s, never `b`'s again."""
    client.create_queue("jobs.fifo")
    jobs = client.queue("jobs.fifo", "c")
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs.fifo", "c")
    jobs.send("a", group_id="g")
    other.send("b", group_id="g")
    for _ in range(2):
        [message] = jobs.receive()
        jobs.delete(message.receipt_handle)

    assert int(jobs.send("c", group_id="g").sequence) == 3


def test_a_fifo_group_moving_back_to_a_place_it_left_takes_its_sends_there(
    client: QueueClient, clock: FakeClock
) -> None:
    """The shard count goes from 1 to 2 and back: the group moves to its second place and then back to its first,
    where the mark of its first move still is. The move back takes that place again; every send is received."""
    group = next(name for name in (f"g{i}" for i in range(100)) if keys.group_shard(name, 2) == 1)
    client.create_queue("jobs.fifo", shards=1)
    jobs = client.queue("jobs.fifo", "c")
    for shards, body in ((1, "first"), (2, "second"), (1, "third")):
        client.update_queue("jobs.fifo", shards=shards)
        clock.advance(60)
        jobs.send(body, group_id=group)
        [message] = jobs.receive()
        assert message.body == body
        jobs.delete(message.receipt_handle)


def test_a_fifo_group_moves_only_from_the_sequence_its_mover_read(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A process that knows of the new shard count finds the group empty at its old place and moves it; before
    the move lands, a process behind the change sends to the old place, and that message is received and
    deleted. The move must fail (the old place went on meanwhile) and the send follow, never reuse a sequence."""
    group, behind, mover = _a_process_behind_a_change_of_shards(client, clock, dynamodb)
    stale: list[str] = []

    def a_send_behind_the_change() -> None:
        stale.append(behind.send("second", group_id=group).sequence)
        [second] = behind.receive()
        behind.delete(second.receipt_handle)

    with attached(dynamodb, Interleave("TransactWriteItems", lambda: _elsewhere(a_send_behind_the_change))):
        moved = mover.send("third", group_id=group)

    assert (int(stale[0]), int(moved.sequence)) == (2, 3)


def test_a_standard_receive_that_found_a_message_visible_never_claims_it_after_another_receive_did(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A's receive finds the message visible; before its claim lands, B's receive claims it. A's claim must
    fail: the message has one holder."""
    client.create_queue("jobs")
    jobs = client.queue("jobs", "c")
    jobs.send("work")
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs", "c")
    got_b: list[ReceivedMessage] = []

    claim = expression_has("ADD receive_count")
    with attached(dynamodb, Interleave("UpdateItem", lambda: _elsewhere(lambda: got_b.extend(other.receive())), claim)):
        got_a = jobs.receive()

    assert ([message.body for message in got_b], got_a) == (["work"], [])


def test_a_dlq_receive_that_found_a_dead_letter_unclaimed_never_claims_it_after_another_receive_did(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A's DLQ receive reads a dead letter nobody holds; before its claim lands, B's DLQ receive claims it. A's
    claim must fail: the dead letter has one holder."""
    client.create_queue("jobs", max_receive_count=1)
    jobs = client.queue("jobs", "c")
    jobs.send("work")
    _dead_lettered_now(jobs)
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs", "c")
    got_b: list[Any] = []

    def b_receives() -> None:
        got_b.extend(other.dlq_receive(1, visibility_timeout=30))

    claim = expression_has("SET dlq_tok = :tok")
    with attached(dynamodb, Interleave("UpdateItem", lambda: _elsewhere(b_receives), claim)):
        got_a = jobs.dlq_receive(1, visibility_timeout=30)

    assert ([dead.message.body for dead in got_b], got_a) == (["work"], [])


@pytest.mark.parametrize("copy_ids", [True, False], ids=["with copy ids", "before copy ids"])
def test_a_dlq_receive_never_claims_a_later_copy_of_the_same_time_for_the_one_it_read(
    client: QueueClient, dynamodb: Any, copy_ids: bool
) -> None:
    """A DLQ receive reads a copy (one written by a release before copies carried an id, named by its key and
    time alone, or one of this release's); before its claim lands, another process redrives the message and it
    is dead-lettered again under the same key, its clock stamping the same millisecond (a new copy id). The claim
    must not take the later copy for the one it read: whatever the receive answers, its handle deletes it."""
    client.create_queue("jobs", max_receive_count=1)
    jobs = client.queue("jobs", "c")
    jobs.send("work")
    _dead_lettered_now(jobs)
    if not copy_ids:
        [item] = [item for item in dynamodb.scan(TableName=TABLE)["Items"] if "dlq_id" in item]
        key = {"pk": item["pk"], "sk": item["sk"]}
        dynamodb.update_item(TableName=TABLE, Key=key, UpdateExpression="REMOVE dlq_id")

    def dead_lettered_again() -> None:
        assert jobs.redrive() == 1
        _dead_lettered_now(jobs)

    claim = expression_has("SET dlq_tok = :tok")
    with attached(dynamodb, Interleave("UpdateItem", lambda: _elsewhere(dead_lettered_again), claim)):
        got = jobs.dlq_receive(1, visibility_timeout=30)

    assert all(jobs.dlq_delete(dead.receipt_handle) for dead in got)
    if not got:
        [dead] = jobs.dlq_receive(1, visibility_timeout=30)
        assert jobs.dlq_delete(dead.receipt_handle) is True
    assert jobs.dlq_list() == []


def test_a_late_fifo_delete_after_ttl_removed_its_group_item_leaves_no_group_item_behind(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A message with a minute's retention is held for an hour; TTL removes its group's item first (it may take
    items in any order, days late). The holder's delete removes the message; its count has no group to go to,
    and must not make one (a group item of a count and nothing else)."""
    client.create_queue("jobs.fifo", retention_seconds=60)
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("x", group_id="g")
    [x] = jobs.receive(visibility_timeout=3600)
    [key] = [
        {"pk": item["pk"], "sk": item["sk"]}
        for item in dynamodb.scan(TableName=TABLE)["Items"]
        if item["sk"]["S"] == "g"
    ]
    clock.advance(1800)
    dynamodb.delete_item(TableName=TABLE, Key=key)  # as TTL does

    jobs.delete(x.receipt_handle)

    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key=key)


def test_a_fifo_message_cancelled_after_its_group_was_once_emptied_leaves_the_groups_count(
    client: QueueClient,
) -> None:
    """The group empties once (its count settled up to that sequence); a later message is cancelled by its id:
    its removal is after what was settled, and counts."""
    client.create_queue("jobs.fifo")
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("a", group_id="g")
    [a] = jobs.receive()
    jobs.delete(a.receipt_handle)
    b = jobs.send("b", group_id="g")

    assert jobs.cancel(b.message_id) is True

    assert (jobs.stats().visible, jobs.receive()) == (0, [])


def test_an_attempt_id_used_again_after_its_five_minutes_keeps_the_new_receives_answer(
    client: QueueClient, clock: FakeClock
) -> None:
    """A receive attempt id is kept five minutes. Used again later, it is a new receive, and its answer is kept
    in place of the old one: a repeat of it answers the same message."""
    client.create_queue("jobs.fifo")
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("m1", group_id="g")
    [m1] = jobs.receive_attempt("poll")
    jobs.delete(m1.receipt_handle)
    jobs.send("m2", group_id="g")
    clock.advance(301)

    [m2] = jobs.receive_attempt("poll")

    assert [(message.body, message.receipt_handle) for message in jobs.receive_attempt("poll")] == [
        ("m2", m2.receipt_handle)
    ]


def test_a_queue_created_again_with_other_settings_is_refused_and_keeps_its_own(client: QueueClient) -> None:
    client.create_queue("jobs", visibility_timeout=30)

    with pytest.raises(QueueExists):
        client.create_queue("jobs", visibility_timeout=99)

    assert client.queue("jobs", "c").settings.visibility_timeout == 30


def test_a_second_process_that_registers_a_client_learns_its_secret_and_takes_the_first_ones_handles(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """Each process registers a client once and keeps its receipt secret; a second process's registration must
    find the first's and use its secret, so that a handle from one process acts in another."""
    client.create_queue("jobs")
    jobs = client.queue("jobs", "c")
    jobs.send("work")
    [message] = jobs.receive()
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs", "c")
    other.send("more")

    other.delete(message.receipt_handle)

    assert [m.body for m in other.receive(max_messages=10)] == ["more"]


def test_a_migration_finishing_after_another_run_finished_and_a_later_release_began_leaves_that_one_alone(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """Two runs of `dq migrate` upgrade a table from layout 1; before the first records its end, the second has
    finished and a later release has begun its own migration. The first's end must not land: the later
    release's migration stays recorded."""
    _layout_record(dynamodb, layout=1, written_by="0.1.0")
    meanwhile = _a_later_migration_begins_before("SET layout = :to", clock, dynamodb)
    with attached(dynamodb, meanwhile), contextlib.suppress(TableLayoutMismatch):
        client.migrate()

    assert client.table_layout().migrating_to == CURRENT_LAYOUT + 1


def _a_later_migration_begins_before(write: str, clock: FakeClock, dynamodb: Any) -> Interleave:
    """Before a migration's write whose expression has `write` leaves, another run finishes the migration and a
    later release begins its own."""
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)

    def another_run_finishes_and_a_later_release_begins() -> None:
        other.migrate()
        _layout_record(dynamodb, layout=CURRENT_LAYOUT, migrating_to=CURRENT_LAYOUT + 1, migrating_by="99.0.0")

    return Interleave(
        "UpdateItem", lambda: _elsewhere(another_run_finishes_and_a_later_release_begins), expression_has(write)
    )


def test_the_handle_of_a_deleted_fifo_message_moves_no_lock_while_its_claim_holds_the_others(
    client: QueueClient, clock: FakeClock
) -> None:
    """A claim holds m1 and m2; m1 is deleted. m1's handle then asks for 300 s: its message is no longer held by
    it, so it is refused and the group's lock keeps the claim's 30 s."""
    jobs, [m1, _] = _two_held(client)
    jobs.delete(m1.receipt_handle)

    with pytest.raises(ReceiptHandleStale):
        jobs.change_visibility(m1.receipt_handle, 300)

    clock.advance(31)
    assert [message.body for message in jobs.receive()] == ["m2"]


def test_a_stale_handle_gives_back_unseen_nothing_of_a_later_claim_that_was_given_back_unseen_too(
    client: QueueClient, clock: FakeClock
) -> None:
    """A's claim runs out and B's takes the message (its second receive); B gives it back unseen (one receive
    again). A's late give-back must change nothing: the next receive is the message's second."""
    client.create_queue("jobs", visibility_timeout=30)
    jobs = client.queue("jobs", "c")
    jobs.send("work")
    [first] = jobs.receive()
    clock.advance(31)
    [second] = jobs.receive()
    jobs.return_unseen(second.receipt_handle)

    with contextlib.suppress(QueueError):
        jobs.return_unseen(first.receipt_handle)

    assert [message.receive_count for message in jobs.receive()] == [2]


def test_a_change_of_a_queues_settings_raced_by_another_change_is_refused_and_loses_nothing(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A changes the queue's retention; before its write lands, B changes its visibility timeout. A's write must
    fail on the version it read (it says to read again and retry), never overwrite B's change."""
    client.create_queue("jobs", visibility_timeout=30, retention_seconds=3600)
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)

    def b_changes_the_visibility() -> None:
        other.update_queue("jobs", visibility_timeout=99)

    meanwhile = Interleave("TransactWriteItems", lambda: _elsewhere(b_changes_the_visibility), _settings_write("Put"))
    with attached(dynamodb, meanwhile), pytest.raises(QueueExists):
        client.update_queue("jobs", retention_seconds=7200)

    settings = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs", "c").settings
    assert (settings.visibility_timeout, settings.retention_seconds) == (99, 3600)


def test_a_fifo_purge_raced_by_a_send_to_the_group_keeps_that_message_deliverable(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A purge removes the group's messages; before it takes the group out of the index, another process sends
    to the group. The group must stay in the index with the new message, which the next receive delivers."""
    client.create_queue("jobs.fifo")
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("old", group_id="g")
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs.fifo", "c")

    def a_send_lands() -> None:
        other.send("new", group_id="g")

    empty = expression_has("SET msg_count = :zero, counted_to = :to")
    with attached(dynamodb, Interleave("UpdateItem", lambda: _elsewhere(a_send_lands), empty)):
        assert jobs.purge() == 1

    assert [message.body for message in jobs.receive()] == ["new"]


def test_a_redrive_raced_by_another_redrive_of_the_same_dead_letter_never_brings_it_back_after_its_delete(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """Two processes redrive the same dead letter; the second's comes back, is received and deleted before the
    first's transaction lands. The first must find the dead letter gone and bring nothing back."""
    client.create_queue("jobs", max_receive_count=1)
    jobs = client.queue("jobs", "c")
    jobs.send("work")
    _dead_lettered_now(jobs)
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs", "c")

    def redriven_and_done_elsewhere() -> None:
        assert other.redrive() == 1
        [message] = other.receive()
        other.delete(message.receipt_handle)

    with attached(dynamodb, Interleave("TransactWriteItems", lambda: _elsewhere(redriven_and_done_elsewhere))):
        jobs.redrive()

    assert (jobs.receive(), jobs.dlq_list()) == ([], [])


def test_a_transactional_send_committed_again_by_its_caller_never_writes_the_message_over_its_claim(
    client: QueueClient, dynamodb: Any
) -> None:
    """A caller commits a send's items in its own transaction, and a receive takes the message; the caller then
    commits the same items again without the first commit's token (its own retry after a lost answer). The repeat
    must be cancelled, not write the message afresh over the claim: nobody else receives it while it is held."""
    client.create_queue("jobs")
    jobs = client.queue("jobs", "c")
    send = jobs.send_transact_items("work")
    dynamodb.transact_write_items(TransactItems=send.items)
    [held] = jobs.receive()

    with pytest.raises(ClientError, match="TransactionCanceled"):
        dynamodb.transact_write_items(TransactItems=send.items)

    assert jobs.receive() == []
    jobs.delete(held.receipt_handle)
    assert jobs.stats().visible == 0


def test_a_move_to_the_dlq_by_a_process_behind_a_raised_receive_limit_leaves_a_message_received_since(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A process whose settings still say one receive reads a message received once and moves it to the DLQ;
    before its move lands, a process that knows the limit is now three receives it and gives it back. The move
    must fail on the receive count it read: the message stays in the queue with receives left."""
    client.create_queue("jobs", max_receive_count=1, visibility_timeout=30)
    jobs = client.queue("jobs", "c")
    jobs.send("work")
    jobs.receive()
    behind = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs", "c")
    assert behind.settings.max_receive_count == 1
    client.update_queue("jobs", max_receive_count=3)
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs", "c")
    clock.advance(31)

    def received_and_given_back() -> None:
        [again] = other.receive()
        other.change_visibility(again.receipt_handle, 0)

    with attached(dynamodb, Interleave("TransactWriteItems", lambda: _elsewhere(received_and_given_back))):
        assert behind.receive() == []

    assert [message.receive_count for message in other.receive()] == [3]


def test_a_move_to_the_dlq_of_a_message_whose_late_holder_extended_it_meanwhile_leaves_it_to_that_holder(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A message's only allowed receive ran out of time; a receive reads it visible and moves it to the DLQ.
    Before the move lands, its holder (no later claim took it) asks for more time. The move must fail: the
    message is held again, and its holder deletes it."""
    client.create_queue("jobs", max_receive_count=1, visibility_timeout=30)
    jobs = client.queue("jobs", "c")
    jobs.send("work")
    [held] = jobs.receive()
    clock.advance(31)

    def the_holder_asks_for_more_time() -> None:
        jobs.change_visibility(held.receipt_handle, 60)

    with attached(dynamodb, Interleave("TransactWriteItems", lambda: _elsewhere(the_holder_asks_for_more_time))):
        assert jobs.receive() == []

    jobs.delete(held.receipt_handle)
    assert (jobs.stats().visible, jobs.dlq_list()) == (0, [])


def test_a_consumer_slot_given_back_after_it_ran_out_leaves_the_next_holders_slot_held(
    client: QueueClient, clock: FakeClock
) -> None:
    """A push dispatcher's slot runs out and another dispatcher takes it; the first one's late give-back must
    leave the second's lease in place: a third finds every slot held."""
    client.create_queue("jobs")
    taken = client.take_consumer_slot("jobs", "c", 1, 10)
    assert taken is not None
    clock.advance(11)
    assert client.take_consumer_slot("jobs", "c", 1, 10) is not None

    client.give_back_consumer_slot("jobs", "c", *taken)

    assert client.take_consumer_slot("jobs", "c", 1, 10) is None


def test_a_migration_whose_progress_lands_after_another_run_finished_and_a_later_release_began_says_so(
    client: QueueClient, clock: FakeClock, dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs of `dq migrate` upgrade a table from layout 1; before the first records how far it got, the
    second has finished and a later release has begun its own migration. The first's cursor must not land on
    that migration's record (its run would resume after a sub-queue it never did): the first stops and says so."""
    monkeypatch.setattr(migration, "PROGRESS_EVERY", 1)
    client.create_queue("jobs")
    client.queue("jobs", "c").send("work")
    _layout_record(dynamodb, layout=1, written_by="0.1.0")
    meanwhile = _a_later_migration_begins_before("SET migration_cursor = :c", clock, dynamodb)
    with attached(dynamodb, meanwhile), pytest.raises(TableLayoutMismatch):
        client.migrate()

    found = client.table_layout()
    assert (found.migrating_to, found.cursor) == (CURRENT_LAYOUT + 1, None)


def test_a_new_tables_layout_record_never_lands_over_a_migration_another_release_began_meanwhile(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A process creates a table; before it records the table's layout, a process of a later release finds the
    table without a record and begins its migration. The new table's record must not land over it."""
    fresh = QueueClient("fresh", dynamodb=dynamodb, clock=clock)
    record = {"pk": {"S": "META"}, "sk": {"S": "LAYOUT"}, "migrating_to": {"N": str(CURRENT_LAYOUT + 1)}}

    def a_later_release_begins() -> None:
        dynamodb.put_item(TableName="fresh", Item=record)

    layout_put = lambda body: body.get("Item", {}).get("pk") == {"S": "META"}  # noqa: E731
    with attached(dynamodb, Interleave("PutItem", a_later_release_begins, layout_put)):
        fresh.create_table()

    assert fresh.table_layout().migrating_to == CURRENT_LAYOUT + 1


def _settings_write(operation: str) -> Callable[[dict[str, Any]], bool]:
    """Matches a transaction whose first action is `operation` ("Put", "Delete", "ConditionCheck") on a queue's
    settings item, whatever its condition."""

    def match(body: dict[str, Any]) -> bool:
        first = (body.get("TransactItems") or [{}])[0].get(operation, {})
        key = first.get("Item") or first.get("Key") or {}
        return key.get("sk") == {"S": keys.settings_key("jobs")["sk"]} and key.get("pk") == {"S": "Q#jobs"}

    return match


def _made_anew(client: QueueClient, clock: FakeClock, dynamodb: Any, **settings: Any) -> Callable[[], None]:
    """Another process deletes the queue `jobs` and creates it again with `settings`: a new generation, at the
    same version as the first one's."""
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)

    def anew() -> None:
        other.delete_queue("jobs")
        other.create_queue("jobs", **settings)

    return lambda: _elsewhere(anew)


def test_a_change_of_a_queues_settings_read_before_the_queue_was_made_anew_is_refused(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A reads the queue's settings to change its retention; before A's write lands, the queue is deleted and
    created again (at the same version, in a new generation). A's change must not land on the new queue."""
    client.create_queue("jobs", visibility_timeout=30)
    anew = _made_anew(client, clock, dynamodb, visibility_timeout=99)

    with attached(dynamodb, Interleave("TransactWriteItems", anew, _settings_write("Put"))), pytest.raises(QueueError):
        client.update_queue("jobs", retention_seconds=7200)

    settings = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs", "c").settings
    assert (settings.visibility_timeout, settings.retention_seconds) == (99, limits.DEFAULT_RETENTION_SECONDS)


def test_a_delete_of_a_queue_read_before_it_was_made_anew_leaves_the_new_queue(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A reads the queue to delete it; before A's delete lands, another process deletes it and creates it again.
    A's delete must not remove the new queue."""
    client.create_queue("jobs", visibility_timeout=30)
    anew = _made_anew(client, clock, dynamodb, visibility_timeout=99)

    with (
        attached(dynamodb, Interleave("TransactWriteItems", anew, _settings_write("Delete"))),
        contextlib.suppress(QueueError),
    ):
        client.delete_queue("jobs")

    settings = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs", "c").settings
    assert settings.visibility_timeout == 99


def test_a_listed_copy_of_a_queues_settings_read_before_the_queue_was_made_anew_is_not_written(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """The queue's listing entry carries no copy of its settings (written by an earlier release); the sweep reads
    the settings to write one, and before it lands the queue is deleted and created again. The old queue's copy
    must not land on the new queue's entry: the listing shows the new settings."""
    client.create_queue("jobs", visibility_timeout=30)
    listing = serialize(keys.listing_key("jobs"))
    dynamodb.put_item(TableName=TABLE, Item={**listing, "name": {"S": "jobs"}})  # an entry without a copy
    anew = _made_anew(client, clock, dynamodb, visibility_timeout=99)

    with attached(dynamodb, Interleave("TransactWriteItems", anew, _settings_write("ConditionCheck"))):
        client.sweep()

    listed = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).list_queues()
    assert [(settings.name, settings.visibility_timeout) for settings in listed] == [("jobs", 99)]


def _past_its_receive_limit(client: QueueClient, clock: FakeClock, *bodies: str) -> SubQueue:
    """A FIFO queue (one receive allowed) whose group `g` holds `bodies`, the first received once already."""
    client.create_queue("jobs.fifo", max_receive_count=1, visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c")
    for body in bodies:
        jobs.send(body, group_id="g")
    assert [message.body for message in jobs.receive(visibility_timeout=0)] == [bodies[0]]
    clock.advance(1)
    return jobs


def test_a_stuck_head_held_by_a_claim_that_ran_out_leaves_the_next_claims_lock_alone(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A's claim finds the head past its receive limit and cannot move it to the DLQ (refused); before A holds
    the group behind it, A's lock runs out and B's claim moves the head and takes the next message. A's late hold
    must not land on B's lock: B's delete frees the group, and the third message follows at once."""
    jobs = _past_its_receive_limit(client, clock, "m1", "m2", "m3")
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs.fifo", "c")
    to_the_dlq = Refused("TransactWriteItems")
    got_b: list[ReceivedMessage] = []

    def b_takes_the_group() -> None:
        to_the_dlq.on = False
        clock.advance(31)
        got_b.extend(other.receive())

    with (
        refused(dynamodb, to_the_dlq),
        attached(dynamodb, Interleave("UpdateItem", lambda: _elsewhere(b_takes_the_group), expression_has("stuck"))),
    ):
        assert jobs.receive() == []

    assert [message.body for message in got_b] == ["m2"]
    other.delete(got_b[0].receipt_handle)
    assert [message.body for message in jobs.receive()] == ["m3"]


def test_a_fifo_head_moved_to_the_dlq_by_a_process_behind_a_raised_limit_after_its_lock_ran_out_stays(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A process whose settings still say one receive finds the head at its limit and moves it to the DLQ; before
    its move lands, its lock runs out and another process (which knows the limit is now three) locks the group,
    and stops there (its answer never came). The move must fail on the lock: the head stays, and the next
    receive delivers it."""
    _past_its_receive_limit(client, clock, "m1")
    behind = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs.fifo", "c")
    assert behind.settings.max_receive_count == 1
    client.update_queue("jobs.fifo", max_receive_count=3)
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs.fifo", "c")

    def another_process_locks_the_group_and_stops() -> None:
        clock.advance(31)
        lost = AnswerNeverCame("UpdateItem", _lock_of_a_group(), times=10)
        with never_answered(dynamodb, lost), contextlib.suppress(QueueError):
            other.receive()

    meanwhile = Interleave("TransactWriteItems", lambda: _elsewhere(another_process_locks_the_group_and_stops))
    with attached(dynamodb, meanwhile):
        assert behind.receive() == []

    clock.advance(31)
    assert [(message.body, message.receive_count) for message in other.receive()] == [("m1", 2)]


@pytest.mark.parametrize("transactional", [False, True], ids=["delete", "ack in a transaction"])
def test_a_fifo_message_sent_to_its_group_while_the_last_one_was_held_is_delivered_after_its_delete(
    client: QueueClient, transactional: bool
) -> None:
    """A claim holds the group's only message (it saw nothing after it); another message is sent meanwhile. The
    holder's delete must leave the group in the index for it, not take it out as empty."""
    client.create_queue("jobs.fifo")
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("first", group_id="g")
    [first] = jobs.receive()
    jobs.send("second", group_id="g")

    if transactional:
        client.transact(jobs.delete_transact_items(first.receipt_handle))
    else:
        jobs.delete(first.receipt_handle)

    assert [message.body for message in jobs.receive()] == ["second"]


def _head_read_of_group(group: str) -> Callable[[dict[str, Any]], bool]:
    """Matches a claim's read of `group`'s messages (from its head)."""
    return lambda body: (
        str(body.get("ExpressionAttributeValues", {}).get(":qpk", {}).get("S", "")).endswith(f"#{group}")
        and "IndexName" not in body
    )


def test_a_late_delete_of_a_fifo_groups_last_message_never_ends_the_lock_of_the_claim_that_took_the_group(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A's claim of the group's only message runs out; B's claim locks the group and, before it reads the head,
    A deletes the message and another message is sent. A's delete must leave B's lock in place: B takes the new
    message, and no other receive takes it while B holds it."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("m1", group_id="g")
    [m1] = jobs.receive()
    clock.advance(31)
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs.fifo", "c")

    def a_deletes_and_a_send_lands() -> None:
        jobs.delete(m1.receipt_handle)
        jobs.send("m2", group_id="g")

    with attached(
        dynamodb, Interleave("Query", lambda: _elsewhere(a_deletes_and_a_send_lands), _head_read_of_group("g"))
    ):
        got_b = other.receive()

    assert [message.body for message in got_b] == ["m2"]
    assert jobs.receive() == [], "B holds m2"


def test_a_fifo_claim_that_stalled_before_reading_its_head_never_takes_the_message_the_next_claim_holds(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A's receive locks the group and stalls before it reads the head; its lock runs out and B's receive takes
    the group and m1. A then reads m1 as B left it (its receive count and marks are B's): its mark must fail on
    B's later lock, so m1 has one holder."""
    client.create_queue("jobs.fifo", visibility_timeout=30)
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("m1", group_id="g")
    other = QueueClient(TABLE, dynamodb=dynamodb, clock=clock).queue("jobs.fifo", "c")
    got_b: list[ReceivedMessage] = []

    def b_takes_the_group() -> None:
        clock.advance(31)
        got_b.extend(other.receive())

    with attached(dynamodb, Interleave("Query", lambda: _elsewhere(b_takes_the_group), _head_read_of_group("g"))):
        got_a = jobs.receive()

    assert ([message.body for message in got_b], got_a) == (["m1"], [])
    other.delete(got_b[0].receipt_handle)


@pytest.mark.parametrize("earlier", [0, 1], ids=["first receive", "second receive"])
def test_a_fifo_mark_applied_twice_by_the_sdk_counts_one_receive(
    client: QueueClient, clock: FakeClock, dynamodb: Any, earlier: int
) -> None:
    """A claim's mark of the group's head (never marked before, or once) is applied and its answer lost; the
    SDK's repeat must fail (on the receive count or on the marks it read: either one fences it) and the claim know
    the mark for its own."""
    client.create_queue("jobs.fifo")
    jobs = client.queue("jobs.fifo", "c")
    jobs.send("m1", group_id="g")
    for _ in range(earlier):
        jobs.receive(visibility_timeout=0)
        clock.advance(1)

    with attached(dynamodb, LostAnswer("UpdateItem", expression_has("ADD receive_count :one, marks :one"))) as lost:
        [m1] = jobs.receive()

    assert (lost.lost, m1.receive_count) == (1, earlier + 1)


def _a_body_that_leaves_no_room_for_reasons() -> str:
    """A body whose item is so near the item limit that its send marks it as keeping no reasons (`why_none`)."""
    return "".join(random.Random(7).choices("abcdefghijklmnopqrstuvwxyz0123456789", k=588_000))


@pytest.mark.parametrize(
    ("queue_name", "ends"),
    [("jobs", "release"), ("jobs.fifo", "release"), ("jobs", "note")],
    ids=["standard release", "fifo release", "note"],
)
def test_a_reason_for_a_message_whose_item_has_no_room_for_one_is_dropped_not_written(
    client: QueueClient, queue_name: str, ends: str
) -> None:
    """A message near the item limit keeps no reasons, so that its claims and moves always fit: the end of an
    attempt with a reason (a release, a note) drops it and counts it, even when this one reason would fit."""
    client.create_queue(queue_name, max_receive_count=0)
    jobs = client.queue(queue_name, "c")
    sent = jobs.send(_a_body_that_leaves_no_room_for_reasons(), group_id="g" if queue_name.endswith(".fifo") else None)
    [held] = jobs.receive()

    if ends == "release":
        jobs.release(held.receipt_handle, 0, reason="boom")
    else:
        jobs.note_attempt(held.receipt_handle, reasons.TIMED_OUT, "boom")

    shown = jobs.get(sent.message_id)
    assert (shown.reasons_dropped, [attempt["reason"] for attempt in shown.attempts]) == (
        1,
        ["visibility expired"][: len(shown.attempts)],
    )


def test_a_note_by_a_handle_whose_message_was_received_five_times_since_leaves_the_latest_reason(
    client: QueueClient, clock: FakeClock
) -> None:
    """A's claim runs out and the message is received five times more, the sixth attempt released with its
    reason, which takes the slot A's attempt had. A's late note (its push delivery timed out) must write nothing:
    the sixth attempt keeps its reason."""
    client.create_queue("jobs", max_receive_count=0)
    jobs = client.queue("jobs", "c")
    sent = jobs.send("work")
    [first] = jobs.receive(visibility_timeout=1)
    clock.advance(2)
    for attempt in range(2, 7):
        [held] = jobs.receive()
        jobs.release(held.receipt_handle, 0, reason=f"attempt {attempt}")

    jobs.note_attempt(first.receipt_handle, reasons.TIMED_OUT, "late")

    assert [attempt["reason"] for attempt in jobs.get(sent.message_id).attempts][-1] == "attempt 6"


def test_a_drains_late_reminder_never_makes_a_sends_marker_of_the_same_time_look_older(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """Client a's messages are held. Two queue-wide receives drain a in one second (each after a marker put just
    before), and each leaves a reminder for 12 s: the first's is put at once, the second's is late. Before it lands,
    y is sent at 11 s, due at 12 s, and stamps that marker 11 s. The late reminder must leave the stamp alone: at
    12 s the index, lagging more by then, does not show y yet, and that drain must see a marker put within the
    grace and remind again, so that y is received once the index shows it, not left without a marker."""
    client.create_queue("jobs", visibility_timeout=300, queue_wide=True)
    jobs, wide = client.queue("jobs", "a"), client.queue_wide("jobs")
    start = clock()

    def the_reminder(body: dict[str, Any]) -> bool:
        item = body.get("Item", {})
        return item.get("pk", {}).get("S", "").startswith("R#") and item.get("sk", {}).get("S", "").endswith(
            f"@{int((start + 12) * 1000)}"
        )

    with IndexLag(0, clock) as index:

        def y_is_sent_at_11_s() -> None:
            index.lag = 2
            clock.advance(start + 11 - clock())
            jobs.send("y", delay_seconds=1)

        for body, drained_at in (("first", 1.2), ("z", 1.4)):
            jobs.send(body)
            clock.advance(0.05)
            assert [message.body for message in jobs.receive()] == [body]
            clock.advance(start + drained_at - clock())
            late = Interleave("PutItem", y_is_sent_at_11_s, the_reminder if body == "z" else lambda _: False)
            with attached(dynamodb, late):
                assert wide.receive() == []
        clock.advance(start + 12 - clock())
        assert wide.receive() == [], "the index does not show y yet"
        clock.advance(limits.INDEX_LAG_GRACE_SECONDS + 1)
        assert [message.body for message in wide.receive()] == ["y"]
