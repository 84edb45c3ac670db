"""The queue's promises where they were once broken: one holder at a time, FIFO order, a deleted queue staying
deleted, sizes that fit, and every write safe when DynamoDB applied it and the SDK sent it again."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from queue_core import Consumer, MessageTooLarge, QueueClient, ReceiptHandleStale, ValidationError, keys, limits

from tests.conftest import TABLE, FakeClock
from tests.core.answers import Interleave, LostAnswer, attached, expression_has
from tests.reliability.truth import TableTruth

RETENTION = limits.MAX_RETENTION_SECONDS


def _process(clock: FakeClock) -> QueueClient:
    """Another process on the same table: its own DynamoDB client, its own caches."""
    return QueueClient(TABLE, dynamodb=boto3.client("dynamodb", region_name="us-east-1"), clock=clock)


def _drain(queue, max_messages: int = 10) -> list[str]:
    bodies = []
    while got := queue.receive(max_messages=max_messages):
        bodies += [message.body for message in got]
        queue.delete_batch([message.receipt_handle for message in got])
    return bodies


def _group_items(dynamodb, queue: str) -> list[dict]:
    items = dynamodb.scan(TableName=TABLE)["Items"]
    return [item for item in items if item["pk"]["S"].startswith(f"F#{queue}#") and "gsi1sk" in item]


# One holder, FIFO order.
def test_a_fifo_group_that_never_empties_keeps_its_order_and_one_holder_long_after_a_reshard(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    """A group always holding a message in flight stays at its old place; that layout must outlive every
    message's retention for as long as the group lives there, or the next send restarts its sequence."""
    client.create_queue("busy.fifo", retention_seconds=RETENTION, visibility_timeout=limits.MAX_VISIBILITY_SECONDS)
    jobs = client.queue("busy.fifo", "c")
    group = next(f"g{i}" for i in range(100) if keys.group_shard(f"g{i}", 4) != 0)
    ids = [jobs.send("m0", group_id=group).message_id]
    [held] = jobs.receive()
    client.update_queue("busy.fifo", shards=4)
    delivered = [held.body]
    lifetime = 2 * RETENTION + limits.MAX_DEDUP_WINDOW_SECONDS
    number = 0
    while number * 40_000 < lifetime + 100_000:
        number += 1
        clock.advance(40_000)
        ids.append(jobs.send(f"m{number}", group_id=group).message_id)
        jobs.delete(held.receipt_handle)
        [held] = jobs.receive()
        delivered.append(held.body)
        assert jobs.receive() == []  # one holder
        assert len(_group_items(dynamodb, "busy.fifo")) == 1
    assert delivered == [f"m{i}" for i in range(number + 1)]
    assert len(set(ids)) == len(ids)  # the group's sequence never restarted


def test_a_lost_answer_on_a_fifo_ack_does_not_unlock_the_group_while_its_holder_holds_another_message(
    client: QueueClient, dynamodb
) -> None:
    client.create_queue("acks.fifo")
    jobs = client.queue("acks.fifo", "c")
    jobs.send_batch([{"body": f"m{i}", "group_id": "g"} for i in range(3)])
    first, second = jobs.receive(max_messages=2)
    with attached(dynamodb, LostAnswer("UpdateItem", expression_has("ADD acked"))) as lost:
        jobs.delete(first.receipt_handle)
    assert lost.lost == 1
    assert jobs.receive() == []  # the second is still held: the group stays locked
    jobs.delete(second.receipt_handle)
    assert [message.body for message in jobs.receive()] == ["m2"]


