"""Answers to the common requests of most routes without loading pydantic or building the validating resolver.

A cold start pays for whatever its first answer loads: pydantic, Powertools' OpenAPI validation and the models
cost a function's first answer more than its own work. Yet nearly every request is well-formed. So a request
to a route listed in `FAST_ROUTES` is first checked by `queue_api.request_checks`, which vouches only for inputs
pydantic accepts identically, and answered through `queue_api.plain_operations` (the same work the pydantic
handlers call) and `queue_api.answer_shapes` (the same JSON the models write). Whenever any step is unsure
(another route, an odd path, a query string or body it does not vouch for, an answer of a type it does not
know), the request takes the validating resolver as before, so every error answer stays exactly what it was;
`answer` only ever returns None before it has changed anything. `GET /openapi.json` is answered with the document
as the resolver writes it, generated beforehand and shipped in the layer (`queue_api.openapi.SERVED`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from . import answer_shapes, plain_operations, request_checks
from .error_mapping import error_answer
from .openapi import SERVED
from .operations import ROUTES, Operation
from .proxy import proxy_json, proxy_response
from .request_checks import Unsure

Address = dict[str, str]


@dataclass(frozen=True)
class FastRoute:
    """How one route is answered without pydantic.

    `check` takes the event and returns the checked request (or raises `Unsure`); `run` does the work and returns
    the answer mapping and the name of its model in `queue_api.schemas`, and the HTTP status when it is not 200.
    """

    check: Callable[[Mapping[str, Any]], Any]
    run: Callable[[Address, Any], tuple[Any, str] | tuple[Any, str, int]]


def _json_body(event: Mapping[str, Any], optional: bool) -> Any:
    """The body as Powertools parses it: JSON text, or absent when the request model allows that (`None`)."""
    body = event.get("body")
    if event.get("isBase64Encoded") or _content_types(event) not in ([], ["application/json"]):
        raise Unsure
    if body is None and optional:
        return None
    if type(body) is not str or not body:
        raise Unsure
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as error:  # deep nesting: the resolver's own answer, whatever it is
        raise Unsure from error


def _content_types(event: Mapping[str, Any]) -> list[str]:
    headers = event.get("headers") or {}
    return [str(value).strip() for name, value in headers.items() if name.lower() == "content-type"]


def _no_body(event: Mapping[str, Any]) -> None:
    if event.get("body") is not None:
        raise Unsure


def _send(event: Mapping[str, Any]) -> tuple[str, Any]:
    """A body with `messages` is a batch, anything else one message (the send union's discriminator)."""
    body = _json_body(event, optional=False)
    if type(body) is dict and "messages" in body:
        entries = request_checks.SEND_BATCH(body)["messages"]
        return "batch", [{name: value for name, value in entry.items() if value is not None} for entry in entries]
    return "single", {name: value for name, value in request_checks.SEND_MESSAGE(body).items() if value is not None}


def _run_send(address: Address, request: tuple[str, Any]) -> tuple[Any, str]:
    kind, fields = request
    if kind == "batch":
        return plain_operations.send_batch(address["q"], address["c"], fields), "SendBatchAnswer"
    return plain_operations.send_one(address["q"], address["c"], fields), "SendMessageAnswer"


def _limit(event: Mapping[str, Any]) -> int:
    return _query(request_checks.LIST)(event)["limit"]


def _query(table: request_checks.Fields) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A route that takes its request from the query string (`table`: its model's fields) and no body."""

    def check(event: Mapping[str, Any]) -> dict[str, Any]:
        _no_body(event)
        return request_checks.query(event, table)

    return check


def _nothing(event: Mapping[str, Any]) -> None:
    """A route that takes neither a body nor a query string: a request with either is left to the resolver."""
    _no_body(event)
    if event.get("queryStringParameters") or event.get("multiValueQueryStringParameters"):
        raise Unsure


def _body(check: Callable[[Any], Any]) -> Callable[[Mapping[str, Any]], Any]:
    """A route whose JSON body is required and checked by `check` (a table of `queue_api.request_checks`)."""
    return lambda event: check(_json_body(event, optional=False))


def _whole(check: Callable[[Any], dict[str, Any]]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A route whose JSON body may be left out (its every field has a default), which passes on every field."""

    def whole(event: Mapping[str, Any]) -> dict[str, Any]:
        body = _json_body(event, optional=True)
        return check({} if body is None else body)

    return whole


def _given(check: Callable[[Any], dict[str, Any]]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A route whose JSON body may be left out, which passes on only the fields the caller gave (the model's
    `exclude_unset`), so the core's defaults apply to the rest."""

    def given(event: Mapping[str, Any]) -> dict[str, Any]:
        body = _json_body(event, optional=True)
        checked = check({} if body is None else body)  # a dict when checked: its fields are the ones given
        return {name: value for name, value in checked.items() if name in (body or {})}

    return given


def _changes(event: Mapping[str, Any]) -> dict[str, Any]:
    """A change of a queue's settings: the fields given and not null (the model's `exclude_none`)."""
    return {name: value for name, value in _whole(request_checks.UPDATE_QUEUE)(event).items() if value is not None}


def _created(address: Address, settings: dict[str, Any]) -> tuple[Any, str, int]:
    answer, created = plain_operations.create_queue(address["q"], settings)
    return answer, "QueueSettingsAnswer", 201 if created else 200


class Written(str):
    """An answer's body already written as the resolver writes it, served as it is."""


def _served_document(event: Mapping[str, Any]) -> Written:
    """The OpenAPI document's answer as generated (`queue_api.openapi.SERVED`); without it, the resolver's."""
    _nothing(event)
    try:
        return Written(SERVED.read_text(encoding="utf-8").removesuffix("\n"))
    except OSError as error:
        raise Unsure from error


def _client(address: Address) -> str | None:
    """The path's client, or None for a route of the whole queue (its handles name their client)."""
    return address.get("c")


_RECEIVE: Final = _whole(request_checks.RECEIVE)
_DELETE: Final = FastRoute(
    _body(request_checks.DELETE),
    lambda address, request: (
        plain_operations.delete(address["q"], _client(address), request["receipt_handles"]),
        "DeleteAnswer",
    ),
)
_RELEASE: Final = FastRoute(
    _body(request_checks.RELEASE),
    lambda address, request: (
        plain_operations.release(
            address["q"], _client(address), request["receipt_handle"], request["delay_seconds"], request["reason"]
        ),
        "VisibleAt",
    ),
)
_VISIBILITY: Final = FastRoute(
    _body(request_checks.VISIBILITY),
    lambda address, request: (
        plain_operations.change_visibility(
            address["q"], _client(address), request["receipt_handle"], request["visibility_timeout"]
        ),
        "VisibleAt",
    ),
)


FAST_ROUTES: Final[dict[str, FastRoute]] = {
    "send": FastRoute(_send, _run_send),
    "receive": FastRoute(
        _RECEIVE,
        lambda address, options: (plain_operations.receive(address["q"], address["c"], options), "ReceiveAnswer"),
    ),
    "peek": FastRoute(
        _limit, lambda address, limit: (plain_operations.peek(address["q"], address["c"], limit), "MessageList")
    ),
    "list_dlq": FastRoute(
        _limit, lambda address, limit: (plain_operations.list_dlq(address["q"], address["c"], limit), "MessageList")
    ),
    "receive_any": FastRoute(
        _RECEIVE, lambda address, options: (plain_operations.receive_any(address["q"], options), "ReceiveAnswer")
    ),
    "delete": _DELETE,
    "delete_any": _DELETE,
    "change_visibility": _VISIBILITY,
    "change_visibility_any": _VISIBILITY,
    "stats": FastRoute(
        _nothing, lambda address, _: (plain_operations.stats(address["q"], address["c"]), "QueueStatsAnswer")
    ),
    "purge": FastRoute(_nothing, lambda address, _: (plain_operations.purge(address["q"], address["c"]), "Purged")),
    "list_clients": FastRoute(_nothing, lambda address, _: (plain_operations.list_clients(address["q"]), "ClientList")),
    "get_queue": FastRoute(_nothing, lambda address, _: (plain_operations.get_queue(address["q"]), "QueueDescription")),
    "list_queues": FastRoute(_nothing, lambda _address, _: (plain_operations.list_queues(), "QueueList")),
    "delete_queue": FastRoute(_nothing, lambda address, _: (plain_operations.delete_queue(address["q"]), "Deleted")),
    "release": _RELEASE,
    "release_any": _RELEASE,
    "get": FastRoute(
        _nothing,
        lambda address, _: (plain_operations.get(address["q"], address["c"], address["id"]), "MessageAnswer"),
    ),
    "cancel": FastRoute(
        _nothing, lambda address, _: (plain_operations.cancel(address["q"], address["c"], address["id"]), "Deleted")
    ),
    "openapi": FastRoute(_served_document, lambda _address, document: (document, "OpenApiDocument")),
    "create_queue": FastRoute(_given(request_checks.CREATE_QUEUE), _created),
    "update_queue": FastRoute(
        _changes,
        lambda address, changes: (plain_operations.update_queue(address["q"], changes), "QueueSettingsAnswer"),
    ),
    "browse": FastRoute(
        _query(request_checks.BROWSE),
        lambda address, request: (
            plain_operations.browse(address["q"], address["c"], request),
            "BrowsePageAnswer",
        ),
    ),
    "archive_list": FastRoute(
        _query(request_checks.ARCHIVE),
        lambda address, request: (
            plain_operations.archive_list(address["q"], address["c"], request),
            "ArchivePageAnswer",
        ),
    ),
    "archive_list_any": FastRoute(
        _query(request_checks.ARCHIVE),
        lambda address, request: (plain_operations.archive_list(address["q"], None, request), "ArchivePageAnswer"),
    ),
    "archive_get": FastRoute(
        _nothing,
        lambda address, _: (
            plain_operations.archive_get(address["q"], address["c"], address["id"]),
            "ArchivedCopies",
        ),
    ),
    "redrive": FastRoute(
        _whole(request_checks.REDRIVE),
        lambda address, request: (plain_operations.redrive(address["q"], address["c"], request), "Redriven"),
    ),
    "dlq_reasons": FastRoute(
        _nothing, lambda address, _: (plain_operations.dlq_reasons(address["q"], address["c"]), "DlqReasons")
    ),
    "replay_start": FastRoute(
        _whole(request_checks.REPLAY),
        lambda address, request: (plain_operations.replay_start(address["q"], address["c"], request), "ReplayAnswer"),
    ),
    "replay_run": FastRoute(
        _body(request_checks.REPLAY_RUN),
        lambda address, request: (
            plain_operations.replay_run(address["q"], address["c"], request["replay_id"], request["seconds"]),
            "ReplayAnswer",
        ),
    ),
    "replay_cancel": FastRoute(
        _body(request_checks.REPLAY_ID),
        lambda address, request: (
            plain_operations.replay_cancel(address["q"], address["c"], request["replay_id"]),
            "ReplayAnswer",
        ),
    ),
    "replay_list": FastRoute(
        _query(request_checks.REPLAY_LIST),
        lambda address, request: (
            plain_operations.replay_list(address["q"], address["c"], request["replay_id"], request["limit"]),
            "ReplayList",
        ),
    ),
    "move_to_dlq": FastRoute(
        _nothing, lambda address, _: (plain_operations.move_to_dlq(address["q"], address["c"], address["id"]), "Moved")
    ),
}


def route_of(method: Any, path: Any) -> tuple[Operation, dict[str, str]] | None:
    """The one route of `method` (of any function) whose template matches `path` segment by segment, with its
    parameters; None when no route or more than one matches (then the resolver's own matching decides)."""
    if type(path) is not str:
        return None
    segments = path.split("/")
    matches = []
    for operation in ROUTES:
        template = (operation.path or "").split("/")
        if operation.method != method or len(template) != len(segments):
            continue
        parameters = {}
        for expected, actual in zip(template, segments, strict=True):
            if expected.startswith("{"):
                if not actual:
                    break
                parameters[expected[1:-1]] = actual
            elif expected != actual:
                break
        else:
            matches.append((operation, parameters))
    return matches[0] if len(matches) == 1 else None


def answer(function: str, event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The proxy answer to `event` by `function`, or None (nothing done) when the validating resolver must
    answer it."""
    found = route_of(event.get("httpMethod"), event.get("path"))
    if found is None or found[0].function != function or found[0].name not in FAST_ROUTES:
        return None
    operation, parameters = found
    route = FAST_ROUTES[operation.name]
    try:
        address = request_checks.path_names(parameters)
        request = route.check(event)
    except Exception:  # a check writes nothing: whatever it could not vouch for, the resolver answers
        return None
    try:
        result, model, *status = route.run(address, request)
        written = _written(result, model)
    except Exception as error:  # mapped once, as the resolver's exception handler maps it
        return proxy_response(*error_answer(error))
    return proxy_json(status[0] if status else 200, written)


def _written(result: Any, model: str) -> str:
    """The answer's JSON as its model writes it: by its shape when sure, else validated and written by the
    model; an answer `Written` already, as it is."""
    if isinstance(result, Written):
        return str(result)
    try:
        shaped = answer_shapes.MODELS[model](result)
    except Unsure:
        from . import schemas

        shaped = getattr(schemas, model).model_validate(result).model_dump(mode="json", by_alias=True)
    return json.dumps(shaped, separators=(",", ":"))
