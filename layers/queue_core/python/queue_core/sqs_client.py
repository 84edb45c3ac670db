"""A stock boto3 SQS client for a deployed queue's API, signed as API Gateway checks it.

API Gateway verifies SigV4 signatures for the service `execute-api`, while botocore signs SQS requests as `sqs`.
A `before-sign.sqs` handler puts `signing_name` into each request's signing context, which botocore's signer
prefers to the service's own name; nothing else of the client changes, so every SQS call, its retries, and
clients built on it (Kombu's SQS transport signs its own requests with this client's signer) are signed for
`execute-api`.
"""

from __future__ import annotations

from typing import Any, Final

SIGNING_NAME: Final = "execute-api"


def sqs_client(api_url: str, **boto3_kwargs: Any) -> Any:
    """`boto3.client("sqs", endpoint_url=api_url, **boto3_kwargs)` whose requests are signed for `execute-api`.
    `api_url` is the stage's URL (the client `default`) or `{stage URL}/sqs/{client}`."""
    import boto3

    client = boto3.client("sqs", endpoint_url=api_url.rstrip("/"), **boto3_kwargs)
    sign_for_execute_api(client)
    return client


def sign_for_execute_api(client: Any) -> None:
    """Makes an existing SQS client sign for `execute-api` (a Kombu transport's client, say)."""
    client.meta.events.register("before-sign.sqs", _use_execute_api_signing_name)


def _use_execute_api_signing_name(request: Any, **_: Any) -> None:
    request.context.setdefault("signing", {})["signing_name"] = SIGNING_NAME
