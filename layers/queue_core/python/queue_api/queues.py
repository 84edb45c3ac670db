"""The producer's operations: create, describe, list, update and delete queues, list a queue's clients, and send
messages.

Each operation is written once and reached two ways: by its HTTP route and by its invoke action.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from .core_client import queue_client
from .http import ClientPath, QueuePath, documented_responses
from .invoke import Action
from .models import (
    ClientList,
    CreateQueueRequest,
    Deleted,
    NoAddress,
    QueueAddress,
    QueueDescription,
    QueueList,
    QueueSettingsAnswer,
    QueueStatsAnswer,
    SendBatchAnswer,
    SendBatchRequest,
    SendMessageAnswer,
    SendMessageRequest,
    SendRequest,
    SubQueueAddress,
    UpdateQueueRequest,
)
from .observability import count, tracer

QUEUES_TAG = "Queues"
MESSAGES_TAG = "Messages"

router = Router()


@tracer.capture_method(capture_response=False)
def create_queue(address: QueueAddress, request: CreateQueueRequest) -> tuple[QueueSettingsAnswer, bool]:
    """The queue's settings and whether this call created it. Only the fields the caller gave are passed on, so
    the core's defaults stay the one source of defaults."""
    settings = queue_client().create_queue(address.queue, **request.model_dump(exclude_unset=True))
    return QueueSettingsAnswer.model_validate(settings.to_dict()), settings.created


@tracer.capture_method(capture_response=False)
def get_queue(address: QueueAddress, _request: NoAddress) -> QueueDescription:
    client = queue_client()
    settings = client.get_queue(address.queue)
    stats = QueueStatsAnswer.model_validate(client.queue_stats(address.queue).to_dict())
    return QueueDescription.model_validate({**settings.to_dict(), "stats": stats})


@tracer.capture_method(capture_response=False)
def list_queues(_address: NoAddress, _request: NoAddress) -> QueueList:
    queues = [QueueSettingsAnswer.model_validate(settings.to_dict()) for settings in queue_client().list_queues()]
    return QueueList(queues=queues)


@tracer.capture_method(capture_response=False)
def update_queue(address: QueueAddress, request: UpdateQueueRequest) -> QueueSettingsAnswer:
    """The queue's settings after the change. Only the fields the caller gave are changed; a concurrent change
    of `shards` or `retention_seconds` makes this a 409 (`QueueExists`), to be read again and retried."""
    settings = queue_client().update_queue(address.queue, **request.model_dump(exclude_none=True))
    return QueueSettingsAnswer.model_validate(settings.to_dict())


@tracer.capture_method(capture_response=False)
def list_clients(address: QueueAddress, _request: NoAddress) -> ClientList:
    """One query of the queue's client partition; a client appears once it has sent."""
    return ClientList(clients=queue_client().clients(address.queue))


@tracer.capture_method(capture_response=False)
def delete_queue(address: QueueAddress, _request: NoAddress) -> Deleted:
    queue_client().delete_queue(address.queue)
    return Deleted(deleted=True)


@tracer.capture_method(capture_response=False)
def send(
    address: SubQueueAddress, request: SendMessageRequest | SendBatchRequest
) -> SendMessageAnswer | SendBatchAnswer:
    """One message or a batch. Fields left out (or null) are not passed on, so the queue's own defaults apply."""
    sub_queue = queue_client().queue(address.queue, address.client)
    if isinstance(request, SendBatchRequest):
        batch = sub_queue.send_batch([entry.model_dump(exclude_none=True) for entry in request.messages])
        answer = SendBatchAnswer.model_validate(batch.to_dict())
        count("MessagesSent", sum(not entry.duplicate for entry in answer.successful))
        return answer
    result = sub_queue.send(**request.model_dump(exclude_none=True)).to_dict()
    count("MessagesSent", 0 if result.get("duplicate") else 1)
    return SendMessageAnswer.model_validate({**result, "successful": [{"index": 0, **result}], "failed": []})


@router.put(
    "/queues/<q>",
    operation_id="create_queue",
    summary="Create a queue (idempotent for the same settings)",
    tags=[QUEUES_TAG],
    responses={
        **documented_responses(409, success="the queue already existed with these settings"),
        201: {"description": "the queue was created"},
    },
)
def put_queue(q: QueuePath, body: Annotated[CreateQueueRequest | None, Body()] = None) -> Response[QueueSettingsAnswer]:
    settings, created = create_queue(QueueAddress(queue=q), body or CreateQueueRequest())
    return Response(status_code=201 if created else 200, content_type=content_types.APPLICATION_JSON, body=settings)


@router.get(
    "/queues",
    operation_id="list_queues",
    summary="List the queues",
    tags=[QUEUES_TAG],
    responses=documented_responses(),
)
def get_queues() -> QueueList:
    return list_queues(NoAddress(), NoAddress())


@router.get(
    "/queues/<q>",
    operation_id="get_queue",
    summary="A queue's settings and its figures summed over its clients",
    tags=[QUEUES_TAG],
    responses=documented_responses(404),
)
def describe_queue(q: QueuePath) -> QueueDescription:
    return get_queue(QueueAddress(queue=q), NoAddress())


@router.patch(
    "/queues/<q>",
    operation_id="update_queue",
    summary="Change a live queue's settings (not fifo nor content_based_dedup); shards may grow or shrink",
    tags=[QUEUES_TAG],
    responses=documented_responses(404, 409),
)
def patch_queue(q: QueuePath, body: Annotated[UpdateQueueRequest | None, Body()] = None) -> QueueSettingsAnswer:
    return update_queue(QueueAddress(queue=q), body or UpdateQueueRequest())


@router.get(
    "/queues/<q>/clients",
    operation_id="list_clients",
    summary="The ids of the clients that have sent to a queue",
    tags=[QUEUES_TAG],
    responses=documented_responses(404),
)
def get_clients(q: QueuePath) -> ClientList:
    return list_clients(QueueAddress(queue=q), NoAddress())


@router.delete(
    "/queues/<q>",
    operation_id="delete_queue",
    summary="Delete a queue and its messages",
    tags=[QUEUES_TAG],
    responses=documented_responses(404),
)
def remove_queue(q: QueuePath) -> Deleted:
    return delete_queue(QueueAddress(queue=q), NoAddress())


@router.post(
    "/queues/<q>/clients/<c>/messages",
    operation_id="send",
    summary="Send one message, or a batch of 1-25 as {'messages': [...]}",
    tags=[MESSAGES_TAG],
    responses=documented_responses(404, 413),
)
def post_messages(
    q: QueuePath, c: ClientPath, body: Annotated[SendRequest, Body()]
) -> SendMessageAnswer | SendBatchAnswer:
    return send(SubQueueAddress(queue=q, client=c), body)


def _create_queue_action(address: QueueAddress, request: CreateQueueRequest) -> QueueSettingsAnswer:
    return create_queue(address, request)[0]


ACTIONS = {
    "create_queue": Action.of(_create_queue_action, QueueAddress, CreateQueueRequest),
    "get_queue": Action.of(get_queue, QueueAddress),
    "list_queues": Action.of(list_queues),
    "update_queue": Action.of(update_queue, QueueAddress, UpdateQueueRequest),
    "list_clients": Action.of(list_clients, QueueAddress),
    "delete_queue": Action.of(delete_queue, QueueAddress),
    "send": Action.of(send, SubQueueAddress, SendRequest),
}
