"""SQS: Amazon SQS's own wire protocol (AWS JSON 1.0) over the queue core, at the API's `POST /` (the client
`default`) and `POST /sqs/{client}`, so SQS SDKs, the AWS CLI and Celery/Kombu work against the queue unchanged."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from queue_api.core_client import queue_client
from queue_api.observability import CORRELATION_ID_PATH, logger
from sqs_api.gateway import handle


@logger.inject_lambda_context(correlation_id_path=CORRELATION_ID_PATH, clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, queue_client())
