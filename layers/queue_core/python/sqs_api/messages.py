"""The message actions: send, receive, delete and change visibility, one at a time or in batches of 10.

Every `MessageId` here is the message's SQS id (`queue_core.sqs_ids`), a UUID, never the queue's own id: clients
use it as a batch entry id (at most 80 characters of `A-Za-z0-9_-`). No SQS action takes a message id back.

They act on the endpoint's client's sub-queue of the queue the `QueueUrl` names. A DLQ's URL reads that
sub-queue's DLQ: a receive claims its oldest dead letters no other receive holds, hiding them for the visibility
timeout as SQS does (`SubQueue.dlq_receive`), each with a signed handle of that DLQ copy and claim; a delete with
it removes that copy from the DLQ and nothing else (never the message in the queue, which a redrive may have put
back under the same id), and a change of visibility with it moves the claim's end.

A queue that other queues name as their dead-letter target (`RedrivePolicy`) answers its own messages first, then
the dead letters of each of those sources (the client's sub-queue of each), read as a source's DLQ URL reads them,
with the same handles: a delete or a change of visibility at the target's URL with such a handle acts on that
source's DLQ copy. A FIFO receive with a `ReceiveRequestAttemptId` repeated within five minutes answers the same
messages with the same handles (`queue_core.receive_attempts`), at a DLQ's URL and at a dead-letter target too,
dead letters included (`queue_core.dead_letter_receives`).
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Final

from queue_api.payloads import answered_size, within_budget
from queue_core import Message, QueueError, QueueSettings, ReceivedMessage, SubQueue, limits
from queue_core import ValidationError as QueueValidationError
from queue_core.attribute_digest import md5_of_attributes, md5_of_body
from queue_core.dead_letters import DeadLetter, DeadLetterReceipt

from . import message_attributes
from .calls import Call, Target
from .errors import SqsError, from_code, from_core, invalid, missing
from .shapes import integer, require

MAX_BATCH: Final = 10
MAX_RECEIVE: Final = 10
# SQS's own delay limit, kept here whatever the core allows.
MAX_DELAY_SECONDS: Final = 900
# The payload of a batch, summed over its entries, as SQS limits it.
MAX_BATCH_BYTES: Final = limits.MAX_BODY_BYTES
_ENTRY_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")
_ATTEMPT_ID = re.compile(r"[!-~]{1,128}")
# A group id as SQS takes it on any queue: 1-128 letters, digits and punctuation.
_GROUP_ID = re.compile(r"[!-~]{1,128}")
# The one message system attribute a sender may set (X-Ray's trace header); SQS refuses any other name.
TRACE_HEADER: Final = "AWSTraceHeader"
SYSTEM_NAMES: Final = (
    "SenderId",
    "SentTimestamp",
    "ApproximateReceiveCount",
    "ApproximateFirstReceiveTimestamp",
    "SequenceNumber",
    "MessageGroupId",
    "MessageDeduplicationId",
    "DeadLetterQueueSourceArn",
)


# Sending.


def send_message(call: Call) -> dict[str, Any]:
    target = _message_queue(call)
    settings = call.settings(target.queue)
    entry, digests, _ = _entry(settings, call.params)
    try:
        sent = call.sub_queue(target).send(**entry)
    except QueueError as error:
        raise from_core(error) from None
    return {**digests, "MessageId": sent.sqs_message_id, **_sequence(settings, sent.sequence)}


def send_message_batch(call: Call) -> dict[str, Any]:
    target = _message_queue(call)
    settings = call.settings(target.queue)
    entries = _batch(call.params)
    total = sum(_payload_size(raw) for raw in entries)
    if total > MAX_BATCH_BYTES:
        raise SqsError(
            "BatchRequestTooLong", f"Batch requests cannot be longer than {MAX_BATCH_BYTES} bytes; got {total}."
        )
    failed: list[dict[str, Any]] = []
    prepared: list[tuple[dict[str, Any], dict[str, Any], dict[str, str]]] = []
    for raw in entries:
        try:
            entry, digests, _ = _entry(settings, raw)
        except SqsError as error:
            failed.append(_failure(raw["Id"], error))
            continue
        prepared.append((raw, entry, digests))
    successful = []
    if prepared:
        try:
            result = call.sub_queue(target).send_batch([entry for _, entry, _ in prepared])
        except QueueError as error:
            raise from_core(error) from None
        for done in result.successful:
            raw, _, digests = prepared[done["index"]]
            successful.append(
                {
                    "Id": raw["Id"],
                    "MessageId": result.sqs_message_ids[done["index"]],
                    **digests,
                    **_sequence(settings, done["sequence"]),
                }
            )
        for refused in result.failed:
            raw = prepared[refused["index"]][0]
            failed.append(_failure(raw["Id"], from_code(refused["code"], refused["message"])))
    return {"Successful": successful, "Failed": failed}


def _payload_size(params: dict[str, Any]) -> int:
    """An entry's body and attributes as SQS sums them for a batch's limit, before any entry is checked."""
    size = len(str(params.get("MessageBody") or "").encode("utf-8", "surrogatepass"))
    for name, value in (params.get("MessageAttributes") or {}).items():
        parts = (name, value.get("DataType"), value.get("StringValue"), value.get("BinaryValue"))
        size += sum(len(str(part).encode("utf-8", "surrogatepass")) for part in parts if part is not None)
    return size


def _entry(settings: QueueSettings, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str], int]:
    """The core's send arguments for one SQS message, every SQS rule checked; the digests to answer; its size
    as SQS counts it (body and attributes)."""
    body = require(params, "MessageBody")
    if not body:
        raise missing("MessageBody")
    if not message_attributes.allowed_text(body):
        raise SqsError("InvalidMessageContents", "Invalid characters found in the message body.")
    attributes, types, attributes_size = message_attributes.from_sqs(params.get("MessageAttributes"))
    _check_system_attributes(params.get("MessageSystemAttributes"))
    size = len(body.encode("utf-8")) + attributes_size
    if size > settings.max_message_bytes:
        raise invalid(
            f"One or more parameters are invalid. Reason: Message must be shorter than {settings.max_message_bytes} "
            "bytes (body and attributes)."
        )
    entry: dict[str, Any] = {"body": body}
    if attributes:
        entry["attributes"] = attributes
        entry["attribute_types"] = types
    delay = integer(params, "DelaySeconds", 0, MAX_DELAY_SECONDS)
    group = params.get("MessageGroupId")
    dedup = params.get("MessageDeduplicationId")
    if group is not None and not _GROUP_ID.fullmatch(group):
        raise invalid(
            "Value for parameter MessageGroupId is invalid. Reason: it must be 1 to 128 letters, digits and "
            "punctuation characters."
        )
    if settings.fifo:
        if delay is not None:
            raise invalid(
                "Value for parameter DelaySeconds is invalid. Reason: FIFO queues take the queue's delay only."
            )
        if group is None:
            raise missing("MessageGroupId")
        if dedup is None and not settings.content_based_dedup:
            raise invalid(
                "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided "
                "explicitly"
            )
        entry["group_id"] = group
    if delay is not None:
        entry["delay_seconds"] = delay
    if dedup is not None:
        entry["dedup_id"] = dedup
    digests = {"MD5OfMessageBody": md5_of_body(body)}
    if attributes:
        digests["MD5OfMessageAttributes"] = md5_of_attributes(attributes, types) or ""
    return entry, digests, size


def _check_system_attributes(raw: dict[str, Any] | None) -> None:
    """SQS takes `AWSTraceHeader` (a String) and no other name. The header is accepted and not kept: nothing here
    hands it on (no receive answers it)."""
    for name, value in (raw or {}).items():
        if name != TRACE_HEADER:
            raise invalid(f"Message system attribute name '{name[:256]}' is invalid; only {TRACE_HEADER} may be sent.")
        if value.get("DataType") != "String" or not value.get("StringValue") or value.get("BinaryValue") is not None:
            raise invalid(f"Message system attribute '{TRACE_HEADER}' must be of type String with a StringValue.")


def _sequence(settings: QueueSettings, sequence: str) -> dict[str, str]:
    return {"SequenceNumber": sequence} if settings.fifo else {}


# Receiving.


def receive_message(call: Call) -> dict[str, Any]:
    """The answer leaves through Lambda: it carries what fits under its 6 MB (at least one message) and gives the
    other claimed messages back at once, as the REST receive does (`queue_api.payloads`)."""
    target = call.target()
    want = integer(call.params, "MaxNumberOfMessages", 1, MAX_RECEIVE, default=1)
    visibility = integer(call.params, "VisibilityTimeout", 0, limits.MAX_VISIBILITY_SECONDS)
    wait = integer(call.params, "WaitTimeSeconds", 0, limits.MAX_WAIT_SECONDS)
    attempt = call.params.get("ReceiveRequestAttemptId")
    if attempt is not None and not _ATTEMPT_ID.fullmatch(attempt):
        raise invalid("ReceiveRequestAttemptId must be 1-128 printable ASCII characters.")
    system = set(call.params.get("AttributeNames") or ()) | set(call.params.get("MessageSystemAttributeNames") or ())
    system_wanted = set(SYSTEM_NAMES) if "All" in system else system
    names = call.params.get("MessageAttributeNames")
    sub_queue = call.sub_queue(target)
    settings = call.settings(target.queue)
    attempt = attempt if settings.fifo else None

    def fit(messages: list[Any]) -> int:
        """How many of a receive's messages its answer carries: what an attempt keeps, so its repeat fits too."""
        answers = [_message(call, settings, message, system_wanted, names) for message in messages]
        return len(within_budget(answers, size_of=lambda answer: answered_size(answer) + 1)[0])

    try:
        found: list[DeadLetter | ReceivedMessage]
        if target.dlq:
            if attempt is None:
                found = list(sub_queue.dlq_receive(want, visibility))
            else:
                found = sub_queue.dlq_receive_attempt(attempt, want, visibility, fit=fit)
        else:
            sources = [
                call.core.queue(source.name, call.endpoint.client)
                for source in call.core.dead_letter_sources(target.queue)
            ]
            if sources:
                found = sub_queue.receive_with_dead_letters(sources, want, visibility, wait, attempt, fit=fit)
            elif attempt is not None:
                found = list(
                    sub_queue.receive_attempt(attempt, want, visibility_timeout=visibility, wait_seconds=wait, fit=fit)
                )
            else:
                found = list(sub_queue.receive(want, visibility_timeout=visibility, wait_seconds=wait))
    except QueueError as error:
        raise from_core(error) from None
    answers = [(message, _message(call, settings, message, system_wanted, names)) for message in found]
    kept, surplus = within_budget(answers, size_of=lambda answer: answered_size(answer[1]) + 1)
    for message, _ in surplus:
        # Nobody saw it: a message is given back uncounted, so a receive limit of 1 does not dead-letter it
        # undelivered; a dead letter's claim is released. One not given back is visible again after its timeout.
        with contextlib.suppress(QueueError):
            dead_letters_of = _dead_letters_of(call, target, message.receipt_handle)
            if dead_letters_of is None:
                sub_queue.return_unseen(message.receipt_handle)
            else:
                dead_letters_of.dlq_change_visibility(message.receipt_handle, 0)
    return {"Messages": [answer for _, answer in kept]} if kept else {}


