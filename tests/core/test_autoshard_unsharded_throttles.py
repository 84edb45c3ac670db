"""Throttles met on partitions no shard count splits (a FIFO group's own messages, `G#…`, one per group; the shard
marks, `K#…#shards`, one per sub-queue) are relieved by no count, so they never grow a queue. Throttles on the shard
keys beside them, in the same transactions, still do.

DynamoDB's per-key limit is scaled down (`autoshard.KEY_WRITE_UNITS`), and the load with it, so that moto carries
the scenarios quickly; every figure keeps its ratio to the limit."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError
from queue_core import QueueClient, QueueError, Throttled, autoshard

from tests.conftest import FakeClock
from tests.throttle_hooks import ThrottleAll, request_body, throttling

KEY = 20  # write units a second a key takes, scaled down fifty times
BODY = "x" * 600  # under 1 KB with its keys: four write units of its shard's index key per life


@pytest.fixture(autouse=True)
def _scaled_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(autoshard, "KEY_WRITE_UNITS", KEY)


def _pk(part: dict[str, Any]) -> str:
    """The partition key of one part of a transaction (`{"Put": {...}}`)."""
    body = next(iter(part.values()))
    return str((body.get("Key") or body.get("Item") or {}).get("pk", {}).get("S", ""))


class _Cancelled:
    """Cancels every transaction of queue `name` that has a part on a partition starting with `kind`, with
    `ThrottlingError` as the reason of those parts, as DynamoDB does when one item's key is past its limit."""

    def __init__(self, name: str, kind: str) -> None:
        self.name = name
        self.kind = kind
        self.thrown = 0

    def _before_call(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name != "TransactWriteItems":
            return
        parts = request_body(params).get("TransactItems", [])
        hit = [_pk(part).startswith(f"{self.kind}#{self.name}#") for part in parts]
        if any(hit):
            self.thrown += 1
            reasons = [{"Code": "ThrottlingError" if throttled else "None"} for throttled in hit]
            answer = {"Error": {"Code": "TransactionCanceledException", "Message": "throttled"}}
            raise ClientError({**answer, "CancellationReasons": reasons}, "TransactWriteItems")  # type: ignore[arg-type]


def _grown(client: QueueClient, clock: FakeClock, name: str, shards: int) -> None:
    """FIFO queue `name` grown automatically from 1 to `shards`, the clock past the time groups are placed by the
    new count and past the growth's cooldown."""
    client.create_queue(name)
    assert client.reshard_automatically(name, shards) == shards
    settings = client.get_queue(name)
    clock.advance(max(settings.placement_from / 1000 - clock(), autoshard.GROW_COOLDOWN_SECONDS) + 1)


def _send_batches(client: QueueClient, clock: FakeClock, name: str, seconds: int) -> None:
    """A batch of 8 a second over groups never used before (32 write units a second: at 4 shards 40 % of a key's
    limit on each key, past what explains throttles and short of what grows a queue by its load alone)."""
    sub = client.queue(name, "c")
    for second in range(seconds):
        groups = [f"g{second}-{i}" for i in range(8)]
        sub.send_batch([{"body": f"{group}:{BODY}", "group_id": group} for group in groups])
        clock.advance(1)


def test_throttles_on_fifo_groups_own_partitions_never_grow_a_queue_and_those_on_its_shard_keys_do(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """Two FIFO queues grown to 4 shards, each then sent the same load, 40 % of a key's limit on each of the 4 keys,
    every send refused (about 450 throttles a minute, four times what grows a queue). The control's sends are
    refused at its group items, on the shard keys: it grows four times, to 16. The other's are refused at the
    messages, each on its group's own partition: more shards would not move one of them, and it stays at 4."""
    _grown(client, clock, "control.fifo", 4)
    _grown(client, clock, "orders.fifo", 4)
    hooks = [_Cancelled("control.fifo", "F"), _Cancelled("orders.fifo", "G")]
    for hook in hooks:
        dynamodb.meta.events.register("before-call.dynamodb", hook._before_call)
    try:
        _send_batches(client, clock, "control.fifo", 10)
        _send_batches(client, clock, "orders.fifo", 10)
    finally:
        for hook in hooks:
            dynamodb.meta.events.unregister("before-call.dynamodb", hook._before_call)
    assert (hooks[0].thrown, hooks[1].thrown) == (80, 80)
    client.reshard_automatically("control.fifo")
    client.reshard_automatically("orders.fifo")
    assert client.get_queue("control.fifo").shards == 16
    assert client.get_queue("orders.fifo").shards == 4


def _on(kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda body: str(body.get("Key", {}).get("pk", {}).get("S", "")).startswith(kind)


def test_a_receive_whose_claims_are_throttled_on_their_groups_own_partitions_counts_them_apart(
    client: QueueClient, dynamodb: Any
) -> None:
    """A receive's claims mark the messages they take, on their groups' own partitions, in the claim pool's
    threads: throttles met there are counted apart (`Store.unsharded_throttles`), on the receive's thread,
    never as a key's; a throttle on a group item, on its shard's key, is a key's."""
    client.create_queue("orders.fifo", shards=4)
    sub = client.queue("orders.fifo", "c")
    for group in ("a", "b", "c"):
        sub.send(f"to {group}", group_id=group)
    store = client._ctx.store
    for kind, counted in (("G#", "group"), ("F#", "key")):
        before = (store.throttles, store.unsharded_throttles)
        with throttling(dynamodb, ThrottleAll("UpdateItem", _on(kind))) as hook, contextlib.suppress(Throttled):
            sub.receive(max_messages=10)  # every claim refused: the receive says so
        grown = (store.throttles - before[0], store.unsharded_throttles - before[1])
        assert grown == ((0, hook.thrown) if counted == "group" else (hook.thrown, 0)), (kind, grown, hook.thrown)


def _on_marks(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda body: str(body.get("Item", {}).get("pk", {}).get("S", "")).startswith(f"K#{name}#")


def test_throttles_on_the_shard_marks_partition_never_grow_a_queue(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A FIFO queue of 4 shards sent 40 % of a key's limit on each key (a batch of 8 new groups a second), every
    put of a shard mark refused: the sends themselves all go through, only the marks' one partition throttles.
    More shards would put more marks there, not fewer: the queue stays at 4."""
    _grown(client, clock, "orders.fifo", 4)
    sub = client.queue("orders.fifo", "c")
    with throttling(dynamodb, ThrottleAll("PutItem", _on_marks("orders.fifo"))) as hook:
        for second in range(10):
            groups = [f"g{second}-{i}" for i in range(8)]
            sent = sub.send_batch([{"body": f"{group}:{BODY}", "group_id": group} for group in groups])
            assert not sent.failed and len(sent.successful) == len(groups)
            clock.advance(1)
    assert hook.thrown * 6 >= autoshard.THROTTLES_PER_MINUTE  # 10 seconds of them: past what grows a queue
    client.reshard_automatically("orders.fifo")
    assert client.get_queue("orders.fifo").shards == 4


@pytest.mark.parametrize(
    "entry",
    [
        {"Put": None},
        {"Put": "not an entry"},
        {"Update": {"TableName": "shop-orders", "Key": None, "ExpressionAttributeValues": None}},
    ],
)
def test_a_malformed_entry_of_the_callers_is_refused_as_a_queue_error(client: QueueClient, entry: Any) -> None:
    """The SDK refuses such an entry before sending it (a parameter error): the caller gets a `QueueError`, as
    for any other refusal, never an `AttributeError` from reading the entry's key."""
    client.create_queue("events")
    send = client.queue("events", "shop").send_transact_items("order o1 placed")
    with pytest.raises(QueueError):
        client.transact([entry, send])


def test_a_throttle_on_a_fifo_queues_dead_letters_is_counted_apart(
    client: QueueClient, clock: FakeClock, dynamodb: Any
) -> None:
    """A FIFO queue's dead letters all go to one partition (`MessageRef.dlq_key`: `D#…#0`, whatever the count):
    a receive's move to the DLQ refused there is relieved by no count, as a group's own messages are not."""
    client.create_queue("orders.fifo", shards=4, max_receive_count=1, visibility_timeout=1)
    sub = client.queue("orders.fifo", "c")
    sub.send("m", group_id="g")
    assert len(sub.receive()) == 1
    clock.advance(5)  # its visibility ran out: the next receive moves it to the DLQ
    store = client._ctx.store
    hook = _Cancelled("orders.fifo", "D")  # the dead letter's put alone
    dynamodb.meta.events.register("before-call.dynamodb", hook._before_call)
    try:
        before = (store.throttles, store.unsharded_throttles)
        with contextlib.suppress(Throttled):
            sub.receive(max_messages=10)
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb", hook._before_call)
    assert hook.thrown == 1
    assert (store.throttles - before[0], store.unsharded_throttles - before[1]) == (0, 1)
