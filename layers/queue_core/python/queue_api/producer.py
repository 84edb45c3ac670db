"""The producer's operations: create, describe, list, update and delete queues, list a queue's clients, send
messages, and describe the API itself. Their routes and actions are in `queue_api.operations`."""

from __future__ import annotations

from . import plain_operations
from .observability import tracer
from .openapi import document
from .schemas import (
    ClientList,
    CreateQueueRequest,
    Deleted,
    NoAddress,
    OpenApiDocument,
    QueueAddress,
    QueueDescription,
    QueueList,
    QueueSettingsAnswer,
    SendAnswer,
    SendBatchAnswer,
    SendBatchRequest,
    SendMessageAnswer,
    SendMessageRequest,
    SubQueueAddress,
    UpdateQueueRequest,
)


@tracer.capture_method(capture_response=False)
def create_queue(address: QueueAddress, request: CreateQueueRequest) -> tuple[QueueSettingsAnswer, int]:
    """The queue's settings, with 201 when this call created it and 200 when it existed with these settings.
    Only the fields the caller gave are passed on, so the core's defaults stay the one source of defaults."""
    settings, created = plain_operations.create_queue(address.queue, request.model_dump(exclude_unset=True))
    return QueueSettingsAnswer.model_validate(settings), 201 if created else 200


@tracer.capture_method(capture_response=False)
def get_queue(address: QueueAddress, _request: NoAddress) -> QueueDescription:
    return QueueDescription.model_validate(plain_operations.get_queue(address.queue))


@tracer.capture_method(capture_response=False)
def list_queues(_address: NoAddress, _request: NoAddress) -> QueueList:
    return QueueList.model_validate(plain_operations.list_queues())


@tracer.capture_method(capture_response=False)
def update_queue(address: QueueAddress, request: UpdateQueueRequest) -> QueueSettingsAnswer:
    """The queue's settings after the change. Only the fields the caller gave are changed; a concurrent change
    of `shards` or `retention_seconds` makes this a 409 (`QueueExists`), to be read again and retried."""
    changes = request.model_dump(exclude_none=True)
    return QueueSettingsAnswer.model_validate(plain_operations.update_queue(address.queue, changes))


@tracer.capture_method(capture_response=False)
def list_clients(address: QueueAddress, _request: NoAddress) -> ClientList:
    return ClientList.model_validate(plain_operations.list_clients(address.queue))


@tracer.capture_method(capture_response=False)
def delete_queue(address: QueueAddress, _request: NoAddress) -> Deleted:
    return Deleted.model_validate(plain_operations.delete_queue(address.queue))


@tracer.capture_method(capture_response=False)
def send(address: SubQueueAddress, request: SendMessageRequest | SendBatchRequest) -> SendAnswer:
    """One message or a batch. Fields left out (or null) are not passed on, so the queue's own defaults apply."""
    if isinstance(request, SendBatchRequest):
        entries = [entry.model_dump(exclude_none=True) for entry in request.messages]
        return SendBatchAnswer.model_validate(plain_operations.send_batch(address.queue, address.client, entries))
    fields = request.model_dump(exclude_none=True)
    return SendMessageAnswer.model_validate(plain_operations.send_one(address.queue, address.client, fields))


def openapi(_address: NoAddress, _request: NoAddress) -> OpenApiDocument:
    """The one OpenAPI document of every route of every function."""
    return document()
