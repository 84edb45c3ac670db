"""One SQS request in, one HTTP answer out: the target header, the JSON body, the action, the answer or error.

Every failure a request can cause is an SQS error with a 4xx status, and nothing is written before the request
has passed its checks; only a fault of the service itself is a 500 (`InternalFailure`, with no internals).
"""

from __future__ import annotations

import json
import logging
from typing import Final

from queue_core import QueueClient, QueueError

from .actions import ACTIONS, SUB_QUEUE_ACTIONS
from .calls import Call
from .endpoints import Endpoint
from .errors import JSON_CONTENT_TYPE, SqsError, from_code, from_core, invalid
from .shapes import checked, operation_names, unsupported

TARGET_PREFIX: Final = "AmazonSQS."
# SQS's largest request: ten messages of 256 KiB, in JSON, with room for attributes and escapes.
MAX_REQUEST_BYTES: Final = 8 * 1024 * 1024

Answer = tuple[int, dict[str, str], bytes]
_log = logging.getLogger(__name__)


def answer(target: str | None, body: bytes | str | None, endpoint: Endpoint, core: QueueClient) -> Answer:
    try:
        action = _action(target)
        if action in SUB_QUEUE_ACTIONS:
            endpoint.refuse_if_managing(action)
        params = checked(action, _params(body))
        result = ACTIONS[action](Call(core, endpoint, params))
    except SqsError as error:
        return error.answer()
    except QueueError as error:
        return from_core(error).answer()
    except Exception:
        # A fault of the service, never of the request: logged with its trace, answered without internals.
        _log.exception("SQS action failed")
        return from_code("InternalError", "").answer()
    return 200, {"Content-Type": JSON_CONTENT_TYPE}, json.dumps(result).encode()


def _action(target: str | None) -> str:
    if not target or not target.startswith(TARGET_PREFIX):
        raise SqsError("InvalidAddress", "The X-Amz-Target header must name an SQS action (AmazonSQS.<Action>).")
    action = target[len(TARGET_PREFIX) :]
    if action not in ACTIONS:
        if action in operation_names():
            raise unsupported(action)
        raise SqsError("InvalidAddress", f"{action[:100]} is not an SQS action.")
    return action


def _params(body: bytes | str | None) -> object:
    if body is None or body in (b"", ""):
        return {}
    if len(body) > MAX_REQUEST_BYTES:
        raise invalid(f"The request is over {MAX_REQUEST_BYTES} bytes.")
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise invalid("The request body is not valid JSON.") from None
