"""moto as an embedded DynamoDB, with DynamoDB's per-request atomicity.

moto applies concurrent requests without a lock: racing conditional writes on one item can both succeed, and a
query beside writes can fail. DynamoDB applies each request atomically, so every request is serialized here;
threads still interleave between requests, as they do against the real service.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

_LOCK = threading.RLock()


def serialize_moto_requests() -> None:
    """Idempotent: wraps moto's DynamoDB request dispatch in one process-wide lock."""
    from moto.dynamodb.responses import DynamoHandler

    if getattr(DynamoHandler.call_action, "_serialized", False):
        return
    original = DynamoHandler.call_action

    @functools.wraps(original)
    def call_action(self: Any) -> Any:
        with _LOCK:
            return original(self)

    call_action._serialized = True  # type: ignore[attr-defined]
    DynamoHandler.call_action = call_action  # type: ignore[method-assign]
