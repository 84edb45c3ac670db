"""SQS's DLQ redrive (`StartMessageMoveTask`) mapped onto the core's redrive.

The source is a DLQ's ARN (`{queue}.dlq`); the destination, when given, must be its own queue, the only place a
DLQ here can redrive to. The move runs to its end inside the call, for the endpoint's client's sub-queue; the
answer's `TaskHandle` names it, and it is finished by the time the client has it, so `ListMessageMoveTasks` lists
no running task and `CancelMessageMoveTask` finds none to cancel.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any, Final

from queue_core import QueueError

from .calls import Call
from .dead_letters import source_of
from .errors import SqsError, from_core, invalid
from .shapes import integer, require

MAX_RATE: Final = 500


def start_message_move_task(call: Call) -> dict[str, Any]:
    source_arn = require(call.params, "SourceArn")
    name = call.endpoint.queue_of_arn(source_arn)
    queue = source_of(name)
    if queue is None:
        raise invalid("Source queue must be configured as a dead-letter queue.")
    destination = call.params.get("DestinationArn")
    if destination is not None and destination != call.endpoint.queue_arn(queue):
        raise invalid(f"A dead-letter queue here redrives to its own queue only: {call.endpoint.queue_arn(queue)}.")
    integer(call.params, "MaxNumberOfMessagesPerSecond", 1, MAX_RATE)
    try:
        call.settings(queue)
        call.core.queue(queue, call.endpoint.client).redrive()
    except SqsError as error:
        raise SqsError("ResourceNotFoundException", error.message) from None
    except QueueError as error:
        raise from_core(error) from None
    task = {"source": source_arn, "started": int(time.time() * 1000)}
    return {"TaskHandle": base64.urlsafe_b64encode(json.dumps(task).encode()).decode()}


def list_message_move_tasks(call: Call) -> dict[str, Any]:
    name = call.endpoint.queue_of_arn(require(call.params, "SourceArn"))
    if source_of(name) is None:
        raise invalid("Source queue must be configured as a dead-letter queue.")
    integer(call.params, "MaxResults", 1, 10)
    return {"Results": []}


def cancel_message_move_task(call: Call) -> dict[str, Any]:
    require(call.params, "TaskHandle")
    raise SqsError("ResourceNotFoundException", "The task has finished: a move here ends inside StartMessageMoveTask.")
