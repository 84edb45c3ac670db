"""The DLQ redriver's operations: list a sub-queue's dead-letter queue, move messages back from it, and move a
waiting message into it by hand; and replays of the archive (an operator's way back, as a redrive is). Their
routes and actions are in `queue_api.operations`.

A schedule can run `redrive` as an invoke action (`{"action": "redrive", "queue", "client", "max_messages"}`)
to drain a DLQ at a steady rate.
"""

from __future__ import annotations

from . import plain_operations
from .observability import tracer
from .schemas import (
    DlqReasons,
    ListRequest,
    MessageAddress,
    MessageList,
    Moved,
    NoAddress,
    Redriven,
    RedriveRequest,
    ReplayAnswer,
    ReplayIdRequest,
    ReplayList,
    ReplayListRequest,
    ReplayRequest,
    ReplayRunRequest,
    SubQueueAddress,
)


@tracer.capture_method(capture_response=False)
def list_dlq(address: SubQueueAddress, request: ListRequest) -> MessageList:
    return MessageList.model_validate(plain_operations.list_dlq(address.queue, address.client, request.limit))


@tracer.capture_method(capture_response=False)
def redrive(address: SubQueueAddress, request: RedriveRequest) -> Redriven:
    """All of the DLQ, the oldest `max_messages`, or the given `message_ids`, back with receive counts reset."""
    return Redriven.model_validate(plain_operations.redrive(address.queue, address.client, request.model_dump()))


@tracer.capture_method(capture_response=False)
def dlq_reasons(address: SubQueueAddress, _request: NoAddress) -> DlqReasons:
    """The dead letters grouped by their last reason, from a bounded read of the DLQ."""
    return DlqReasons.model_validate(plain_operations.dlq_reasons(address.queue, address.client))


@tracer.capture_method(capture_response=False)
def move_to_dlq(address: MessageAddress, _request: NoAddress) -> Moved:
    return Moved.model_validate(plain_operations.move_to_dlq(address.queue, address.client, address.message_id))


@tracer.capture_method(capture_response=False)
def replay_start(address: SubQueueAddress, request: ReplayRequest) -> ReplayAnswer:
    """Records the replay, then runs it for up to `run_seconds` (0: not at all) in this call."""
    started = plain_operations.replay_start(address.queue, address.client, request.model_dump())
    return ReplayAnswer.model_validate(started)


@tracer.capture_method(capture_response=False)
def replay_run(address: SubQueueAddress, request: ReplayRunRequest) -> ReplayAnswer:
    found = plain_operations.replay_run(address.queue, address.client, request.replay_id, request.seconds)
    return ReplayAnswer.model_validate(found)


@tracer.capture_method(capture_response=False)
def replay_list(address: SubQueueAddress, request: ReplayListRequest) -> ReplayList:
    found = plain_operations.replay_list(address.queue, address.client, request.replay_id, request.limit)
    return ReplayList.model_validate(found)


@tracer.capture_method(capture_response=False)
def replay_cancel(address: SubQueueAddress, request: ReplayIdRequest) -> ReplayAnswer:
    found = plain_operations.replay_cancel(address.queue, address.client, request.replay_id)
    return ReplayAnswer.model_validate(found)
