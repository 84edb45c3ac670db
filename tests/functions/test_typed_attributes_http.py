"""Typed attributes and `max_message_bytes` over HTTP and invoke: additive fields, the same checks as the core."""

from __future__ import annotations

import base64

from functions.poller import handler as poller
from functions.producer import handler as producer
from tests.functions.conftest import call, invoke

BLOB = base64.b64encode(b"\x00\x01binary").decode()
ATTRIBUTES = {"plain": "p", "n": "42", "b": BLOB, "s": "x"}
TYPES = {"n": "Number.int", "b": "Binary", "s": "String"}
NOT_PLAIN = {"n": "Number.int", "b": "Binary"}


def test_http_send_with_types_then_receive_and_get_show_them() -> None:
    assert call(producer, "PUT", "/queues/typed").status == 201
    body = {"body": "hello", "attributes": ATTRIBUTES, "attribute_types": TYPES}
    sent = call(producer, "POST", "/queues/typed/clients/c/messages", body)
    assert sent.status == 200, sent.body
    [peeked] = call(poller, "GET", "/queues/typed/clients/c/messages").body["messages"]
    assert (peeked["attributes"], peeked["attribute_types"]) == (ATTRIBUTES, NOT_PLAIN)
    [received] = call(poller, "POST", "/queues/typed/clients/c/receive", {}).body["messages"]
    assert (received["attributes"], received["attribute_types"]) == (ATTRIBUTES, NOT_PLAIN)
    got = call(poller, "GET", f"/queues/typed/clients/c/messages/{sent.body['message_id']}")
    assert got.body["attribute_types"] == NOT_PLAIN


def test_plain_senders_get_an_empty_attribute_types() -> None:
    call(producer, "PUT", "/queues/plain")
    call(producer, "POST", "/queues/plain/clients/c/messages", {"body": "x", "attributes": {"k": "v"}})
    [received] = call(poller, "POST", "/queues/plain/clients/c/receive", {}).body["messages"]
    assert (received["attributes"], received["attribute_types"]) == ({"k": "v"}, {})


def test_bad_types_are_a_400_over_http_and_invoke_and_write_nothing() -> None:
    call(producer, "PUT", "/queues/typed")
    bad = {"body": "x", "attributes": {"n": "many"}, "attribute_types": {"n": "Number"}}
    answer = call(producer, "POST", "/queues/typed/clients/c/messages", bad)
    assert (answer.status, answer.body["error"]["code"]) == (400, "ValidationError")
    answer = invoke(producer, {"action": "send", "queue": "typed", "client": "c", **bad})
    assert (answer["status"], answer["error"]["code"]) == (400, "ValidationError")
    wrong_shape = {"body": "x", "attributes": {"n": "1"}, "attribute_types": {"n": 1}}
    assert call(producer, "POST", "/queues/typed/clients/c/messages", wrong_shape).status == 400
    assert call(poller, "GET", "/queues/typed/clients/c/messages").body["messages"] == []


def test_invoke_send_with_types_round_trips() -> None:
    call(producer, "PUT", "/queues/typed")
    event = {"action": "send", "queue": "typed", "client": "c", "body": "x", "attributes": ATTRIBUTES}
    assert "message_id" in invoke(producer, {**event, "attribute_types": TYPES})
    answer = invoke(poller, {"action": "receive", "queue": "typed", "client": "c"})
    assert answer["messages"][0]["attribute_types"] == NOT_PLAIN


def test_max_message_bytes_is_created_updated_and_enforced_with_a_413() -> None:
    created = call(producer, "PUT", "/queues/small", {"max_message_bytes": 1024})
    assert (created.status, created.body["max_message_bytes"]) == (201, 1024)
    path = "/queues/small/clients/c/messages"
    assert call(producer, "POST", path, {"body": "x" * 1024}).status == 200
    too_large = call(producer, "POST", path, {"body": "x" * 1025})
    assert (too_large.status, too_large.body["error"]["code"]) == (413, "MessageTooLarge")
    assert call(producer, "PATCH", "/queues/small", {"max_message_bytes": 4096}).body["max_message_bytes"] == 4096
    assert call(producer, "POST", path, {"body": "x" * 1025}).status == 200
    for wrong in (1023, 1024 * 1024 + 1, "4096"):
        assert call(producer, "PATCH", "/queues/small", {"max_message_bytes": wrong}).status == 400
    answer = invoke(producer, {"action": "get_queue", "queue": "small"})
    assert answer["max_message_bytes"] == 4096
