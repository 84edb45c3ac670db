"""Path and query parameters of the HTTP routes, and the error answers they document.

The patterns match `queue_core`'s own checks, so a bad name is refused with a 400 before any DynamoDB call.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from queue_core import limits

from .models import CLIENT_ID_PATTERN, MAX_MESSAGE_ID, QUEUE_NAME_PATTERN, ErrorAnswer

QueuePath = Annotated[
    str,
    Path(
        pattern=QUEUE_NAME_PATTERN,
        description="queue name: 1-80 characters of A-Za-z0-9_-; a FIFO queue's name may end in .fifo",
    ),
]
ClientPath = Annotated[str, Path(pattern=CLIENT_ID_PATTERN, description="client id: 1-80 characters of A-Za-z0-9_-")]
MessageIdPath = Annotated[
    str, Path(alias="id", min_length=1, max_length=MAX_MESSAGE_ID, description="a message id from a send")
]
LimitQuery = Annotated[int, Query(ge=1, le=limits.MAX_PEEK, description="at most this many messages")]

_ERROR_DESCRIPTIONS = {
    400: "ValidationError: malformed JSON, a wrong type, an unknown field, a value out of range, a bad name",
    404: "QueueNotFound or MessageNotFound",
    409: "QueueExists (other settings, or the queue changed meanwhile) or ReceiptHandleStale",
    413: "MessageTooLarge: a body over 256 KiB",
    429: "Throttled: DynamoDB kept throttling; retry later",
    500: "InternalError",
}


def documented_responses(*statuses: int, success: str = "OK") -> dict[int, dict[str, Any]]:
    """A route's documented answers: 200 with the route's return model, then its error answers (400, 429 and
    500 always, plus `statuses`)."""
    errors = sorted({400, 429, 500, *statuses})
    documented: dict[int, dict[str, Any]] = {200: {"description": success}}
    for status in errors:
        documented[status] = {
            "description": _ERROR_DESCRIPTIONS[status],
            "content": {"application/json": {"model": ErrorAnswer}},
        }
    return documented
