"""Visibility sweeper: moves messages past their receive limit to the DLQ, frees stuck FIFO groups, deletes
expired messages, and publishes every sub-queue's depth as metrics.

Runs on an EventBridge schedule: a Scheduler's configured input (e.g. `{"action": "sweep"}`) or a rule's
`Scheduled Event` both sweep within the function's remaining time. A direct `{"action": "sweep"}` answers the
sweep's report.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from queue_api.entry import handle_event
from queue_api.observability import COLD_START_METRIC, logger, metrics, tracer
from queue_api.operations import VISIBILITY_SWEEPER


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(capture_cold_start_metric=COLD_START_METRIC)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_event(event, context, function=VISIBILITY_SWEEPER)
