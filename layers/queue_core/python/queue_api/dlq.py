"""The DLQ redriver's operations: list a sub-queue's dead-letter queue, move messages back from it, and move a
waiting message into it by hand.

A schedule can run `redrive` as an invoke action (`{"action": "redrive", "queue", "client", "max_messages"}`)
to drain a DLQ at a steady rate.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from .core_client import queue_client
from .http import ClientPath, LimitQuery, MessageIdPath, QueuePath, documented_responses
from .invoke import Action
from .models import (
    ListRequest,
    MessageAddress,
    MessageList,
    Moved,
    NoAddress,
    Redriven,
    RedriveRequest,
    SubQueueAddress,
)
from .observability import count, tracer

TAG = "Dead-letter queue"

router = Router()


@tracer.capture_method(capture_response=False)
def list_dlq(address: SubQueueAddress, request: ListRequest) -> MessageList:
    messages = queue_client().queue(address.queue, address.client).dlq_list(request.limit)
    return MessageList.model_validate({"messages": [message.to_dict() for message in messages]})


@tracer.capture_method(capture_response=False)
def redrive(address: SubQueueAddress, request: RedriveRequest) -> Redriven:
    """All of the DLQ, the oldest `max_messages`, or the given `message_ids`, back with receive counts reset."""
    moved = queue_client().queue(address.queue, address.client).redrive(**request.model_dump())
    count("MessagesRedriven", moved)
    return Redriven(redriven=moved)


@tracer.capture_method(capture_response=False)
def move_to_dlq(address: MessageAddress, _request: NoAddress) -> Moved:
    """An operator marks a waiting message invalid: it moves to the DLQ now, whatever its receive count, in one
    transaction. An in-flight or FIFO message is refused (400): its receiver or its receive limit decides."""
    moved = queue_client().queue(address.queue, address.client).move_to_dlq(address.message_id)
    count("MessagesMovedToDlq", int(moved))
    return Moved(moved=moved)


@router.get(
    "/queues/<q>/clients/<c>/dlq",
    operation_id="list_dlq",
    summary="Messages in the sub-queue's dead-letter queue",
    tags=[TAG],
    responses=documented_responses(404),
)
def get_dlq(q: QueuePath, c: ClientPath, limit: LimitQuery = 10) -> MessageList:
    return list_dlq(SubQueueAddress(queue=q, client=c), ListRequest(limit=limit))


@router.post(
    "/queues/<q>/clients/<c>/dlq/redrive",
    operation_id="redrive",
    summary="Move DLQ messages back to the sub-queue: all, the oldest max_messages, or by id",
    tags=[TAG],
    responses=documented_responses(404),
)
def post_redrive(q: QueuePath, c: ClientPath, body: Annotated[RedriveRequest | None, Body()] = None) -> Redriven:
    return redrive(SubQueueAddress(queue=q, client=c), body or RedriveRequest())


@router.post(
    "/queues/<q>/clients/<c>/messages/<id>/dlq",
    operation_id="move_to_dlq",
    summary="Move a waiting message to the DLQ now: an operator marks it invalid",
    tags=[TAG],
    responses=documented_responses(404),
)
def post_move_to_dlq(q: QueuePath, c: ClientPath, message_id: MessageIdPath) -> Moved:
    return move_to_dlq(MessageAddress(queue=q, client=c, message_id=message_id), NoAddress())


ACTIONS = {
    "list_dlq": Action.of(list_dlq, SubQueueAddress, ListRequest),
    "redrive": Action.of(redrive, SubQueueAddress, RedriveRequest),
    "move_to_dlq": Action.of(move_to_dlq, MessageAddress),
}
