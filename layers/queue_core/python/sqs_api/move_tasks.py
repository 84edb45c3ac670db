"""SQS's DLQ redrive (`StartMessageMoveTask`) mapped onto the core's redrive and dead-letter moves.

The source is a dead-letter queue: a queue's own DLQ (`{queue}.dlq`), or a queue that other queues name as their
dead-letter target, whose dead letters are those of each such source. Without a `DestinationArn` each dead letter
goes back to the queue it came from (the core's redrive); with one, into that queue as a new message
(`queue_core.dead_letter_moves`), each DLQ copy moved once even when two moves run at once or the call is sent
again. The target's own messages stay where they are. The move runs to its end inside the call, for the endpoint's
client's sub-queues; the answer's `TaskHandle` names it, and it is finished by the time the client has it, so
`ListMessageMoveTasks` lists no running task and `CancelMessageMoveTask` finds none to cancel.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any, Final

from queue_core import QueueError, QueueSettings

from .calls import Call
from .dead_letters import source_of
from .errors import SqsError, from_core, invalid
from .shapes import integer, require

MAX_RATE: Final = 500


def start_message_move_task(call: Call) -> dict[str, Any]:
    source_arn = require(call.params, "SourceArn")
    sources = _sources(call, call.endpoint.queue_of_arn(source_arn))
    destination_arn = call.params.get("DestinationArn")
    destination = None
    if destination_arn is not None:
        destination = _destination(call, destination_arn, sources)
    integer(call.params, "MaxNumberOfMessagesPerSecond", 1, MAX_RATE)
    try:
        for source in sources:
            sub_queue = call.core.queue(source.name, call.endpoint.client)
            if destination is None or destination.name == source.name:
                sub_queue.redrive()
            else:
                sub_queue.move_dead_letters(call.core.queue(destination.name, call.endpoint.client))
    except QueueError as error:
        raise from_core(error) from None
    task = {"source": source_arn, "started": int(time.time() * 1000)}
    return {"TaskHandle": base64.urlsafe_b64encode(json.dumps(task).encode()).decode()}


def _sources(call: Call, name: str) -> list[QueueSettings]:
    """The queues whose dead letters the source queue `name` holds; SQS's refusal when it is no DLQ."""
    owner = source_of(name)
    try:
        if owner is not None:
            return [call.settings(owner)]
        call.settings(name)
    except SqsError as error:
        raise SqsError("ResourceNotFoundException", error.message) from None
    sources = call.core.dead_letter_sources(name)
    if not sources:
        raise invalid("Source queue must be configured as a Dead Letter Queue.")
    return sources


def _destination(call: Call, arn: str, sources: list[QueueSettings]) -> QueueSettings:
    name = call.endpoint.queue_of_arn(arn, "DestinationArn")
    if source_of(name) is not None:
        raise invalid("DestinationArn must be a queue, not a dead-letter queue.")
    try:
        destination = call.settings(name)
    except SqsError as error:
        raise SqsError("ResourceNotFoundException", error.message) from None
    if any(source.fifo != destination.fifo for source in sources):
        raise invalid("The destination must be the same type of queue as the source (FIFO or standard).")
    return destination


def list_message_move_tasks(call: Call) -> dict[str, Any]:
    _sources(call, call.endpoint.queue_of_arn(require(call.params, "SourceArn")))
    integer(call.params, "MaxResults", 1, 10)
    return {"Results": []}


def cancel_message_move_task(call: Call) -> dict[str, Any]:
    require(call.params, "TaskHandle")
    raise SqsError("ResourceNotFoundException", "The task has finished: a move here ends inside StartMessageMoveTask.")
