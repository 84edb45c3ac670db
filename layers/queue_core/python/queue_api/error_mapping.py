"""The one mapping from an exception to the contract's error: an HTTP status and `{"error": {"code", "message"}}`.

HTTP routes and invoke actions both go through `error_answer`, so a caller sees the same code and message
whichever way it came in. Validation problems are 400 (not Powertools' 422); anything unexpected is a 500
`InternalError` whose message says nothing about the code, while the details go to the log. pydantic and
Powertools' validation errors are imported only to read such an error: a request that never met them does not
load them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from queue_core import QueueError

from .observability import logger

MAX_LISTED_PROBLEMS: Final = 5
INTERNAL_MESSAGE: Final = "internal error; the details are in the function's log"
# Tags of the single-or-batch send union: pydantic puts them in error locations, callers never wrote them.
_UNION_TAGS: Final = frozenset({"single", "batch"})
_QUEUE_RULE: Final = "queue name must be 1-80 characters of A-Za-z0-9_- (a FIFO queue's name may end in .fifo)"
_CLIENT_RULE: Final = "client id must be 1-80 characters of A-Za-z0-9_-"
# Names whose pattern pydantic would quote as a regular expression; the rule in words reads better.
_NAME_RULES: Final = {"q": _QUEUE_RULE, "queue": _QUEUE_RULE, "c": _CLIENT_RULE, "client": _CLIENT_RULE}


class RouteNotFound(Exception):
    """No route matches the request's method and path."""


class UnsupportedBody(Exception):
    """The request body is neither JSON nor absent, or the event is not one this function takes."""


def error_body(code: str, message: str) -> dict[str, dict[str, str]]:
    return {"error": {"code": code, "message": message}}


def error_answer(error: BaseException) -> tuple[int, dict[str, dict[str, str]]]:
    """The status and body for `error`; logs it at a level that matches whose fault it is."""
    if isinstance(error, QueueError) and error.status < 500:
        logger.info("request refused", extra={"code": error.code, "reason": error.message})
        return error.status, error.to_dict()
    if isinstance(error, RouteNotFound | UnsupportedBody):
        code, status = ("NotFound", 404) if isinstance(error, RouteNotFound) else ("ValidationError", 400)
        logger.info("request refused", extra={"code": code, "reason": str(error)})
        return status, error_body(code, str(error))
    found = _validation_problems(error)
    if found is not None:
        problems, http = found
        message = describe_problems(problems, http=http)
        logger.info("request refused", extra={"code": "ValidationError", "reason": message})
        return 400, error_body("ValidationError", message)
    logger.exception("request failed", exc_info=error)
    if isinstance(error, QueueError):
        return error.status, error_body(error.code, error.message)
    return 500, error_body("InternalError", INTERNAL_MESSAGE)


def _validation_problems(error: BaseException) -> tuple[list[Mapping[str, Any]], bool] | None:
    """The problems of a request validation error and whether it came from an HTTP request (Powertools') rather
    than from an invoke event's models (pydantic's); None when `error` is not one."""
    import pydantic
    from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

    if isinstance(error, RequestValidationError):
        return list(error.errors()), True
    if isinstance(error, pydantic.ValidationError):
        return list(error.errors(include_url=False, include_input=False)), False
    return None


def describe_problems(problems: Sequence[Mapping[str, Any]], http: bool) -> str:
    """One line naming each bad field and what is wrong with it, never echoing the input back. HTTP locations
    start with where the value was (body, path, query); invoke locations are the event's own fields."""
    described = [_describe(problem, http) for problem in problems[:MAX_LISTED_PROBLEMS]]
    more = len(problems) - len(described)
    if more > 0:
        described.append(f"and {more} more")
    return "; ".join(described) or "invalid request"


def _describe(problem: Mapping[str, Any], http: bool) -> str:
    if problem.get("type") == "json_invalid":
        reason = problem.get("ctx", {}).get("error", "")
        return f"request body is not valid JSON: {reason}".rstrip(": ")
    location = [part for part in problem.get("loc", ()) if part not in _UNION_TAGS]
    if problem.get("type") == "string_pattern_mismatch" and location and location[-1] in _NAME_RULES:
        return _NAME_RULES[location[-1]]
    where = _http_location(location) if http else _location(location)
    message = str(problem.get("msg", "invalid value"))
    return f"{where}: {message}" if where else message


def _http_location(parts: list[Any]) -> str:
    """`body.x` as `x`, the body itself as `request body`, `path.q` as `path parameter q`."""
    if parts and parts[0] == "body":
        return _location(parts[1:]) or "request body"
    if len(parts) == 2 and parts[0] in ("path", "query", "header"):
        return f"{parts[0]} parameter {parts[1]}"
    return _location(parts)


def _location(parts: list[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def http_error_response(error: BaseException) -> Any:
    """A Powertools `Response` carrying `error_answer(error)`."""
    from aws_lambda_powertools.event_handler import Response, content_types

    status, body = error_answer(error)
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=json.dumps(body, separators=(",", ":"))
    )
