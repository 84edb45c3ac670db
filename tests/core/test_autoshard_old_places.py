"""Throttles met at a FIFO group's old place are the old count's and do not grow a queue; those met at the current
count's places still grow it. What is at an old place is told request by request, on the thread that sent it (a
batch's other groups, a receive's claims in other partitions, another thread's calls are not), and a receive, its
sub-queue's own or a queue-wide one, tells the load meter every throttle its claims met, though they run in the
claim pool's threads.

DynamoDB's per-key limit is scaled down (`autoshard.KEY_WRITE_UNITS`), and the load with it, so that moto carries
the scenarios quickly; every figure keeps its ratio to the limit."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from queue_core import QueueClient, Throttled, autoshard, keys

from tests.conftest import FakeClock
from tests.throttle_hooks import ThrottleAll, request_body, throttle_error, throttling

KEY = 20  # write units a second a key takes, scaled down fifty times
BODY = "x" * 600  # under 1 KB with its keys: four write units of its shard's index key per life
STUCK = "poison"


@pytest.fixture(autouse=True)
def _scaled_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(autoshard, "KEY_WRITE_UNITS", KEY)


def _stuck_group(shards: int) -> str:
    """A group whose place at a count of `shards` is not shard 0, its place at a count of 1."""
    return next(f"{STUCK}{i}" for i in range(1000) if keys.group_shard(f"{STUCK}{i}", shards) != 0)


def _grown_with_a_backlog(client: QueueClient, clock: FakeClock, name: str, stuck: str | None, shards: int) -> None:
    """FIFO queue `name` grown automatically from 1 to `shards` while group `stuck` had a backlog that nobody
    receives (a poison message at its head, its consumer down): the group stays at its place of the count of 1
    while it has messages. The clock then moves past the time groups are placed by the new count, and past the
    growth's cooldown."""
    client.create_queue(name, max_receive_count=0)
    if stuck is not None:
        for i in range(3):
            client.queue(name, "c").send(f"backlog {i}", group_id=stuck)
    assert client.reshard_automatically(name, shards) == shards
    settings = client.get_queue(name)
    clock.advance(max(settings.placement_from / 1000 - clock(), autoshard.GROW_COOLDOWN_SECONDS) + 1)


def _told(client: QueueClient, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int]]:
    """What the load meter is told from now on, call by call: (thread, throttles, of them at old places)."""
    told: list[tuple[str, int, int]] = []
    record = client._ctx.load.record

    def spy(space: Any, now: int, uq: float, tq: float, units: Any, throttles: int = 0, old: int = 0) -> Any:
        told.append((threading.current_thread().name, throttles, old))
        return record(space, now, uq, tq, units, throttles, old)

    monkeypatch.setattr(client._ctx.load, "record", spy)
    return told


def _new_places_throttle(name: str) -> Callable[[dict[str, Any]], bool]:
    """The sends of queue `name` to any group but the stuck one: those go to the current count's places, whose
    keys are past their limit."""
    return lambda body: f'"F#{name}#' in json.dumps(body) and STUCK not in json.dumps(body)


def _send_batches(client: QueueClient, clock: FakeClock, name: str, stuck: str | None, seconds: int) -> None:
    """A batch of 8 a second over groups never used before (32 write units a second: at 4 shards 40 % of a key's
    limit on each key, past what explains throttles and short of what grows a queue by its load alone); with
    `stuck`, one message of each batch is for the stuck group."""
    sub = client.queue(name, "c")
    for second in range(seconds):
        groups = [f"g{second}-{i}" for i in range(8)]
        if stuck is not None:
            groups[0] = stuck
        sub.send_batch([{"body": f"{group}:{BODY}", "group_id": group} for group in groups])
        clock.advance(1)


