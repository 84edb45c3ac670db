"""The producer: queue administration and sending, through API Gateway events and direct invokes."""

from __future__ import annotations

import json

import pytest
from queue_api import plain_operations
from queue_api.openapi import document
from queue_api.resolver import MAX_REQUEST_BYTES
from queue_core import QueueClient, limits

from functions.producer import handler as producer
from tests.events import FakeLambdaContext, api_event, http_answer
from tests.functions.conftest import call, invoke, metric_values

SETTINGS_KEYS = {
    "name",
    "fifo",
    "visibility_timeout",
    "max_receive_count",
    "retention_seconds",
    "delay_seconds",
    "dedup_window_seconds",
    "content_based_dedup",
    "shards",
    "auto_shards",
    "min_shards",
    "max_shards",
    "max_message_bytes",
    "receive_wait_seconds",
    "queue_wide",
    "archive_days",
    "created_at",
}


def error_of(answer) -> tuple[int, str]:
    assert set(answer.body) == {"error"} and set(answer.body["error"]) == {"code", "message"}
    return answer.status, answer.body["error"]["code"]


# Queues.


def test_put_creates_a_queue_with_defaults_then_answers_200_for_the_same_settings() -> None:
    created = call(producer, "PUT", "/queues/orders")
    again = call(producer, "PUT", "/queues/orders", {})
    assert created.status == 201 and again.status == 200
    assert set(created.body) == SETTINGS_KEYS
    assert created.body["visibility_timeout"] == limits.DEFAULT_VISIBILITY_SECONDS and not created.body["fifo"]
    assert again.body == created.body


def test_put_with_other_settings_is_a_409_queue_exists() -> None:
    call(producer, "PUT", "/queues/orders", {"visibility_timeout": 30})
    assert error_of(call(producer, "PUT", "/queues/orders", {"visibility_timeout": 60})) == (409, "QueueExists")


def test_put_passes_every_setting_to_the_core() -> None:
    settings = {
        "fifo": True,
        "visibility_timeout": 60,
        "max_receive_count": 3,
        "retention_seconds": 3600,
        "delay_seconds": 5,
        "dedup_window_seconds": 600,
        "content_based_dedup": True,
        "shards": 2,
    }
    answer = call(producer, "PUT", "/queues/jobs.fifo", settings)
    assert answer.status == 201
    assert {key: answer.body[key] for key in settings} == settings


def test_a_queue_created_without_shards_follows_its_load_within_its_bounds() -> None:
    default = call(producer, "PUT", "/queues/orders").body
    shown = (default["shards"], default["auto_shards"], default["min_shards"], default["max_shards"])
    assert shown == (1, True, 1, 512)
    bounded = call(producer, "PUT", "/queues/jobs", {"shards": "auto", "min_shards": 2, "max_shards": 8}).body
    assert (bounded["shards"], bounded["auto_shards"], bounded["min_shards"], bounded["max_shards"]) == (2, True, 2, 8)
    fixed = call(producer, "PATCH", "/queues/jobs", {"shards": 4}).body
    assert (fixed["shards"], fixed["auto_shards"]) == (4, False)
    assert call(producer, "GET", "/queues/jobs").body["auto_shards"] is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"visibility_timeout": "30"}, "visibility_timeout"),
        ({"fifo": "yes"}, "fifo"),
        ({"shards": 1.5}, "shards"),
        ({"shards": "many"}, "shards"),
        ({"min_shards": 0}, "min_shards"),
        ({"shards": 2, "max_shards": 4}, "max_shards"),
        ({"min_shards": 5, "max_shards": 2}, "min_shards"),
        ({"visibility_timeout": 43_201}, "visibility_timeout"),
        ({"retention_seconds": 59}, "retention_seconds"),
        ({"visibilty_timeout": 30}, "visibilty_timeout"),
    ],
)
def test_put_refuses_wrong_types_ranges_and_unknown_fields_naming_the_field(body: dict, field: str) -> None:
    answer = call(producer, "PUT", "/queues/orders", body)
    assert error_of(answer) == (400, "ValidationError")
    assert field in answer.body["error"]["message"]
    assert error_of(call(producer, "GET", "/queues/orders")) == (404, "QueueNotFound")