def _message(
    call: Call, settings: QueueSettings, read: DeadLetter | ReceivedMessage, system: set[str], names: list[str] | None
) -> dict[str, Any]:
    """A dead letter, whichever way it was read (a claim, or the repeat of an attempt), says where it died by its
    handle: the queue whose DLQ copy the handle names is its source."""
    handle = read.receipt_handle
    owner = DeadLetterReceipt.owner(handle)
    source = None if owner is None else owner[0]
    message: Message | ReceivedMessage = read.message if isinstance(read, DeadLetter) else read
    answer: dict[str, Any] = {
        "MessageId": message.sqs_message_id,
        "ReceiptHandle": handle,
        "MD5OfBody": md5_of_body(message.body),
        "Body": message.body,
    }
    values = {
        "SenderId": call.endpoint.account,
        "SentTimestamp": str(message.sent_at),
        "ApproximateReceiveCount": str(message.receive_count),
        "ApproximateFirstReceiveTimestamp": str(message.first_received_at or message.sent_at),
    }
    if settings.fifo:
        values["SequenceNumber"] = message.sequence
        if message.group_id is not None:
            values["MessageGroupId"] = message.group_id
        # A FIFO dead letter's dedup id is its message id, as SQS gives it (two messages that shared a dedup id are
        # two dead letters).
        dedup = message.sqs_message_id if source is not None else message.dedup_id
        if dedup is not None:
            values["MessageDeduplicationId"] = dedup
    if source is not None:
        values["DeadLetterQueueSourceArn"] = call.endpoint.queue_arn(source)
    chosen_system = {name: value for name, value in values.items() if name in system}
    if chosen_system:
        answer["Attributes"] = chosen_system
    attributes = message_attributes.chosen(message.attributes, names)
    if attributes:
        answer["MD5OfMessageAttributes"] = md5_of_attributes(attributes, message.attribute_types)
        answer["MessageAttributes"] = message_attributes.to_sqs(attributes, message.attribute_types)
    return answer


