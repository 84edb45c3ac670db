"""The rules of a queue name, a client id, a message id, a receipt handle, a cursor and a replay id, as the API
checks them.

They live apart from the pydantic models so that a request can be checked against them without loading
pydantic: the models (`queue_api.schemas`) and the HTTP path parameters (`queue_api.http`) are built from these
same constants, and the fast checks of `queue_api.request_checks` match them with `re.fullmatch`.
"""

from __future__ import annotations

from typing import Final

from queue_core.browse import CURSOR_PATTERN
from queue_core.keys import MESSAGE_ID_PATTERN, REPLAY_ID_PATTERN
from queue_core.receipts import RECEIPT_HANDLE_PATTERN

QUEUE_NAME_PATTERN: Final = r"^([A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$"
CLIENT_ID_PATTERN: Final = r"^[A-Za-z0-9_-]{1,80}$"
MAX_MESSAGE_ID: Final = 400
# The latest time (epoch milliseconds) a time range may name: thirteen digits.
MAX_EPOCH_MS: Final = 10**13 - 1
__all__ = [
    "CLIENT_ID_PATTERN",
    "CURSOR_PATTERN",
    "MAX_EPOCH_MS",
    "MAX_MESSAGE_ID",
    "MESSAGE_ID_PATTERN",
    "QUEUE_NAME_PATTERN",
    "RECEIPT_HANDLE_PATTERN",
    "REPLAY_ID_PATTERN",
]
