"""Errors of the queue core.

Every error carries the code and HTTP status of the contract, so that the handlers, the local server and the CLI
map them in one place and never have to guess.
"""

from __future__ import annotations


class QueueError(Exception):
    """Base of every error the core raises on purpose."""

    code: str = "InternalError"
    status: int = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, dict[str, str]]:
        return {"error": {"code": self.code, "message": self.message}}


class ValidationError(QueueError):
    code = "ValidationError"
    status = 400


class QueueNotFound(QueueError):
    code = "QueueNotFound"
    status = 404


class MessageNotFound(QueueError):
    code = "MessageNotFound"
    status = 404


class QueueExists(QueueError):
    code = "QueueExists"
    status = 409


class ReceiptHandleStale(QueueError):
    code = "ReceiptHandleStale"
    status = 409


class TransactionConditionFailed(QueueError):
    """A condition of one of the caller's own items failed a transaction that carried a send or an ack: nothing
    of it was applied. `index` is the item's place in the transaction, `item` the item as it was (or None)."""

    code = "TransactionConditionFailed"
    status = 409

    def __init__(self, message: str, index: int, item: dict | None = None) -> None:
        super().__init__(message)
        self.index = index
        self.item = item


class DuplicateMessage(QueueError):
    """A transactional send's dedup id was used inside the window: the whole transaction was cancelled. Names the
    first message, as the answer of a normal duplicate send does."""

    code = "DuplicateMessage"
    status = 409

    def __init__(self, message: str, message_id: str, sequence: str) -> None:
        super().__init__(message)
        self.message_id = message_id
        self.sequence = sequence


class MessageBodyMissing(QueueError):
    """The message is there but its offloaded body is not (removed from the bucket, or expired by its lifecycle
    rule). A receive moves such a message to the DLQ instead of delivering it."""

    code = "MessageBodyMissing"
    status = 410


class MessageTooLarge(QueueError):
    code = "MessageTooLarge"
    status = 413


class Throttled(QueueError):
    """DynamoDB kept throttling after the SDK's retries; the caller may retry later. Never a lost claim race."""

    code = "Throttled"
    status = 429


class TableLayoutMismatch(QueueError):
    """The table holds a layout of items this code does not serve (`layout` says which and why): nothing was
    read or written. Not the caller's fault, and no internal failure either: the deployment's code and table
    disagree until the table is migrated (`dq migrate`) or the code upgraded, so it is a 503 whose message says
    both layouts and what to run."""

    code = "TableLayoutMismatch"
    status = 503


class InternalError(QueueError):
    """An unexpected failure; its message never carries internals."""

    code = "InternalError"
    status = 500
