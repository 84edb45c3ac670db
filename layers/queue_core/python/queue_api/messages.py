"""The poller's operations: receive (long poll), delete, change visibility, release, peek, get, cancel, purge,
stats. Each is written once and reached by its HTTP route and by its invoke action."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from .core_client import queue_client
from .http import ClientPath, LimitQuery, MessageIdPath, QueuePath, documented_responses
from .invoke import Action
from .models import (
    DeleteAnswer,
    Deleted,
    DeleteRequest,
    ListRequest,
    MessageAddress,
    MessageAnswer,
    MessageList,
    NoAddress,
    Purged,
    QueueStatsAnswer,
    ReceiveAnswer,
    ReceiveRequest,
    ReleaseRequest,
    SubQueueAddress,
    VisibilityRequest,
    VisibleAt,
)
from .observability import count, tracer

TAG = "Messages"

router = Router()


@tracer.capture_method(capture_response=False)
def receive(address: SubQueueAddress, request: ReceiveRequest) -> ReceiveAnswer:
    """Waits up to `wait_seconds` and returns as soon as anything is received."""
    sub_queue = queue_client().queue(address.queue, address.client)
    received = sub_queue.receive(**request.model_dump())
    count("MessagesReceived", len(received))
    count("ClaimConflicts", sub_queue.claim_conflicts)
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


PREFIX = "/queues/<q>/clients/<c>"


@router.post(
    f"{PREFIX}/receive",
    operation_id="receive",
    summary="Receive up to 10 messages, long-polling up to 20 s",
    tags=[TAG],
    responses=documented_responses(404),
)
def post_receive(q: QueuePath, c: ClientPath, body: Annotated[ReceiveRequest | None, Body()] = None) -> ReceiveAnswer:
    return receive(SubQueueAddress(queue=q, client=c), body or ReceiveRequest())


@router.post(
    f"{PREFIX}/delete",
    operation_id="delete",
    summary="Delete received messages by receipt handle (1-25)",
    tags=[TAG],
    responses=documented_responses(404),
)
def post_delete(q: QueuePath, c: ClientPath, body: Annotated[DeleteRequest, Body()]) -> DeleteAnswer:
    return delete(SubQueueAddress(queue=q, client=c), body)


@router.post(
    f"{PREFIX}/visibility",
    operation_id="change_visibility",
    summary="Change a received message's visibility timeout",
    tags=[TAG],
    responses=documented_responses(404, 409),
)
def post_visibility(q: QueuePath, c: ClientPath, body: Annotated[VisibilityRequest, Body()]) -> VisibleAt:
    return change_visibility(SubQueueAddress(queue=q, client=c), body)


@router.post(
    f"{PREFIX}/release",
    operation_id="release",
    summary="Give a received message back (nack), after a delay or a randomized backoff",
    tags=[TAG],
    responses=documented_responses(404, 409),
)
def post_release(q: QueuePath, c: ClientPath, body: Annotated[ReleaseRequest, Body()]) -> VisibleAt:
    return release(SubQueueAddress(queue=q, client=c), body)


@router.get(
    f"{PREFIX}/messages",
    operation_id="peek",
    summary="Visible messages, oldest first, without claiming them",
    tags=[TAG],
    responses=documented_responses(404),
)
def get_messages(q: QueuePath, c: ClientPath, limit: LimitQuery = 10) -> MessageList:
    return peek(SubQueueAddress(queue=q, client=c), ListRequest(limit=limit))


@router.get(
    f"{PREFIX}/messages/<id>",
    operation_id="get",
    summary="One message and its state: visible, in_flight, delayed or dlq",
    tags=[TAG],
    responses=documented_responses(404),
)
def get_message(q: QueuePath, c: ClientPath, message_id: MessageIdPath) -> MessageAnswer:
    return get(MessageAddress(queue=q, client=c, message_id=message_id), NoAddress())


@router.delete(
    f"{PREFIX}/messages/<id>",
    operation_id="cancel",
    summary="Cancel a message before it is processed, wherever it is",
    tags=[TAG],
    responses=documented_responses(404),
)
def delete_message(q: QueuePath, c: ClientPath, message_id: MessageIdPath) -> Deleted:
    return cancel(MessageAddress(queue=q, client=c, message_id=message_id), NoAddress())


@router.delete(
    f"{PREFIX}/messages",
    operation_id="purge",
    summary="Remove every waiting and in-flight message (not the DLQ)",
    tags=[TAG],
    responses=documented_responses(404),
)
def delete_messages(q: QueuePath, c: ClientPath) -> Purged:
    return purge(SubQueueAddress(queue=q, client=c), NoAddress())


@router.get(
    f"{PREFIX}/stats",
    operation_id="stats",
    summary="Visible, in flight, delayed, DLQ and the oldest message's age",
    tags=[TAG],
    responses=documented_responses(404),
)
def get_stats(q: QueuePath, c: ClientPath) -> QueueStatsAnswer:
    return stats(SubQueueAddress(queue=q, client=c), NoAddress())


ACTIONS = {
    "receive": Action.of(receive, SubQueueAddress, ReceiveRequest),
    "delete": Action.of(delete, SubQueueAddress, DeleteRequest),
    "change_visibility": Action.of(change_visibility, SubQueueAddress, VisibilityRequest),
    "release": Action.of(release, SubQueueAddress, ReleaseRequest),
    "peek": Action.of(peek, SubQueueAddress, ListRequest),
    "get": Action.of(get, MessageAddress),
    "cancel": Action.of(cancel, MessageAddress),
    "purge": Action.of(purge, SubQueueAddress),
    "stats": Action.of(stats, SubQueueAddress),
}
