"""The poller's operations: receive (long poll), delete, change visibility, release, peek, get, cancel, purge,
stats. Their routes and actions are in `queue_api.operations`."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from .core_client import queue_client
from .observability import count, tracer
from .payloads import within_budget
from .schemas import (
    DeleteAnswer,
    Deleted,
    DeleteRequest,
    ListRequest,
    MessageAddress,
    MessageAnswer,
    MessageList,
    NoAddress,
    Purged,
    QueueAddress,
    QueueStatsAnswer,
    ReceiveAnswer,
    ReceiveRequest,
    ReleaseRequest,
    SubQueueAddress,
    VisibilityRequest,
    VisibleAt,
)

if TYPE_CHECKING:
    from queue_core import QueueWide, ReceivedMessage, SubQueue


@tracer.capture_method(capture_response=False)
def receive(address: SubQueueAddress, request: ReceiveRequest) -> ReceiveAnswer:
    """Waits up to `wait_seconds` and returns as soon as anything is received: as many messages as the answer can
    carry through Lambda (`payloads`), the others given back to the queue at once."""
    sub_queue = queue_client().queue(address.queue, address.client)
    return _answer(sub_queue.receive(**request.model_dump()), sub_queue)


def _answer(claimed: list[ReceivedMessage], holder: SubQueue | QueueWide) -> ReceiveAnswer:
    """The messages the answer can carry through Lambda (`payloads`); the others are given back at once, as they
    were before this receive: nobody saw them, so their receive does not count."""
    from queue_core import QueueError

    received, surplus = within_budget(claimed)
    for message in surplus:
        with contextlib.suppress(QueueError):  # a message not given back is visible again after its timeout
            holder.return_unseen(message.receipt_handle)
    count("MessagesReceived", len(received))
    count("ClaimConflicts", holder.claim_conflicts)
    return ReceiveAnswer.model_validate({"messages": [message.to_dict() for message in received]})


@tracer.capture_method(capture_response=False)
def delete(address: SubQueueAddress, request: DeleteRequest) -> DeleteAnswer:
    result = queue_client().queue(address.queue, address.client).delete_batch(request.receipt_handles)
    answer = DeleteAnswer.model_validate(result.to_dict())
    count("MessagesDeleted", len(answer.successful))
    return answer


@tracer.capture_method(capture_response=False)
def change_visibility(address: SubQueueAddress, request: VisibilityRequest) -> VisibleAt:
    sub_queue = queue_client().queue(address.queue, address.client)
    return VisibleAt(visible_at=sub_queue.change_visibility(request.receipt_handle, request.visibility_timeout))


@tracer.capture_method(capture_response=False)
def release(address: SubQueueAddress, request: ReleaseRequest) -> VisibleAt:
    sub_queue = queue_client().queue(address.queue, address.client)
    return VisibleAt(visible_at=sub_queue.release(request.receipt_handle, request.delay_seconds))


@tracer.capture_method(capture_response=False)
def receive_any(address: QueueAddress, request: ReceiveRequest) -> ReceiveAnswer:
    """Any client's messages, fairly: the highest priority first, then the clients in rotation; as many as the
    answer can carry, as a client's receive."""
    queue_wide = queue_client().queue_wide(address.queue)
    return _answer(queue_wide.receive(**request.model_dump()), queue_wide)


@tracer.capture_method(capture_response=False)
def delete_any(address: QueueAddress, request: DeleteRequest) -> DeleteAnswer:
    result = queue_client().queue_wide(address.queue).delete_batch(request.receipt_handles)
    answer = DeleteAnswer.model_validate(result.to_dict())
    count("MessagesDeleted", len(answer.successful))
    return answer


@tracer.capture_method(capture_response=False)
def change_visibility_any(address: QueueAddress, request: VisibilityRequest) -> VisibleAt:
    queue_wide = queue_client().queue_wide(address.queue)
    return VisibleAt(visible_at=queue_wide.change_visibility(request.receipt_handle, request.visibility_timeout))


@tracer.capture_method(capture_response=False)
def release_any(address: QueueAddress, request: ReleaseRequest) -> VisibleAt:
    queue_wide = queue_client().queue_wide(address.queue)
    return VisibleAt(visible_at=queue_wide.release(request.receipt_handle, request.delay_seconds))


@tracer.capture_method(capture_response=False)
def peek(address: SubQueueAddress, request: ListRequest) -> MessageList:
    messages = queue_client().queue(address.queue, address.client).peek(request.limit)
    return MessageList.model_validate({"messages": [message.to_dict() for message in messages]})


@tracer.capture_method(capture_response=False)
def get(address: MessageAddress, _request: NoAddress) -> MessageAnswer:
    message = queue_client().queue(address.queue, address.client).get(address.message_id)
    return MessageAnswer.model_validate(message.to_dict())


@tracer.capture_method(capture_response=False)
def cancel(address: MessageAddress, _request: NoAddress) -> Deleted:
    return Deleted(deleted=queue_client().queue(address.queue, address.client).cancel(address.message_id))


@tracer.capture_method(capture_response=False)
def purge(address: SubQueueAddress, _request: NoAddress) -> Purged:
    return Purged(purged=queue_client().queue(address.queue, address.client).purge())


@tracer.capture_method(capture_response=False)
def stats(address: SubQueueAddress, _request: NoAddress) -> QueueStatsAnswer:
    return QueueStatsAnswer.model_validate(queue_client().queue(address.queue, address.client).stats().to_dict())
