"""How a queue's dead-letter queue is named and addressed over SQS.

Every queue here has its DLQ built in, per client, under the same queue: over SQS it is the queue named
`{queue}.dlq` (`{base}.dlq.fifo` for a FIFO queue `{base}.fifo`). A dot is not allowed in a queue name of this
project except before `fifo`, so the DLQ's name never collides with a real queue's. Its URL and ARN are minted
like any queue's; `RedrivePolicy.deadLetterTargetArn` of a queue is its DLQ's ARN.
"""

from __future__ import annotations

from typing import Final

_DLQ: Final = ".dlq"
_FIFO: Final = ".fifo"


def dlq_name(queue: str) -> str:
    if queue.endswith(_FIFO):
        return queue[: -len(_FIFO)] + _DLQ + _FIFO
    return queue + _DLQ


def source_of(name: str) -> str | None:
    """The queue whose DLQ `name` is, or None when `name` is not a DLQ's name."""
    if name.endswith(_DLQ + _FIFO):
        return name[: -len(_DLQ + _FIFO)] + _FIFO
    if name.endswith(_DLQ):
        return name[: -len(_DLQ)]
    return None
