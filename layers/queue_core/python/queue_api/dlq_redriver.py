"""The DLQ redriver's operations: list a sub-queue's dead-letter queue, move messages back from it, and move a
waiting message into it by hand. Their routes and actions are in `queue_api.operations`.

A schedule can run `redrive` as an invoke action (`{"action": "redrive", "queue", "client", "max_messages"}`)
to drain a DLQ at a steady rate.
"""

from __future__ import annotations

from . import plain_operations
from .core_client import queue_client
from .observability import count, tracer
from .schemas import (
    DlqReasons,
    ListRequest,
    MessageAddress,
    MessageList,
    Moved,
    NoAddress,
    Redriven,
    RedriveRequest,
    SubQueueAddress,
)


@tracer.capture_method(capture_response=False)
def list_dlq(address: SubQueueAddress, request: ListRequest) -> MessageList:
    return MessageList.model_validate(plain_operations.list_dlq(address.queue, address.client, request.limit))


@tracer.capture_method(capture_response=False)
def redrive(address: SubQueueAddress, request: RedriveRequest) -> Redriven:
    """All of the DLQ, the oldest `max_messages`, or the given `message_ids`, back with receive counts reset."""
    moved = queue_client().queue(address.queue, address.client).redrive(**request.model_dump())
    count("MessagesRedriven", moved)
    return Redriven(redriven=moved)


@tracer.capture_method(capture_response=False)
def dlq_reasons(address: SubQueueAddress, _request: NoAddress) -> DlqReasons:
    """The dead letters grouped by their last reason, from a bounded read of the DLQ."""
    groups, approximate = queue_client().queue(address.queue, address.client).dlq_reasons()
    return DlqReasons.model_validate({"reasons": groups, "approximate": approximate})


@tracer.capture_method(capture_response=False)
def move_to_dlq(address: MessageAddress, _request: NoAddress) -> Moved:
    return Moved.model_validate(plain_operations.move_to_dlq(address.queue, address.client, address.message_id))
