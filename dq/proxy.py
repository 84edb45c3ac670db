"""HTTP requests as API Gateway REST proxy events, and proxy answers back as HTTP, as API Gateway does it.

The local server hands each handler the same event shape it gets when deployed, so the handler code that runs
locally is the deployed code, with nothing switched on or off.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import parse_qsl, unquote

from .routes import Match

STAGE: Final = "local"
ACCOUNT_ID: Final = "000000000000"


def proxy_event(
    method: str,
    raw_path: str,
    query_string: str,
    headers: Iterable[tuple[str, str]],
    body: bytes,
    match: Match,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The REST proxy event for one request: single- and multi-value headers and query parameters, decoded
    path parameters, a request context with a fresh request id, and a text or base64 body."""
    single_headers: dict[str, str] = {}
    multi_headers: dict[str, list[str]] = {}
    for name, value in headers:
        single_headers[name] = value
        multi_headers.setdefault(name, []).append(value)
    # API Gateway tells the function how the client called; here that is plain HTTP, with no stage in the path.
    if not any(name.lower() == "x-forwarded-proto" for name in single_headers):
        single_headers["X-Forwarded-Proto"] = "http"
        multi_headers["X-Forwarded-Proto"] = ["http"]
    single_query: dict[str, str] = {}
    multi_query: dict[str, list[str]] = {}
    for name, value in parse_qsl(query_string, keep_blank_values=True):
        single_query[name] = value
        multi_query.setdefault(name, []).append(value)
    text, encoded = _body(body)
    path = unquote(raw_path)
    now = time.time()
    return {
        "resource": match.resource,
        "path": path,
        "httpMethod": method,
        "headers": single_headers or None,
        "multiValueHeaders": multi_headers or None,
        "queryStringParameters": single_query or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": match.path_parameters or None,
        "stageVariables": None,
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "apiId": "local",
            "domainName": single_headers.get("Host", "127.0.0.1"),
            "httpMethod": method,
            "identity": {"sourceIp": source_ip, "userAgent": single_headers.get("User-Agent", "")},
            "path": path,
            "protocol": "HTTP/1.1",
            "requestId": str(uuid.uuid4()),
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "requestTimeEpoch": int(now * 1000),
            "resourcePath": match.resource,
            "stage": STAGE,
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


def _body(body: bytes) -> tuple[str | None, bool]:
    if not body:
        return None, False
    try:
        return body.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), True


def http_answer(answer: Mapping[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, headers and body bytes of a proxy answer; multi-value headers win over single ones."""
    headers: dict[str, list[str]] = {name: [str(value)] for name, value in (answer.get("headers") or {}).items()}
    for name, values in (answer.get("multiValueHeaders") or {}).items():
        headers[name] = [str(value) for value in values]
    body = answer.get("body") or ""
    payload = base64.b64decode(body) if answer.get("isBase64Encoded") else str(body).encode("utf-8")
    pairs = [(name, value) for name, values in headers.items() for value in values]
    return int(answer.get("statusCode", 502)), pairs, payload