@pytest.mark.parametrize("raw", ["{bad json", '{"fifo": true', "[1, 2]", '"text"', "null null"])
def test_malformed_json_is_a_400(raw: str) -> None:
    answer = call(producer, "PUT", "/queues/orders", raw_body=raw)
    assert error_of(answer) == (400, "ValidationError")


@pytest.mark.parametrize("name", ["bad name", "x" * 81, "a.fifo.fifo", "dots.here", "ü", "x" * 76 + ".fifo"])
def test_bad_queue_names_are_a_400(name: str) -> None:
    assert error_of(call(producer, "PUT", f"/queues/{name}")) == (400, "ValidationError")


def test_names_at_the_limits_are_accepted() -> None:
    assert call(producer, "PUT", "/queues/" + "q" * 80).status == 201
    assert call(producer, "PUT", "/queues/" + "f" * 75 + ".fifo").status == 201


def test_list_get_and_delete_queues(core: QueueClient) -> None:
    call(producer, "PUT", "/queues/a")
    call(producer, "PUT", "/queues/b")
    core.queue("a", "tenant-1").send("one")
    core.queue("a", "tenant-2").send("two")

    listed = call(producer, "GET", "/queues")
    assert listed.status == 200 and [queue["name"] for queue in listed.body["queues"]] == ["a", "b"]
    described = call(producer, "GET", "/queues/a")
    assert described.status == 200 and described.body["stats"]["visible"] == 2
    assert set(described.body) == SETTINGS_KEYS | {"stats", "client_count"}

    deleted = call(producer, "DELETE", "/queues/a")
    assert (deleted.status, deleted.body) == (200, {"deleted": True})
    assert error_of(call(producer, "GET", "/queues/a")) == (404, "QueueNotFound")
    assert error_of(call(producer, "DELETE", "/queues/a")) == (404, "QueueNotFound")


def test_patch_changes_only_the_settings_given(core: QueueClient) -> None:
    created = call(producer, "PUT", "/queues/orders", {"visibility_timeout": 30, "delay_seconds": 5}).body
    answer = call(producer, "PATCH", "/queues/orders", {"visibility_timeout": 90, "max_receive_count": 2})
    assert answer.status == 200 and set(answer.body) == SETTINGS_KEYS
    assert answer.body == {**created, "visibility_timeout": 90, "max_receive_count": 2}
    assert core.get_queue("orders").visibility_timeout == 90
    assert call(producer, "GET", "/queues/orders").body["max_receive_count"] == 2


def test_patch_without_changes_answers_the_settings_as_they_are() -> None:
    created = call(producer, "PUT", "/queues/orders").body
    assert call(producer, "PATCH", "/queues/orders").body == created
    assert call(producer, "PATCH", "/queues/orders", {}).body == created


def test_patching_shards_on_a_live_queue_loses_no_message(core: QueueClient) -> None:
    call(producer, "PUT", "/queues/orders")
    before = {core.queue("orders", "c1").send(f"before {n}").message_id for n in range(5)}
    answer = call(producer, "PATCH", "/queues/orders", {"shards": 4})
    assert (answer.status, answer.body["shards"]) == (200, 4)
    after = {core.queue("orders", "c1").send(f"after {n}").message_id for n in range(5)}
    sub_queue = core.queue("orders", "c1")
    received = []
    while got := sub_queue.receive(max_messages=10):
        received += got
    assert {message.message_id for message in received} == before | after


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"fifo": True}, "fifo cannot change on a live queue"),
        ({"content_based_dedup": True, "shards": 2}, "content_based_dedup cannot change on a live queue"),
        ({"fifo": False, "content_based_dedup": False}, "fifo and content_based_dedup cannot change"),
        ({"visibilty_timeout": 30}, "visibilty_timeout"),
        ({"name": "other"}, "name"),
        ({"shards": "2"}, "shards"),
        ({"shards": 0}, "shards"),
        ({"retention_seconds": 59}, "retention_seconds"),
        ({"delay_seconds": True}, "delay_seconds"),
    ],
)
def test_patch_refuses_fixed_settings_unknown_fields_and_bad_values(body: dict, named: str) -> None:
    created = call(producer, "PUT", "/queues/orders").body
    answer = call(producer, "PATCH", "/queues/orders", body)
    assert error_of(answer) == (400, "ValidationError")
    assert named in answer.body["error"]["message"]
    assert call(producer, "GET", "/queues/orders").body.items() >= created.items(), "nothing changed"


