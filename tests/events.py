"""Events as Lambda receives them: API Gateway REST proxy events, invoke events, schedules, and a context.

The proxy events follow the shape API Gateway sends (resource template, decoded path parameters, single- and
multi-value headers and query parameters, a request context), built here independently of the local server's
own event builder so that each checks the other.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

SUB_QUEUE = "/queues/{q}/clients/{c}"
RESOURCES = (
    "/openapi.json",
    "/queues",
    "/queues/{q}",
    "/queues/{q}/clients",
    f"{SUB_QUEUE}/messages",
    f"{SUB_QUEUE}/messages/{{id}}",
    f"{SUB_QUEUE}/messages/{{id}}/dlq",
    f"{SUB_QUEUE}/receive",
    f"{SUB_QUEUE}/delete",
    f"{SUB_QUEUE}/visibility",
    f"{SUB_QUEUE}/release",
    f"{SUB_QUEUE}/stats",
    f"{SUB_QUEUE}/dlq",
    f"{SUB_QUEUE}/dlq/redrive",
    "/sqs-admin",
)


def _resource_of(path: str) -> tuple[str, dict[str, str]]:
    segments = path.strip("/").split("/")
    for resource in RESOURCES:
        template = resource.strip("/").split("/")
        if len(template) != len(segments):
            continue
        parameters = {}
        for expected, actual in zip(template, segments, strict=True):
            if expected.startswith("{"):
                parameters[expected.strip("{}")] = actual
            elif expected != actual:
                break
        else:
            return resource, parameters
    return "/{proxy+}", {"proxy": path.lstrip("/")}


def api_event(
    method: str,
    path: str,
    body: Any = None,
    *,
    raw_body: str | bytes | None = None,
    query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    base64_body: bool = False,
) -> dict[str, Any]:
    """A REST proxy event for `method path`; `body` is sent as JSON, `raw_body` as is."""
    if raw_body is None and body is not None:
        raw_body = json.dumps(body)
    if isinstance(raw_body, bytes) or (base64_body and raw_body is not None):
        data = raw_body if isinstance(raw_body, bytes) else raw_body.encode()
        text, encoded = base64.b64encode(data).decode(), True
    else:
        text, encoded = raw_body, False
    all_headers = {"Accept": "application/json", "Host": "abc123.execute-api.us-east-1.amazonaws.com"}
    if text is not None:
        all_headers["Content-Type"] = "application/json"
    all_headers.update(headers or {})
    resource, parameters = _resource_of(path)
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": all_headers,
        "multiValueHeaders": {name: [value] for name, value in all_headers.items()},
        "queryStringParameters": query or None,
        "multiValueQueryStringParameters": {name: [value] for name, value in query.items()} if query else None,
        "pathParameters": parameters or None,
        "stageVariables": None,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "httpMethod": method,
            "identity": {"sourceIp": "203.0.113.7", "userAgent": "pytest"},
            "path": f"/prod{quote(path)}",
            "protocol": "HTTP/1.1",
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "resourcePath": resource,
            "stage": "prod",
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


def scheduler_event() -> dict[str, Any]:
    """EventBridge Scheduler sends only the input it was configured with."""
    return {"action": "sweep"}


def scheduled_rule_event() -> dict[str, Any]:
    """An EventBridge rule's schedule envelope."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": "2026-11-22T15:00:00Z",
        "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/sweep"],
        "detail": {},
    }


@dataclass
class FakeLambdaContext:
    function_name: str = "test-function"
    memory_limit_in_mb: int = 256
    function_version: str = "$LATEST"
    aws_request_id: str = "11111111-2222-3333-4444-555555555555"
    log_group_name: str = "/aws/lambda/test-function"
    log_stream_name: str = "2026/11/22/[$LATEST]0123"
    remaining_ms: int = 30_000

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@dataclass
class HttpAnswer:
    status: int
    body: Any
    headers: dict[str, list[str]]


def http_answer(answer: dict[str, Any]) -> HttpAnswer:
    """A proxy answer with its JSON body parsed."""
    raw = answer["body"]
    if answer.get("isBase64Encoded"):
        raw = base64.b64decode(raw).decode()
    headers = {name: [value] for name, value in (answer.get("headers") or {}).items()}
    headers.update(answer.get("multiValueHeaders") or {})
    return HttpAnswer(answer["statusCode"], json.loads(raw) if raw else None, headers)
