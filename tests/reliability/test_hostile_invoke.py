"""Hostile invoke events, straight into each function's `lambda_handler`, on moto.

Hypothesis builds events from the contract's field names with values of every JSON type (and a few that only a
careless caller sends: huge numbers, lone surrogates, 300 KiB strings, 26-entry batches), some aimed at queues
that exist. Every answer must be a result or `{"error": {"code", "message"}, "status": 4xx}`, never a 5xx, and a
refused event must leave the table exactly as it was.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections import Counter
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from queue_api.core_client import queue_client, reset_queue_client
from queue_core import limits

from dq.embedded_dynamodb import serialize_moto_requests
from functions.dlq_redriver import handler as dlq_redriver
from functions.poller import handler as poller
from functions.producer import handler as producer
from functions.visibility_sweeper import handler as visibility_sweeper
from tests.events import FakeLambdaContext
from tests.reliability.test_hostile_http import error_shape_problem
from tests.reliability.truth import table_snapshot

logger = logging.getLogger("tests.reliability")

TABLE = "hostile-invoke"
EVENTS_PER_FUNCTION = 125
SEEDED = ("fuzz", "fuzz.fifo")
FUNCTIONS: dict[str, tuple[ModuleType, tuple[str, ...]]] = {
    "producer": (
        producer,
        ("create_queue", "get_queue", "list_queues", "update_queue", "list_clients", "delete_queue", "send"),
    ),
    "poller": (
        poller,
        ("receive", "delete", "change_visibility", "release", "peek", "get", "cancel", "purge", "stats"),
    ),
    "dlq_redriver": (dlq_redriver, ("list_dlq", "redrive", "move_to_dlq")),
    "visibility_sweeper": (visibility_sweeper, ("sweep",)),
}
SETTINGS = ("visibility_timeout", "max_receive_count", "retention_seconds", "delay_seconds", "dedup_window_seconds")
ACTION_FIELDS: dict[str, tuple[str, ...]] = {
    "create_queue": ("queue", *SETTINGS, "fifo", "content_based_dedup", "shards"),
    "get_queue": ("queue",),
    "list_queues": (),
    "update_queue": ("queue", *SETTINGS, "shards"),
    "list_clients": ("queue",),
    "delete_queue": ("queue",),
    "send": ("queue", "client", "body", "attributes", "delay_seconds", "group_id", "dedup_id", "messages"),
    "receive": ("queue", "client", "max_messages", "visibility_timeout", "wait_seconds", "order"),
    "delete": ("queue", "client", "receipt_handles"),
    "change_visibility": ("queue", "client", "receipt_handle", "visibility_timeout"),
    "release": ("queue", "client", "receipt_handle", "delay_seconds"),
    "peek": ("queue", "client", "limit"),
    "get": ("queue", "client", "message_id"),
    "cancel": ("queue", "client", "message_id"),
    "purge": ("queue", "client"),
    "stats": ("queue", "client"),
    "list_dlq": ("queue", "client", "limit"),
    "redrive": ("queue", "client", "max_messages", "message_ids"),
    "move_to_dlq": ("queue", "client", "message_id"),
    "sweep": ("budget_seconds",),
}
ADDRESS = frozenset({"queue", "client", "message_id"})
LIMITS = [0, 1, 10, 11, 20, 21, 25, 26, 60, 100, 101, 900, 901, 43_200, 43_201, 1_209_601, -1, 10**20]

json_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.text(alphabet=st.characters(categories=["Cs", "Co", "Cc"]), max_size=4)
)
json_values = st.recursive(
    json_leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
)
hostile_numbers = st.sampled_from(LIMITS) | json_values
hostile_texts = st.sampled_from(["", "x" * 300_000, "S0.1", "F.1", "h.x", "a" * 81, "bad#name"]) | json_values
printable = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=12)


def _mostly(valid: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Four draws in five fit the contract, so that events get past validation and into the core. (Repeating a
    strategy inside `one_of` would not weigh it: Hypothesis merges the repeats.)"""
    return st.sampled_from((True, True, True, True, False)).flatmap(lambda fits: valid if fits else hostile)


