"""A message queue on Amazon DynamoDB: isolated sub-queues per client, FIFO groups, a DLQ, delay, dedup."""

from .client import QueueClient
from .consumer import Consumer, ConsumerReport
from .errors import (
    InternalError,
    MessageNotFound,
    MessageTooLarge,
    QueueError,
    QueueExists,
    QueueNotFound,
    ReceiptHandleStale,
    Throttled,
    ValidationError,
)
from .models import BatchResult, Message, QueueStats, ReceivedMessage, SendResult, SweepReport
from .settings import QueueSettings
from .sqs_client import sqs_client
from .subqueue import SubQueue

__all__ = [
    "BatchResult",
    "Consumer",
    "ConsumerReport",
    "InternalError",
    "Message",
    "MessageNotFound",
    "MessageTooLarge",
    "QueueClient",
    "QueueError",
    "QueueExists",
    "QueueNotFound",
    "QueueSettings",
    "QueueStats",
    "ReceiptHandleStale",
    "ReceivedMessage",
    "SendResult",
    "SubQueue",
    "SweepReport",
    "Throttled",
    "ValidationError",
    "sqs_client",
]
