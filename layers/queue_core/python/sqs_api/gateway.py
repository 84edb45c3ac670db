"""API Gateway REST proxy events in, proxy answers out, for the function that speaks SQS.

The endpoint a client called is rebuilt from the event: the scheme (`X-Forwarded-Proto`), the host, and the base
path API Gateway put before the resource (the stage, or a custom domain's mapping), so queue URLs minted here
are URLs the client can use. `POST /` is the client `default`; `POST /sqs/{client}` names the client;
`POST /sqs-admin` administers queues.
"""

from __future__ import annotations

import base64
import os
from typing import Any

from queue_core import QueueClient, QueueError, validation

from .endpoints import DEFAULT_CLIENT, Endpoint
from .errors import SqsError
from .protocol import answer
from .routes import ADMIN_ROUTE


def handle(event: dict[str, Any], core: QueueClient) -> dict[str, Any]:
    headers = {name.lower(): value for name, value in (event.get("headers") or {}).items()}
    try:
        endpoint = endpoint_of(event, headers)
    except SqsError as error:
        status, answer_headers, body = error.answer()
    else:
        status, answer_headers, body = answer(headers.get("x-amz-target"), _body(event), endpoint, core)
    return {"statusCode": status, "headers": answer_headers, "body": body.decode("utf-8"), "isBase64Encoded": False}


def endpoint_of(event: dict[str, Any], headers: dict[str, str]) -> Endpoint:
    context = event.get("requestContext") or {}
    path = (event.get("path") or "/").rstrip("/")
    full = (context.get("path") or path).rstrip("/")
    base = full[: len(full) - len(path)] if full.endswith(path) else ""
    named = (event.get("pathParameters") or {}).get("client")
    client = named or DEFAULT_CLIENT
    try:
        validation.client_id(client)
    except QueueError:
        raise SqsError("InvalidAddress", "The client in the endpoint's path is not a valid client id.") from None
    scheme = headers.get("x-forwarded-proto", "https")
    host = headers.get("host") or context.get("domainName") or "localhost"
    url = f"{scheme}://{host}{base}{path}"
    return Endpoint(
        url=url,
        client=client,
        account=context.get("accountId") or "000000000000",
        region=os.environ.get("AWS_REGION", "us-east-1"),
        manages_queues=named is None and (event.get("resource") or path) == ADMIN_ROUTE,
    )


def _body(event: dict[str, Any]) -> bytes | str | None:
    body = event.get("body")
    if body is not None and event.get("isBase64Encoded"):
        return base64.b64decode(body)
    return body
