"""SQS's errors: the shape botocore parses into its modeled exceptions.

An error answer is `{"__type": "com.amazonaws.sqs#<Code>", "message": ...}` with the header
`x-amzn-query-error: <legacy code>;Sender`, as SQS sends it: botocore takes the modeled exception from `__type`
(`client.exceptions.QueueDoesNotExist`) and `error.response["Error"]["Code"]` from the header, so code written
against either the JSON or the older query protocol sees what it saw from SQS.
"""

from __future__ import annotations

import json
from typing import Final

from queue_core import QueueError

# The codes SQS's query protocol used, which SQS still sends in `x-amzn-query-error`; any other code is its own.
_LEGACY_CODES: Final = {
    "QueueDoesNotExist": "AWS.SimpleQueueService.NonExistentQueue",
    "QueueNameExists": "QueueAlreadyExists",
    "BatchEntryIdsNotDistinct": "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
    "TooManyEntriesInBatchRequest": "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
    "EmptyBatchRequest": "AWS.SimpleQueueService.EmptyBatchRequest",
    "InvalidBatchEntryId": "AWS.SimpleQueueService.InvalidBatchEntryId",
    "BatchRequestTooLong": "AWS.SimpleQueueService.BatchRequestTooLong",
    "PurgeQueueInProgress": "AWS.SimpleQueueService.PurgeQueueInProgress",
    "UnsupportedOperation": "AWS.SimpleQueueService.UnsupportedOperation",
    "MessageNotInflight": "AWS.SimpleQueueService.MessageNotInflight",
    "QueueDeletedRecently": "AWS.SimpleQueueService.QueueDeletedRecently",
}
JSON_CONTENT_TYPE: Final = "application/x-amz-json-1.0"


class SqsError(Exception):
    """An SQS error answer; `status` is 400 for everything the sender can fix, as SQS answers."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        fault = "Sender" if self.status < 500 else "Receiver"
        headers = {
            "Content-Type": JSON_CONTENT_TYPE,
            "x-amzn-query-error": f"{_LEGACY_CODES.get(self.code, self.code)};{fault}",
        }
        body = {"__type": f"com.amazonaws.sqs#{self.code}", "message": self.message}
        return self.status, headers, json.dumps(body).encode()


def invalid(message: str) -> SqsError:
    return SqsError("InvalidParameterValue", message)


def missing(name: str) -> SqsError:
    return SqsError("MissingParameter", f"The request must contain the parameter {name}.")


def no_queue() -> SqsError:
    return SqsError("QueueDoesNotExist", "The specified queue does not exist.")


# How the core's errors read over SQS, where the action does not say otherwise.
_FROM_CORE: Final = {
    "ValidationError": "InvalidParameterValue",
    "MessageTooLarge": "InvalidParameterValue",
    "QueueNotFound": "QueueDoesNotExist",
    "QueueExists": "QueueNameExists",
    "MessageNotFound": "ReceiptHandleIsInvalid",
    "ReceiptHandleStale": "ReceiptHandleIsInvalid",
    "Throttled": "RequestThrottled",
}


def from_core(error: QueueError, **codes: str) -> SqsError:
    """The SQS error for a core error; `codes` overrides the mapping for one action (`QueueExists=...`)."""
    return from_code(error.code, error.message, **codes)


def from_code(code: str, message: str, **codes: str) -> SqsError:
    """The SQS error for a core error's code (a batch entry's failure carries the code only)."""
    if code == "TableLayoutMismatch":  # the deployment's code and table disagree: says which, and what to run
        return SqsError("ServiceUnavailable", message, 503)
    if code not in _FROM_CORE:
        return SqsError("InternalFailure", "The request processing has failed because of an internal error.", 500)
    return SqsError(codes.get(code) or _FROM_CORE[code], message)