def field_values(known: dict[str, list[Any]]) -> dict[str, st.SearchStrategy[Any]]:
    """Per field, values that fit the contract (and real handles and ids from `known`) or hostile ones."""
    handles = st.sampled_from(known["handles"])
    ids = st.sampled_from(known["ids"])
    entry = st.fixed_dictionaries(
        {"body": st.text(min_size=1, max_size=30)},
        optional={"group_id": st.just("g") | printable, "dedup_id": printable, "attributes": json_values},
    )
    settings_values = {name: _mostly(st.integers(0, 1000), hostile_numbers) for name in SETTINGS}
    return {
        **settings_values,
        "retention_seconds": _mostly(st.integers(60, 10_000), hostile_numbers),
        "queue": _mostly(st.sampled_from(SEEDED), hostile_texts),
        "client": _mostly(st.sampled_from(["c1", "c2"]), hostile_texts),
        "fifo": _mostly(st.booleans(), json_values),
        "content_based_dedup": _mostly(st.booleans(), json_values),
        "shards": _mostly(st.integers(1, 4), hostile_numbers),
        "body": _mostly(st.text(min_size=1, max_size=40), hostile_texts),
        "attributes": _mostly(st.dictionaries(printable, st.text(max_size=8), max_size=3), json_values),
        "delay_seconds": _mostly(st.integers(0, 30), hostile_numbers),
        "group_id": _mostly(st.just("g") | printable, hostile_texts),
        "dedup_id": _mostly(printable, hostile_texts),
        "messages": _mostly(st.lists(entry, min_size=1, max_size=4), st.lists(entry, min_size=26, max_size=27)),
        "max_messages": _mostly(st.integers(1, 10), hostile_numbers),
        "visibility_timeout": _mostly(st.integers(0, 60), hostile_numbers),
        "wait_seconds": _mostly(st.just(0), hostile_numbers),
        "order": _mostly(st.sampled_from(["oldest", "newest"]), hostile_texts),
        "receipt_handles": _mostly(st.lists(handles | hostile_texts, min_size=1, max_size=3), json_values),
        "receipt_handle": _mostly(handles, hostile_texts),
        "limit": _mostly(st.integers(1, 100), hostile_numbers),
        "message_id": _mostly(ids, hostile_texts),
        "message_ids": _mostly(st.lists(ids, min_size=1, max_size=3), json_values),
        "budget_seconds": _mostly(st.floats(0.05, 2), hostile_numbers),
    }


def events(actions: tuple[str, ...], known: dict[str, list[Any]]) -> st.SearchStrategy[Any]:
    """Events of the function's actions with some, all or none of their fields, now and then an unknown field,
    an unknown action, or something that is not an object at all."""
    values = field_values(known)
    per_action = [
        st.builds(
            lambda action, fields, extra: {**extra, **fields, "action": action},
            st.just(action),
            st.fixed_dictionaries(
                {name: values[name] for name in ACTION_FIELDS[action] if name in ADDRESS},
                optional={name: values[name] for name in ACTION_FIELDS[action] if name not in ADDRESS},
            ),
            _mostly(st.just({}), st.dictionaries(st.text(max_size=10), json_values, min_size=1, max_size=2)),
        )
        for action in actions
    ]
    odd = st.dictionaries(st.text(max_size=10), json_values, max_size=3).map(lambda extra: {**extra, "action": "x"})
    return _mostly(st.one_of(*per_action), odd | json_values)


# Message ids and receipt handles of the seeded queues, for events that aim at real messages.
KNOWN: dict[str, list[Any]] = {"ids": [], "handles": []}


def harmless(event: Any) -> Any:
    """Two things a fuzzed event may not do, for the run's own sake: wait in real time (a long poll on an empty
    queue) or delete the queues that the other events aim at."""
    if isinstance(event, dict):
        if isinstance(event.get("wait_seconds"), int) and not isinstance(event["wait_seconds"], bool):
            event["wait_seconds"] = min(event["wait_seconds"], 0)
        if event.get("action") == "delete_queue" and event.get("queue") in SEEDED:
            event["queue"] = "never-made"
    return event


