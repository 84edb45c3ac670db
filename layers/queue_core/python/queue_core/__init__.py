"""A message queue on Amazon DynamoDB: isolated sub-queues per client, FIFO groups, a DLQ, delay, dedup.

The names below are loaded on first use (PEP 562), so that a process that needs one small module of the package
(`queue_core.limits`, say: the command line's constants) does not pay for boto3 and the whole core at import.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

# Loaded at once (it imports boto3 only when called): the helper shares its name with its submodule, and importing
# the submodule first (`from queue_core.sqs_client import sign_for_execute_api`) binds the package's attribute to
# the module, which a lazy name would then never replace.
from .sqs_client import sqs_client

if TYPE_CHECKING:
    from .client import QueueClient
    from .consumer import Consumer, ConsumerReport
    from .errors import (
        DuplicateMessage,
        InternalError,
        MessageBodyMissing,
        MessageNotFound,
        MessageTooLarge,
        QueueError,
        QueueExists,
        QueueNotFound,
        ReceiptHandleStale,
        TableLayoutMismatch,
        Throttled,
        TransactionConditionFailed,
        ValidationError,
    )
    from .models import (
        BatchResult,
        BrowsedMessage,
        BrowsePage,
        Message,
        QueueStats,
        ReceivedMessage,
        SendResult,
        SweepReport,
    )
    from .queuewide import QueueWide
    from .settings import QueueSettings
    from .subqueue import SubQueue
    from .transactions import TransactAck, TransactSend

_HOMES = {
    "BatchResult": "models",
    "BrowsePage": "models",
    "BrowsedMessage": "models",
    "Consumer": "consumer",
    "ConsumerReport": "consumer",
    "DuplicateMessage": "errors",
    "InternalError": "errors",
    "Message": "models",
    "MessageBodyMissing": "errors",
    "MessageNotFound": "errors",
    "MessageTooLarge": "errors",
    "QueueClient": "client",
    "QueueError": "errors",
    "QueueExists": "errors",
    "QueueNotFound": "errors",
    "QueueSettings": "settings",
    "QueueStats": "models",
    "QueueWide": "queuewide",
    "ReceiptHandleStale": "errors",
    "ReceivedMessage": "models",
    "SendResult": "models",
    "SubQueue": "subqueue",
    "SweepReport": "models",
    "TableLayoutMismatch": "errors",
    "Throttled": "errors",
    "TransactAck": "transactions",
    "TransactSend": "transactions",
    "TransactionConditionFailed": "errors",
    "ValidationError": "errors",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        # A submodule, as the package gave it when it imported them all: `queue_core.shard_marks` after a plain
        # `import queue_core`. Only a plain identifier can be one: `find_spec` of a dotted name would import its
        # first part (`sweep.x`), raise ModuleNotFoundError where `getattr(..., default)` expects AttributeError,
        # or find a module of a subpackage (`store.shard_marks`) the package has no attribute for.
        if name.isidentifier() and not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}"):
            return importlib.import_module(f".{name}", __name__)
        raise AttributeError(f"module 'queue_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


__all__ = [
    "BatchResult",
    "BrowsePage",
    "BrowsedMessage",
    "Consumer",
    "ConsumerReport",
    "DuplicateMessage",
    "InternalError",
    "Message",
    "MessageBodyMissing",
    "MessageNotFound",
    "MessageTooLarge",
    "QueueClient",
    "QueueError",
    "QueueExists",
    "QueueNotFound",
    "QueueSettings",
    "QueueStats",
    "QueueWide",
    "ReceiptHandleStale",
    "ReceivedMessage",
    "SendResult",
    "SubQueue",
    "SweepReport",
    "TableLayoutMismatch",
    "Throttled",
    "TransactAck",
    "TransactSend",
    "TransactionConditionFailed",
    "ValidationError",
    "sqs_client",
]
