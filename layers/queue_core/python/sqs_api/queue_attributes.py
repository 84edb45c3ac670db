"""SQS queue attributes and the queue settings they stand for.

Values travel as strings, as in SQS. Settable: `VisibilityTimeout`, `MessageRetentionPeriod`, `DelaySeconds`,
`ReceiveMessageWaitTimeSeconds`, `MaximumMessageSize` (the queue's `max_message_bytes`), `RedrivePolicy` (its
`maxReceiveCount` is the queue's `max_receive_count`; the target is the queue's own DLQ `{queue}.dlq`, or any other
queue of the same kind, whose receive then reads this queue's dead letters too) and `RedriveAllowPolicy`; at
creation also `FifoQueue` and `ContentBasedDeduplication`. The encryption and FIFO throughput attributes take the
values that say what the queue does (`encryption`), and refuse the others naming why; `Policy` is refused: access
is IAM's. Read only: the approximate counts (of the endpoint's client), `QueueArn`, `CreatedTimestamp`,
`LastModifiedTimestamp`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from queue_core import QueueError, QueueSettings, QueueStats, limits, validation

from . import encryption
from .dead_letters import dlq_name, source_of
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
REDRIVE_ALLOW_POLICY: Final = "RedriveAllowPolicy"
MAX_ALLOWED_SOURCES: Final = 10
ENCRYPTION: Final = ("SqsManagedSseEnabled", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds")
FIFO_ONLY: Final = ("DeduplicationScope", "FifoThroughputLimit")
POLICY: Final = "Policy"
COUNTS: Final = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)
READ_ONLY: Final = (*COUNTS, "QueueArn", "CreatedTimestamp", "LastModifiedTimestamp")
ALL: Final = "All"
KNOWN: Final = frozenset(
    {*NUMBERS, *FLAGS, REDRIVE_POLICY, REDRIVE_ALLOW_POLICY, *READ_ONLY, *ENCRYPTION, *FIFO_ONLY, POLICY, ALL}
)
_DIGITS = re.compile(r"\d{1,10}")
MAX_RECEIVE_COUNT: Final = 1000


def settings_of(
    queue: str, attributes: dict[str, str], endpoint: Endpoint, creating: bool, fifo: bool
) -> dict[str, Any]:
    """The core settings the attributes ask for, every one checked; `InvalidAttributeName` or
    `InvalidAttributeValue` otherwise. The attributes that only tell what every queue does (encryption, FIFO
    throughput) ask for no setting when they say the truth."""
    settings: dict[str, Any] = {}
    for name, value in attributes.items():
        if name in NUMBERS:
            setting, low, high = NUMBERS[name]
            if not _DIGITS.fullmatch(value) or not low <= int(value) <= high:
                raise bad_value(name, f"must be an integer from {low} to {high}")
            settings[setting] = int(value)
        elif name in FLAGS:
            if value not in ("true", "false"):
                raise bad_value(name, "must be true or false")
            if not creating:
                raise bad_value(name, "is fixed when the queue is created here")
            settings[FLAGS[name]] = value == "true"
        elif name == REDRIVE_POLICY:
            settings["max_receive_count"], settings["dead_letter_target"] = _redrive(queue, value, endpoint)
        elif name == REDRIVE_ALLOW_POLICY:
            settings["redrive_permission"], settings["redrive_sources"] = _redrive_allow(value, endpoint)
        elif name in ENCRYPTION:
            _check_encryption(name, value)
        elif name in FIFO_ONLY:
            _check_fifo_only(name, value, fifo)
        elif name == POLICY:
            raise bad_value(
                POLICY,
                "access to this queue is granted with IAM on the API's routes, not with a queue policy: "
                "DynamoQueue.grant_sqs(role, client) for a client's messages, grant_sqs_admin(role) to administer "
                "queues (see docs/security.md)",
            )
        elif name in READ_ONLY or name == ALL:
            raise SqsError("InvalidAttributeName", f"{name} cannot be set.")
        else:
            raise SqsError("InvalidAttributeName", f"Unknown Attribute {name[:100]}.")
    return settings


def _redrive(queue: str, value: str, endpoint: Endpoint) -> tuple[int, str]:
    """`max_receive_count` and `dead_letter_target` ("" for the queue's own DLQ). SQS removes a redrive policy
    with an empty value; here that is `max_receive_count` 0: never to the DLQ."""
    if value == "":
        return 0, ""
    try:
        policy = json.loads(value)
    except ValueError:
        policy = None
    if not isinstance(policy, dict) or "maxReceiveCount" not in policy:
        raise bad_value(REDRIVE_POLICY, "must be JSON with deadLetterTargetArn and maxReceiveCount")
    count = policy["maxReceiveCount"]
    if isinstance(count, str) and _DIGITS.fullmatch(count):
        count = int(count)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_RECEIVE_COUNT:
        raise bad_value(REDRIVE_POLICY, f"maxReceiveCount must be from 1 to {MAX_RECEIVE_COUNT}")
    target = policy.get("deadLetterTargetArn")
    if target is None or target == endpoint.queue_arn(dlq_name(queue)):
        return count, ""
    name = _queue_of_arn(target, endpoint, REDRIVE_POLICY)
    if source_of(name) is not None:
        raise bad_value(
            REDRIVE_POLICY,
            f"{name} is another queue's own dead-letter queue; name this queue's, "
            f"{endpoint.queue_arn(dlq_name(queue))}, or any queue of the same type",
        )
    return count, name


def _queue_of_arn(arn: Any, endpoint: Endpoint, attribute: str) -> str:
    prefix = endpoint.queue_arn("")
    if not isinstance(arn, str) or not arn.startswith(prefix) or len(arn) == len(prefix):
        raise bad_value(attribute, f"{str(arn)[:256]} is not the ARN of a queue of this account and region")
    return arn[len(prefix) :]


def _redrive_allow(value: str, endpoint: Endpoint) -> tuple[str, tuple[str, ...]]:
    """SQS's RedriveAllowPolicy: `allowAll`, `denyAll`, or `byQueue` with 1-10 source queue ARNs."""
    try:
        policy = json.loads(value)
    except ValueError:
        policy = None
    if not isinstance(policy, dict) or set(policy) - {"redrivePermission", "sourceQueueArns"}:
        raise bad_value(REDRIVE_ALLOW_POLICY, "must be JSON with redrivePermission (and sourceQueueArns)")
    permission = policy.get("redrivePermission")
    arns = policy.get("sourceQueueArns")
    if permission not in ("allowAll", "denyAll", "byQueue"):
        raise bad_value(REDRIVE_ALLOW_POLICY, "redrivePermission must be allowAll, denyAll or byQueue")
    if permission != "byQueue":
        if arns is not None:
            raise bad_value(REDRIVE_ALLOW_POLICY, "sourceQueueArns is only for redrivePermission byQueue")
        return permission, ()
    if not isinstance(arns, list) or not 1 <= len(arns) <= MAX_ALLOWED_SOURCES:
        raise bad_value(
            REDRIVE_ALLOW_POLICY, f"byQueue takes sourceQueueArns, a list of 1 to {MAX_ALLOWED_SOURCES} queue ARNs"
        )
    names = [_queue_of_arn(arn, endpoint, REDRIVE_ALLOW_POLICY) for arn in arns]
    for name in names:
        try:
            validation.queue_name(name)
        except QueueError:
            raise bad_value(REDRIVE_ALLOW_POLICY, f"{name[:256]} in sourceQueueArns is not a queue name") from None
    return permission, tuple(dict.fromkeys(names))


def _check_encryption(name: str, value: str) -> None:
    """Accepted when it says how the messages are encrypted (`encryption`), refused naming the truth otherwise."""
    keyed = bool(encryption.table_key())
    if name == "SqsManagedSseEnabled":
        if value not in ("true", "false"):
            raise bad_value(name, "must be true or false")
        if value == "false" and not keyed:
            raise bad_value(name, f"messages are always encrypted at rest here: {encryption.DEFAULT_KEYS}")
        if value == "true" and keyed:
            raise bad_value(name, f"messages are encrypted with the stack's key {encryption.table_key()}")
    elif name == "KmsMasterKeyId":
        if not encryption.names_table_key(value):
            raise bad_value(name, encryption.refusal_of_key(value))
    elif value != encryption.DATA_KEY_REUSE_SECONDS:
        raise bad_value(
            name,
            f"DynamoDB keeps the table key {encryption.DATA_KEY_REUSE_SECONDS} seconds between uses of the KMS key, "
            "for every queue; it cannot be set per queue",
        )


def _check_fifo_only(name: str, value: str, fifo: bool) -> None:
    if not fifo:
        raise SqsError("InvalidAttributeName", f"{name} is only for FIFO queues.")
    if name == "DeduplicationScope" and value != encryption.DEDUPLICATION_SCOPE:
        raise bad_value(
            name,
            "a MessageDeduplicationId is unique across every message group of the queue (per client) here: "
            f"the scope is {encryption.DEDUPLICATION_SCOPE}",
        )
    if name == "FifoThroughputLimit" and value != encryption.THROUGHPUT_LIMIT:
        raise bad_value(
            name,
            "throughput here is per message group (each group has its own item and order; the queue has no limit "
            f"of its own): the limit is {encryption.THROUGHPUT_LIMIT}",
        )


def bad_value(name: str, reason: str) -> SqsError:
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
        target = endpoint.queue_arn(settings.dead_letter_target or dlq_name(settings.name))
        values[REDRIVE_POLICY] = json.dumps(
            {"deadLetterTargetArn": target, "maxReceiveCount": settings.max_receive_count}, separators=(",", ":")
        )
    if settings.redrive_permission:
        allow: dict[str, Any] = {"redrivePermission": settings.redrive_permission}
        if settings.redrive_permission == "byQueue":
            allow["sourceQueueArns"] = [endpoint.queue_arn(name) for name in settings.redrive_sources]
        values[REDRIVE_ALLOW_POLICY] = json.dumps(allow, separators=(",", ":"))
    values.update(encryption.reported())
    if settings.fifo:
        values["DeduplicationScope"] = encryption.DEDUPLICATION_SCOPE
        values["FifoThroughputLimit"] = encryption.THROUGHPUT_LIMIT
    if stats is not None:
        values.update(zip(COUNTS, map(str, (stats.visible, stats.in_flight, stats.delayed)), strict=True))
    return {name: value for name, value in values.items() if name in names}


def same_as_asked(settings: QueueSettings, asked: dict[str, Any]) -> bool:
    """Whether an existing queue has every setting a CreateQueue named (SQS compares only those)."""
    return all(getattr(settings, name) == value for name, value in asked.items())