@pytest.fixture
def functions_on_moto(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The functions' environment on a fresh moto table, with two seeded queues holding a few messages."""
    monkeypatch.setenv("TABLE_NAME", TABLE)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    serialize_moto_requests()
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    with mock_aws():
        reset_queue_client()
        core = queue_client()
        core.create_table()
        for name in SEEDED:
            core.create_queue(name, max_receive_count=2)
            sub_queue = core.queue(name, "c1")
            for n in range(4):
                sent = sub_queue.send(f"seed {n}", group_id="g" if name.endswith(".fifo") else None)
                KNOWN["ids"].append(sent.message_id)
            KNOWN["handles"] += [message.receipt_handle for message in sub_queue.receive(max_messages=2)]
        yield
    reset_queue_client()
    KNOWN["ids"].clear()
    KNOWN["handles"].clear()


def invoke(handler: ModuleType, event: Any) -> Any:
    """As the Lambda service would: the event and the answer both pass through JSON."""
    return json.loads(json.dumps(handler.lambda_handler(json.loads(json.dumps(event)), FakeLambdaContext())))


def answer_problem(answer: Any) -> str | None:
    if not isinstance(answer, dict):
        return f"not an object: {answer!r:.200}"
    if "error" not in answer:
        return None
    if set(answer) != {"error", "status"} or not isinstance(answer["status"], int):
        return f"not the invoke error shape: {answer!r:.200}"
    return error_shape_problem(answer["status"], {"error": answer["error"]}) or (
        None if answer["status"] >= 400 else f"an error with status {answer['status']}"
    )


@pytest.mark.usefixtures("functions_on_moto")
@pytest.mark.parametrize("function", list(FUNCTIONS))
def test_generated_invoke_events_get_a_result_or_a_4xx_in_shape_and_refusals_write_nothing(function: str) -> None:
    handler, actions = FUNCTIONS[function]
    outcomes: Counter = Counter()
    problems: list[str] = []

    @settings(
        max_examples=EVENTS_PER_FUNCTION,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(event=st.deferred(lambda: events(actions, KNOWN)).map(harmless))
    def invoke_one(event: Any) -> None:
        before = table_snapshot(TABLE)
        answer = invoke(handler, event)
        problem = answer_problem(answer)
        refused = isinstance(answer, dict) and "error" in answer
        if refused and table_snapshot(TABLE) != before:
            problem = problem or "a refused event wrote to the table"
        outcomes[answer.get("status", 200) if isinstance(answer, dict) else "?"] += 1
        if problem:
            problems.append(f"{json.dumps(event)[:200]}: {problem}")

    invoke_one()
    logger.info("invoke fuzz of %s: %d events, by status %s", function, sum(outcomes.values()), dict(outcomes))
    assert not problems, "\n".join(problems[:10])
    assert sum(outcomes.values()) >= EVENTS_PER_FUNCTION


SEND = {"action": "send", "queue": "fuzz", "client": "c1"}
RECEIVE = {"action": "receive", "queue": "fuzz", "client": "c1"}


@pytest.mark.usefixtures("functions_on_moto")
@pytest.mark.parametrize(
    ("handler", "event", "status", "code"),
    [
        (producer, {**SEND, "body": "x" * (1024 * 1024 + 1)}, 413, "MessageTooLarge"),
        (producer, {**SEND, "body": "a", "attributes": {f"k{n}": "v" for n in range(11)}}, 400, "ValidationError"),
        (producer, {**SEND, "body": "a", "attributes": {"": "v"}}, 400, "ValidationError"),
        (producer, {**SEND, "body": "\ud800"}, 400, "ValidationError"),
        (producer, {**SEND, "body": "a", "delay_seconds": 345_601}, 400, "ValidationError"),
        (producer, {**SEND, "messages": [{"body": "a"}] * 26}, 400, "ValidationError"),
        (producer, {**SEND, "queue": "bad#name", "body": "a"}, 400, "ValidationError"),
        (producer, {**SEND, "client": "c" * 81, "body": "a"}, 400, "ValidationError"),
        (producer, {**SEND, "body": 12}, 400, "ValidationError"),
        (producer, {"action": "create_queue", "queue": "q", "shards": limits.MAX_SHARDS + 1}, 400, "ValidationError"),
        (producer, {"action": "create_queue", "queue": "q", "visibility_timeout": "30"}, 400, "ValidationError"),
        (producer, {"action": "launch_rockets"}, 400, "ValidationError"),
        (producer, ["not", "an", "object"], 400, "ValidationError"),
        (poller, {**RECEIVE, "max_messages": 11}, 400, "ValidationError"),
        (poller, {**RECEIVE, "wait_seconds": 21}, 400, "ValidationError"),
        (poller, {**RECEIVE, "visibility_timeout": 43_201}, 400, "ValidationError"),
        (poller, {**RECEIVE, "max_messages": True}, 400, "ValidationError"),
        (poller, {**RECEIVE, "action": "delete", "receipt_handles": ["h"] * 26}, 400, "ValidationError"),
        (poller, {**RECEIVE, "action": "release", "receipt_handle": "forged.handle"}, 400, "ValidationError"),
        (poller, {**RECEIVE, "queue": "never-made"}, 404, "QueueNotFound"),
        (dlq_redriver, {**RECEIVE, "action": "redrive", "message_ids": ["S0.1"] * 101}, 400, "ValidationError"),
        (visibility_sweeper, {"action": "sweep", "budget_seconds": -1}, 400, "ValidationError"),
    ],
)
def test_an_event_past_a_limit_is_refused_with_its_code_and_writes_nothing(
    handler: ModuleType, event: Any, status: int, code: str
) -> None:
    before = table_snapshot(TABLE)
    answer = invoke(handler, event)
    assert answer_problem(answer) is None, answer
    assert (answer["status"], answer["error"]["code"]) == (status, code), answer
    assert table_snapshot(TABLE) == before
