"""The HTTP face of an operation: its path and query parameters, its documented answers, and the function the
resolver calls for its route.

The patterns match `queue_core`'s own checks, so a bad name is refused with a 400 before any DynamoDB call.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, Final, Literal, NamedTuple

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from queue_core import limits

from .operations import Operation
from .schemas import (
    ADDRESSES,
    CLIENT_ID_PATTERN,
    CURSOR_PATTERN,
    MAX_EPOCH_MS,
    MAX_MESSAGE_ID,
    MESSAGE_ID_PATTERN,
    QUEUE_NAME_PATTERN,
    REPLAY_ID_PATTERN,
    ErrorAnswer,
    may_be_left_out,
)

QueuePath = Annotated[
    str,
    Path(
        pattern=QUEUE_NAME_PATTERN,
        description="queue name: 1-80 characters of A-Za-z0-9_-; a FIFO queue's name may end in .fifo",
    ),
]
ClientPath = Annotated[str, Path(pattern=CLIENT_ID_PATTERN, description="client id: 1-80 characters of A-Za-z0-9_-")]
MessageIdPath = Annotated[
    str,
    Path(
        alias="id",
        pattern=MESSAGE_ID_PATTERN,
        max_length=MAX_MESSAGE_ID,
        description="a message id from a send; one of this shape that names no message of the sub-queue: 404",
    ),
]
LimitQuery = Annotated[int, Query(ge=1, le=limits.MAX_PEEK, description="at most this many messages")]


class PathParameter(NamedTuple):
    argument: str  # the route function's parameter
    annotation: Any
    field: str  # the address field it fills


class QueryParameter(NamedTuple):
    annotation: Any
    default: Any  # the value when the query string leaves it out


PATH_PARAMETERS: Final = {
    "q": PathParameter("q", QueuePath, "queue"),
    "c": PathParameter("c", ClientPath, "client"),
    "id": PathParameter("message_id", MessageIdPath, "message_id"),
}
StateQuery = Annotated[
    Literal["visible", "in_flight", "delayed"] | None, Query(description="only messages in this state")
]
PriorityQuery = Annotated[
    int | None,
    Query(
        ge=0, le=limits.MAX_PRIORITY, description="only messages of this priority (standard queues only: 400 on FIFO)"
    ),
]
GroupQuery = Annotated[
    str | None,
    Query(
        min_length=1, max_length=limits.MAX_GROUP_ID, description="only this group (FIFO queues only: 400 on standard)"
    ),
]
CursorQuery = Annotated[
    str | None,
    Query(
        pattern=CURSOR_PATTERN,
        description="the previous page's cursor: go on from there; one of this shape that this listing did not give "
        "(of a queue since deleted) is refused (400)",
    ),
]

ReplayIdQuery = Annotated[
    str | None, Query(pattern=REPLAY_ID_PATTERN, description="only this replay (its id, from its start)")
]
TimeQuery = Annotated[int | None, Query(ge=0, le=MAX_EPOCH_MS, description="epoch milliseconds")]
OrderQuery = Annotated[Literal["newest", "oldest"], Query(description="newest first (default) or oldest first")]

QUERY_PARAMETERS: Final = {
    "since": QueryParameter(TimeQuery, None),
    "until": QueryParameter(TimeQuery, None),
    "order": QueryParameter(OrderQuery, "newest"),
    "limit": QueryParameter(LimitQuery, 10),
    "state": QueryParameter(StateQuery, None),
    "priority": QueryParameter(PriorityQuery, None),
    "group": QueryParameter(GroupQuery, None),
    "cursor": QueryParameter(CursorQuery, None),
    "replay_id": QueryParameter(ReplayIdQuery, None),
}

_ERROR_DESCRIPTIONS: Final = {
    400: "ValidationError: malformed JSON, a wrong type, an unknown field, a value out of range, a bad name; or a "
    "value the queue's own settings rule out, which no schema can say: a group_id or a group filter on a standard "
    "queue, a priority, a priority filter or order newest on a FIFO queue, a FIFO send without group_id, a delay "
    "past the queue's retention less 60 s, shard bounds for fixed shards, min_shards over max_shards, a receipt "
    "handle or a cursor the sub-queue did not give, a replay of a queue that keeps no archive, or given both a time "
    "range and message_ids, or since after until",
    404: "QueueNotFound or MessageNotFound; NotFound: a path that no route takes (a name of characters outside its "
    "pattern may be one)",
    409: "QueueExists (other settings, or the queue changed meanwhile) or ReceiptHandleStale",
    410: "MessageBodyMissing: the message's offloaded body is gone from the bucket",
    413: "MessageTooLarge: a body over the queue's max_message_bytes (default 1 MiB), or attributes too large",
    429: "Throttled: DynamoDB kept throttling; retry later",
    500: "InternalError",
}


def rule(path: str) -> str:
    """A route's path in Powertools' form: `<q>` for `{q}`."""
    return path.replace("{", "<").replace("}", ">")


def documented_responses(operation: Operation) -> dict[int, dict[str, Any]]:
    """A route's documented answers: 200 with the route's answer model, then its error answers (500 always), then
    201 for an operation that may create what it names."""
    documented: dict[int, dict[str, Any]] = {200: {"description": operation.success}}
    for status in sorted({*operation.errors, 500}):
        documented[status] = {
            "description": _ERROR_DESCRIPTIONS[status],
            "content": {"application/json": {"model": ErrorAnswer}},
        }
    if operation.created:
        documented[201] = {"description": operation.created}
    return documented


def route_function(operation: Operation) -> Callable[..., Any]:
    """The function Powertools calls for the operation's route. Its signature, which Powertools validates the
    request against and documents, is built from the operation: its path parameters, its query parameters, and
    its body (optional when every field of the request has a default). It builds the address and the request
    from them and runs the operation's handler, as an invoke action does from the event."""
    handler = operation.handler()
    address_type = ADDRESSES[operation.path_parameters]
    request_type = operation.request_type()
    path = [PATH_PARAMETERS[name] for name in operation.path_parameters]
    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [inspect.Parameter(part.argument, keyword, annotation=part.annotation) for part in path]
    for name in operation.query:
        query = QUERY_PARAMETERS[name]
        parameters.append(inspect.Parameter(name, keyword, annotation=query.annotation, default=query.default))
    if operation.has_body:
        optional = may_be_left_out(request_type)
        body_type = (request_type | None) if optional else request_type
        default = None if optional else inspect.Parameter.empty
        parameters.append(inspect.Parameter("body", keyword, annotation=Annotated[body_type, Body()], default=default))

    def route(**arguments: Any) -> Any:
        address = address_type.model_validate({part.field: arguments[part.argument] for part in path})
        if operation.has_body:
            request = arguments["body"] if arguments["body"] is not None else request_type()
        else:
            request = request_type.model_validate({name: arguments[name] for name in operation.query})
        return http_answer(handler(address, request))

    route.__name__ = route.__qualname__ = operation.name
    route.__signature__ = inspect.Signature(parameters, return_annotation=operation.answer_type())
    return route


def http_answer(answer: Any) -> Any:
    """A handler's answer as the route returns it: an `(answer, status)` pair becomes a `Response` with that
    status; an answer alone is a 200."""
    if isinstance(answer, tuple):
        body, status = answer
        return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)
    return answer
