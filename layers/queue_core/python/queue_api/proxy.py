"""An API Gateway proxy answer built without the resolver, in the shape the resolver gives: the refusals made
before a request reaches it (`queue_api.resolver`) and the answers of the fast routes (`queue_api.fast_routes`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def proxy_response(status: int, body: Mapping[str, Any]) -> dict[str, Any]:
    """`body` as compact JSON, the way Powertools' resolver writes a JSON answer."""
    return proxy_json(status, json.dumps(body, separators=(",", ":")))


def proxy_json(status: int, text: str) -> dict[str, Any]:
    """A JSON answer already written as text."""
    return {
        "statusCode": status,
        "multiValueHeaders": {"Content-Type": ["application/json"]},
        "body": text,
        "isBase64Encoded": False,
    }
