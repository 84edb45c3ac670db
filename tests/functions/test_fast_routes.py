"""The fast routes answer exactly as the validating resolver does, and a well-formed first request of a send, a
receive, a listing, a delete, a visibility change, a release, stats, a purge, a look, cancel or move by id, a
queue's creation, change, clients or deletion, a browse, a look at the archive, a replay, a redrive, the DLQ's
reasons or the OpenAPI document does not load pydantic.

The fast checks and answer shapes are tables written by hand; these tests hold each against the pydantic model it
mirrors: the same fields in the same order with the same defaults, and, for generated inputs both well-formed and
not, never a value pydantic would refuse or hold differently, never JSON the model would write differently. Then
the same events go to both paths through the real handlers on moto: every answer the fast path gives is the
resolver's, byte for byte (ids and times aside where both paths write a new message).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import queue
import re
import subprocess
import sys
import threading
import time
import typing
from pathlib import Path
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_core import PydanticUndefined
from queue_api import answer_shapes, fast_routes, request_checks, schemas
from queue_api.names import MAX_EPOCH_MS
from queue_api.resolver import MAX_REQUEST_BYTES, answer_http, resolve, resolver_for
from queue_core import QueueClient, QueueExists, limits

from tests.conftest import examples
from tests.events import FakeLambdaContext, api_event, scheduled_rule_event
from tests.functions.conftest import TABLE

ROOT = Path(__file__).resolve().parents[2]
PROPERTY_SETTINGS = settings(
    max_examples=examples(250), deadline=None, suppress_health_check=list(HealthCheck), database=None
)
# Values written afresh by each path: the comparison of two sends or receives replaces them.
FRESH = frozenset(
    {
        "message_id",
        "sequence",
        "receipt_handle",
        "sent_at",
        "first_received_at",
        "visible_at",
        "receive_count",
        "oldest_age_seconds",
        "created_at",
        "replay_id",
        "updated_at",
        "finished_at",
        "reached_at",
        "until",  # a replay's end of range: its start's time when none is given
    }
)
# A handle of the shape the core issues that no sub-queue issued: refused alike by both paths.
FORGED = "Zm9yZ2Vk." + "A" * 22
# Every message of the sub-queue the receives read is this one, so either path may receive any of them.
SAME = ("a message", {"k": "v"}, 3)


def _declared(table: Any) -> list[tuple[str, Any]]:
    return [(name, default) for name, (_check, default) in table.fields.items()]


def _model_fields(model: type[pydantic.BaseModel]) -> list[tuple[str, Any]]:
    fields = []
    for name, info in model.model_fields.items():
        if info.is_required():
            fields.append((name, request_checks.REQUIRED))
        elif info.default_factory is not None:
            fields.append((name, info.default_factory))
        else:
            assert info.default is not PydanticUndefined
            fields.append((name, info.default))
    return fields


@pytest.mark.parametrize("name", sorted(request_checks.MODELS))
def test_each_request_check_has_its_models_fields_order_and_defaults(name: str) -> None:
    model = getattr(schemas, name)
    assert model.model_config.get("extra") == "forbid"
    assert _declared(request_checks.MODELS[name]) == _model_fields(model)


@pytest.mark.parametrize("name", sorted(answer_shapes.MODELS))
def test_each_answer_shape_has_its_models_fields_order_and_defaults(name: str) -> None:
    model = getattr(schemas, name)
    assert model.model_config.get("extra") == "allow"
    assert _declared(answer_shapes.MODELS[name]) == _model_fields(model)


# Values near every bound and of every JSON type (and some that JSON cannot carry but Python can).
_TEXTS = st.one_of(
    st.text(max_size=6),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=0, max_size=3),
    st.sampled_from(["", "a", "oldest", "newest", "visible", "item", "s3", "\ud800", "x" * 129, "x" * 128]),
)
_NUMBERS = st.one_of(
    st.integers(min_value=-2, max_value=25),
    st.sampled_from(
        [
            limits.MAX_PEEK,
            limits.MAX_RETENTION_SECONDS,
            limits.MAX_RETENTION_SECONDS + 1,
            limits.MAX_VISIBILITY_SECONDS,
            limits.MAX_VISIBILITY_SECONDS + 1,
            2**64,
        ]
    ),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 3.5, -0.0]),
    st.booleans(),
)
_SCALARS = st.one_of(st.none(), _NUMBERS, _TEXTS)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXTS, inner, max_size=3)),
    max_leaves=6,
)


# What a strict field refuses though Python calls it a number or text: bools are ints, 1.0 == 1, lone surrogates.
_NOT_INTS = st.one_of(st.booleans(), st.sampled_from([0.0, 1.0, -0.0, 1e2]))
_NOT_BOOLS = st.one_of(st.integers(0, 1), st.sampled_from([0.0, 1.0, "true", "false", None]))
_NOT_UTF8 = st.sampled_from(["\ud800", "a\udfff", "\udc80" * 2])


def _count(low: int, high: int) -> st.SearchStrategy[Any]:
    return st.one_of(st.integers(low - 1, low + 2), st.integers(high - 1, high + 1), _NOT_INTS)


def _name(high: int) -> st.SearchStrategy[str]:
    return st.one_of(_TEXTS, st.sampled_from(["x" * high, "x" * (high + 1)]), _NOT_UTF8)


def _text_map(high: int) -> st.SearchStrategy[dict[str, Any]]:
    """Maps near the count bound, and maps with one key or value that is not UTF-8 text."""
    texts = st.text(max_size=3)
    return st.one_of(
        st.dictionaries(_TEXTS, _VALUES, max_size=high + 1),
        st.dictionaries(texts, texts, min_size=high, max_size=high + 1),
        st.tuples(_NOT_UTF8, texts).map(lambda pair: {pair[0]: pair[1]}),
        st.tuples(texts, st.one_of(_NOT_UTF8, _NOT_INTS, st.none())).map(lambda pair: {pair[0]: pair[1]}),
    )


def _valid_or_one_wrong(
    fields: Any, valid: dict[str, st.SearchStrategy[Any]], wrong: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[dict[str, Any]]:
    """Half well-formed mappings of `fields` (a table of `request_checks` or `answer_shapes`), half the same with
    one thing wrong: a field given a value near its rule or any value, or a field nobody declared."""
    required = {name: valid[name] for name, (_check, default) in fields.items() if default is request_checks.REQUIRED}
    optional = {name: valid[name] for name in fields if name not in required}
    right = st.fixed_dictionaries(required, optional=optional)
    names = st.sampled_from([*fields, "unknown"])

    def one_wrong(example: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
        return names.flatmap(
            lambda name: st.one_of(wrong.get(name, _VALUES), _VALUES).map(lambda value: {**example, name: value})
        )

    return st.one_of(right, right.flatmap(one_wrong))


_BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_SECONDS = st.one_of(
    st.integers(0, limits.MAX_REPLAY_RUN_SECONDS),
    st.floats(0, limits.MAX_REPLAY_RUN_SECONDS, allow_nan=False),
)
_NEAR_SECONDS = st.one_of(
    st.sampled_from([-1, -0.0, limits.MAX_REPLAY_RUN_SECONDS + 1, 20.000001, float("inf"), "5", "5.0", True, None]),
    st.floats(),
)
# Replay ids of the shape the core issues (`queue_core.keys.REPLAY_ID_PATTERN`), and near it.
_REPLAY_IDS = st.tuples(
    st.text(alphabet="0123456789", min_size=13, max_size=13),
    st.text(alphabet="0123456789abcdef", min_size=12, max_size=12),
).map("-".join)
# Message ids of the shapes the core issues (standard and FIFO), and near them.
_MESSAGE_IDS = st.sampled_from(
    ["S0.1800000000000", "S3.17959214976470000f38542", "F" + "g" * 10 + ".1", "S0.x", "S0." + "9" * 397, "x" * 401]
)
# Receipt handles of the shape the core issues (payload.MAC), and near it.
_HANDLE_SHAPED = st.tuples(
    st.text(alphabet=_BASE64URL, min_size=1, max_size=8), st.text(alphabet=_BASE64URL, min_size=22, max_size=22)
).map(".".join)
# Well-formed values of each request field, and values near its rule (both sides of each bound), by field name.
_VALID_REQUEST_FIELDS = {
    "body": st.text(min_size=1, max_size=5),
    "attributes": st.one_of(st.none(), st.dictionaries(st.text(), st.text(), max_size=limits.MAX_ATTRIBUTES)),
    "attribute_types": st.one_of(st.none(), st.dictionaries(st.text(), st.text(), max_size=limits.MAX_ATTRIBUTES)),
    "delay_seconds": st.one_of(st.none(), st.integers(0, limits.MAX_RETENTION_SECONDS)),
    "deliver_at": st.one_of(st.none(), st.integers(0, 2**40), st.floats(allow_nan=False, allow_infinity=False)),
    "priority": st.one_of(st.none(), st.integers(0, limits.MAX_PRIORITY)),
    "group_id": st.one_of(st.none(), st.text(min_size=1, max_size=limits.MAX_GROUP_ID)),
    "dedup_id": st.one_of(st.none(), st.text(min_size=1, max_size=limits.MAX_DEDUP_ID)),
    "max_messages": st.integers(1, limits.MAX_RECEIVE),
    "visibility_timeout": st.one_of(st.none(), st.integers(0, limits.MAX_VISIBILITY_SECONDS)),
    "wait_seconds": st.integers(0, limits.MAX_WAIT_SECONDS),
    "order": st.sampled_from(["oldest", "newest"]),
    "receipt_handle": _HANDLE_SHAPED,
    "receipt_handles": st.lists(_HANDLE_SHAPED, min_size=1, max_size=limits.MAX_BATCH),
    "reason": st.one_of(st.none(), st.text(max_size=20)),
    "fifo": st.booleans(),
    "content_based_dedup": st.booleans(),
    "queue_wide": st.booleans(),
    "max_receive_count": st.integers(0, limits.MAX_RECEIVE_COUNT),
    "retention_seconds": st.integers(limits.MIN_RETENTION_SECONDS, limits.MAX_RETENTION_SECONDS),
    "dedup_window_seconds": st.integers(0, limits.MAX_DEDUP_WINDOW_SECONDS),
    "shards": st.one_of(st.just("auto"), st.integers(1, limits.MAX_SHARDS)),
    "min_shards": st.integers(1, limits.MAX_SHARDS),
    "max_shards": st.integers(1, limits.MAX_SHARDS),
    "max_message_bytes": st.integers(limits.MIN_MESSAGE_BYTES, limits.MAX_BODY_BYTES),
    "receive_wait_seconds": st.integers(0, limits.MAX_WAIT_SECONDS),
    "archive_days": st.integers(0, limits.MAX_ARCHIVE_DAYS),
    "limit": st.integers(1, limits.MAX_PEEK),
    "state": st.one_of(st.none(), st.sampled_from(["visible", "in_flight", "delayed"])),
    "group": st.one_of(st.none(), st.text(min_size=1, max_size=limits.MAX_GROUP_ID)),
    "cursor": st.one_of(st.none(), st.text(alphabet=_BASE64URL, min_size=1, max_size=12)),
    "since": st.one_of(st.none(), st.integers(0, MAX_EPOCH_MS)),
    "until": st.one_of(st.none(), st.integers(0, MAX_EPOCH_MS)),
    "message_ids": st.one_of(st.none(), st.lists(_MESSAGE_IDS, min_size=1, max_size=3)),
    "rate": st.one_of(st.none(), st.integers(1, limits.MAX_REPLAY_RATE)),
    "source": st.one_of(st.none(), st.sampled_from(["archive", "dlq"])),
    "run_seconds": _SECONDS,
    "seconds": _SECONDS,
    "replay_id": _REPLAY_IDS,
}
_NEAR_REQUEST_FIELDS = {
    "body": st.one_of(_TEXTS, _NOT_UTF8),
    "attributes": _text_map(limits.MAX_ATTRIBUTES),
    "attribute_types": _text_map(limits.MAX_ATTRIBUTES),
    "delay_seconds": _count(0, limits.MAX_RETENTION_SECONDS),
    "deliver_at": st.one_of(st.floats(), _TEXTS, st.booleans(), _NOT_UTF8),
    "priority": _count(0, limits.MAX_PRIORITY),
    "group_id": _name(limits.MAX_GROUP_ID),
    "dedup_id": _name(limits.MAX_DEDUP_ID),
    "max_messages": _count(1, limits.MAX_RECEIVE),
    "visibility_timeout": _count(0, limits.MAX_VISIBILITY_SECONDS),
    "wait_seconds": _count(0, limits.MAX_WAIT_SECONDS),
    "order": st.sampled_from(["Oldest", "", "newest "]),
    "receipt_handle": st.one_of(_TEXTS, _NOT_UTF8, _HANDLE_SHAPED.map(lambda handle: handle + "="), st.just("a.b")),
    "receipt_handles": st.one_of(
        st.lists(st.one_of(_TEXTS, _NOT_UTF8, _NOT_INTS, _HANDLE_SHAPED), max_size=3),
        st.lists(st.just("h"), min_size=limits.MAX_BATCH, max_size=limits.MAX_BATCH + 1),
    ),
    "reason": st.one_of(_TEXTS, _NOT_UTF8, st.just("r" * (64 * 1024)), st.just("r" * (64 * 1024 + 1))),
    "fifo": _NOT_BOOLS,
    "content_based_dedup": _NOT_BOOLS,
    "queue_wide": _NOT_BOOLS,
    "max_receive_count": _count(0, limits.MAX_RECEIVE_COUNT),
    "retention_seconds": _count(limits.MIN_RETENTION_SECONDS, limits.MAX_RETENTION_SECONDS),
    "dedup_window_seconds": _count(0, limits.MAX_DEDUP_WINDOW_SECONDS),
    "shards": st.one_of(_count(1, limits.MAX_SHARDS), st.sampled_from(["Auto", "auto ", "", "5", None])),
    "min_shards": _count(1, limits.MAX_SHARDS),
    "max_shards": _count(1, limits.MAX_SHARDS),
    "max_message_bytes": _count(limits.MIN_MESSAGE_BYTES, limits.MAX_BODY_BYTES),
    "receive_wait_seconds": _count(0, limits.MAX_WAIT_SECONDS),
    "archive_days": _count(0, limits.MAX_ARCHIVE_DAYS),
    "limit": _count(1, limits.MAX_PEEK),
    "state": st.sampled_from(["dlq", "Visible", "", "in flight"]),
    "group": _name(limits.MAX_GROUP_ID),
    "cursor": st.one_of(_TEXTS, _NOT_UTF8, st.sampled_from(["a" * 1000, "a" * 1001, "a=b", "a\n", "a.b"])),
    "since": _count(0, MAX_EPOCH_MS),
    "until": _count(0, MAX_EPOCH_MS),
    "message_ids": st.one_of(
        st.lists(st.one_of(_MESSAGE_IDS, _TEXTS, _NOT_UTF8, _NOT_INTS), max_size=3),
        st.lists(st.just("S0.1800000000000"), min_size=limits.MAX_PEEK, max_size=limits.MAX_PEEK + 1),
    ),
}
_NEAR_REQUEST_FIELDS.update(
    {
        "rate": _count(1, limits.MAX_REPLAY_RATE),
        "source": st.sampled_from(["Archive", "", "dead"]),
        "run_seconds": _NEAR_SECONDS,
        "seconds": _NEAR_SECONDS,
        "replay_id": st.one_of(
            _TEXTS, _NOT_UTF8, _NOT_INTS, st.sampled_from(["1" * 13 + "-" + "a" * 11, "1" * 13 + "-" + "A" * 12])
        ),
    }
)
_NEAR_REQUEST_FIELDS["message_ids"] = st.one_of(
    _NEAR_REQUEST_FIELDS["message_ids"],
    st.lists(st.just("S0.1800000000000"), min_size=limits.MAX_REPLAY_IDS, max_size=limits.MAX_REPLAY_IDS + 1),
)
_NEAR_REQUEST_FIELDS["max_messages"] = st.one_of(
    _NEAR_REQUEST_FIELDS["max_messages"], _count(1, limits.MAX_REDRIVE), st.none()
)
_NEAR_REQUEST_FIELDS["reason"] = st.one_of(_NEAR_REQUEST_FIELDS["reason"], st.sampled_from(["r" * 2048, "r" * 2049]))


def _requests(table: Any) -> st.SearchStrategy[dict[str, Any]]:
    return _valid_or_one_wrong(table.fields, _VALID_REQUEST_FIELDS, _NEAR_REQUEST_FIELDS)


_SEND_MESSAGES = _requests(request_checks.SEND_MESSAGE)
_VALID_REQUEST_FIELDS["messages"] = st.lists(
    _valid_or_one_wrong(request_checks.SEND_MESSAGE.fields, _VALID_REQUEST_FIELDS, {}).filter(
        lambda entry: "unknown" not in entry
    ),
    min_size=1,
    max_size=3,
)
_NEAR_REQUEST_FIELDS["messages"] = st.one_of(
    st.lists(_SEND_MESSAGES, max_size=3), st.lists(st.just({"body": "x"}), min_size=limits.MAX_BATCH + 1)
)
_REQUESTS = {
    "SendMessageRequest": _SEND_MESSAGES,
    "SendBatchRequest": _requests(request_checks.SEND_BATCH),
    "ReceiveRequest": _requests(request_checks.RECEIVE),
    "DeleteRequest": _requests(request_checks.DELETE),
    "VisibilityRequest": _requests(request_checks.VISIBILITY),
    "ReleaseRequest": _requests(request_checks.RELEASE),
    "CreateQueueRequest": _requests(request_checks.CREATE_QUEUE),
    "UpdateQueueRequest": _requests(request_checks.UPDATE_QUEUE),
    "ListRequest": _requests(request_checks.LIST),
    "BrowseRequest": _requests(request_checks.BROWSE),
    "ArchiveRequest": _requests(request_checks.ARCHIVE),
    "RedriveRequest": _requests(request_checks.REDRIVE),
    "ReplayRequest": _requests(request_checks.REPLAY),
    "ReplayRunRequest": _requests(request_checks.REPLAY_RUN),
    "ReplayIdRequest": _requests(request_checks.REPLAY_ID),
    "ReplayListRequest": _requests(request_checks.REPLAY_LIST),
}


@pytest.mark.parametrize("name", sorted(_REQUESTS))
@PROPERTY_SETTINGS
@given(data=st.data())
def test_a_request_check_accepts_only_what_pydantic_accepts_and_holds_it_alike(name: str, data: st.DataObject) -> None:
    body = data.draw(_REQUESTS[name])
    try:
        fast = request_checks.MODELS[name](body)
    except request_checks.Unsure:
        return
    validated = getattr(schemas, name).model_validate(body)
    assert list(validated.model_dump().items()) == list(fast.items())
    assert json.dumps(validated.model_dump()) == json.dumps(fast)


# Values that Python's own checks take for an int or a str, and values just past a length or count bound.
_TRAPS = [
    True,
    False,
    1.0,
    0.0,
    1e2,
    float("nan"),
    "1",
    "",
    "\ud800",
    "x" * (max(limits.MAX_GROUP_ID, limits.MAX_DEDUP_ID) + 1),
    {"k": "\ud800"},
    {"\ud800": "v"},
    {"k": 1},
    {f"k{index}": "v" for index in range(limits.MAX_ATTRIBUTES + 1)},
    [],
    [{"body": "x"}] * (limits.MAX_BATCH + 1),
    None,
]
_SMALLEST = {
    "SendMessageRequest": {"body": "x"},
    "SendBatchRequest": {"messages": [{"body": "x"}]},
    "DeleteRequest": {"receipt_handles": ["h." + "A" * 22]},
    "VisibilityRequest": {"receipt_handle": "h." + "A" * 22, "visibility_timeout": 1},
    "ReleaseRequest": {"receipt_handle": "h." + "A" * 22},
}


def _trapped(name: str) -> list[dict[str, Any]]:
    """The smallest well-formed request of `name` with each field (of a batch's entry too) set to each trap."""
    smallest = _SMALLEST.get(name, {})
    requests = [{**smallest, field: trap} for field in request_checks.MODELS[name].fields for trap in _TRAPS]
    if name == "SendBatchRequest":
        entries = _trapped("SendMessageRequest")
        requests += [{"messages": [entry]} for entry in entries] + [{"messages": [{"body": "x"}, *entries[:3]]}]
    return requests


@pytest.mark.parametrize("name", sorted(request_checks.MODELS))
def test_no_request_check_takes_a_trap_pydantic_refuses_or_holds_otherwise(name: str) -> None:
    """Deterministic where the property above is probabilistic: every field against every trap."""
    for body in _trapped(name):
        try:
            fast = request_checks.MODELS[name](body)
        except request_checks.Unsure:
            continue
        validated = getattr(schemas, name).model_validate(body)  # raises if the check took what pydantic refuses
        assert json.dumps(validated.model_dump()) == json.dumps(fast), body


def test_the_common_requests_are_vouched_for() -> None:
    """Without this the fast path would be correct and useless."""
    assert request_checks.SEND_MESSAGE({"body": "hello"}) == schemas.SendMessageRequest(body="hello").model_dump()
    assert request_checks.SEND_MESSAGE(
        {"body": "é", "attributes": {"k": "v"}, "delay_seconds": 5, "priority": 9, "group_id": "g", "dedup_id": "d"}
    )
    assert request_checks.SEND_BATCH({"messages": [{"body": "a"}, {"body": "b", "deliver_at": 1.5}]})
    assert request_checks.RECEIVE({}) == schemas.ReceiveRequest().model_dump()
    assert request_checks.RECEIVE({"max_messages": 10, "wait_seconds": 20, "visibility_timeout": 30, "order": "newest"})


# Well-formed values of each kind of answer field, and the types pydantic would convert or refuse.
_VALID_ANSWERS = {
    answer_shapes.TEXT: st.text(max_size=5),
    answer_shapes.MAYBE_TEXT: st.one_of(st.none(), st.text(max_size=5)),
    answer_shapes.integer: st.integers(0, 2**40),
    answer_shapes.MAYBE_INT: st.one_of(st.none(), st.integers(0, 2**40)),
    answer_shapes.TEXT_MAP: st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
    answer_shapes.flag: st.booleans(),
}
_NEAR_ANSWERS = {
    answer_shapes.TEXT: st.one_of(_TEXTS, st.integers(0, 3), st.booleans()),
    answer_shapes.MAYBE_TEXT: st.one_of(_TEXTS, st.integers(0, 3)),
    answer_shapes.integer: st.one_of(st.booleans(), st.sampled_from([1.0, 1.5, "1", None])),
    answer_shapes.MAYBE_INT: st.one_of(st.booleans(), st.sampled_from([1.0, "1"])),
    answer_shapes.TEXT_MAP: st.one_of(st.dictionaries(_TEXTS, _VALUES, max_size=2), st.none()),
    answer_shapes.flag: st.one_of(st.integers(0, 1), st.sampled_from(["true", None])),
}
_ANSWER_FIELDS = {
    "state": (st.sampled_from(["visible", "in_flight", "delayed", "dlq"]), st.sampled_from(["gone", None])),
    "body_stored": (st.sampled_from(["item", "compressed", "s3"]), st.sampled_from(["S3", 1])),
    "outcome": (st.sampled_from(["released", "failed", "timed_out", "visibility_expired"]), st.sampled_from(["x", 1])),
}


def _answers(shape: Any, nested: dict[str, Any] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """Answer mappings of `shape`'s fields, well-formed or with one thing wrong, and now and then with fields the
    model does not declare (which it passes through as they are)."""
    valid, wrong = {}, {}
    for name, (write, _default) in shape.fields.items():
        if name in (nested or {}):
            valid[name], wrong[name] = nested[name], _VALUES
        elif name in _ANSWER_FIELDS:
            valid[name], wrong[name] = _ANSWER_FIELDS[name]
        else:
            valid[name], wrong[name] = _VALID_ANSWERS[write], _NEAR_ANSWERS[write]
    examples = _valid_or_one_wrong(shape.fields, valid, wrong)
    extras = st.fixed_dictionaries({}, optional={"extra": _VALUES, "by_priority": _VALUES})
    return st.one_of(examples, st.tuples(examples, extras).map(lambda parts: {**parts[0], **parts[1]}))


_BATCH_PARTS = {
    "successful": st.lists(_answers(answer_shapes.SEND_ENTRY_RESULT), max_size=3),
    "failed": st.lists(_answers(answer_shapes.ENTRY_FAILURE), max_size=2),
}
_REPLAY_ANSWERS = _answers(
    answer_shapes.REPLAY_ANSWER,
    {
        "state": st.sampled_from(["running", "done", "cancelled", "gone"]),
        "source": st.sampled_from(["archive", "dlq", "DLQ"]),
        "message_ids": st.one_of(st.none(), st.lists(st.text(max_size=4), max_size=2)),
    },
)
_ATTEMPTS = {"attempts": st.lists(_answers(answer_shapes.ATTEMPT), max_size=2)}
_ARCHIVED = st.lists(_answers(answer_shapes.ARCHIVED_MESSAGE_ANSWER, _ATTEMPTS), max_size=2)
_ANSWERS = {
    "SendMessageAnswer": _answers(answer_shapes.SEND_MESSAGE_ANSWER, _BATCH_PARTS),
    "SendBatchAnswer": _answers(answer_shapes.SEND_BATCH_ANSWER, _BATCH_PARTS),
    "ReceiveAnswer": _answers(
        answer_shapes.RECEIVE_ANSWER,
        {"messages": st.lists(_answers(answer_shapes.RECEIVED_MESSAGE_ANSWER), max_size=2)},
    ),
    "MessageList": _answers(
        answer_shapes.MESSAGE_LIST,
        {
            "messages": st.lists(
                _answers(answer_shapes.MESSAGE_ANSWER, _ATTEMPTS),
                max_size=2,
            )
        },
    ),
    "QueueStatsAnswer": _answers(answer_shapes.QUEUE_STATS_ANSWER),
    "DeleteAnswer": _answers(
        answer_shapes.DELETE_ANSWER,
        {
            "successful": st.lists(_answers(answer_shapes.DELETE_ENTRY_RESULT), max_size=3),
            "failed": _BATCH_PARTS["failed"],
        },
    ),
    "VisibleAt": _answers(answer_shapes.VISIBLE_AT),
    "Purged": _answers(answer_shapes.PURGED),
    "Deleted": _answers(answer_shapes.DELETED),
    "ClientList": _answers(answer_shapes.CLIENT_LIST, {"clients": st.lists(st.text(max_size=4), max_size=3)}),
    "Moved": _answers(answer_shapes.MOVED),
    "QueueSettingsAnswer": _answers(answer_shapes.QUEUE_SETTINGS_ANSWER),
    "BrowsePageAnswer": _answers(
        answer_shapes.BROWSE_PAGE_ANSWER,
        {"messages": st.lists(_answers(answer_shapes.BROWSED_MESSAGE_ANSWER, _ATTEMPTS), max_size=2)},
    ),
    "ArchivePageAnswer": _answers(answer_shapes.ARCHIVE_PAGE_ANSWER, {"messages": _ARCHIVED}),
    "ArchivedCopies": _answers(answer_shapes.ARCHIVED_COPIES, {"messages": _ARCHIVED}),
    "Redriven": _answers(answer_shapes.REDRIVEN),
    "ReplayAnswer": _REPLAY_ANSWERS,
    "ReplayList": _answers(answer_shapes.REPLAY_LIST, {"replays": st.lists(_REPLAY_ANSWERS, max_size=2)}),
    "DlqReasons": _answers(
        answer_shapes.DLQ_REASONS, {"reasons": st.lists(_answers(answer_shapes.REASON_GROUP), max_size=2)}
    ),
    "SweepAnswer": _answers(
        answer_shapes.SWEEP_ANSWER,
        {
            "depths": st.lists(_answers(answer_shapes.QUEUE_DEPTH), max_size=2),
            "shards": st.lists(_answers(answer_shapes.QUEUE_SHARDS), max_size=2),
            "held": st.lists(_answers(answer_shapes.SHARD_GROWTH_HELD), max_size=2),
        },
    ),
}


@pytest.mark.parametrize("name", sorted(_ANSWERS))
@PROPERTY_SETTINGS
@given(data=st.data())
def test_an_answer_shape_writes_what_its_model_writes(name: str, data: st.DataObject) -> None:
    answer = data.draw(_ANSWERS[name])
    try:
        written = answer_shapes.MODELS[name](answer)
    except request_checks.Unsure:
        return
    model = getattr(schemas, name).model_validate(answer)
    assert json.dumps(written, separators=(",", ":")) == json.dumps(
        model.model_dump(mode="json", by_alias=True), separators=(",", ":")
    )


# Both paths through the real handlers, on moto (tests/functions/conftest.py).


def _both(function: str, event: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(the fast path's answer or None, the validating resolver's answer) to the same event."""
    fast = fast_routes.answer(function, event)
    app = resolver_for(function)
    assert app is not None
    return fast, resolve(app, event, FakeLambdaContext())


def _without_fresh(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: ("fresh" if key in FRESH else _without_fresh(item)) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_fresh(item) for item in value]
    return value


def _masked(text: str, also: frozenset[str] = frozenset()) -> str:
    """The answer's JSON text as written, with the values of `FRESH` fields (and `also`) replaced (escapes and
    order kept)."""
    fields = "|".join(sorted(FRESH | also))
    return re.sub(rf'"({fields})":("[^"]*"|-?\d+|true|false|null)', r'"\1":"fresh"', text)


def _same(fast: dict[str, Any], slow: dict[str, Any], fresh: bool, also: frozenset[str] = frozenset()) -> None:
    assert {**fast, "body": None} == {**slow, "body": None}
    if fresh:
        assert _masked(fast["body"], also) == _masked(slow["body"], also)
    else:
        assert fast["body"] == slow["body"]


def _deduplicated(body: Any) -> bool:
    """Whether a send's body names a dedup id: the second path's send of it is a duplicate of the first's (or both
    are, of an earlier example's), so `duplicate` may differ between the two answers."""
    entries = body.get("messages") if isinstance(body, dict) and isinstance(body.get("messages"), list) else [body]
    return any(isinstance(entry, dict) and entry.get("dedup_id") is not None for entry in entries)


@pytest.fixture
def queues(core: QueueClient) -> QueueClient:
    core.create_queue("orders")
    core.create_queue("jobs.fifo", fifo=True)
    body, attributes, priority = SAME
    core.queue("orders", "c1").send(body, attributes=attributes, priority=priority)
    return core


_SEND_BODIES = st.one_of(_REQUESTS["SendMessageRequest"], _REQUESTS["SendBatchRequest"], _VALUES)
_PATHS = st.sampled_from(["orders", "jobs.fifo", "missing", "bad name", "x" * 81]).flatmap(
    lambda queue: st.sampled_from(["c1", "c2", "bad!", ""]).map(lambda client: f"/queues/{queue}/clients/{client}")
)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(path=_PATHS, body=_SEND_BODIES)
def test_a_send_is_answered_alike_by_both_paths(queues: QueueClient, path: str, body: Any) -> None:
    event = api_event("POST", f"{path}/messages", body)
    fast, slow = _both("producer", event)
    if fast is not None:
        _same(fast, slow, fresh=slow["statusCode"] == 200, also=frozenset({"duplicate"} if _deduplicated(body) else ()))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(path=_PATHS, body=st.one_of(st.none(), _REQUESTS["ReceiveRequest"], _VALUES))
def test_a_receive_is_answered_alike_by_both_paths(queues: QueueClient, path: str, body: Any) -> None:
    if isinstance(body, dict) and body.get("wait_seconds"):
        body = {**body, "wait_seconds": 0}
    wanted = body.get("max_messages") if isinstance(body, dict) else None
    message, attributes, priority = SAME
    for _ in range(2 * (wanted if type(wanted) is int and 1 <= wanted <= limits.MAX_RECEIVE else 1)):
        queues.queue("orders", "c1").send(message, attributes=attributes, priority=priority)
    event = api_event("POST", f"{path}/receive", body)
    fast, slow = _both("poller", event)
    if fast is not None:
        _same(fast, slow, fresh=True)


_LIMITS = st.one_of(st.none(), st.sampled_from(["1", "10", "100", "101", "0", "01", " 5", "+5", "5.0", "1e1", "x"]))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(path=_PATHS, limit=_LIMITS, listing=st.sampled_from([("poller", "messages"), ("dlq_redriver", "dlq")]))
def test_a_listing_is_answered_alike_by_both_paths(
    queues: QueueClient, path: str, limit: str | None, listing: tuple[str, str]
) -> None:
    function, tail = listing
    event = api_event("GET", f"{path}/{tail}", query={"limit": limit} if limit is not None else None)
    fast, slow = _both(function, event)
    if fast is not None:
        _same(fast, slow, fresh=False)


_HANDLES = st.one_of(
    st.just(["forged"]),
    st.lists(_HANDLE_SHAPED, min_size=1, max_size=3),
    st.lists(st.sampled_from(["", "h", "\ud800", "x" * 200]), max_size=3),
    st.just(["h"] * (limits.MAX_BATCH + 1)),
)
_SETTLING = st.one_of(
    st.fixed_dictionaries({"receipt_handles": _HANDLES}),
    st.fixed_dictionaries(
        {
            "receipt_handle": st.one_of(st.sampled_from(["forged", "", "\ud800"]), _HANDLE_SHAPED),
            "visibility_timeout": _count(0, 43_200),
        }
    ),
    _VALUES,
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    path=_PATHS,
    route=st.sampled_from(
        [
            ("poller", "POST", "delete"),
            ("poller", "POST", "visibility"),
            ("poller", "GET", "stats"),
            ("poller", "DELETE", "messages"),
        ]
    ),
    body=st.one_of(st.none(), _SETTLING),
    query=st.one_of(st.none(), st.just({"limit": "5"})),
)
def test_a_route_of_a_sub_queue_is_answered_alike_by_both_paths(
    queues: QueueClient, path: str, route: tuple[str, str, str], body: Any, query: dict[str, str] | None
) -> None:
    """Settling forged handles, stats, and a purge of a sub-queue with nothing to purge (`c2`, or one that does not
    exist) change nothing, so both paths meet the same state."""
    function, method, tail = route
    if tail == "messages" and "/clients/c1" in path:
        path = path.replace("/clients/c1", "/clients/c2")
    event = api_event(method, f"{path}/{tail}", body, query=query)
    fast, slow = _both(function, event)
    if fast is not None:
        _same(fast, slow, fresh=False)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    queue=st.sampled_from(["orders", "missing", "bad name", "x" * 81]),
    route=st.sampled_from([("POST", "delete"), ("POST", "visibility"), ("POST", "receive"), ("GET", "clients")]),
    body=st.one_of(st.none(), _SETTLING, st.just({}), st.just({"max_messages": 2})),
)
def test_a_route_of_a_whole_queue_is_answered_alike_by_both_paths(
    queues: QueueClient, queue: str, route: tuple[str, str], body: Any
) -> None:
    method, tail = route
    if tail == "receive":  # both receive the same kind of message: either may get any
        for _ in range(4):
            queues.queue("orders", "c1").send(SAME[0], attributes=SAME[1], priority=SAME[2])
    fast, slow = _both(
        "poller" if tail != "clients" else "producer", api_event(method, f"/queues/{queue}/{tail}", body)
    )
    if fast is not None:
        _same(fast, slow, fresh=tail == "receive")


@pytest.mark.parametrize("path", ["/queues", "/queues/orders", "/queues/jobs.fifo", "/queues/missing", "/queues/a b"])
@pytest.mark.parametrize("query", [None, {"limit": "2"}])
def test_a_queue_and_the_list_of_queues_are_answered_alike_by_both_paths(
    queues: QueueClient, path: str, query: dict[str, str] | None
) -> None:
    event = api_event("GET", path)
    if query:
        event["queryStringParameters"] = query
    fast, slow = _both("producer", event)
    if query or path == "/queues/a b":
        assert fast is None  # left to the resolver
        return
    assert fast is not None
    # A queue's description carries its oldest message's age in seconds, read by each path in turn: on a loaded
    # machine the two reads straddle a second (the answers differed there once in a full run).
    _same(fast, slow, fresh=True)


def test_the_openapi_document_is_served_as_the_resolver_serves_it(monkeypatch: pytest.MonkeyPatch) -> None:
    fast, slow = _both("producer", api_event("GET", "/openapi.json"))
    assert fast is not None
    _same(fast, slow, fresh=False)
    assert fast_routes.answer("producer", api_event("GET", "/openapi.json", {"x": 1})) is None
    monkeypatch.setattr(fast_routes, "SERVED", ROOT / "no" / "such" / "file.json")
    assert fast_routes.answer("producer", api_event("GET", "/openapi.json")) is None


_NEW_QUEUES = itertools.count()


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    name=st.sampled_from(["new", "new", "orders", "jobs.fifo", "bad name", "x" * 81]),
    body=st.one_of(st.none(), _REQUESTS["CreateQueueRequest"], _VALUES),
)
def test_a_queue_creation_is_answered_alike_by_both_paths(queues: QueueClient, name: str, body: Any) -> None:
    """A new queue: each path creates its own, of names of one length, so the answers differ only by the name and
    the creation time; an existing queue: both meet it as it is (its own settings 200, others 409)."""
    number = next(_NEW_QUEUES)
    fast_name, slow_name = (f"new-f{number}", f"new-s{number}") if name == "new" else (name, name)
    fast = fast_routes.answer("producer", api_event("PUT", f"/queues/{fast_name}", body))
    if fast is None:
        return
    slow = resolve(resolver_for("producer"), api_event("PUT", f"/queues/{slow_name}", body), FakeLambdaContext())
    _same(fast, {**slow, "body": slow["body"].replace(slow_name, fast_name)}, fresh=True)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    name=st.sampled_from(["twin", "twin", "jobs.fifo", "missing", "bad name"]),
    body=st.one_of(st.none(), _REQUESTS["UpdateQueueRequest"], _VALUES, st.just({"fifo": True})),
)
def test_a_queue_update_is_answered_alike_by_both_paths(queues: QueueClient, name: str, body: Any) -> None:
    """Each path changes its own of two queues created alike and changed alike (a change the fast path left to
    the resolver is made to neither)."""
    for twin in ("twin-f", "twin-s"):
        with contextlib.suppress(QueueExists):
            queues.create_queue(twin)
    fast_name, slow_name = ("twin-f", "twin-s") if name == "twin" else (name, name)
    fast = fast_routes.answer("producer", api_event("PATCH", f"/queues/{fast_name}", body))
    if fast is None:
        return
    slow = resolve(resolver_for("producer"), api_event("PATCH", f"/queues/{slow_name}", body), FakeLambdaContext())
    _same(fast, {**slow, "body": slow["body"].replace(slow_name, fast_name)}, fresh=True)