def test_a_batch_that_also_sends_to_a_group_at_its_old_place_counts_its_throttles_at_the_new_places(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """Two FIFO queues grown from 1 to 4, each then sent the same load, 40 % of a key's limit on each of the 4 keys
    by the reports, throttled at every group's current place (about 450 throttles a minute, four times what grows
    a queue). The control grows four times, to 16. The other differs in one thing: one message of each batch of 8
    is for a group that stays at its place of the count of 1 (it has a backlog nobody receives), and its sends
    there pass. Its seven other messages a second are refused at the current count's places as the control's are,
    and those throttles count though the batch also acted at an old place: it grows alike."""
    stuck = _stuck_group(4)
    for name in ("control.fifo", "orders.fifo"):
        _grown_with_a_backlog(client, clock, name, stuck if name == "orders.fifo" else None, 4)
    hooks = [ThrottleAll("TransactWriteItems", _new_places_throttle(name)) for name in ("control.fifo", "orders.fifo")]
    with throttling(dynamodb, hooks[0]), throttling(dynamodb, hooks[1]):
        _send_batches(client, clock, "control.fifo", None, 25)
        _send_batches(client, clock, "orders.fifo", stuck, 25)
    assert (hooks[0].thrown, hooks[1].thrown) == (200, 175)  # each message at a current place refused
    client.reshard_automatically("control.fifo")
    client.reshard_automatically("orders.fifo")
    assert client.get_queue("control.fifo").shards == 16
    assert client.get_queue("orders.fifo").shards == 16


def test_a_throttle_met_on_one_thread_is_not_the_old_places_when_another_thread_sends_there(
    client: QueueClient, clock: FakeClock, dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One sub-queue object used by two threads (a sender's worker threads): a send to a group's current place
    that is throttled while another thread sends to a group at its old place is told to the load meter as a
    throttle at a current place (`at_old_places` 0): what is at an old place is counted per thread, as throttles
    are, not per sub-queue."""
    stuck = _stuck_group(4)
    _grown_with_a_backlog(client, clock, "orders.fifo", stuck, 4)
    sub = client.queue("orders.fifo", "c")
    sub.send("warm", group_id="warm")  # the engine built and cached, as a long-lived sender's is
    told = _told(client, monkeypatch)

    def other_thread_sends_to_the_stuck_group() -> None:
        sub.send("more", group_id=stuck)

    main = threading.get_ident()

    def throttle_while_the_other_thread_sends(params: dict[str, Any], model: Any, **_: Any) -> None:
        """The send to `fresh` is refused, after the other thread's send to the stuck group went through."""
        if (
            model.name == "TransactWriteItems"
            and threading.get_ident() == main
            and "fresh" in json.dumps(request_body(params))
        ):
            other = threading.Thread(target=other_thread_sends_to_the_stuck_group, name="other")
            other.start()
            other.join()
            raise throttle_error("TransactWriteItems")

    dynamodb.meta.events.register("before-call.dynamodb", throttle_while_the_other_thread_sends)
    try:
        result = sub.send_batch([{"body": "x", "group_id": "fresh"}])
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb", throttle_while_the_other_thread_sends)
    assert result.failed
    mine = [(throttles, old) for thread, throttles, old in told if thread != "other"]
    assert mine == [(1, 0)], f"the throttled call was told {mine} (throttles, at old places)"


def _receives_throttled_at_the_current_places(
    client: QueueClient, clock: FakeClock, dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[ThrottleAll, list[tuple[int, int]]]:
    """A FIFO queue grown from 1 to 4 with a group left at its old place (shard 0, a backlog of 3) and nine groups
    of a message each at their current places on shards 1 to 3, received ten times (10 at a time, claims for no
    time, so each receive finds every group available again) while every claim on shards 1 to 3 is throttled. The
    hook, and what the load meter was told by each receive: (throttles, of them at old places)."""
    stuck = _stuck_group(4)
    _grown_with_a_backlog(client, clock, "orders.fifo", stuck, 4)
    sub = client.queue("orders.fifo", "c")
    for group in [g for g in (f"n{i}" for i in range(100)) if keys.group_shard(g, 4) != 0][:9]:
        sub.send("m", group_id=group)
    told = _told(client, monkeypatch)

    def at_a_current_place(body: dict[str, Any]) -> bool:
        pk = str(body.get("Key", {}).get("pk", {}).get("S", ""))
        return pk.startswith("F#orders.fifo#") and not pk.endswith("#0")

    with throttling(dynamodb, ThrottleAll("UpdateItem", at_a_current_place)) as hook:
        for _ in range(10):
            assert [m.body for m in sub.receive(max_messages=10, visibility_timeout=0)] == [
                f"backlog {i}" for i in range(3)
            ]
            clock.advance(1)
    return hook, [(throttles, old) for _, throttles, old in told]


def test_a_receive_that_also_claims_a_group_at_its_old_place_counts_its_throttles_at_the_current_places(
    client: QueueClient, clock: FakeClock, dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Receives after a growth: the group left at its old place is claimed (its claim passes), the claims of the
    groups at their current places, in other partitions, are throttled. Each receive's throttles are told to the
    load meter as the current places' though the receive also claimed a group at an old place: a consumer of a
    busy group that never empties still grows the queue when the current count's keys throttle."""
    _, told = _receives_throttled_at_the_current_places(client, clock, dynamodb, monkeypatch)
    throttled = [(throttles, old) for throttles, old in told if throttles]
    assert throttled
    assert all(old == 0 for _, old in throttled), f"(throttles, at old places) told per receive: {throttled}"


def test_every_claim_a_receive_has_throttled_is_counted(
    client: QueueClient, clock: FakeClock, dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same receives (independent of old places: a queue that never changed meets it alike): the claims of a
    receive run in the claim pool's threads, and the store counts a throttle on the thread that met it; every one
    is told to the load meter (`Store.map_counted`), not one per receive: a consumer throttled on its claims is the
    process the design counts on to grow a FIFO queue within seconds."""
    hook, told = _receives_throttled_at_the_current_places(client, clock, dynamodb, monkeypatch)
    assert sum(throttles for throttles, _ in told) == hook.thrown, f"{hook.thrown} claims throttled, told {told}"


def test_claims_in_a_partition_that_still_holds_a_group_at_its_old_place_are_the_old_counts_in_its_share(
    client: QueueClient, clock: FakeClock, dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a growth from 1 to 4, partition 0 holds a group left at its old place (a backlog nobody deletes) and
    four groups the count of 4 places there too. That partition carries the old placement's load in the part that
    group is of its due groups, whichever group meets its throttles: a fifth of the throttled claims of the groups
    at their current place there is told to the load meter as the old places' (a larger count would not relieve
    the part of a key an old placement keeps busy)."""
    stuck = _stuck_group(4)
    _grown_with_a_backlog(client, clock, "orders.fifo", stuck, 4)
    sub = client.queue("orders.fifo", "c")
    for group in [g for g in (f"n{i}" for i in range(100)) if keys.group_shard(g, 4) == 0][:4]:
        sub.send("m", group_id=group)
    told = _told(client, monkeypatch)

    def beside_the_old_group(body: dict[str, Any]) -> bool:
        pk = str(body.get("Key", {}).get("pk", {}).get("S", ""))
        return pk.startswith("F#orders.fifo#") and pk.endswith("#0") and STUCK not in json.dumps(body)

    with throttling(dynamodb, ThrottleAll("UpdateItem", beside_the_old_group)) as hook:
        for _ in range(3):
            got = sub.receive(max_messages=10, visibility_timeout=0)
            assert got and all(message.body.startswith("backlog") for message in got)
            clock.advance(1)
    throttled = [(throttles, old) for _, throttles, old in told if throttles]
    assert hook.thrown and sum(throttles for throttles, _ in throttled) == hook.thrown
    assert all(old == pytest.approx(throttles / 5) for throttles, old in throttled), throttled  # 1 group of 5 old


def _at_partition_zero_but_the_stuck_group(name: str) -> Any:
    """Claims (UpdateItem) on partition 0 of queue `name`, but the stuck group's: the key is past its limit for
    the groups the current count places there."""

    def match(body: dict[str, Any]) -> bool:
        pk = str(body.get("Key", {}).get("pk", {}).get("S", ""))
        return pk.startswith(f"F#{name}#") and pk.endswith("#0") and STUCK not in json.dumps(body)

    return match


def _assert_grown_alike(client: QueueClient, hooks: list[ThrottleAll]) -> None:
    """The control queue grew from 4 by its throttles, and `orders.fifo` to the same count."""
    client.reshard_automatically("control.fifo")
    client.reshard_automatically("orders.fifo")
    control = client.get_queue("control.fifo").shards
    assert control > 4, f"the control did not grow ({[hook.thrown for hook in hooks]} claims throttled)"
    assert client.get_queue("orders.fifo").shards == control, [hook.thrown for hook in hooks]


def _sent_and_received(client: QueueClient, clock: FakeClock, name: str, seconds: int) -> None:
    """Each second a batch of 8 new groups (the load of `test_autoshard_old_places`: 40 % of a key's limit on each
    of 4 keys) and a receive of 10 for no time (a consumer that never deletes: the groups stay due)."""
    sub = client.queue(name, "c")
    for second in range(seconds):
        groups = [f"g{second}-{i}" for i in range(8)]
        sub.send_batch([{"body": f"{group}:{BODY}", "group_id": group} for group in groups])
        with contextlib.suppress(Throttled):
            sub.receive(max_messages=10, visibility_timeout=0)
        clock.advance(1)


def test_one_message_at_an_old_place_does_not_hold_the_growth_its_partitions_other_groups_need(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """Two FIFO queues grown from 1 to 4, then sent the same load and received alike; every claim on partition 0
    of a group the count of 4 places there is throttled (a larger count would spread those groups over two keys).
    The control grows. The other differs in one thing: a group with a backlog nobody deletes stayed at its old
    place, partition 0 (the count of 1's only one), and is due at each receive. Its claims pass; the throttles of
    its partition count as the old placement's only in the part that group is of the partition's due groups, so
    the queue grows as the control does."""
    stuck = _stuck_group(4)
    for name in ("control.fifo", "orders.fifo"):
        _grown_with_a_backlog(client, clock, name, stuck if name == "orders.fifo" else None, 4)
    hooks = [
        ThrottleAll("UpdateItem", _at_partition_zero_but_the_stuck_group(n)) for n in ("control.fifo", "orders.fifo")
    ]
    for name, hook in zip(("control.fifo", "orders.fifo"), hooks, strict=True):
        with throttling(dynamodb, hook):
            _sent_and_received(client, clock, name, 10)
    _assert_grown_alike(client, hooks)


def test_a_backlog_drained_at_an_old_place_does_not_hold_the_growth_its_partitions_other_groups_need(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """The scenario of `test_one_message_at_an_old_place_...` with a consumer that works as usual (claims for 30 s,
    deletes what it got): the group left at its old place has a backlog of 300 messages, drained a batch a
    receive, so it is due at each receive until it is empty. Every other group of its partition is throttled:
    the queue draining the backlog grows as the control does, though the backlog takes long to drain."""
    stuck = _stuck_group(4)
    for name in ("control.fifo", "orders.fifo"):
        client.create_queue(name, max_receive_count=0)
        if name == "orders.fifo":
            sub = client.queue(name, "c")
            for start in range(0, 300, 10):
                sub.send_batch([{"body": f"backlog {i}", "group_id": stuck} for i in range(start, start + 10)])
        assert client.reshard_automatically(name, 4) == 4
        settings = client.get_queue(name)
        clock.advance(max(settings.placement_from / 1000 - clock(), autoshard.GROW_COOLDOWN_SECONDS) + 1)
    hooks = [
        ThrottleAll("UpdateItem", _at_partition_zero_but_the_stuck_group(n)) for n in ("control.fifo", "orders.fifo")
    ]
    for name, hook in zip(("control.fifo", "orders.fifo"), hooks, strict=True):
        sub = client.queue(name, "c")
        with throttling(dynamodb, hook):
            for second in range(10):
                sub.send_batch([{"body": f"g{second}-{i}:{BODY}", "group_id": f"g{second}-{i}"} for i in range(8)])
                with contextlib.suppress(Throttled):
                    got = sub.receive(max_messages=10)
                    if got:
                        sub.delete_batch([message.receipt_handle for message in got])
                clock.advance(1)
    _assert_grown_alike(client, hooks)


def test_a_queue_wide_receive_tells_the_load_meter_the_throttles_its_claims_met(
    client: QueueClient, dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO queue received queue-wide (`QueueClient.queue_wide`), every claim throttled: a queue-wide receive
    serves each client by its engine, not by `SubQueue.receive`, and tells the load meter the throttles its claims
    met as the client's own receive does (`SubQueue.metered`): a queue consumed only queue-wide grows by its
    consumers' throttles too, the ones the design counts on for a FIFO queue."""
    client.create_queue("orders.fifo", max_receive_count=0)
    sub = client.queue("orders.fifo", "c")
    for i in range(10):
        sub.send("m", group_id=f"g{i}")
    told = _told(client, monkeypatch)
    hook = ThrottleAll("UpdateItem", lambda body: '"F#orders.fifo#' in json.dumps(body))
    wide = client.queue_wide("orders.fifo")
    store = client._ctx.store
    before = store.throttles
    with throttling(dynamodb, hook):
        for _ in range(5):
            with contextlib.suppress(Throttled):
                wide.receive(max_messages=10)
    assert hook.thrown and store.throttles - before == hook.thrown  # counted on the receiving thread
    assert sum(throttles for _, throttles, _ in told) == hook.thrown, f"{hook.thrown} claims throttled, told {told}"
