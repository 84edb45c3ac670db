"""What a request and an answer may weigh on their way through API Gateway and Lambda.

API Gateway (REST) takes payloads up to 10 MB; a synchronous Lambda invoke takes a request and returns an answer
of up to 6 MB each (an asynchronous one, 1 MB). Every answer of the functions crosses Lambda, so a receive that
claimed more than 6 MB of JSON could not be returned: the caller would get an error while the messages it
claimed stay invisible until their visibility timeout. A receive therefore answers with as many messages as fit
in `ANSWER_BUDGET_BYTES` (at least one) and gives the others back at once, uncounted (`return_unseen`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:
    from queue_core import ReceivedMessage

API_GATEWAY_PAYLOAD_BYTES: Final = 10 * 1000 * 1000
LAMBDA_SYNC_PAYLOAD_BYTES: Final = 6 * 1000 * 1000
LAMBDA_ASYNC_PAYLOAD_BYTES: Final = 1000 * 1000
# Room under Lambda's limit for the answer's envelope (API Gateway's proxy answer, headers).
ANSWER_BUDGET_BYTES: Final = LAMBDA_SYNC_PAYLOAD_BYTES - 256 * 1000


def answered_size(value: Any) -> int:
    """`value`'s bytes in an answer through API Gateway: JSON text (ASCII, as the encoders write it) inside the
    proxy answer's JSON `body` string, so every escape is escaped once more. An invoke's answer is encoded only
    once, so this is an upper bound there."""
    return len(json.dumps(json.dumps(value))) - 1


def json_size(message: ReceivedMessage) -> int:
    return answered_size(message.to_dict()) + 1


Answered = TypeVar("Answered")


def within_budget(
    messages: Sequence[Answered], budget: int | None = None, size_of: Callable[[Answered], int] | None = None
) -> tuple[list[Answered], list[Answered]]:
    """(the messages the answer carries, in order; those to give back). The first is always carried. `size_of`
    weighs one message as the answer writes it (default: our own JSON of a `ReceivedMessage`)."""
    budget = ANSWER_BUDGET_BYTES if budget is None else budget
    weigh: Callable[[Any], int] = size_of or json_size
    kept: list[Answered] = []
    used = 0
    for position, message in enumerate(messages):
        size = weigh(message)
        if kept and used + size > budget:
            return kept, list(messages[position:])
        kept.append(message)
        used += size
    return kept, []