def test_a_queue_is_created_and_changed_through_the_fast_path(queues: QueueClient) -> None:
    """201 when created, 200 when it existed with these settings; only the fields given are passed on."""
    created = fast_routes.answer("producer", api_event("PUT", "/queues/made", {"fifo": False, "shards": 4}))
    assert created is not None and created["statusCode"] == 201
    assert json.loads(created["body"])["shards"] == 4 and not json.loads(created["body"])["auto_shards"]
    again = fast_routes.answer("producer", api_event("PUT", "/queues/made", {"shards": 4}))
    assert again is not None and again["statusCode"] == 200
    empty = fast_routes.answer("producer", api_event("PUT", "/queues/plain"))
    assert empty is not None and empty["statusCode"] == 201 and json.loads(empty["body"])["auto_shards"]
    changed = fast_routes.answer("producer", api_event("PATCH", "/queues/made", {"visibility_timeout": 45}))
    assert changed is not None and json.loads(changed["body"])["visibility_timeout"] == 45
    assert queues.get_queue("made").visibility_timeout == 45 and queues.get_queue("made").shards == 4


@pytest.fixture
def archived(queues: QueueClient) -> dict[str, Any]:
    """A queue that keeps an archive, with acknowledged messages of two clients and one still waiting; the ids
    and cursors the routes of the archive and browse give."""
    queues.create_queue("kept", archive_days=1)
    ids = []
    for client in ("c1", "c1", "c2"):
        sub_queue = queues.queue("kept", client)
        ids.append(sub_queue.send(f"to {client}", attributes={"k": client}).message_id)
        (held,) = sub_queue.receive()
        sub_queue.delete(held.receipt_handle)
    queues.queue("kept", "c1").send("waiting")
    queues.queue("orders", "c1").send("second")
    cursors = [
        queues.queue("kept", "c1").archive_list(limit=1).cursor,
        queues.queue_wide("kept").archive_list(limit=1).cursor,
        queues.queue("orders", "c1").browse(limit=1).cursor,
    ]
    replay = queues.queue("kept", "c1").replay_start(message_ids=ids[:1])
    queues.queue("kept", "c1").replay_run(replay.replay_id, 1)
    return {"ids": ids, "cursors": [cursor for cursor in cursors if cursor], "replay": replay.replay_id}


