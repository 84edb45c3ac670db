"""FIFO sub-queues: order inside a group, one holder per group, independent groups, cost of blocked groups."""

from __future__ import annotations

import threading
from collections import defaultdict

import pytest
from queue_core import QueueClient, ReceiptHandleStale, ValidationError

from tests.conftest import FakeClock
from tests.core.answers import LostAnswer, attached


@pytest.fixture
def jobs(client: QueueClient):
    client.create_queue("jobs.fifo", visibility_timeout=30, max_receive_count=0)
    return client.queue("jobs.fifo", "tenant-a")


def test_exact_order_in_one_group(jobs) -> None:
    for i in range(30):
        jobs.send(f"m{i}", group_id="g")
    bodies = []
    while got := jobs.receive(max_messages=7):
        bodies += [m.body for m in got]
        jobs.delete_batch([m.receipt_handle for m in got])
    assert bodies == [f"m{i}" for i in range(30)]


def test_second_receive_is_empty_while_the_group_is_in_flight(jobs) -> None:
    jobs.send("first", group_id="g")
    jobs.send("second", group_id="g")
    [first] = jobs.receive()
    assert first.body == "first" and first.group_id == "g"
    assert jobs.receive() == []
    jobs.delete(first.receipt_handle)
    assert [m.body for m in jobs.receive()] == ["second"]


def test_three_groups_give_three_messages(jobs) -> None:
    for group in ("a", "b", "c"):
        jobs.send(f"{group}1", group_id=group)
        jobs.send(f"{group}2", group_id=group)
    got = [jobs.receive()[0] for _ in range(3)]
    assert sorted(m.body for m in got) == ["a1", "b1", "c1"]
    assert jobs.receive() == []


def test_a_receive_returns_several_messages_of_a_group_in_order(jobs) -> None:
    for i in range(5):
        jobs.send(f"m{i}", group_id="g")
    got = jobs.receive(max_messages=3)
    assert [m.body for m in got] == ["m0", "m1", "m2"]
    assert jobs.receive(max_messages=10) == []
    jobs.delete_batch([m.receipt_handle for m in got])
    assert [m.body for m in jobs.receive(max_messages=10)] == ["m3", "m4"]


def test_group_unblocks_after_visibility_expires_with_the_same_message(jobs, clock: FakeClock) -> None:
    jobs.send("head", group_id="g")
    jobs.send("next", group_id="g")
    [first] = jobs.receive(visibility_timeout=10)
    clock.advance(11)
    [again] = jobs.receive()
    assert (again.message_id, again.body, again.receive_count) == (first.message_id, "head", 2)


def test_release_returns_the_group_head_first(jobs) -> None:
    jobs.send("head", group_id="g")
    jobs.send("next", group_id="g")
    [first] = jobs.receive()
    jobs.release(first.receipt_handle, delay_seconds=0)
    assert [m.body for m in jobs.receive()] == ["head"]


def test_change_visibility_extends_the_group_lock(jobs, clock: FakeClock) -> None:
    jobs.send("head", group_id="g")
    [first] = jobs.receive(visibility_timeout=10)
    jobs.change_visibility(first.receipt_handle, 100)
    clock.advance(50)
    assert jobs.receive() == []
    assert jobs.get(first.message_id).state == "in_flight"


def test_group_id_is_required_and_bounded(jobs, client: QueueClient) -> None:
    with pytest.raises(ValidationError):
        jobs.send("x")
    with pytest.raises(ValidationError):
        jobs.send("x", group_id="g" * 129)
    client.create_queue("plain")
    with pytest.raises(ValidationError):
        client.queue("plain", "c").send("x", group_id="g")


def test_blocked_backlog_does_not_raise_the_cost_of_receiving_other_groups(jobs, counter) -> None:
    for start in range(0, 2000, 25):
        jobs.send_batch([{"body": f"b{i}", "group_id": "blocked"} for i in range(start, start + 25)])
    [held] = jobs.receive()
    assert held.group_id == "blocked"
    for group in range(50):
        jobs.send(f"x{group}", group_id=f"g{group}")
    counter.reset()
    delivered = 0
    while got := jobs.receive(max_messages=10):
        delivered += len(got)
        jobs.delete_batch([m.receipt_handle for m in got])
    assert delivered == 50
    assert counter.items_read / delivered <= 3.0


