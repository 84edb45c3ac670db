"""Poller: receive (long poll up to 20 s), delete, change visibility, release, peek, get, cancel, purge, stats.

Reached through API Gateway (REST proxy events) and by direct invoke (`{"action": "receive", ...}`).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from queue_api.entry import handle_event
from queue_api.observability import COLD_START_METRIC, CORRELATION_ID_PATH, logger, metrics, tracer
from queue_api.operations import POLLER


@logger.inject_lambda_context(correlation_id_path=CORRELATION_ID_PATH, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(capture_cold_start_metric=COLD_START_METRIC)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_event(event, context, function=POLLER)