_QUERY_VALUES = st.one_of(
    st.sampled_from(
        ["1", "2", "10", "100", "101", "0", "01", "-1", "+1", " 1", "1.0", "9" * 13, "1" + "0" * 13, "9" * 20]
    ),
    st.sampled_from(["visible", "in_flight", "delayed", "dlq", "newest", "oldest", "Newest", "", "g", "x" * 129]),
    _TEXTS,
)
_QUERY_NAMES = st.sampled_from(["limit", "state", "priority", "group", "cursor", "since", "until", "order", "other"])


@settings(max_examples=examples(100), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    queue=st.sampled_from(["kept", "orders", "jobs.fifo", "missing", "bad name"]),
    client=st.sampled_from(["c1", "c2", "c9", "bad!"]),
    tail=st.sampled_from(["clients/{c}/browse", "clients/{c}/archive", "archive", "clients/{c}/archive/{id}"]),
    query=st.one_of(st.none(), st.dictionaries(_QUERY_NAMES, _QUERY_VALUES, max_size=3)),
    pick=st.integers(0, 10),
    cursor=st.booleans(),
    body=st.one_of(st.none(), st.just({})),
)
def test_a_look_at_waiting_or_archived_messages_is_answered_alike_by_both_paths(
    archived: dict[str, Any],
    queue: str,
    client: str,
    tail: str,
    query: dict[str, str] | None,
    pick: int,
    cursor: bool,
    body: Any,
) -> None:
    """Browse, the archive of a client and of a queue, an archived message by id: reads, so both paths meet the
    same state; real cursors and ids among the generated ones."""
    ids = [*archived["ids"], "S0.1800000000000", "not an id", "x" * 401]
    if cursor and archived["cursors"]:
        query = {**(query or {}), "cursor": archived["cursors"][pick % len(archived["cursors"])]}
    path = f"/queues/{queue}/" + tail.format(c=client, id=ids[pick % len(ids)])
    fast, slow = _both("poller", api_event("GET", path, body, query=query))
    if fast is not None:
        _same(fast, slow, fresh=False)


