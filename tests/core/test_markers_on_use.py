"""Ready markers are paid for only by queues received queue-wide; switching them on loses nothing."""

from __future__ import annotations

import pytest
from queue_core import QueueClient, ValidationError, limits, load_meter

from tests.conftest import TABLE, FakeClock
from tests.core.answers import LostAnswer, attached
from tests.throttle_hooks import ThrottleOne, throttled

# From a switch until sends put markers everywhere and the index shows what came before (see `QueueSettings`).
BUILD_AFTER_SECONDS = 2 * limits.SETTINGS_CACHE_SECONDS + 20 + limits.INDEX_LAG_GRACE_SECONDS


def markers(dynamodb, queue: str) -> list[dict]:
    items = dynamodb.scan(TableName=TABLE)["Items"]
    return [item for item in items if item["pk"]["S"].startswith(f"R#{queue}#")]


def settings_writes(body: dict) -> bool:
    """A transaction that writes a queue's settings (with their copy on the listing entry)."""
    items = [action.get("Put", {}).get("Item", {}) for action in body.get("TransactItems", [])]
    return any(item.get("sk", {}).get("S") == "Q" and "queue_wide" in item for item in items)


def test_a_queue_never_received_queue_wide_puts_no_marker_and_its_life_is_one_write_shorter(
    client: QueueClient, dynamodb, counter, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process's first load report comes after a random share of its quantum of units (250 at one shard): drawn
    # whole here, so that the counted send is not the one that completes it (a write besides, one run in sixty).
    monkeypatch.setattr(load_meter.random, "random", lambda: 0.0)
    client.create_queue("plain", visibility_timeout=60)
    client.create_queue("plain.fifo", fifo=True, visibility_timeout=60)
    sub, fifo = client.queue("plain", "a"), client.queue("plain.fifo", "a")
    sub.send("warm")  # registration, settings cached
    sub.delete(sub.receive()[0].receipt_handle)
    counter.reset()
    sub.send("one")
    assert sum(counter.calls.values()) == 1  # the message's own write, nothing after it
    sub.send_batch([{"body": f"b{n}"} for n in range(5)])
    sub.send("later", delay_seconds=30)
    client.transact([sub.send_transact_items("in a transaction")])
    got = sub.receive(max_messages=10)
    sub.release(got[0].receipt_handle, delay_seconds=5)
    sub.change_visibility(got[1].receipt_handle, 1)
    sub.return_unseen(got[2].receipt_handle)
    for body in ("f0", "f1"):
        fifo.send(body, group_id="g")
    [head] = fifo.receive()
    fifo.delete(head.receipt_handle)
    clock.advance(31)
    client.sweep()
    assert markers(dynamodb, "plain") == [] and markers(dynamodb, "plain.fifo") == []
    assert not client.get_queue("plain").queue_wide


def test_priorities_keep_their_order_without_queue_wide_markers(client: QueueClient, dynamodb) -> None:
    """A per-client receive learns a sub-queue's priorities from the markers of those above 0, which sends put
    on every queue; priority 0 needs none."""
    client.create_queue("bands")
    sub = client.queue("bands", "p")
    sub.send("low")
    assert markers(dynamodb, "bands") == []
    other = QueueClient(client.table_name, dynamodb=dynamodb, clock=client._ctx.clock)  # knows nothing sent
    other.queue("bands", "p").send("high", priority=7)
    assert [m["sk"]["S"] for m in markers(dynamodb, "bands")] == ["7"]
    fresh = QueueClient(client.table_name, dynamodb=dynamodb, clock=client._ctx.clock)
    assert [m.body for m in fresh.queue("bands", "p").receive(max_messages=10)] == ["high", "low"]


def test_the_first_queue_wide_receive_switches_markers_on_and_finds_everything_sent_before(
    client: QueueClient, dynamodb, counter, clock: FakeClock
) -> None:
    client.create_queue("late", visibility_timeout=30)
    for name in ("a", "b", "c"):
        client.queue("late", name).send(f"{name}-now")
    client.queue("late", "a").send("a-high", priority=5)
    client.queue("late", "b").send("b-delayed", delay_seconds=60)
    held = client.queue("late", "c").receive()  # in flight: visible again when its claim runs out
    assert [m.body for m in held] == ["c-now"]
    for n in range(3):
        client.queue("late", f"idle-{n}").send("x")
        client.queue("late", f"idle-{n}").delete(client.queue("late", f"idle-{n}").receive()[0].receipt_handle)
    # Another process sends with settings it read before the switch: no marker, and found all the same.
    other = QueueClient(client.table_name, dynamodb=dynamodb, clock=clock)
    other.queue("late", "d").send("d-cached")
    wide = client.queue_wide("late")
    got = wide.receive(max_messages=10)
    assert [m.body for m in got][:1] == ["a-high"]
    assert sorted(m.body for m in got) == ["a-high", "a-now", "b-now", "d-cached"]
    settings = client._ctx.registry.get("late", fresh=True)
    assert settings.queue_wide and not settings.markers_built
    other.queue("late", "d").send("d-still-cached")  # its cache still says off: no marker
    got += wide.receive(max_messages=10)
    assert [m.body for m in got][-1:] == ["d-still-cached"]
    wide.delete_batch([m.receipt_handle for m in got])

    # Once every sender puts markers and the index has caught up, the sweep puts the missing ones.
    clock.advance(BUILD_AFTER_SECONDS)
    client.sweep()
    assert client._ctx.registry.get("late", fresh=True).markers_built
    by_client = {item["pk"]["S"].split("#")[2] for item in markers(dynamodb, "late")}
    assert {"b", "c"} <= by_client  # the delayed message and the one in flight
    clock.advance(60 - BUILD_AFTER_SECONDS)  # the delayed message is due
    counter.reset()
    got = wide.receive(max_messages=10)
    assert sorted(m.body for m in got) == ["b-delayed", "c-now"]
    assert not any("#idle-" in value for query in counter.queries for value in query)


def test_a_queue_created_queue_wide_or_switched_on_by_hand_marks_every_send(
    client: QueueClient, dynamodb, clock: FakeClock
) -> None:
    client.create_queue("marked", queue_wide=True)
    client.queue("marked", "a").send("x")
    assert [m["sk"]["S"] for m in markers(dynamodb, "marked")] == ["0"]
    assert client._ctx.registry.get("marked", fresh=True).markers_built
    # A create that does not ask for it is a repeat of this one: it changes cost, not behaviour.
    assert client.create_queue("marked").queue_wide

    client.create_queue("patched")
    client.queue("patched", "a").send("before")
    on = client.update_queue("patched", queue_wide=True)
    assert on.queue_wide and not on.markers_built and client.get_queue("patched").to_dict()["queue_wide"]
    client.queue("patched", "a").send("after")
    assert [m["sk"]["S"] for m in markers(dynamodb, "patched")] == ["0"]
    with pytest.raises(ValidationError):
        client.update_queue("patched", queue_wide=False)
    got = client.queue_wide("patched").receive(max_messages=10)
    assert sorted(m.body for m in got) == ["after", "before"]


def test_the_switch_is_recognised_when_its_answer_was_lost(client: QueueClient, dynamodb) -> None:
    client.create_queue("lost")
    client.queue("lost", "a").send("x")
    with attached(dynamodb, LostAnswer("TransactWriteItems", settings_writes)) as lost:
        got = client.queue_wide("lost").receive()
    assert lost.lost == 1 and [m.body for m in got] == ["x"]
    assert client._ctx.registry.get("lost", fresh=True).queue_wide


def test_a_switch_cancelled_by_a_conflicting_settings_write_is_read_again_not_a_429(
    client: QueueClient, dynamodb
) -> None:
    """Settings writes are transactions; DynamoDB cancels one of two at once as a conflict (reported as a
    throttle). Consumers starting their first queue-wide receives together must not answer 429 for it."""
    client.create_queue("race")
    client.queue("race", "a").send("x")
    with throttled(dynamodb, ThrottleOne("TransactWriteItems", settings_writes)):
        got = client.queue_wide("race").receive()
    assert [m.body for m in got] == ["x"]
    assert client._ctx.registry.get("race", fresh=True).queue_wide


@pytest.mark.parametrize("queue_wide", [False, True], ids=["switched on by the receive", "created queue-wide"])
def test_a_queue_wide_receive_for_no_time_hands_out_each_message_once(client: QueueClient, queue_wide: bool) -> None:
    """A claim of visibility 0 leaves the message visible at once: the receive must not come back for it."""
    client.create_queue("zero", max_receive_count=0, queue_wide=queue_wide)
    client.queue("zero", "a").send_batch([{"body": "a1"}, {"body": "a2"}])
    client.queue("zero", "b").send("b1")
    wide = client.queue_wide("zero")
    for _ in range(2):
        got = wide.receive(max_messages=10, visibility_timeout=0)
        ids = [m.message_id for m in got]
        assert len(ids) == len(set(ids)) and {m.receive_count for m in got} <= {1, 2}
