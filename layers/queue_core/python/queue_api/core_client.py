"""The process's one `QueueClient`, created on first use and reused by every later invocation.

Building a boto3 client costs tens of milliseconds; doing it at import time would slow every cold start, even of
an invocation that fails validation. Reusing it keeps the core's settings cache warm between invocations.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from queue_core import QueueClient

_lock = threading.Lock()
_client: QueueClient | None = None


class MissingConfiguration(RuntimeError):
    """The function's environment lacks a setting it cannot run without; a deployment error, not a user's."""


def queue_client() -> QueueClient:
    """The shared client on the table named by `TABLE_NAME`; its DynamoDB client honours
    `AWS_ENDPOINT_URL_DYNAMODB`."""
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                table = os.getenv("TABLE_NAME")
                if not table:
                    raise MissingConfiguration("TABLE_NAME is not set")
                from queue_core import QueueClient

                _client = QueueClient(table)
    return _client


def reset_queue_client() -> None:
    """Forgets the shared client, so the next use builds one from the current environment (tests, local server)."""
    global _client
    with _lock:
        _client = None