def test_waiting_and_archived_messages_are_looked_at_through_the_fast_path(archived: dict[str, Any]) -> None:
    """Without this the alike-answers test could pass by leaving everything to the resolver."""
    first = archived["ids"][0]
    for path, query in (
        ("/queues/kept/clients/c1/browse", None),
        ("/queues/kept/clients/c1/browse", {"limit": "1", "state": "visible"}),
        ("/queues/kept/clients/c1/archive", {"order": "oldest", "since": "0", "limit": "5"}),
        ("/queues/kept/archive", None),
        (f"/queues/kept/clients/c1/archive/{first}", None),
    ):
        fast, slow = _both("poller", api_event("GET", path, query=query))
        assert fast is not None and fast["statusCode"] == 200, path
        _same(fast, slow, fresh=False)
        assert json.loads(fast["body"])["messages"], path


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    path=st.one_of(_PATHS, st.just("/queues/orders/clients/dead")),
    route=st.sampled_from([("POST", "dlq/redrive"), ("GET", "dlq/reasons")]),
    body=st.one_of(st.none(), _REQUESTS["RedriveRequest"], _VALUES),
)
def test_a_redrive_and_the_dlqs_reasons_are_answered_alike_by_both_paths(
    queues: QueueClient, path: str, route: tuple[str, str], body: Any
) -> None:
    """The reasons of a DLQ with dead letters, and redrives of DLQs with nothing to redrive (`c1` and `c2` have
    no dead letters, `dead`'s are only looked at), change nothing."""
    dead = queues.queue("orders", "dead")
    if not dead.dlq_list(1):
        for reason in ("timed out", "bad input", "bad input"):
            sent = dead.send("poison").message_id
            (held,) = dead.receive()
            dead.release(held.receipt_handle, 0, reason)
            dead.move_to_dlq(sent)
    method, tail = route
    if method == "POST" and path.endswith("/dead"):
        path = path.replace("/dead", "/c2")
    fast, slow = _both("dlq_redriver", api_event(method, f"{path}/{tail}", body if method == "POST" else None))
    if fast is not None:
        _same(fast, slow, fresh=False)


