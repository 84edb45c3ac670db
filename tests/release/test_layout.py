"""The table's layout record: written by `create_table`, read once per process, and a table of a layout this
code does not serve refused before any item is read, with both layouts and the command to run."""

from __future__ import annotations

from typing import Any

import pytest
from queue_api.error_mapping import error_answer
from queue_core import QueueClient, TableLayoutMismatch
from queue_core.layout import CURRENT_LAYOUT
from queue_core.version import __version__
from sqs_api.errors import from_core

from tests.conftest import TABLE, FakeClock
from tests.dynamo_calls import CallCounter


def _record(dynamodb: Any, layout: int, written_by: str = "9.0.0") -> None:
    item = {"pk": {"S": "META"}, "sk": {"S": "LAYOUT"}, "layout": {"N": str(layout)}, "written_by": {"S": written_by}}
    dynamodb.put_item(TableName=TABLE, Item=item)


def _items(dynamodb: Any) -> list[dict[str, Any]]:
    return sorted(dynamodb.scan(TableName=TABLE)["Items"], key=lambda item: (item["pk"]["S"], item["sk"]["S"]))


def test_a_table_created_by_this_release_records_its_layout(client: QueueClient) -> None:
    found = client.table_layout()
    assert (found.layout, found.written_by, found.migrating_to) == (CURRENT_LAYOUT, __version__, None)
    client.create_table()  # again: the record stays as it is
    assert client.table_layout() == found


@pytest.mark.parametrize(("recorded", "advice"), [(CURRENT_LAYOUT + 1, "run that release"), (0, "dq migrate --table")])
def test_a_table_of_a_layout_this_code_does_not_serve_is_refused_before_anything_is_read_or_written(
    dynamodb: Any, clock: FakeClock, recorded: int, advice: str
) -> None:
    writer = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)
    writer.create_table()
    writer.create_queue("orders")
    writer.queue("orders", "tenant-a").send("kept")
    _record(dynamodb, recorded)
    before = _items(dynamodb)

    fresh = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)  # another process, after the table changed
    calls = CallCounter().attach(dynamodb)
    for operation in (
        lambda: fresh.queue("orders", "tenant-a").receive(),
        lambda: fresh.queue("orders", "tenant-a").send("x"),
        lambda: fresh.list_queues(),
        lambda: fresh.create_queue("other"),
        lambda: fresh.sweep(),
    ):
        with pytest.raises(TableLayoutMismatch) as refused:
            operation()
        message = refused.value.message
        assert f"at layout {recorded}" in message and f"serves layouts 1 to {CURRENT_LAYOUT}" in message
        assert "dq migrate" in message and advice in message
    assert calls.calls == {"GetItem": 1}  # read once, the refusal remembered
    assert _items(dynamodb) == before

    # Over HTTP and SQS: a 503 that says why, never a 500 InternalError with its text hidden.
    assert error_answer(refused.value) == (503, {"error": {"code": "TableLayoutMismatch", "message": message}})
    sqs = from_core(refused.value)
    assert (sqs.code, sqs.status, sqs.message) == ("ServiceUnavailable", 503, message)


def test_the_record_is_read_once_per_process_not_per_message(dynamodb: Any, client: QueueClient) -> None:
    client.create_queue("orders")
    fresh = QueueClient(TABLE, dynamodb=dynamodb, clock=client._ctx.clock)
    reads: list[dict[str, Any]] = []
    dynamodb.meta.events.register("provide-client-params.dynamodb.GetItem", lambda params, **_: reads.append(params))
    sub = fresh.queue("orders", "tenant-a")
    for number in range(20):
        sub.send(f"m{number}")
    for message in sub.receive(max_messages=10) + sub.receive(max_messages=10):
        sub.delete(message.receipt_handle)
    assert [read["Key"]["pk"]["S"] for read in reads].count("META") == 1


def test_a_table_without_a_record_is_served(dynamodb: Any, client: QueueClient) -> None:
    client.create_queue("orders")
    dynamodb.delete_item(TableName=TABLE, Key={"pk": {"S": "META"}, "sk": {"S": "LAYOUT"}})
    older = QueueClient(TABLE, dynamodb=dynamodb, clock=client._ctx.clock)
    older.queue("orders", "tenant-a").send("served")
    assert [message.body for message in older.queue("orders", "tenant-a").receive()] == ["served"]
    assert older.table_layout().layout is None