def test_patching_a_missing_queue_is_a_404() -> None:
    assert error_of(call(producer, "PATCH", "/queues/nowhere", {"shards": 2})) == (404, "QueueNotFound")


def test_clients_lists_who_has_sent_to_the_queue(core: QueueClient) -> None:
    call(producer, "PUT", "/queues/orders")
    assert call(producer, "GET", "/queues/orders/clients").body == {"clients": []}
    for client in ("tenant-b", "tenant-a", "tenant-b"):
        call(producer, "POST", f"/queues/orders/clients/{client}/messages", {"body": "x"})
    answer = call(producer, "GET", "/queues/orders/clients")
    assert (answer.status, answer.body) == (200, {"clients": ["tenant-a", "tenant-b"]})


def test_clients_of_a_missing_queue_or_a_bad_name() -> None:
    assert error_of(call(producer, "GET", "/queues/nowhere/clients")) == (404, "QueueNotFound")
    assert error_of(call(producer, "GET", "/queues/bad%20name/clients")) == (400, "ValidationError")


# Sending.


@pytest.fixture
def orders() -> None:
    call(producer, "PUT", "/queues/orders")


def test_send_one_message_answers_the_batch_shape_with_the_id_on_top(orders: None, core: QueueClient) -> None:
    answer = call(producer, "POST", "/queues/orders/clients/c1/messages", {"body": "hi", "attributes": {"k": "v"}})
    assert answer.status == 200 and answer.body["failed"] == []
    [entry] = answer.body["successful"]
    assert entry["index"] == 0 and entry["message_id"] == answer.body["message_id"]
    [received] = core.queue("orders", "c1").receive()
    assert (received.message_id, received.body, received.attributes) == (entry["message_id"], "hi", {"k": "v"})


def test_send_leaves_out_the_delay_so_the_queue_delay_applies(core: QueueClient) -> None:
    call(producer, "PUT", "/queues/slow", {"delay_seconds": 60})
    call(producer, "POST", "/queues/slow/clients/c1/messages", {"body": "later"})
    assert core.queue("slow", "c1").stats().delayed == 1


def test_delivery_beyond_the_retention_or_a_bad_priority_is_a_400_and_stores_nothing(core: QueueClient) -> None:
    call(producer, "PUT", "/queues/later", {"retention_seconds": 86400})
    path = "/queues/later/clients/c1/messages"
    for refused in (
        {"body": "x", "delay_seconds": 86401},
        {"body": "x", "deliver_at": "2999-01-01T00:00:00Z"},
        {"body": "x", "deliver_at": "tomorrow"},
        {"body": "x", "priority": 10},
    ):
        assert error_of(call(producer, "POST", path, refused)) == (400, "ValidationError"), refused
    assert core.queue("later", "c1").stats().to_dict() == core.queue("later", "nobody").stats().to_dict()
    latest = 86400 - limits.MIN_DELIVERY_WINDOW_SECONDS
    assert call(producer, "POST", path, {"body": "in a day", "delay_seconds": latest, "priority": 9}).status == 200
    assert core.queue("later", "c1").stats().delayed == 1


def test_send_batch_reports_each_entry(orders: None) -> None:
    too_big = "x" * (limits.MAX_BODY_BYTES + 1)
    answer = call(
        producer, "POST", "/queues/orders/clients/c1/messages", {"messages": [{"body": "a"}, {"body": too_big}]}
    )
    assert answer.status == 200
    assert [entry["index"] for entry in answer.body["successful"]] == [0]
    assert [(entry["index"], entry["code"]) for entry in answer.body["failed"]] == [(1, "MessageTooLarge")]


def test_a_single_message_over_the_body_limit_is_a_413(orders: None) -> None:
    body = {"body": "x" * (limits.MAX_BODY_BYTES + 1)}
    assert error_of(call(producer, "POST", "/queues/orders/clients/c1/messages", body)) == (413, "MessageTooLarge")


def test_a_message_exactly_at_the_body_limit_is_accepted(orders: None) -> None:
    body = {"body": "x" * limits.MAX_BODY_BYTES}
    assert call(producer, "POST", "/queues/orders/clients/c1/messages", body).status == 200