def test_dead_letters_are_redriven_through_the_fast_path(queues: QueueClient) -> None:
    sub_queue = queues.queue("orders", "c3")
    for _ in range(3):
        sent = sub_queue.send("poison").message_id
        (held,) = sub_queue.receive()
        sub_queue.release(held.receipt_handle, 0, "bad input")
        sub_queue.move_to_dlq(sent)
    path = "/queues/orders/clients/c3"
    reasons, slow = _both("dlq_redriver", api_event("GET", f"{path}/dlq/reasons"))
    assert reasons is not None and reasons == slow
    assert [(group["reason"], group["count"]) for group in json.loads(reasons["body"])["reasons"]] == [("bad input", 3)]
    oldest = fast_routes.answer("dlq_redriver", api_event("POST", f"{path}/dlq/redrive", {"max_messages": 1}))
    assert oldest is not None and json.loads(oldest["body"]) == {"redriven": 1}
    rest = fast_routes.answer("dlq_redriver", api_event("POST", f"{path}/dlq/redrive"))
    assert rest is not None and json.loads(rest["body"]) == {"redriven": 2}
    assert sub_queue.stats().dlq == 0 and sub_queue.stats().visible == 3


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    queue=st.sampled_from(["kept", "kept", "orders", "missing", "bad name"]),
    body=st.one_of(st.none(), _REQUESTS["ReplayRequest"], _VALUES),
)
def test_a_replay_start_is_answered_alike_by_both_paths(archived: dict[str, Any], queue: str, body: Any) -> None:
    """Each path starts its own replay, into one of two clients of names of one length; it runs for no time (a
    run of seconds is left to the test below)."""
    if isinstance(body, dict) and type(body.get("run_seconds")) in (int, float) and body["run_seconds"] > 0:
        body = {**body, "run_seconds": type(body["run_seconds"])(0)}
    fast = fast_routes.answer("dlq_redriver", api_event("POST", f"/queues/{queue}/clients/twin-f/replays", body))
    if fast is None:
        return
    event = api_event("POST", f"/queues/{queue}/clients/twin-s/replays", body)
    slow = resolve(resolver_for("dlq_redriver"), event, FakeLambdaContext())
    _same(fast, {**slow, "body": slow["body"].replace("twin-s", "twin-f")}, fresh=True)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    queue=st.sampled_from(["kept", "orders", "missing", "bad name"]),
    route=st.sampled_from([("GET", "replays"), ("POST", "replays/run"), ("POST", "replays/cancel")]),
    known=st.booleans(),
    body=st.one_of(st.none(), _REQUESTS["ReplayRunRequest"], _REQUESTS["ReplayIdRequest"], _VALUES),
    query=st.one_of(
        st.none(),
        st.dictionaries(st.sampled_from(["replay_id", "limit", "other"]), st.one_of(_QUERY_VALUES, _REPLAY_IDS)),
    ),
)
def test_a_replays_listing_run_or_cancel_is_answered_alike_by_both_paths(
    archived: dict[str, Any],
    queue: str,
    route: tuple[str, str],
    known: bool,
    body: Any,
    query: dict[str, str] | None,
) -> None:
    """Listings of a sub-queue with a finished replay (a real id among the generated ones), and runs and cancels
    of replays that do not exist (or of a finished one: both answer it as it stands) change nothing."""
    if known:
        key = "replay_id"
        if route[0] == "GET":
            query = {**(query or {}), key: archived["replay"]}
        elif isinstance(body, dict):
            body = {**body, key: archived["replay"]}
    method, tail = route
    event = api_event(method, f"/queues/{queue}/clients/c1/{tail}", body if method == "POST" else None, query=query)
    fast, slow = _both("dlq_redriver", event)
    if fast is not None:
        _same(fast, slow, fresh=False)


