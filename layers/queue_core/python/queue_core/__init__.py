"""A message queue on Amazon DynamoDB: isolated sub-queues per client, FIFO groups, a DLQ, delay, dedup."""

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
from .sqs_client import sqs_client
from .subqueue import SubQueue
from .transactions import TransactAck, TransactSend

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
