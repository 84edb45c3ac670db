"""Messages as the records of an SQS event, the shape a Lambda function fed by SQS receives.

Field for field what SQS's event source mapping sends (`messageId`, `receiptHandle`, `body`, `attributes`,
`messageAttributes`, `md5OfBody`, `md5OfMessageAttributes`, `eventSource`, `eventSourceARN`, `awsRegion`), so that
a consumer written for SQS (Powertools' `BatchProcessor`, `SqsFifoPartialProcessor`, the parser's `SqsModel`)
runs unchanged. `messageId` is the message's SQS id (`sqs_ids`), as the SQS protocol shows it; handles are the
queue's own. A consumer reports failures by `messageId`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from . import attribute_digest as digest
from .models import ReceivedMessage

EVENT_SOURCE: Final = "aws:sqs"
STRING: Final = "String"
BINARY: Final = "Binary"


@dataclass(frozen=True)
class EventSource:
    """Where records say they come from. The ARN names the sub-queue: the queue as its resource (so Powertools'
    `queue_url` gives the queue's SQS-protocol URL), the client as a qualifier after it."""

    region: str
    account: str
    queue: str
    client: str

    @property
    def arn(self) -> str:
        return f"arn:aws:sqs:{self.region}:{self.account}:{self.queue}:{self.client}"


def record(message: ReceivedMessage, source: EventSource, now_ms: int) -> dict[str, Any]:
    """One SQS record. `SenderId` is the account (the queue does not keep who sent a message: SQS gives the
    account id for a message its root sent); the first receive time is the claim that delivers it, at the latest."""
    attributes = {
        "ApproximateReceiveCount": str(message.receive_count),
        "SentTimestamp": str(message.sent_at),
        "SenderId": source.account,
        "ApproximateFirstReceiveTimestamp": str(message.first_received_at or now_ms),
    }
    if message.group_id is not None:
        attributes["MessageGroupId"] = message.group_id
        # SQS gives every FIFO message a dedup id; one sent here without any gets its message id, unique as well.
        attributes["MessageDeduplicationId"] = message.dedup_id or message.sqs_message_id
        attributes["SequenceNumber"] = message.sequence
    types = message.attribute_types
    shaped = {
        "messageId": message.sqs_message_id,
        "receiptHandle": message.receipt_handle,
        "body": message.body,
        "attributes": attributes,
        "messageAttributes": {
            name: _attribute(value, types.get(name, STRING)) for name, value in message.attributes.items()
        },
        "md5OfBody": digest.md5_of_body(message.body),
        "eventSource": EVENT_SOURCE,
        "eventSourceARN": source.arn,
        "awsRegion": source.region,
    }
    if message.attributes:
        shaped["md5OfMessageAttributes"] = digest.md5_of_attributes(message.attributes, types)
    return shaped


def _attribute(value: str, data_type: str) -> dict[str, Any]:
    """Binary values are kept as base64 text, which is what the event carries."""
    key = "binaryValue" if data_type.startswith(BINARY) else "stringValue"
    return {key: value, "stringListValues": [], "binaryListValues": [], "dataType": data_type}


def event(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"Records": records}


def encoded(shaped: dict[str, Any]) -> str:
    """The event as the invoke sends it. `payload_bytes` measures this very text, so a batch split to fit
    Lambda's payload limit fits as sent."""
    return json.dumps(shaped, separators=(",", ":"))


def payload_bytes(records: list[dict[str, Any]]) -> int:
    """The size of the event as Lambda counts it: its JSON, in bytes."""
    return len(encoded(event(records)).encode())