def test_a_replay_is_started_run_listed_and_cancelled_through_the_fast_path(archived: dict[str, Any]) -> None:
    path = "/queues/kept/clients/c1/replays"
    started = fast_routes.answer("dlq_redriver", api_event("POST", path, {"since": 0, "rate": 5}))
    assert started is not None and started["statusCode"] == 200
    replay = json.loads(started["body"])
    assert replay["state"] == "running" and replay["rate"] == 5
    listed, slow = _both("dlq_redriver", api_event("GET", path, query={"replay_id": replay["replay_id"]}))
    assert listed is not None and listed == slow
    ran = fast_routes.answer("dlq_redriver", api_event("POST", f"{path}/run", {"replay_id": replay["replay_id"]}))
    assert ran is not None and json.loads(ran["body"])["replayed"] == 2
    again = fast_routes.answer("dlq_redriver", api_event("POST", path, {"run_seconds": 1}))
    assert again is not None and json.loads(again["body"])["state"] == "done"
    running = json.loads(fast_routes.answer("dlq_redriver", api_event("POST", path))["body"])
    cancelled = fast_routes.answer(
        "dlq_redriver", api_event("POST", f"{path}/cancel", {"replay_id": running["replay_id"]})
    )
    assert cancelled is not None and json.loads(cancelled["body"])["state"] == "cancelled"
    everything, slow = _both("dlq_redriver", api_event("GET", path, query={"limit": "10"}))
    assert everything is not None and everything == slow and len(json.loads(everything["body"])["replays"]) == 4


_IDS = st.sampled_from(["S0.1800000000000", "S0.x", "F" + "g" * 10 + ".1", "not an id", "S0." + "9" * 41, "x" * 401])


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    path=_PATHS,
    message_id=_IDS,
    route=st.sampled_from([("poller", "GET", ""), ("poller", "DELETE", ""), ("dlq_redriver", "POST", "/dlq")]),
)
def test_a_route_of_a_message_id_is_answered_alike_by_both_paths(
    queues: QueueClient, path: str, message_id: str, route: tuple[str, str, str]
) -> None:
    """Ids that name no message (or are not ids): looking, cancelling and moving change nothing."""
    function, method, tail = route
    fast, slow = _both(function, api_event(method, f"{path}/messages/{message_id}{tail}"))
    if fast is not None:
        _same(fast, slow, fresh=False)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    path=st.one_of(_PATHS, st.sampled_from(["/queues/orders", "/queues/missing"])),
    body=st.one_of(
        st.fixed_dictionaries(
            {"receipt_handle": st.one_of(st.just(FORGED), _HANDLE_SHAPED)},
            optional={
                "delay_seconds": st.one_of(st.none(), _count(0, 43_200)),
                "reason": st.one_of(st.none(), _TEXTS),
            },
        ),
        _VALUES,
    ),
)
def test_a_release_is_answered_alike_by_both_paths(queues: QueueClient, path: str, body: Any) -> None:
    fast, slow = _both("poller", api_event("POST", f"{path}/release", body))
    if fast is not None:
        _same(fast, slow, fresh=False)


def test_a_message_is_looked_at_released_moved_and_cancelled_through_the_fast_path(queues: QueueClient) -> None:
    sub_queue = queues.queue("orders", "c1")
    path = "/queues/orders/clients/c1"
    sent = sub_queue.send("look at me").message_id
    looked = fast_routes.answer("poller", api_event("GET", f"{path}/messages/{sent}"))
    _, slow = _both("poller", api_event("GET", f"{path}/messages/{sent}"))
    assert looked == slow and json.loads(looked["body"])["state"] == "visible"
    held = sub_queue.receive(max_messages=10)
    mine = next(message for message in held if message.message_id == sent)
    released = fast_routes.answer(
        "poller",
        api_event(
            "POST", f"{path}/release", {"receipt_handle": mine.receipt_handle, "delay_seconds": 0, "reason": "why"}
        ),
    )
    assert released is not None and released["statusCode"] == 200
    moved = fast_routes.answer("dlq_redriver", api_event("POST", f"{path}/messages/{sent}/dlq"))
    assert moved is not None and json.loads(moved["body"]) == {"moved": True}
    cancelled = fast_routes.answer("poller", api_event("DELETE", f"{path}/messages/{sent}"))
    assert cancelled is not None and json.loads(cancelled["body"]) == {"deleted": True}