def test_a_request_body_over_the_limit_is_a_413_before_parsing(orders: None) -> None:
    answer = call(producer, "POST", "/queues/orders/clients/c1/messages", raw_body="{" * (MAX_REQUEST_BYTES + 1))
    assert error_of(answer) == (413, "MessageTooLarge")


@pytest.mark.parametrize(
    "body",
    [
        {"messages": []},
        {"messages": [{"body": "x"}] * (limits.MAX_BATCH + 1)},
        {"messages": [{"body": 1}]},
        {"body": ""},
        {"body": "x", "colour": "red"},
        {"body": "x", "delay_seconds": 345_601},
        {"body": "x", "attributes": {"k": 1}},
        {"bdy": "x"},
        ["x"],
    ],
)
def test_malformed_sends_are_a_400(orders: None, body: object) -> None:
    answer = call(producer, "POST", "/queues/orders/clients/c1/messages", body)
    assert error_of(answer) == (400, "ValidationError")


def test_a_bad_client_id_is_a_400(orders: None) -> None:
    answer = call(producer, "POST", "/queues/orders/clients/not%20ok/messages", {"body": "x"})
    assert error_of(answer) == (400, "ValidationError")


def test_sending_to_a_missing_queue_is_a_404() -> None:
    answer = call(producer, "POST", "/queues/nowhere/clients/c1/messages", {"body": "x"})
    assert error_of(answer) == (404, "QueueNotFound")


def test_a_fifo_message_without_a_group_is_a_400() -> None:
    call(producer, "PUT", "/queues/jobs.fifo")
    answer = call(producer, "POST", "/queues/jobs.fifo/clients/c1/messages", {"body": "x"})
    assert error_of(answer) == (400, "ValidationError")


def test_a_form_content_type_is_refused_with_a_hint() -> None:
    answer = call(producer, "PUT", "/queues/orders", raw_body="{}", headers={"Content-Type": "text/plain"})
    assert error_of(answer) == (400, "ValidationError")
    assert "application/json" in answer.body["error"]["message"]


def test_a_base64_encoded_body_is_decoded(orders: None) -> None:
    answer = call(producer, "POST", "/queues/orders/clients/c1/messages", {"body": "b64"}, base64_body=True)
    assert answer.status == 200 and len(answer.body["successful"]) == 1


