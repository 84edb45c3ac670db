"""SQS queue attributes and the queue settings they stand for.

Values travel as strings, as in SQS. Settable: `VisibilityTimeout`, `MessageRetentionPeriod`, `DelaySeconds`,
`ReceiveMessageWaitTimeSeconds`, `MaximumMessageSize` (the queue's `max_message_bytes`) and `RedrivePolicy` (its
`maxReceiveCount` is the queue's `max_receive_count`; the target is the queue's own DLQ); at creation also
`FifoQueue` and `ContentBasedDeduplication`. Read only: the approximate counts (of the endpoint's client),
`QueueArn`, `CreatedTimestamp`, `LastModifiedTimestamp`. SQS's other attributes (policies, encryption, FIFO
throughput) are refused when set and absent when read.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from queue_core import QueueSettings, QueueStats, limits

from .dead_letters import dlq_name
from .endpoints import Endpoint
from .errors import SqsError

# SQS name -> (setting, lowest, highest).
NUMBERS: Final = {
    "VisibilityTimeout": ("visibility_timeout", 0, limits.MAX_VISIBILITY_SECONDS),
    "MessageRetentionPeriod": ("retention_seconds", limits.MIN_RETENTION_SECONDS, limits.MAX_RETENTION_SECONDS),
    "DelaySeconds": ("delay_seconds", 0, limits.MAX_DELAY_SECONDS),
    "ReceiveMessageWaitTimeSeconds": ("receive_wait_seconds", 0, limits.MAX_WAIT_SECONDS),
    "MaximumMessageSize": ("max_message_bytes", limits.MIN_MESSAGE_BYTES, limits.MAX_BODY_BYTES),
}
FLAGS: Final = {"FifoQueue": "fifo", "ContentBasedDeduplication": "content_based_dedup"}
REDRIVE_POLICY: Final = "RedrivePolicy"
COUNTS: Final = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)
READ_ONLY: Final = (*COUNTS, "QueueArn", "CreatedTimestamp", "LastModifiedTimestamp")
NOT_SUPPORTED: Final = (
    "Policy",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "RedriveAllowPolicy",
    "SqsManagedSseEnabled",
)
ALL: Final = "All"
KNOWN: Final = frozenset({*NUMBERS, *FLAGS, REDRIVE_POLICY, *READ_ONLY, *NOT_SUPPORTED, ALL})
_DIGITS = re.compile(r"\d{1,10}")
MAX_RECEIVE_COUNT: Final = 1000


def settings_of(queue: str, attributes: dict[str, str], endpoint: Endpoint, creating: bool) -> dict[str, Any]:
    """The core settings the attributes ask for, every one checked; `InvalidAttributeName` or
    `InvalidAttributeValue` otherwise."""
    settings: dict[str, Any] = {}
    for name, value in attributes.items():
        if name in NUMBERS:
            setting, low, high = NUMBERS[name]
            if not _DIGITS.fullmatch(value) or not low <= int(value) <= high:
                raise _bad_value(name, f"must be an integer from {low} to {high}")
            settings[setting] = int(value)
        elif name in FLAGS:
            if value not in ("true", "false"):
                raise _bad_value(name, "must be true or false")
            if not creating:
                raise _bad_value(name, "is fixed when the queue is created here")
            settings[FLAGS[name]] = value == "true"
        elif name == REDRIVE_POLICY:
            settings["max_receive_count"] = _max_receive_count(queue, value, endpoint)
        elif name in READ_ONLY or name == ALL:
            raise SqsError("InvalidAttributeName", f"{name} cannot be set.")
        elif name in NOT_SUPPORTED:
            raise SqsError("InvalidAttributeName", f"{name} is not supported by this queue.")
        else:
            raise SqsError("InvalidAttributeName", f"Unknown Attribute {name[:100]}.")
    return settings


def _max_receive_count(queue: str, value: str, endpoint: Endpoint) -> int:
    """SQS removes a redrive policy with an empty value; here that is `max_receive_count` 0: never to the DLQ."""
    if value == "":
        return 0
    try:
        policy = json.loads(value)
    except ValueError:
        policy = None
    if not isinstance(policy, dict) or "maxReceiveCount" not in policy:
        raise _bad_value(REDRIVE_POLICY, "must be JSON with deadLetterTargetArn and maxReceiveCount")
    count = policy["maxReceiveCount"]
    if isinstance(count, str) and _DIGITS.fullmatch(count):
        count = int(count)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_RECEIVE_COUNT:
        raise _bad_value(REDRIVE_POLICY, f"maxReceiveCount must be from 1 to {MAX_RECEIVE_COUNT}")
    target = policy.get("deadLetterTargetArn")
    if target is not None and target != endpoint.queue_arn(dlq_name(queue)):
        raise _bad_value(
            REDRIVE_POLICY,
            f"deadLetterTargetArn must be this queue's own dead-letter queue, {endpoint.queue_arn(dlq_name(queue))}",
        )
    return count


def _bad_value(name: str, reason: str) -> SqsError:
    return SqsError("InvalidAttributeValue", f"Invalid value for the parameter {name}: {reason}.")


def wanted_names(names: list[str] | None) -> set[str]:
    """The names asked for (`All` is every one); an unknown name is an `InvalidAttributeName` error."""
    asked = set(names or ())
    unknown = asked - KNOWN
    if unknown:
        raise SqsError("InvalidAttributeName", f"Unknown Attribute {sorted(unknown)[0][:100]}.")
    return set(KNOWN) if ALL in asked else asked


def attributes_of(settings: QueueSettings, endpoint: Endpoint, names: set[str], stats: QueueStats | None) -> dict:
    """The queue's attributes among `names`, as SQS strings; `stats` is needed only when a count is asked."""
    values: dict[str, str] = {
        "QueueArn": endpoint.queue_arn(settings.name),
        "CreatedTimestamp": str(settings.created_at // 1000),
        "LastModifiedTimestamp": str((settings.modified_at or settings.created_at) // 1000),
    }
    for name, (setting, _, _) in NUMBERS.items():
        values[name] = str(getattr(settings, setting))
    if settings.fifo:
        values["FifoQueue"] = "true"
        values["ContentBasedDeduplication"] = str(settings.content_based_dedup).lower()
    if settings.max_receive_count > 0:
        target = endpoint.queue_arn(dlq_name(settings.name))
        values[REDRIVE_POLICY] = json.dumps(
            {"deadLetterTargetArn": target, "maxReceiveCount": settings.max_receive_count}, separators=(",", ":")
        )
    if stats is not None:
        values.update(zip(COUNTS, map(str, (stats.visible, stats.in_flight, stats.delayed)), strict=True))
    return {name: value for name, value in values.items() if name in names}


def same_as_asked(settings: QueueSettings, asked: dict[str, Any]) -> bool:
    """Whether an existing queue has every setting a CreateQueue named (SQS compares only those)."""
    return all(getattr(settings, name) == value for name, value in asked.items())