def test_the_added_routes_settle_stats_purge_and_delete_through_the_fast_path(queues: QueueClient) -> None:
    """What the alike-answers tests cannot compare (each path changes the state the other would see): a real
    delete, visibility change, purge and queue deletion, through the fast path, as the resolver answers them."""
    sub_queue = queues.queue("orders", "c1")
    path = "/queues/orders/clients/c1"
    first, second = sub_queue.receive(max_messages=1), None
    sub_queue.send("second")
    second = sub_queue.receive(max_messages=1)
    visibility = {"receipt_handle": second[0].receipt_handle, "visibility_timeout": 100}
    moved = fast_routes.answer("poller", api_event("POST", f"{path}/visibility", visibility))
    assert moved is not None and moved["statusCode"] == 200 and set(json.loads(moved["body"])) == {"visible_at"}
    deleted = fast_routes.answer(
        "poller", api_event("POST", f"{path}/delete", {"receipt_handles": [first[0].receipt_handle]})
    )
    assert deleted is not None and json.loads(deleted["body"]) == {"successful": [{"index": 0}], "failed": []}
    stats = fast_routes.answer("poller", api_event("GET", f"{path}/stats"))
    assert stats is not None and json.loads(stats["body"])["in_flight"] == 1
    purged = fast_routes.answer("poller", api_event("DELETE", f"{path}/messages"))
    assert purged is not None and json.loads(purged["body"]) == {"purged": 1}
    clients = fast_routes.answer("producer", api_event("GET", "/queues/orders/clients"))
    assert clients is not None and json.loads(clients["body"]) == {"clients": ["c1"]}
    gone = fast_routes.answer("producer", api_event("DELETE", "/queues/orders"))
    assert gone is not None and json.loads(gone["body"]) == {"deleted": True}
    again = fast_routes.answer("producer", api_event("DELETE", "/queues/orders"))
    _, slow = _both("producer", api_event("DELETE", "/queues/orders"))
    assert again == slow and again["statusCode"] == 404


def test_a_listing_without_a_limit_takes_the_routes_default() -> None:
    """The default is written in the fast route as in the query parameter and the invoke model; the listings
    compared above hold too few messages to tell them apart."""
    from queue_api import http

    default = http.QUERY_PARAMETERS["limit"].default
    assert default == schemas.ListRequest().limit
    for name, tail in (("peek", "messages"), ("list_dlq", "dlq")):
        assert fast_routes.FAST_ROUTES[name].check(api_event("GET", f"/queues/q/clients/c/{tail}")) == default


def test_the_query_checks_read_each_parameter_as_the_route_declares_it() -> None:
    """The fast checks of a query string read the parameters the route declares (`queue_api.http`), numbers as
    numbers, with the same defaults; the request tables are held against the models above."""
    from queue_api import http
    from queue_api.operations import ROUTES

    for name, parameter in http.QUERY_PARAMETERS.items():
        declared = typing.get_args(parameter.annotation)[0]
        assert (declared is int or int in typing.get_args(declared)) == (name in request_checks.QUERY_NUMBERS), name
    for operation in ROUTES:
        if operation.query and operation.name in fast_routes.FAST_ROUTES:
            table = request_checks.MODELS[operation.request]
            assert list(table.fields) == list(operation.query), operation.name
            for name, (_check, default) in table.fields.items():
                assert http.QUERY_PARAMETERS[name].default == default, (operation.name, name)


def test_the_fast_path_answers_the_common_requests_and_leaves_the_rest(queues: QueueClient) -> None:
    sub_queue = "/queues/orders/clients/c1"
    answered = [
        ("producer", api_event("POST", f"{sub_queue}/messages", {"body": "hi"})),
        ("producer", api_event("POST", f"{sub_queue}/messages", {"messages": [{"body": "a"}]})),
        ("poller", api_event("POST", f"{sub_queue}/receive", None)),
        ("poller", api_event("GET", f"{sub_queue}/messages", query={"limit": "5"})),
        ("dlq_redriver", api_event("GET", f"{sub_queue}/dlq")),
        ("producer", api_event("POST", "/queues/missing/clients/c1/messages", {"body": "hi"})),
    ]
    for function, event in answered:
        assert fast_routes.answer(function, event) is not None, event["path"]
    left = [
        ("producer", api_event("POST", f"{sub_queue}/messages", {"body": ""})),
        ("producer", api_event("POST", f"{sub_queue}/messages", {"body": "hi", "priority": "3"})),
        ("producer", api_event("POST", f"{sub_queue}/messages", raw_body="{")),
        ("producer", api_event("GET", "/openapi.json", query={"format": "yaml"})),
        ("producer", api_event("POST", "/queues/bad name/clients/c1/messages", {"body": "hi"})),
        ("poller", api_event("POST", f"{sub_queue}/messages", {"body": "hi"})),
        ("poller", api_event("POST", f"{sub_queue}/receive", {"max_messages": 11})),
        ("poller", api_event("GET", f"{sub_queue}/messages", query={"limit": "0"})),
        ("poller", api_event("GET", f"{sub_queue}/messages/", query={"limit": "5"})),
    ]
    for function, event in left:
        assert fast_routes.answer(function, event) is None, (event["path"], event["body"])


# One process loads what each first request's process loaded before its handler (moto, the core, a table with a
# queue) and forks a fresh child for each request: the child imports the handler and answers its first request,
# as a cold container would, and the modules it loads are its own. A process per request cost a second each.
_FIRST_ANSWERS = """
import json, os, sys
from moto import mock_aws
from tests.conftest import examples
from tests.events import FakeLambdaContext, api_event

with mock_aws():
    from queue_core import QueueClient
    core = QueueClient(os.environ["TABLE_NAME"])
    core.create_table()
    core.create_queue("orders")
    for line in sys.stdin:
        number, function, request = json.loads(line)
        child = os.fork()
        if child == 0:
            try:
                handler = __import__(f"functions.{function}.handler", fromlist=["lambda_handler"])
                event = api_event(*request) if isinstance(request, list) else request
                answer = handler.lambda_handler(event, FakeLambdaContext())
                status = answer.get("statusCode", answer.get("status", 200))
                # A first answer without pydantic builds no resolver: Powertools' event handler is not imported.
                assert "pydantic" in sys.modules or "aws_lambda_powertools.event_handler" not in sys.modules
                found = [status, "pydantic" in sys.modules]
            except BaseException as error:
                found = ["failed", repr(error)]
            sys.stdout.write("ANSWER " + json.dumps([number, found]) + "\\n")
            sys.stdout.flush()
            os._exit(0)
        _, status = os.waitpid(child, 0)
        if status:  # it died before it could answer (a signal, a crash of the interpreter)
            sys.stdout.write("ANSWER " + json.dumps([number, ["ended", os.waitstatus_to_exitcode(status)]]) + "\\n")
            sys.stdout.flush()
"""