def test_sending_publishes_messages_sent(orders: None, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    call(producer, "POST", "/queues/orders/clients/c1/messages", {"messages": [{"body": "a"}, {"body": "b"}]})
    assert metric_values(capsys.readouterr().out, "MessagesSent") == [2]


# Routes and errors.


def test_unknown_routes_and_methods_are_a_404_with_the_error_shape() -> None:
    assert error_of(call(producer, "GET", "/nothing/here")) == (404, "NotFound")
    assert error_of(call(producer, "POST", "/queues/orders")) == (404, "NotFound")


def test_openapi_json_is_the_whole_document() -> None:
    answer = call(producer, "GET", "/openapi.json")
    assert answer.status == 200 and answer.body == document()
    assert "/queues/{q}/clients/{c}/receive" in answer.body["paths"]


def test_a_bug_is_a_500_internal_error_without_internals(monkeypatch: pytest.MonkeyPatch, logged) -> None:
    def broken() -> None:
        raise RuntimeError("secret detail at /var/task/handler.py line 7")

    monkeypatch.setattr(plain_operations, "queue_client", broken)
    answer = call(producer, "GET", "/queues")
    assert error_of(answer) == (500, "InternalError")
    assert "secret" not in json.dumps(answer.body) and "handler.py" not in json.dumps(answer.body)
    invoked = invoke(producer, {"action": "list_queues"})
    assert invoked["status"] == 500 and invoked["error"]["code"] == "InternalError"
    assert "secret" not in json.dumps(invoked)
    failures = [line for line in logged() if line["message"] == "request failed"]
    assert len(failures) == 2 and all("secret detail" in line["exception"] for line in failures)


def test_a_missing_table_name_is_a_500_and_logged(monkeypatch: pytest.MonkeyPatch, logged) -> None:
    from queue_api.core_client import reset_queue_client

    monkeypatch.delenv("TABLE_NAME")
    reset_queue_client()
    assert error_of(call(producer, "GET", "/queues")) == (500, "InternalError")
    assert any("TABLE_NAME is not set" in line.get("exception", "") for line in logged())


def test_refusals_are_logged_with_the_api_request_id_as_correlation_id(logged) -> None:
    event = api_event("GET", "/queues/missing")
    http_answer(producer.lambda_handler(event, FakeLambdaContext()))
    [refusal] = [line for line in logged() if line["message"] == "request refused"]
    assert refusal["correlation_id"] == event["requestContext"]["requestId"] and refusal["code"] == "QueueNotFound"


# Direct invoke.


def test_invoke_actions_answer_the_http_json(core: QueueClient) -> None:
    created = invoke(producer, {"action": "create_queue", "queue": "orders", "visibility_timeout": 45})
    assert created["name"] == "orders" and created["visibility_timeout"] == 45
    assert invoke(producer, {"action": "create_queue", "queue": "orders", "visibility_timeout": 45}) == created

    sent = invoke(producer, {"action": "send", "queue": "orders", "client": "c1", "body": "hello"})
    assert sent["successful"][0]["message_id"] == sent["message_id"]
    batch = invoke(
        producer, {"action": "send", "queue": "orders", "client": "c1", "messages": [{"body": "a"}, {"body": "b"}]}
    )
    assert [entry["index"] for entry in batch["successful"]] == [0, 1]

    described = invoke(producer, {"action": "get_queue", "queue": "orders"})
    assert described["stats"]["visible"] == 3 and described["client_count"] == 1
    assert invoke(producer, {"action": "list_clients", "queue": "orders"}) == {"clients": ["c1"]}
    updated = invoke(producer, {"action": "update_queue", "queue": "orders", "shards": 2, "delay_seconds": 10})
    assert updated == {**created, "shards": 2, "auto_shards": False, "delay_seconds": 10}
    assert [queue["name"] for queue in invoke(producer, {"action": "list_queues"})["queues"]] == ["orders"]
    assert invoke(producer, {"action": "delete_queue", "queue": "orders"}) == {"deleted": True}
    assert core.list_queues() == []


@pytest.mark.parametrize(
    ("event", "status", "code", "hint"),
    [
        ({"action": "bogus"}, 400, "ValidationError", "send"),
        ({"queue": "orders"}, 400, "ValidationError", "action"),
        (["not", "an", "object"], 400, "ValidationError", "object"),
        ({"action": "get_queue"}, 400, "ValidationError", "queue"),
        ({"action": "get_queue", "queue": "bad name"}, 400, "ValidationError", "queue"),
        ({"action": "create_queue", "queue": "q", "fifo": "yes"}, 400, "ValidationError", "fifo"),
        ({"action": "send", "queue": "q", "client": "c", "body": "x", "extra": 1}, 400, "ValidationError", "extra"),
        ({"action": "get_queue", "queue": "missing"}, 404, "QueueNotFound", "missing"),
        ({"action": "list_clients", "queue": "missing"}, 404, "QueueNotFound", "missing"),
        ({"action": "list_clients"}, 400, "ValidationError", "queue"),
        ({"action": "update_queue", "queue": "missing", "shards": 2}, 404, "QueueNotFound", "missing"),
        ({"action": "update_queue", "queue": "q", "fifo": True}, 400, "ValidationError", "fifo cannot change"),
        ({"action": "update_queue", "queue": "q", "colour": "red"}, 400, "ValidationError", "colour"),
        ({"action": "update_queue", "queue": "q", "shards": "2"}, 400, "ValidationError", "shards"),
    ],
)
def test_invoke_errors_carry_the_http_status(event: object, status: int, code: str, hint: str) -> None:
    answer = invoke(producer, event)
    assert set(answer) == {"error", "status"}
    assert (answer["status"], answer["error"]["code"]) == (status, code)
    assert hint in answer["error"]["message"]


def test_invoke_send_over_the_body_limit_is_a_413() -> None:
    invoke(producer, {"action": "create_queue", "queue": "orders"})
    answer = invoke(
        producer, {"action": "send", "queue": "orders", "client": "c", "body": "x" * (limits.MAX_BODY_BYTES + 1)}
    )
    assert (answer["status"], answer["error"]["code"]) == (413, "MessageTooLarge")