def test_ten_threads_five_groups_fifty_each_no_order_violation_none_lost(client: QueueClient) -> None:
    client.create_queue("par.fifo", visibility_timeout=300, max_receive_count=0)
    par = client.queue("par.fifo", "c")
    for group in range(5):
        for start in range(0, 50, 25):
            par.send_batch([{"body": f"{group}:{i}", "group_id": f"g{group}"} for i in range(start, start + 25)])
    seen: dict[str, list[int]] = defaultdict(list)
    lock = threading.Lock()

    def work() -> None:
        idle = 0
        while idle < 5:
            got = par.receive(max_messages=3)
            if not got:
                idle += 1
                continue
            idle = 0
            with lock:
                for message in got:
                    group, number = message.body.split(":")
                    seen[group].append(int(number))
            for message in got:
                par.delete(message.receipt_handle)

    threads = [threading.Thread(target=work) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {group: numbers for group, numbers in seen.items()} == {str(g): list(range(50)) for g in range(5)}


def test_hundred_groups_never_two_of_a_group_in_flight(client: QueueClient, pytestconfig: pytest.Config) -> None:
    client.create_queue("many.fifo", visibility_timeout=300, max_receive_count=0)
    many = client.queue("many.fifo", "c")
    # A round's three receives each take heads of groups that have more queued behind them, the check the same in
    # every round: three messages a group give a dozen such rounds over 300 messages, as five gave twenty (2,000
    # messages take 80 s here: `--stress` only).
    per_group = 20 if pytestconfig.getoption("--stress") else 3
    for number in range(per_group):
        many.send_batch([{"body": f"{g}:{number}", "group_id": f"g{g}"} for g in range(0, 25)])
        many.send_batch([{"body": f"{g}:{number}", "group_id": f"g{g}"} for g in range(25, 50)])
        many.send_batch([{"body": f"{g}:{number}", "group_id": f"g{g}"} for g in range(50, 75)])
        many.send_batch([{"body": f"{g}:{number}", "group_id": f"g{g}"} for g in range(75, 100)])
    delivered = 0
    while True:
        batches = [many.receive(max_messages=10) for _ in range(3)]
        held = [m for batch in batches for m in batch]
        if not held:
            break
        groups_per_batch = [{m.group_id for m in batch} for batch in batches]
        for i, groups in enumerate(groups_per_batch):
            for other in groups_per_batch[i + 1 :]:
                assert not groups & other
        delivered += len(held)
        for batch in batches:
            if batch:
                many.delete_batch([m.receipt_handle for m in batch])
    assert delivered == 100 * per_group


def test_groups_spread_over_shards_keep_their_order(client: QueueClient) -> None:
    client.create_queue("wide.fifo", shards=4, max_receive_count=0)
    wide = client.queue("wide.fifo", "c")
    for number in range(10):
        wide.send_batch([{"body": f"{g}:{number}", "group_id": f"g{g}"} for g in range(8)])
    seen: dict[str, list[int]] = defaultdict(list)
    while got := wide.receive(max_messages=10):
        for message in got:
            group, number = message.body.split(":")
            seen[group].append(int(number))
        wide.delete_batch([m.receipt_handle for m in got])
    assert dict(seen) == {str(g): list(range(10)) for g in range(8)}


def test_fifo_stats_peek_get_and_cancel(jobs, clock: FakeClock) -> None:
    first = jobs.send("a1", group_id="a")
    clock.advance(0.01)
    jobs.send("a2", group_id="a")
    clock.advance(0.01)
    second = jobs.send("b1", group_id="b")
    assert [m.body for m in jobs.peek()] == ["a1", "a2", "b1"]
    [held] = jobs.receive()
    stats = jobs.stats()
    assert (stats.visible + stats.in_flight, stats.in_flight) == (3, 1)
    assert jobs.get(held.message_id).state == "in_flight"
    other = second if held.message_id == first.message_id else first
    assert jobs.get(other.message_id).state == "visible"
    assert jobs.cancel(other.message_id)
    assert jobs.stats().visible + jobs.stats().in_flight == 2


def test_fifo_delay_holds_the_group(jobs, clock: FakeClock) -> None:
    jobs.send("later", group_id="g", delay_seconds=10)
    assert jobs.receive() == []
    clock.advance(10)
    assert [m.body for m in jobs.receive()] == ["later"]


def test_purge_empties_every_group(jobs) -> None:
    for group in range(3):
        jobs.send_batch([{"body": "x", "group_id": f"g{group}"} for _ in range(4)])
    assert jobs.purge() == 12
    assert jobs.receive(max_messages=10) == []
    jobs.send("after", group_id="g0")
    assert [m.body for m in jobs.receive()] == ["after"]


def test_a_release_of_a_claim_of_one_message_after_the_sweep_ended_it_is_stale(
    client: QueueClient, clock: FakeClock
) -> None:
    """A claim of one message ran out and the sweep ended it (the group freed, nobody received it since): the
    holder's late release is stale, as it is for a claim of several messages and as a change of visibility by the
    same handle is. Answered as a give-back instead, it says the message comes back after its delay, while the
    group, freed by the sweep, hands it out at the next receive."""
    client.create_queue("late.fifo", fifo=True, visibility_timeout=10)
    sub = client.queue("late.fifo", "t")
    for body in ("m1", "m2"):
        sub.send(body, group_id="g")
    (first,) = sub.receive(max_messages=1)
    clock.advance(31)
    client.sweep()
    with pytest.raises(ReceiptHandleStale):
        sub.release(first.receipt_handle, delay_seconds=20)
    assert [message.body for message in sub.receive(max_messages=10)] == ["m1", "m2"]


def test_a_release_whose_answer_was_lost_holds_the_group_for_its_delay(
    client: QueueClient, dynamodb: object, clock: FakeClock
) -> None:
    """The give-back and the unlock are one transaction: the SDK's repeat of it after a lost answer is the same
    release (success), and the group waits for the delay asked, then hands the message out again."""
    client.create_queue("lost.fifo", fifo=True, visibility_timeout=30)
    sub = client.queue("lost.fifo", "t")
    sub.send("m1", group_id="g")
    (held,) = sub.receive()
    with attached(dynamodb, LostAnswer("TransactWriteItems")) as lost:
        sub.release(held.receipt_handle, delay_seconds=20)
    assert lost.lost == 1
    assert sub.receive() == []
    clock.advance(21)
    (again,) = sub.receive()
    assert (again.body, again.receive_count) == ("m1", 2)