@pytest.fixture(scope="module")
def first_answer() -> typing.Iterator[typing.Callable[[str, Any], Any]]:
    """Answers `[status, pydantic loaded]` for a function's first request, each in a process of its own."""
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "queue_core" / "python"), str(ROOT)]),
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "TABLE_NAME": TABLE,
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    environment.pop("AWS_ENDPOINT_URL_DYNAMODB", None)
    command = [sys.executable, "-c", _FIRST_ANSWERS]
    server = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment, cwd=ROOT
    )
    assert server.stdin is not None and server.stdout is not None
    answers: queue.Queue[Any] = queue.Queue()
    stdout = server.stdout

    def read() -> None:
        for line in stdout:
            if line.startswith("ANSWER "):
                answers.put(json.loads(line.removeprefix("ANSWER ")))
        answers.put(None)  # the server ended

    threading.Thread(target=read, daemon=True).start()
    numbers = itertools.count()

    def ask(function: str, request: Any) -> Any:
        number = next(numbers)
        server.stdin.write(json.dumps([number, function, request]) + "\n")
        server.stdin.flush()
        deadline = time.monotonic() + 120
        while True:
            try:
                answer = answers.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no answer to {function} {request} within 120 s") from None
            if answer is None:
                raise AssertionError(f"the first-request process ended: {server.wait(timeout=10)}")
            if answer[0] == number:  # an earlier request's late answer is not this one's
                return answer[1]

    try:
        yield ask
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.mark.parametrize(
    ("function", "request_line", "expected"),
    [
        ("producer", ["POST", "/queues/orders/clients/c1/messages", {"body": "hi"}], [200, False]),
        ("poller", ["POST", "/queues/orders/clients/c1/receive", {}], [200, False]),
        ("dlq_redriver", ["GET", "/queues/orders/clients/c1/dlq"], [200, False]),
        ("producer", ["POST", "/queues/orders/clients/c1/messages", {"body": ""}], [400, True]),
        ("poller", ["GET", "/queues/orders/clients/c1/stats"], [200, False]),
        ("poller", ["DELETE", "/queues/orders/clients/c1/messages"], [200, False]),
        ("poller", ["POST", "/queues/orders/clients/c1/delete", {"receipt_handles": [FORGED]}], [200, False]),
        (
            "poller",
            ["POST", "/queues/orders/visibility", {"receipt_handle": FORGED, "visibility_timeout": 5}],
            [400, False],
        ),
        ("poller", ["POST", "/queues/orders/receive", {}], [200, False]),
        ("producer", ["GET", "/queues/orders/clients"], [200, False]),
        ("producer", ["GET", "/queues/orders"], [200, False]),
        ("producer", ["GET", "/queues"], [200, False]),
        ("producer", ["GET", "/queues/missing"], [404, False]),
        ("poller", ["GET", "/queues/orders/clients/c1/messages/S0.1800000000000"], [404, False]),
        ("poller", ["POST", "/queues/orders/clients/c1/release", {"receipt_handle": FORGED}], [400, False]),
        ("dlq_redriver", ["POST", "/queues/orders/clients/c1/messages/S0.1800000000000/dlq"], [404, False]),
        ("producer", ["PUT", "/queues/made", {"visibility_timeout": 40}], [201, False]),
        ("producer", ["PUT", "/queues/orders", {}], [200, False]),
        ("producer", ["PUT", "/queues/orders", {"fifo": "yes"}], [400, True]),
        ("producer", ["PATCH", "/queues/orders", {"visibility_timeout": 40}], [200, False]),
        ("poller", ["GET", "/queues/orders/clients/c1/browse"], [200, False]),
        ("poller", ["GET", "/queues/orders/clients/c1/archive"], [200, False]),
        ("poller", ["GET", "/queues/orders/archive"], [200, False]),
        ("poller", ["GET", "/queues/orders/clients/c1/archive/S0.1800000000000"], [404, False]),
        ("producer", ["GET", "/openapi.json"], [200, False]),
        ("dlq_redriver", ["POST", "/queues/orders/clients/c1/dlq/redrive", {}], [200, False]),
        ("dlq_redriver", ["GET", "/queues/orders/clients/c1/dlq/reasons"], [200, False]),
        ("dlq_redriver", ["POST", "/queues/orders/clients/c1/replays", {}], [400, False]),
        ("dlq_redriver", ["GET", "/queues/orders/clients/c1/replays"], [200, False]),
        (
            "dlq_redriver",
            ["POST", "/queues/orders/clients/c1/replays/cancel", {"replay_id": "1" * 13 + "-" + "a" * 12}],
            [404, False],
        ),
        ("producer", ["DELETE", "/queues/orders"], [200, False]),
        ("visibility_sweeper", {"action": "sweep"}, [200, False]),
        ("visibility_sweeper", {"action": "sweep", "budget_seconds": 5}, [200, True]),
    ],
)
def test_a_well_formed_first_request_does_not_load_pydantic(
    function: str, request_line: list[Any] | dict[str, Any], expected: list[Any], first_answer: Any
) -> None:
    assert first_answer(function, request_line) == expected


@pytest.mark.parametrize("tail", ["messages", "receive"])
def test_json_too_deep_for_the_parser_is_left_to_the_resolver(queues: QueueClient, tail: str) -> None:
    depth = 100_000  # far past the interpreter's recursion limit
    event = api_event("POST", f"/queues/orders/clients/c1/{tail}", raw_body="[" * depth + "]" * depth)
    function = "producer" if tail == "messages" else "poller"
    fast, slow = _both(function, event)
    assert fast is None
    assert answer_http(function, event, FakeLambdaContext()) == slow
    assert (slow["statusCode"], json.loads(slow["body"])["error"]["code"]) == (400, "ValidationError")


def test_json_just_within_the_parsers_depth_is_refused_not_a_500(queues: QueueClient) -> None:
    """A depth the check's own parse takes can still be past the limit where Powertools parses, deeper in the
    stack: every depth near the interpreter's limit is a 400, none a 500."""
    before = queues.queue("orders", "c1").stats().to_dict()
    limit = sys.getrecursionlimit()
    for depth in range(limit - 200, limit + 1, 2):
        body = '{"body": "x", "attributes": ' + '{"a": ' * depth + "1" + "}" * depth + "}"
        event = api_event("POST", "/queues/orders/clients/c1/messages", raw_body=body)
        answer = answer_http("producer", event, FakeLambdaContext())
        assert answer["statusCode"] == 400, (depth, answer["body"])
    assert queues.queue("orders", "c1").stats().to_dict() == before


@pytest.mark.parametrize(
    ("function", "tail", "body"),
    [
        ("producer", "messages", [{"body": "first"}, {"garbage": 1}]),
        ("producer", "messages", [{"body": "first"}]),
        ("poller", "receive", [{"max_messages": 2}, "junk"]),
    ],
)
def test_a_body_that_is_a_json_array_is_refused_and_changes_nothing(
    queues: QueueClient, function: str, tail: str, body: list[Any]
) -> None:
    """Powertools would read a top-level array as its first element: a 200 that sent one message of several."""
    queues.queue("orders", "c1").send("waiting")
    before = queues.queue("orders", "c1").stats().to_dict()
    event = api_event("POST", f"/queues/orders/clients/c1/{tail}", raw_body=json.dumps(body))
    answer = answer_http(function, event, FakeLambdaContext())
    assert (answer["statusCode"], json.loads(answer["body"])["error"]["code"]) == (400, "ValidationError")
    assert "JSON array" in json.loads(answer["body"])["error"]["message"]
    assert queues.queue("orders", "c1").stats().to_dict() == before


@pytest.mark.parametrize(
    "event",
    [
        api_event("POST", "/queues/orders/clients/c1/messages", {"body": "hi"}),
        api_event("POST", "/queues/orders/clients/c1/messages", raw_body="hi", headers={"Content-Type": "text/plain"}),
        api_event("POST", "/queues/orders/clients/c1/messages", raw_body="x" * (MAX_REQUEST_BYTES + 1)),
    ],
    ids=["well-formed", "not-json", "too-large"],
)
def test_a_function_without_routes_answers_404_before_looking_at_the_body(event: dict[str, Any]) -> None:
    answer = answer_http("visibility_sweeper", event, FakeLambdaContext())
    assert (answer["statusCode"], json.loads(answer["body"])["error"]["code"]) == (404, "NotFound")


def test_a_scheduled_sweep_is_answered_alike_by_both_paths(queues: QueueClient) -> None:
    from queue_api import fast_actions
    from queue_api.invoke import actions_for, dispatch

    queues.queue("orders", "c1").send("late", delay_seconds=60)
    for event in ({"action": "sweep"}, scheduled_rule_event()):
        fast = fast_actions.answer_invoke("visibility_sweeper", event, FakeLambdaContext())
        slow = dispatch(actions_for("visibility_sweeper"), event, FakeLambdaContext(), default_action="sweep")
        assert fast is not None and json.dumps(_without_fresh(fast)) == json.dumps(_without_fresh(slow))
        assert fast["depths"] and fast["sub_queues"] == 1
    for event in ({"action": "sweep", "budget_seconds": 5}, {"action": None}, {"action": "sweep", "x": 1}):
        assert fast_actions.answer_invoke("visibility_sweeper", event, FakeLambdaContext()) is None
    assert fast_actions.answer_invoke("producer", {"action": "sweep"}, FakeLambdaContext()) is None


def test_finite_floats_only() -> None:
    """A non-finite float is written as null by pydantic but as NaN by json: the shapes leave it to the model."""
    with pytest.raises(request_checks.Unsure):
        answer_shapes.plain_json(math.inf)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/queues/orders/clients/c1/replays/run", '{"replay_id": "1111111111111-aaaaaaaaaaaa", "seconds": 1%s}'),
        ("/queues/orders/clients/c1/replays", '{"run_seconds": 1%s}'),
    ],
    ids=["run", "start"],
)
def test_a_number_past_a_floats_range_is_a_400_and_starts_nothing(queues: QueueClient, path: str, body: str) -> None:
    """An integer of 401 digits is valid JSON that no float holds: the check compares it as an int and leaves it
    to the resolver, which refuses it (it raised OverflowError, a failed invocation, on the fast path)."""
    event = api_event("POST", path, raw_body=body % ("0" * 400))
    answer = answer_http("dlq_redriver", event, FakeLambdaContext())
    assert (answer["statusCode"], json.loads(answer["body"])["error"]["code"]) == (400, "ValidationError")
    assert queues.queue("orders", "c1").replay_list(10) == []


@pytest.mark.parametrize(
    ("raw", "headers"),
    [
        ('{"visibility_timeout": 30}', {"Content-Type": "application/merge-patch+json"}),
        ('{"visibility_timeout": 1%s}' % ("0" * 4400), {"Content-Type": "application/json"}),
    ],
    ids=["merge-patch", "too-many-digits"],
)
def test_bodies_powertools_cannot_parse_are_a_400_not_a_500(
    queues: QueueClient, raw: str, headers: dict[str, str]
) -> None:
    before = queues.get_queue("orders").to_dict()
    event = api_event("PATCH", "/queues/orders", raw_body=raw, headers=headers)
    answer = answer_http("producer", event, FakeLambdaContext())
    assert (answer["statusCode"], json.loads(answer["body"])["error"]["code"]) == (400, "ValidationError")
    assert queues.get_queue("orders").to_dict() == before
