"""A stock boto3 SQS client answered in-process by the SQS function's gateway, on a test's own core.

Each request the client would send is turned into the API Gateway proxy event the deployed function receives
(`POST /` for the client `default`, `POST /sqs/{client}` for a named one) and answered by `sqs_api.gateway.handle`
with the given `QueueClient`, so the SQS protocol runs on the same table, fake clock and fault injection as the
core calls beside it, with no server and no socket.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final
from urllib.parse import urlsplit

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import ReadTimeoutError
from moto.core.botocore_stubber import MockRawResponse
from queue_core import QueueClient
from sqs_api.gateway import handle

ENDPOINT: Final = "https://sqs-in-process.test"


def sqs_in_process(
    core: QueueClient,
    client: str | None = None,
    admin: bool = False,
    lose_answer: Callable[[str], bool] | None = None,
    attempts: int = 1,
) -> Any:
    """An SQS client for `client`'s endpoint (None: the root endpoint, client `default`; `admin`: the
    administration endpoint); `attempts` 1: no retries, so each call is one request. `lose_answer(action)` True
    makes that request's answer get lost after the handler applied it (a read timeout, which the SDK retries)."""
    url = f"{ENDPOINT}/sqs-admin" if admin else ENDPOINT if client is None else f"{ENDPOINT}/sqs/{client}"
    sqs = boto3.client(
        "sqs",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="key",
        aws_secret_access_key="secret",
        config=Config(retries={"max_attempts": 1} if attempts == 1 else {"total_max_attempts": attempts}),
    )

    def answer(request: Any, **_: Any) -> AWSResponse:
        path = urlsplit(request.url).path or "/"
        headers = {name: _text(value) for name, value in request.headers.items()}
        headers["Host"] = urlsplit(request.url).netloc
        event = {
            "httpMethod": "POST",
            "path": path,
            "headers": headers,
            "body": _text(request.body or b""),
            "isBase64Encoded": False,
            "pathParameters": None if client is None else {"client": client},
            "requestContext": {"path": path, "accountId": "000000000000"},
        }
        out = handle(event, core)
        action = headers.get("X-Amz-Target", "").rsplit(".", 1)[-1]
        if lose_answer is not None and lose_answer(action):
            raise ReadTimeoutError(endpoint_url=request.url)
        return AWSResponse(request.url, out["statusCode"], out["headers"], MockRawResponse(out["body"].encode()))

    # First, ahead of moto's stubber (which would not recognise this endpoint anyway).
    sqs.meta.events.register_first("before-send.sqs", answer)
    return sqs


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def queue_url(sqs: Any, name: str) -> str:
    return sqs.get_queue_url(QueueName=name)["QueueUrl"]
