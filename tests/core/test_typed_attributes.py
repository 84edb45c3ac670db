"""Typed message attributes (SQS data types) round-trip exactly; a queue's `max_message_bytes` bounds its bodies."""

from __future__ import annotations

import base64

import pytest
from queue_core import MessageTooLarge, QueueClient, ValidationError, limits

from tests.conftest import FakeClock

TYPED = {
    "text": ("hello", "String"),
    "label": ("x", "String.custom"),
    "count": ("-12.5e3", "Number"),
    "ratio": ("0.25", "Number.float"),
    "blob": (base64.b64encode(b"\x00\xffbytes").decode(), "Binary"),
    "gif": (base64.b64encode(b"GIF89a").decode(), "Binary.gif"),
}
ATTRIBUTES = {name: value for name, (value, _) in TYPED.items()}
TYPES = {name: data_type for name, (_, data_type) in TYPED.items()}
NOT_PLAIN = {name: data_type for name, data_type in TYPES.items() if data_type != "String"}


@pytest.mark.parametrize("name", ["typed", "typed.fifo"])
def test_typed_attributes_round_trip_through_receive_get_peek_dlq_and_redrive(
    client: QueueClient, clock: FakeClock, name: str
) -> None:
    client.create_queue(name, max_receive_count=1, visibility_timeout=10)
    queue = client.queue(name, "c")
    group = "g" if name.endswith(".fifo") else None
    sent = queue.send("body", attributes=ATTRIBUTES, attribute_types=TYPES, group_id=group)
    [peeked] = queue.peek(10)
    assert (peeked.attributes, peeked.attribute_types) == (ATTRIBUTES, NOT_PLAIN)
    [received] = queue.receive()
    assert (received.attributes, received.attribute_types) == (ATTRIBUTES, NOT_PLAIN)
    assert received.to_dict()["attribute_types"] == NOT_PLAIN
    clock.advance(11)
    assert queue.receive() == []
    [in_dlq] = queue.dlq_list()
    assert (in_dlq.message_id, in_dlq.attribute_types) == (sent.message_id, NOT_PLAIN)
    assert queue.redrive() == 1
    [back] = queue.receive()
    assert (back.attributes, back.attribute_types) == (ATTRIBUTES, NOT_PLAIN)


def test_plain_string_attributes_are_unchanged_and_a_batch_takes_types(client: QueueClient) -> None:
    client.create_queue("plain")
    queue = client.queue("plain", "c")
    queue.send("a", attributes={"k": "v"})
    result = queue.send_batch([{"body": "b", "attributes": {"n": "1"}, "attribute_types": {"n": "Number"}}])
    assert result.failed == []
    first, second = sorted(queue.receive(max_messages=10), key=lambda message: message.body)
    assert (first.attributes, first.attribute_types) == ({"k": "v"}, {})
    assert (second.attributes, second.attribute_types) == ({"n": "1"}, {"n": "Number"})


@pytest.mark.parametrize(
    ("attributes", "types"),
    [
        ({"n": "twelve"}, {"n": "Number"}),
        ({"n": "1" * 39}, {"n": "Number"}),
        ({"n": "1e127"}, {"n": "Number"}),
        ({"n": "1e-129"}, {"n": "Number.int"}),
        ({"b": "not base64!"}, {"b": "Binary"}),
        ({"s": "x"}, {"s": "Text"}),
        ({"s": "x"}, {"s": "String."}),
        ({"s": "x"}, {"s": 3}),
        ({"s": "x"}, {"other": "String"}),
        ({"s": "x"}, ["String"]),
        ({"s": "x"}, {"s": "String." + "x" * 250}),
    ],
)
def test_bad_typed_attributes_are_refused_and_write_nothing(client: QueueClient, attributes, types) -> None:
    client.create_queue("strict")
    queue = client.queue("strict", "c")
    with pytest.raises(ValidationError):
        queue.send("x", attributes=attributes, attribute_types=types)
    assert queue.peek(10) == []


def test_typed_attribute_sizes_count_name_type_and_value(client: QueueClient) -> None:
    client.create_queue("sized")
    queue = client.queue("sized", "c")
    value = "1" * (limits.MAX_ATTRIBUTES_BYTES - len("n") - len("String.x") + 1)
    queue.send("fits untyped", attributes={"n": value})
    with pytest.raises(MessageTooLarge):
        queue.send("typed is larger", attributes={"n": value}, attribute_types={"n": "String.x"})


def test_max_message_bytes_is_a_queue_setting_enforced_on_send(client: QueueClient) -> None:
    assert client.create_queue("default-size").max_message_bytes == limits.MAX_BODY_BYTES
    settings = client.create_queue("small", max_message_bytes=1024)
    assert settings.to_dict()["max_message_bytes"] == 1024
    queue = client.queue("small", "c")
    queue.send("x" * 1024)
    with pytest.raises(MessageTooLarge):
        queue.send("x" * 1025)
    result = queue.send_batch([{"body": "x" * 1025}, {"body": "ok"}])
    assert [entry["code"] for entry in result.failed] == ["MessageTooLarge"]
    assert client.update_queue("small", max_message_bytes=2048).max_message_bytes == 2048
    queue.send("x" * 2048)
    for wrong in (1023, limits.MAX_BODY_BYTES + 1, "2048"):
        with pytest.raises(ValidationError):
            client.update_queue("small", max_message_bytes=wrong)
    assert client.get_queue("small").max_message_bytes == 2048
