"""The REST resolver of a function's routes, with validation on and errors mapped once, and the way into it.

`answer_http` refuses what no route may take (too large, not JSON, not UTF-8), lets `queue_api.fast_routes`
answer the requests it vouches for, and builds the validating resolver (Powertools' event handler and its OpenAPI
parameters, pydantic, the models) only for the others: a cold start whose first request a fast route answers
imports none of them (the event handler alone costs a first answer about 25 ms of CPU).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Final

from queue_core import MessageTooLarge, limits

from . import fast_routes, operations
from .error_mapping import RouteNotFound, UnsupportedBody, error_answer, http_error_response
from .operations import Operation
from .proxy import proxy_response

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver

# Room for one message at the body limit with worst-case JSON escaping, and SQS's 1 MiB total of a batch.
MAX_REQUEST_BYTES: Final = 4 * limits.MAX_BODY_BYTES
# Nesting a request body may have; every route's body is a few levels deep. A fixed bound, unlike the parser's,
# which depends on how deep the stack already is where it runs: a body the check below parsed could otherwise still
# escape Powertools' own parse, deeper in the stack, as a RecursionError (a 500).
MAX_BODY_DEPTH: Final = 64


def build_resolver(served: Iterable[Operation]) -> APIGatewayRestResolver:
    """A resolver serving the routes of `served`: request bodies, path and query parameters and answers are
    validated against the operations' pydantic models, and every error leaves as `{"error": {"code", "message"}}`.
    Powertools' event handler is imported here, not with this module: a fast route's answer never needs it."""
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver

    from . import http

    app = APIGatewayRestResolver(
        enable_validation=True, response_validation_error_http_code=HTTPStatus.INTERNAL_SERVER_ERROR
    )
    for operation in served:
        if operation.method is None or operation.path is None:
            continue
        app.route(
            http.rule(operation.path),
            operation.method,
            operation_id=operation.name,
            summary=operation.summary,
            tags=[operation.tag],
            responses=http.documented_responses(operation),
        )(http.route_function(operation))
    app.exception_handler(Exception)(http_error_response)

    @app.not_found
    def route_not_found(_error: Exception) -> Any:
        event = app.current_event
        return http_error_response(RouteNotFound(f"no route for {event.http_method} {event.path}"))

    return app


def served_routes(function: str) -> list[Operation]:
    return [operation for operation in operations.of_function(function) if operation.path is not None]


@functools.cache
def resolver_for(function: str) -> APIGatewayRestResolver | None:
    """The resolver of `function`'s routes, built on its first HTTP request; None when it serves no route."""
    served = served_routes(function)
    return build_resolver(served) if served else None


def answer_http(function: str, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """`function`'s answer to an API Gateway REST proxy event: a refusal, a fast route's answer, or the
    validating resolver's. A function without routes answers 404 to any such event, before looking at its body."""
    if not served_routes(function):
        return _no_routes()
    refused = refusal(event)
    if refused is not None:
        return refused
    fast = fast_routes.answer(function, event)
    if fast is not None:
        return fast
    app = resolver_for(function)
    if app is None:
        return _no_routes()
    return _not_an_object(event) or app.resolve(dict(event), context)


def _no_routes() -> dict[str, Any]:
    return proxy_response(*error_answer(RouteNotFound("this function serves no HTTP routes")))


def resolve(app: APIGatewayRestResolver, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """Answers an API Gateway REST proxy event; a body over `MAX_REQUEST_BYTES` is refused before it is parsed,
    and one that is not a JSON object before Powertools reads it."""
    return refusal(event) or _not_an_object(event) or app.resolve(dict(event), context)


def _not_an_object(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """Every request body is one JSON object. Powertools reads a top-level array as its first element (a batch
    sent as a bare list would send its first message and drop the rest with a 200), and JSON nested past the
    parser's depth escapes it as a RecursionError (a 500): both are refused here. Malformed JSON is left to the
    resolver's own answer."""
    body = event.get("body")
    if not body:
        return None
    text = base64.b64decode(str(body)).decode("utf-8") if event.get("isBase64Encoded") else str(body)
    try:
        parsed = json.loads(text)
    except RecursionError:
        return proxy_response(*error_answer(UnsupportedBody("request body nests too deep; send a JSON object")))
    except json.JSONDecodeError:
        return None
    except ValueError:  # well-formed, but a number past the interpreter's digit limit: Powertools' own parse fails
        return proxy_response(*error_answer(UnsupportedBody("a number in the request body has too many digits")))
    if isinstance(parsed, list):
        return proxy_response(*error_answer(UnsupportedBody("request body is a JSON array; send a JSON object")))
    if _deeper_than(parsed, MAX_BODY_DEPTH):
        return proxy_response(*error_answer(UnsupportedBody("request body nests too deep; send a JSON object")))
    return None


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether parsed JSON nests past `limit` containers; without recursion, so at any depth of the stack."""
    pending = [(value, 1)]
    while pending:
        current, depth = pending.pop()
        children = current.values() if isinstance(current, dict) else current if isinstance(current, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def refusal(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The answer to a request no route may take, before its body is parsed: over `MAX_REQUEST_BYTES`, of a type
    other than JSON, or base64 that is not UTF-8; None for any other."""
    size = request_size(event)
    if size > MAX_REQUEST_BYTES:
        refused = MessageTooLarge(f"request body is {size} bytes; at most {MAX_REQUEST_BYTES} bytes allowed")
        return proxy_response(*error_answer(refused))
    content_type = _content_type(event)
    if size and content_type and not _is_json(content_type):
        refused = UnsupportedBody(f"Content-Type {content_type} is not accepted; send JSON as application/json")
        return proxy_response(*error_answer(refused))
    if size and event.get("isBase64Encoded") and not _is_utf8(str(event["body"])):
        return proxy_response(*error_answer(UnsupportedBody("request body is not UTF-8 text; send JSON")))
    return None


def _is_utf8(body: str) -> bool:
    """Whether a base64 body decodes to UTF-8 text: Powertools decodes it as such and would fail with a 500."""
    try:
        base64.b64decode(body).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return True


def _content_type(event: Mapping[str, Any]) -> str:
    for name, value in (event.get("headers") or {}).items():
        if name.lower() == "content-type" and value:
            return str(value).split(";", 1)[0].strip().lower()
    return ""


def _is_json(content_type: str) -> bool:
    """Bodies are JSON only. Powertools would parse a form body into fields, so JSON sent with curl's default
    form type would fail field by field with messages that name no real field; and it parses only
    `application/json` as JSON (a `+json` type such as `application/merge-patch+json` reached it as a 500)."""
    return content_type == "application/json"


def request_size(event: Mapping[str, Any]) -> int:
    body = event.get("body")
    if not body:
        return 0
    if event.get("isBase64Encoded"):
        try:
            return len(base64.b64decode(body, validate=True))
        except (binascii.Error, ValueError):
            return len(body)
    return len(body.encode("utf-8", errors="surrogatepass"))
