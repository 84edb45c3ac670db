"""The REST resolver of a function's routes, with validation on and errors mapped once."""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import Any, Final

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from queue_core import MessageTooLarge, limits

from . import http, operations
from .error_mapping import RouteNotFound, UnsupportedBody, error_answer, http_error_response
from .operations import Operation

# Room for one message at the body limit with worst-case JSON escaping, and SQS's 1 MiB total of a batch.
MAX_REQUEST_BYTES: Final = 4 * limits.MAX_BODY_BYTES


def build_resolver(served: Iterable[Operation]) -> APIGatewayRestResolver:
    """A resolver serving the routes of `served`: request bodies, path and query parameters and answers are
    validated against the operations' pydantic models, and every error leaves as `{"error": {"code", "message"}}`."""
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


@functools.cache
def resolver_for(function: str) -> APIGatewayRestResolver | None:
    """The resolver of `function`'s routes, built on its first HTTP request; None when it serves no route."""
    served = [operation for operation in operations.of_function(function) if operation.path is not None]
    return build_resolver(served) if served else None


def resolve(app: APIGatewayRestResolver, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """Answers an API Gateway REST proxy event; a body over `MAX_REQUEST_BYTES` is refused before it is parsed."""
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
    return app.resolve(dict(event), context)


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
    form type would fail field by field with messages that name no real field."""
    return content_type == "application/json" or content_type.endswith("+json")


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


def proxy_response(status: int, body: Mapping[str, Any]) -> dict[str, Any]:
    """An API Gateway proxy answer built without the resolver, in the shape the resolver gives."""
    return {
        "statusCode": status,
        "multiValueHeaders": {"Content-Type": ["application/json"]},
        "body": json.dumps(body, separators=(",", ":")),
        "isBase64Encoded": False,
    }