def test_a_lost_answer_on_marking_a_fifo_message_counts_one_receive(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    client.create_queue("marks.fifo", max_receive_count=2, visibility_timeout=0)
    jobs = client.queue("marks.fifo", "c")
    jobs.send("m", group_id="g")
    with attached(dynamodb, LostAnswer("UpdateItem", expression_has("receive_count = :seen"))) as lost:
        [message] = jobs.receive()
    assert lost.lost == 1 and message.receive_count == 1
    clock.advance(2)
    [again] = jobs.receive()  # a second receive is allowed: the limit of 2 was not reached early
    assert again.receive_count == 2 and jobs.dlq_list() == []


def test_a_lost_answer_on_a_fifo_delete_still_unlocks_the_group(client: QueueClient, dynamodb) -> None:
    client.create_queue("deletes.fifo")
    jobs = client.queue("deletes.fifo", "c")
    jobs.send_batch([{"body": f"m{i}", "group_id": "g"} for i in range(2)])
    [first] = jobs.receive()
    with attached(dynamodb, LostAnswer("DeleteItem")) as lost:
        jobs.delete(first.receipt_handle)
    assert lost.lost == 1
    assert [message.body for message in jobs.receive()] == ["m1"]


@pytest.mark.parametrize("name", ["lost", "lost.fifo"])
def test_a_lost_answer_on_a_release_is_not_a_stale_handle(client: QueueClient, dynamodb, name: str) -> None:
    client.create_queue(name)
    jobs = client.queue(name, "c")
    jobs.send("m", group_id="g" if name.endswith(".fifo") else None)
    [message] = jobs.receive()
    # a FIFO release gives back and unlocks in one transaction, its only one
    fifo = name.endswith(".fifo")
    lose = LostAnswer("TransactWriteItems") if fifo else LostAnswer("UpdateItem", expression_has("released_by"))
    with attached(dynamodb, lose) as lost:
        jobs.release(message.receipt_handle, delay_seconds=0)
    assert lost.lost == 1
    assert [again.body for again in jobs.receive()] == ["m"]


def test_a_lost_answer_on_a_standard_claim_still_delivers_the_message(client: QueueClient, dynamodb) -> None:
    client.create_queue("claims")
    jobs = client.queue("claims", "c")
    jobs.send("m")
    with attached(dynamodb, LostAnswer("UpdateItem", expression_has("receive_count"))) as lost:
        [message] = jobs.receive()
    assert lost.lost == 1 and message.receive_count == 1
    jobs.delete(message.receipt_handle)
    assert jobs.stats().visible + jobs.stats().in_flight == 0


def test_a_lost_answer_on_a_batch_send_never_resets_a_message_a_consumer_took_meanwhile(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    """A batch of puts cannot carry conditions: the SDK's blind repeat would overwrite a message claimed since,
    and two consumers would hold it. The core sends each item again only if it is absent."""
    client.create_queue("sends")
    jobs = client.queue("sends", "c")
    other = _process(clock).queue("sends", "c")
    taken: list = []
    with attached(dynamodb, LostAnswer("BatchWriteItem", meanwhile=lambda: taken.extend(other.receive(10)))) as lost:
        outcome = jobs.send_batch([{"body": "a"}, {"body": "b"}])
    assert lost.lost == 1 and len(outcome.successful) == 2 and sorted(m.body for m in taken) == ["a", "b"]
    assert jobs.receive(max_messages=10) == []
    assert other.delete_batch([message.receipt_handle for message in taken]).failed == []
    assert jobs.stats().visible + jobs.stats().in_flight == 0


def test_a_lost_answer_on_a_batch_of_deletes_finishes_the_purge(client: QueueClient, dynamodb) -> None:
    """A batch of deletes only (a purge) whose answers were lost until the SDK gave up: its deletes are sent again
    one by one; there is no put to look for (a read of no keys is refused by DynamoDB, and was an internal error)."""
    client.create_queue("purged")
    jobs = client.queue("purged", "c")
    jobs.send_batch([{"body": f"m{i}"} for i in range(5)])
    with attached(dynamodb, LostAnswer("BatchWriteItem", times=20)) as lost:
        assert jobs.purge() == 5
    assert lost.lost >= 2 and jobs.receive(max_messages=10) == [] and jobs.stats().visible == 0


def test_a_late_mark_after_a_stall_never_takes_a_message_from_the_groups_next_holder(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    """A claimer stalls between locking the group and marking its head; its lock runs out and another consumer
    claims and marks the head. The stalled mark must then fail, not overwrite the new holder's token."""
    client.create_queue("stall.fifo", visibility_timeout=30)
    jobs = client.queue("stall.fifo", "c")
    jobs.send("m", group_id="g")
    other = _process(clock).queue("stall.fifo", "c")
    taken = []

    def faster() -> None:
        clock.advance(31)
        taken.extend(other.receive())

    with attached(dynamodb, Interleave("UpdateItem", faster, expression_has("receive_count = :seen"))):
        assert jobs.receive() == []
    [message] = taken
    other.delete(message.receipt_handle)
    assert jobs.receive() == []


# A deleted queue stays deleted.
def test_a_queue_created_again_never_delivers_what_a_warm_producer_sent_to_the_deleted_one(
    client: QueueClient, clock: FakeClock
) -> None:
    producer = _process(clock)
    client.create_queue("orders")
    producer.queue("orders", "c").send("first life")
    client.delete_queue("orders")
    client.create_queue("orders")
    producer.queue("orders", "c").send("sent with cached settings")  # the producer's settings are still cached
    assert client.clients("orders") == []
    client.delete_queue("orders")
    client.create_queue("orders")
    assert client.queue("orders", "c").receive(max_messages=10) == []
    assert client.queue_stats("orders").visible == 0


def test_a_send_during_a_delete_is_removed_by_the_sweep_and_never_reaches_the_new_queue(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    client.create_queue("orders")
    late = _process(clock)
    late.queue("orders", "seen-late").send("warms the cache")
    client.delete_queue("orders")
    late.queue("orders", "seen-late").send("landed after the delete")
    late.queue("orders", "first-seen-during-delete").send("registered after the delete")
    client.create_queue("orders")
    assert client.clients("orders") == []
    assert client.queue("orders", "seen-late").receive(max_messages=10) == []
    clock.advance(3600)
    client.sweep()
    left = [item["pk"]["S"] for item in dynamodb.scan(TableName=TABLE)["Items"]]
    assert [pk for pk in left if pk.startswith(tuple(f"{kind}#orders#" for kind in "MDXRC"))] == []


def test_a_client_is_registered_again_in_a_new_generation(
    client: QueueClient, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm producer's settings cache expires after a delete and a create; its next send must register the
    client in the new queue, or the sweep, stats and alarms never see that client."""
    producer = _process(clock)
    client.create_queue("jobs")
    producer.queue("jobs", "c").send("one")
    client.delete_queue("jobs")
    client.create_queue("jobs")
    monkeypatch.setattr(limits, "SETTINGS_CACHE_SECONDS", 0.0)
    producer.queue("jobs", "c").send("two")
    assert client.clients("jobs") == ["c"]
    assert client.sweep().sub_queues == 1


# Sizes.
def test_attributes_that_would_overflow_the_item_are_refused_with_413_and_store_nothing(client: QueueClient) -> None:
    client.create_queue("big")
    jobs = client.queue("big", "c")
    body = "b" * limits.MAX_BODY_BYTES
    with pytest.raises(MessageTooLarge):
        jobs.send(body, attributes={"k": "v" * 140_000})
    outcome = jobs.send_batch([{"body": body, "attributes": {"k": "v" * 140_000}}, {"body": "fits"}])
    assert [failure["code"] for failure in outcome.failed] == ["MessageTooLarge"] and len(outcome.successful) == 1
    jobs.send(body, attributes={f"k{i}": "v" * 6000 for i in range(10)})
    assert sorted(message.body[:4] for message in jobs.receive(max_messages=10)) == ["bbbb", "fits"]


def test_a_stored_message_too_large_to_claim_does_not_block_the_others(client: QueueClient, dynamodb) -> None:
    """An item stored before sizes were checked cannot take a claim's attributes: DynamoDB refuses the claim.
    The receive must go on with the other messages, and the big one must leave the way (to the DLQ)."""
    client.create_queue("stuck")
    jobs = client.queue("stuck", "c")
    jobs.send("small")
    pk = jobs.space.message_pk(0)
    dynamodb.put_item(
        TableName=TABLE,
        Item={
            "pk": {"S": pk}, "sk": {"S": "0000000000001000000000000"}, "body": {"S": "x" * 404_750},
            "sent_at": {"N": "1"}, "visible_at": {"N": "0"}, "receive_count": {"N": "0"},
            "expires_at": {"N": str(4_000_000_000)}, "gsi1pk": {"S": pk}, "gsi1sk": {"S": keys.index_sk(0, "a")},
        },
    )  # fmt: skip
    assert [message.body for message in jobs.receive(max_messages=10)] == ["small"]
    assert jobs.receive(max_messages=10) == []


# Shard layouts.
def test_many_shard_changes_within_the_retention_lose_no_message(client: QueueClient) -> None:
    client.create_queue("reshard", shards=64)
    jobs = client.queue("reshard", "c")
    jobs.send_batch([{"body": f"at64-{i}"} for i in range(16)])
    sent = [f"at64-{i}" for i in range(16)]
    for step, shards in enumerate([1, 2, 3, 4, 5, 6, 7, 8, 9, 1]):
        client.update_queue("reshard", shards=shards)
        jobs.send(f"step{step}")
        sent.append(f"step{step}")
    assert jobs.stats().visible == len(sent)
    assert sorted(_drain(jobs)) == sorted(sent)


def test_a_change_of_shards_is_refused_rather_than_forgetting_a_layout(client: QueueClient, clock: FakeClock) -> None:
    """Each narrower count keeps the wider layouts before it (a layout another covers goes: see below)."""
    client.create_queue("many", shards=limits.MAX_SHARDS)
    for step in range(limits.MAX_SHARD_LAYOUTS):
        client.update_queue("many", shards=limits.MAX_SHARDS - 1 - step)
        clock.advance(1)
    with pytest.raises(ValidationError, match="shards changed"):
        client.update_queue("many", shards=5)


def test_a_layout_covered_by_a_later_one_is_not_kept(client: QueueClient) -> None:
    """Going back and forth between two counts keeps one layout, not one per change: standard receivers visit
    the widest count kept until its time is up, whatever narrower ones came before."""
    client.create_queue("back-and-forth")
    for step in range(2 * limits.MAX_SHARD_LAYOUTS):
        client.update_queue("back-and-forth", shards=2 + step % 2)
    settings = client.get_queue("back-and-forth")
    assert [shards for shards, _ in settings.shard_history] == [3] and settings.read_shards == 3


def test_a_send_that_straddles_a_group_move_never_revives_the_old_group_item(client: QueueClient, dynamodb) -> None:
    """A sender that chose the group's old place before `placement_from` and writes after another sender moved
    the group: its fenced write must not bring the old item back (two group items, two holders)."""
    early_clock, late_clock = FakeClock(), FakeClock()
    client.create_queue("straddle.fifo", max_receive_count=0)
    group = next(f"g{i}" for i in range(100) if keys.group_shard(f"g{i}", 2) == 1)
    early, late = _process(early_clock).queue("straddle.fifo", "c"), _process(late_clock).queue("straddle.fifo", "c")
    early.send("m1", group_id=group)
    [first] = early.receive()
    early.delete(first.receipt_handle)
    client.update_queue("straddle.fifo", shards=2)
    early._ctx.registry.get("straddle.fifo", fresh=True)
    late_clock.advance(120)

    def moved_first() -> None:
        late.send("m2", group_id=group)
        early_clock.advance(120)  # the early sender was stalled all that time

    with attached(early._ctx.store.client, Interleave("TransactWriteItems", moved_first)):
        early.send("m3", group_id=group)
    assert len(_group_items(dynamodb, "straddle.fifo")) == 1
    [message] = late.receive()
    assert message.body == "m2" and late.receive() == []
    late.delete(message.receipt_handle)
    assert [m.body for m in late.receive()] == ["m3"]


def test_a_group_moved_from_an_idle_place_whose_time_was_up_is_never_started_again_there(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    """A group idle at its place for longer than its item's `expires_at` (twice the retention and the dedup window;
    DynamoDB's TTL deletes such an item only some time later, up to days) moves when the count changes. A process
    whose settings are from before the change (a container thawed with them, a call that stalled) then sends to it
    by the old count, with no sequence of its own to fence on: the moved item must stop it, as any moved item
    does, not count as a place free for a new group because its old time is up."""
    retention = 60
    group = next(f"g{i}" for i in range(100) if keys.group_shard(f"g{i}", 2) == 1)
    client.create_queue("idle.fifo", shards=1, retention_seconds=retention)
    jobs = client.queue("idle.fifo", "c")
    jobs.send("a", group_id=group)
    [first] = jobs.receive()
    jobs.delete(first.receipt_handle)
    clock.advance(2 * retention + limits.MAX_DEDUP_WINDOW_SECONDS + 10)
    behind = _process(clock)
    behind.get_queue("idle.fifo")  # its settings, cached from before the change
    elsewhere = _process(clock)
    elsewhere.update_queue("idle.fifo", shards=2)
    clock.advance(120)  # past `placement_from`: the others place the group by the new count
    fresh = elsewhere.queue("idle.fifo", "c")

    moved = fresh.send("b", group_id=group)
    late = behind.queue("idle.fifo", "c").send("c", group_id=group)

    assert (int(moved.sequence), int(late.sequence)) == (2, 3)
    for body in ("b", "c"):
        [message] = fresh.receive()
        assert message.body == body
        fresh.delete(message.receipt_handle)
    assert len(_group_items(dynamodb, "idle.fifo")) == 0


def test_a_lowered_retention_never_lets_a_group_item_expire_under_a_message_sent_before(
    client: QueueClient, clock: FakeClock
) -> None:
    """A message is sent under a long retention, the retention is lowered, and the next send to the group writes
    its item's time. Were that time from the new retention alone, TTL would delete the group item while the first
    message still lives: the group, out of the index, would never hand it out, and a send would start the group
    again at sequence 1, under the first message's key."""
    client.create_queue("kept.fifo", retention_seconds=4 * 86_400)
    jobs = client.queue("kept.fifo", "c")
    jobs.send("m1", group_id="g")
    client.update_queue("kept.fifo", retention_seconds=3_600)
    jobs = client.queue("kept.fifo", "c")
    jobs.send("m2", group_id="g")
    clock.advance(2 * 3_600 + limits.MAX_DEDUP_WINDOW_SECONDS + 60)
    TableTruth(TABLE).expire(int(clock() * 1000))  # what DynamoDB's TTL would have deleted by now
    assert int(jobs.send("m3", group_id="g").sequence) == 3
    delivered = []
    while got := jobs.receive():
        delivered += [message.body for message in got]
        jobs.delete(got[0].receipt_handle)
    assert delivered == ["m1", "m3"]  # m2's own retention (an hour) is over


@pytest.mark.parametrize("name", ["kept", "kept.fifo"])
def test_a_raised_fifo_retention_applies_to_messages_sent_once_every_cache_has_it_and_a_lowered_one_at_once(
    client: QueueClient, clock: FakeClock, name: str
) -> None:
    """Raised, a FIFO queue's waits until every process's cached settings have it (a process still holding the
    lower one would write a group item's time shorter than a message's); a standard queue's applies at once, as a
    lowered one does. A FIFO queue's delay raised with it waits too, so that no message expires before it can be
    delivered."""
    fifo = name.endswith(".fifo")
    group = "g" if fifo else None
    client.create_queue(name, retention_seconds=120)
    client.update_queue(name, retention_seconds=86_400, delay_seconds=600)
    jobs = client.queue(name, "c")

    def lives(body: str) -> tuple[float, int]:
        sent = jobs.send(body, group_id=group, dedup_id=body if group else None)
        message = jobs.get(sent.message_id)
        assert message.visible_at is not None
        return message.expires_at / 1000 - clock(), message.visible_at / 1000 - clock()

    at_once = (120, 120 - limits.MIN_DELIVERY_WINDOW_SECONDS) if fifo else (86_400, 600)
    assert lives("at-once") == pytest.approx(at_once, abs=1)
    clock.advance(60)
    assert lives("a-minute-later") == pytest.approx((86_400, 600), abs=1)
    client.update_queue(name, retention_seconds=3_600)
    assert lives("lowered")[0] == pytest.approx(3_600, abs=1)


# Dedup inside one batch.
@pytest.mark.parametrize("content_based", [False, True])
def test_a_fifo_batch_naming_one_dedup_id_twice_stores_the_first_and_reports_the_second_as_a_duplicate(
    client: QueueClient, content_based: bool
) -> None:
    client.create_queue("dedup.fifo", content_based_dedup=content_based)
    jobs = client.queue("dedup.fifo", "c")
    entries = [{"body": "same", "group_id": "g"}, {"body": "same", "group_id": "g"}, {"body": "other", "group_id": "g"}]
    if not content_based:
        entries = [{**entry, "dedup_id": entry["body"]} for entry in entries]
    outcome = jobs.send_batch(entries)
    assert outcome.failed == []
    first, second, _ = sorted(outcome.successful, key=lambda entry: entry["index"])
    assert second["message_id"] == first["message_id"] and second["duplicate"] and not first["duplicate"]
    assert _drain(jobs) == ["same", "other"]


# Also reported.
def test_the_sweep_keeps_a_dlq_item_that_was_replaced_after_it_was_found_expired(
    client: QueueClient, clock: FakeClock, dynamodb
) -> None:
    client.create_queue("dead", max_receive_count=1, visibility_timeout=0, retention_seconds=60)
    jobs = client.queue("dead", "c")
    jobs.send("poison")
    jobs.receive()
    jobs.receive()
    [dead] = jobs.dlq_list()
    clock.advance(3 * 3600)
    other = boto3.client("dynamodb", region_name="us-east-1")
    key = {"pk": {"S": jobs.space.dlq_pk(0)}, "sk": {"S": dead.sequence}}

    def refresh() -> None:
        item = other.get_item(TableName=TABLE, Key=key)["Item"]
        other.put_item(TableName=TABLE, Item={**item, "expires_at": {"N": str(int(clock()) + 3600)}})

    with attached(dynamodb, Interleave("DeleteItem", refresh, lambda body: "D#" in json.dumps(body))):
        client.sweep()
    assert [message.body for message in jobs.dlq_list()] == ["poison"]


def test_concurrent_edits_of_a_queues_settings_are_never_lost(client: QueueClient, clock: FakeClock, dynamodb) -> None:
    client.create_queue("edits")
    other = _process(clock)

    def faster() -> None:
        other.update_queue("edits", visibility_timeout=99)

    interleaved = Interleave("TransactWriteItems", faster)
    with attached(dynamodb, interleaved), pytest.raises(Exception, match="changed meanwhile"):
        client.update_queue("edits", max_receive_count=9)
    assert client.get_queue("edits").visibility_timeout == 99
    assert client.update_queue("edits", max_receive_count=9).visibility_timeout == 99


def test_an_index_entry_pointing_into_another_sub_queue_is_not_received(client: QueueClient, dynamodb) -> None:
    """A tenant confined to its own keys can still write any index key on its own items; a receive of another
    sub-queue must not take such an entry for one of its messages."""
    client.create_queue("shared")
    victim, tenant = client.queue("shared", "victim"), client.queue("shared", "tenant")
    victim.send("victim's")
    tenant.send("tenant's")
    items = dynamodb.scan(TableName=TABLE)["Items"]
    [own] = [item for item in items if item["pk"]["S"] == tenant.space.message_pk(0)]
    dynamodb.put_item(TableName=TABLE, Item={**own, "gsi1pk": {"S": victim.space.message_pk(0)}})
    assert [message.body for message in victim.receive(max_messages=10)] == ["victim's"]


def test_a_stale_handle_of_a_fifo_unit_stops_the_consumer_before_the_units_later_messages(
    client: QueueClient, clock: FakeClock
) -> None:
    client.create_queue("unit.fifo", visibility_timeout=30)
    jobs = client.queue("unit.fifo", "c")
    jobs.send_batch([{"body": f"m{i}", "group_id": "g"} for i in range(2)])
    # The other consumer's clock is ahead: the lock has run out for it, not for this consumer's own polls (which
    # would otherwise race it for the group once the lock ends).
    ahead = FakeClock(clock())
    thief = _process(ahead).queue("unit.fifo", "c")
    handled: list[str] = []

    def handler(message) -> None:
        handled.append(message.body)
        if message.body == "m0":
            ahead.advance(31)  # the lock runs out while the handler works, and another consumer takes the group
            assert [stolen.body for stolen in thief.receive(max_messages=2)] == ["m0", "m1"]

    consumer = Consumer(jobs, handler, concurrency=1, batch_size=2, heartbeat_seconds=3600)
    consumer.start()
    deadline = time.monotonic() + 10
    while not consumer.report.delete_errors and time.monotonic() < deadline:
        time.sleep(0.05)
    consumer.shutdown(timeout=5)
    assert handled == ["m0"] and consumer.report.delete_errors == 1


def test_a_stale_fifo_handle_is_refused(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("stale.fifo", visibility_timeout=30)
    jobs = client.queue("stale.fifo", "c")
    jobs.send("m", group_id="g")
    [old] = jobs.receive()
    clock.advance(31)
    [new] = jobs.receive()
    with pytest.raises(ReceiptHandleStale):
        jobs.delete(old.receipt_handle)
    jobs.delete(new.receipt_handle)


def test_a_second_delete_of_one_handle_after_the_group_moved_on_counts_the_message_once(client: QueueClient) -> None:
    client.create_queue("twice.fifo")
    jobs = client.queue("twice.fifo", "c")
    jobs.send_batch([{"body": f"m{i}", "group_id": "g"} for i in range(3)])
    [first] = jobs.receive()
    jobs.delete(first.receipt_handle)
    [second] = jobs.receive()
    jobs.delete(first.receipt_handle)
    stats = jobs.stats()
    assert (stats.visible, stats.in_flight) == (1, 1) and second.body == "m1"


@pytest.mark.parametrize("name", ["twice", "twice.fifo"])
def test_a_second_release_of_one_handle_is_stale_even_when_its_answer_was_lost(
    client: QueueClient, dynamodb, name: str
) -> None:
    """Each release leaves its own id: the SDK's repeat of one release is told from a second release of the
    same handle, which stays stale as before."""
    client.create_queue(name)
    jobs = client.queue(name, "c")
    jobs.send("m", group_id="g" if name.endswith(".fifo") else None)
    [message] = jobs.receive()
    jobs.release(message.receipt_handle, delay_seconds=60)
    with attached(dynamodb, LostAnswer("UpdateItem", expression_has("released_by"))), pytest.raises(ReceiptHandleStale):
        jobs.release(message.receipt_handle, delay_seconds=60)
