"""Dispatcher: delivers a sub-queue's messages to its push consumer function as SQS events.

Woken by the consumer's filtered event source mapping on the table's stream (an insert into its sub-queue) and by
the sweeper (`{"action": "dispatch", "queue": …, "client": …}`) while messages wait; see `queue_core.push`.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from queue_api.dispatcher import dispatch
from queue_api.observability import logger, tracer


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return dispatch(event, context)