# Settling.


def delete_message(call: Call) -> dict[str, Any]:
    target = call.target()
    _delete(call, target, require(call.params, "ReceiptHandle"))
    return {}


def delete_message_batch(call: Call) -> dict[str, Any]:
    target = call.target()
    successful, failed = [], []
    for entry in _batch(call.params):
        try:
            _delete(call, target, require(entry, "ReceiptHandle"))
        except SqsError as error:
            failed.append(_failure(entry["Id"], error))
        else:
            successful.append({"Id": entry["Id"]})
    return {"Successful": successful, "Failed": failed}


def _delete(call: Call, target: Target, handle: str) -> None:
    """As in SQS, a handle of a message already deleted, or received again since, deletes nothing and is no
    error; a handle that was never valid here is `ReceiptHandleIsInvalid`."""
    try:
        dead_letters_of = _dead_letters_of(call, target, handle)
        if dead_letters_of is not None:
            dead_letters_of.dlq_delete(handle)
        else:
            call.sub_queue(target).delete(handle)
    except QueueError as error:
        if error.code in ("ReceiptHandleStale", "MessageNotFound"):
            return
        raise _handle_error(error) from None


def change_message_visibility(call: Call) -> dict[str, Any]:
    target = call.target()
    _change(call, target, call.params)
    return {}


