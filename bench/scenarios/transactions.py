"""Transactional send and ack: the write units a message costs inside the caller's transaction, against plain calls.

A send is measured four ways, per message: a plain `send`; `send_transact_items` committed alone through
`QueueClient.transact`; and the outbox, a business write (a 100-byte item in a table of the caller's) with the send
in one transaction, against the same business write followed by a plain send. An ack likewise: a plain `delete`;
`delete_transact_items` committed alone; and an effect (an increment of a counter item in the caller's table) with
the ack in one transaction, against the increment followed by a plain delete. Standard and FIFO queues, each with
and without a dedup id, 1 KB bodies, the table's index writes included.

DynamoDB charges a transaction's table writes twice (prepare and commit; index writes once): the extra is our
items' table units once more (2 for a 1 KB message, 1 for a group item or a dedup item) and the caller's own
write's once more. A send that is a transaction already (FIFO, or with a dedup id) costs nothing extra by itself.
A FIFO transactional send also reads its group item once (0.5 to 1 read unit), so that the caller's transaction
is not cancelled by a stale guess of the group's sequence.
"""

from __future__ import annotations

import itertools
from typing import Any, Final

from queue_core import QueueClient

from ..backend import moto_backend
from ..messages import KB, VISIBILITY_SECONDS, body
from ..meter import Meter, Totals

NAME: Final = "transactions"
BUSINESS: Final = "bench-business"
KINDS: Final = ("standard", "standard_dedup", "fifo", "fifo_dedup")
SEND_WAYS: Final = ("plain", "transactional", "business_then_plain", "business_in_transaction")
ACK_WAYS: Final = ("plain", "transactional", "effect_then_plain", "effect_in_transaction")
_orders = itertools.count()


def _business_put(number: int) -> dict[str, Any]:
    return {
        "Put": {
            "TableName": BUSINESS,
            "Item": {"id": {"S": f"order-{number:08d}"}, "note": {"S": "x" * 80}},
            "ConditionExpression": "attribute_not_exists(id)",
        }
    }


def _increment(key: str) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": BUSINESS,
            "Key": {"id": {"S": key}},
            "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }


def _alone(client: Any, entry: dict[str, Any]) -> None:
    """One of the caller's writes as a call of its own (what the non-transactional way writes besides ours)."""
    ((kind, request),) = entry.items()
    if kind == "Put":
        client.put_item(**request)
    else:
        client.update_item(**request)


class _Case:
    def __init__(self, core: QueueClient, queue: str, fifo: bool, dedup: bool) -> None:
        self.core = core
        self.sub = core.queue(queue, "tenant-a")
        self.fifo = fifo
        self.dedup = dedup
        self.sent = 0

    def fields(self) -> dict[str, Any]:
        self.sent += 1
        return {
            "group_id": "g" if self.fifo else None,
            "dedup_id": f"d{self.sent}" if self.dedup else None,
        }


def _send(case: _Case, meter: Meter, way: str, repeats: int) -> dict[str, float]:
    client = case.core.dynamodb
    total = Totals()
    for _ in range(repeats):
        business = _business_put(next(_orders))
        fields = case.fields()
        with meter.window() as cost:
            if way == "plain":
                case.sub.send(body(KB), **fields)
            elif way == "transactional":
                case.core.transact([case.sub.send_transact_items(body(KB), **fields)])
            elif way == "business_then_plain":
                _alone(client, business)
                case.sub.send(body(KB), **fields)
            else:
                case.core.transact([business, case.sub.send_transact_items(body(KB), **fields)])
        total += cost
    _drain(case)
    return total.per(repeats)


def _ack(case: _Case, meter: Meter, way: str, repeats: int) -> dict[str, float]:
    client = case.core.dynamodb
    total = Totals()
    with meter.paused():
        for _ in range(repeats):
            case.sub.send(body(KB), **case.fields())
    for _ in range(repeats):
        with meter.paused():
            (message,) = case.sub.receive(1)
        effect = _increment(f"counter-{way}")
        with meter.window() as cost:
            if way == "plain":
                case.sub.delete(message.receipt_handle)
            elif way == "transactional":
                case.core.transact(case.sub.delete_transact_items(message.receipt_handle))
            elif way == "effect_then_plain":
                _alone(client, effect)
                case.sub.delete(message.receipt_handle)
            else:
                case.core.transact([effect, *case.sub.delete_transact_items(message.receipt_handle)])
        total += cost
    figures = total.per(repeats)
    figures["transactions"] = total.calls.get("TransactWriteItems", 0) / repeats
    return figures


def _drain(case: _Case) -> None:
    while got := case.sub.receive(10):
        case.sub.delete_batch([message.receipt_handle for message in got])


def run(quick: bool = False) -> dict[str, Any]:
    repeats = 3 if quick else 10
    results: dict[str, Any] = {"repeats": repeats}
    with moto_backend() as backend:
        client, meter = backend.client, backend.meter
        results["backend"] = backend.name
        client.create_table(
            TableName=BUSINESS,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        core = QueueClient("bench-transactions", dynamodb=client)
        core.create_table()
        for kind in KINDS:
            fifo, dedup = kind.startswith("fifo"), kind.endswith("dedup")
            queue = f"{kind.replace('_', '-')}{'.fifo' if fifo else ''}"
            core.create_queue(queue, fifo=fifo, visibility_timeout=VISIBILITY_SECONDS)
            case = _Case(core, queue, fifo, dedup)
            with meter.paused():  # steady state: settings cached, client registered, the group item there
                case.sub.send("warm", **case.fields())
                _drain(case)
            results[kind] = {
                "send": {way: _send(case, meter, way, repeats) for way in SEND_WAYS},
                "ack": {way: _ack(case, meter, way, repeats) for way in ACK_WAYS},
            }
            send, ack = results[kind]["send"], results[kind]["ack"]
            print(
                f"  {kind}: send {send['plain']['write_units']:.2f} WU plain, "
                f"{send['transactional']['write_units']:.2f} transactional; ack {ack['plain']['write_units']:.2f} "
                f"plain, {ack['transactional']['write_units']:.2f} transactional"
            )
    return results
