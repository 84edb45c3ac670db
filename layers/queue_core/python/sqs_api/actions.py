"""Every action of SQS's service model this adapter serves, and the function that serves it.

The other actions of the model (permissions) answer `UnsupportedOperation`; a target that is not an action of
the model answers `InvalidAddress`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from . import messages, move_tasks, queues
from .calls import Call

Action = Callable[[Call], dict[str, Any]]

ACTIONS: Final[dict[str, Action]] = {
    "CreateQueue": queues.create_queue,
    "GetQueueUrl": queues.get_queue_url,
    "ListQueues": queues.list_queues,
    "GetQueueAttributes": queues.get_queue_attributes,
    "SetQueueAttributes": queues.set_queue_attributes,
    "DeleteQueue": queues.delete_queue,
    "PurgeQueue": queues.purge_queue,
    "TagQueue": queues.tag_queue,
    "UntagQueue": queues.untag_queue,
    "ListQueueTags": queues.list_queue_tags,
    "ListDeadLetterSourceQueues": queues.list_dead_letter_source_queues,
    "SendMessage": messages.send_message,
    "SendMessageBatch": messages.send_message_batch,
    "ReceiveMessage": messages.receive_message,
    "DeleteMessage": messages.delete_message,
    "DeleteMessageBatch": messages.delete_message_batch,
    "ChangeMessageVisibility": messages.change_message_visibility,
    "ChangeMessageVisibilityBatch": messages.change_message_visibility_batch,
    "StartMessageMoveTask": move_tasks.start_message_move_task,
    "ListMessageMoveTasks": move_tasks.list_message_move_tasks,
    "CancelMessageMoveTask": move_tasks.cancel_message_move_task,
}
# What acts on one client's sub-queue (its messages, its DLQ, their moves): never served by the administration
# endpoint, which stands for no client.
SUB_QUEUE_ACTIONS: Final = frozenset(
    {
        "PurgeQueue",
        "SendMessage",
        "SendMessageBatch",
        "ReceiveMessage",
        "DeleteMessage",
        "DeleteMessageBatch",
        "ChangeMessageVisibility",
        "ChangeMessageVisibilityBatch",
        "StartMessageMoveTask",
        "ListMessageMoveTasks",
        "CancelMessageMoveTask",
    }
)