def change_message_visibility_batch(call: Call) -> dict[str, Any]:
    target = call.target()
    successful, failed = [], []
    for entry in _batch(call.params):
        try:
            _change(call, target, entry)
        except SqsError as error:
            failed.append(_failure(entry["Id"], error))
        else:
            successful.append({"Id": entry["Id"]})
    return {"Successful": successful, "Failed": failed}


def _change(call: Call, target: Target, params: dict[str, Any]) -> None:
    handle = require(params, "ReceiptHandle")
    seconds = integer(params, "VisibilityTimeout", 0, limits.MAX_VISIBILITY_SECONDS)
    if seconds is None:
        raise missing("VisibilityTimeout")
    try:
        dead_letters_of = _dead_letters_of(call, target, handle)
        if dead_letters_of is not None:
            dead_letters_of.dlq_change_visibility(handle, seconds)
        else:
            call.sub_queue(target).change_visibility(handle, seconds)
    except QueueError as error:
        if error.code in ("ReceiptHandleStale", "MessageNotFound"):
            raise SqsError("MessageNotInflight", "The message referred to isn't in flight.") from None
        raise _handle_error(error) from None


def _dead_letters_of(call: Call, target: Target, handle: str) -> SubQueue | None:
    """The sub-queue whose DLQ a handle sent to `target`'s URL acts on: the queue's own at a DLQ's URL; a
    source's, for a dead letter's handle at the URL of a queue that source names as its target; None for a live
    handle of the queue. The handle's signature is checked by that sub-queue."""
    if target.dlq:
        return call.sub_queue(target)
    owner = DeadLetterReceipt.owner(handle)
    if owner is None:
        return None
    if owner[0] not in {source.name for source in call.core.dead_letter_sources(target.queue)}:
        raise QueueValidationError("receipt_handle is a dead letter's handle of a queue that does not name this one")
    return call.core.queue(owner[0], call.endpoint.client)


def _handle_error(error: QueueError) -> SqsError:
    if error.code == "ValidationError":
        return SqsError("ReceiptHandleIsInvalid", f"The input receipt handle is invalid: {error.message}")
    return from_core(error)


# Batches.


def _batch(params: dict[str, Any]) -> list[dict[str, Any]]:
    entries = require(params, "Entries")
    if not entries:
        raise SqsError("EmptyBatchRequest", "There should be at least one entry in the request.")
    if len(entries) > MAX_BATCH:
        raise SqsError(
            "TooManyEntriesInBatchRequest",
            f"Maximum number of entries per request are {MAX_BATCH}. You have sent {len(entries)}.",
        )
    seen: set[str] = set()
    for entry in entries:
        entry_id = require(entry, "Id")
        if not _ENTRY_ID.fullmatch(entry_id):
            raise SqsError(
                "InvalidBatchEntryId",
                "A batch entry id can only contain alphanumeric characters, hyphens and underscores. "
                "It can be at most 80 letters long.",
            )
        if entry_id in seen:
            raise SqsError("BatchEntryIdsNotDistinct", f"Id {entry_id} repeated.")
        seen.add(entry_id)
    return entries


def _failure(entry_id: str, error: SqsError) -> dict[str, Any]:
    return {"Id": entry_id, "SenderFault": error.status < 500, "Code": error.code, "Message": error.message}


def _message_queue(call: Call) -> Target:
    target = call.target()
    if target.dlq:
        raise invalid(
            f"{target.name} is a dead-letter queue: read it with ReceiveMessage, empty it with DeleteMessage."
        )
    return target
