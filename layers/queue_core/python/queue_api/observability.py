"""The one Logger, Tracer and Metrics of every function, configured from the environment.

Powertools shares state between instances of the same class, so creating them once here and importing them
everywhere is what keeps one JSON log format, one trace and one EMF namespace per function.
"""

from __future__ import annotations

import os
import warnings
from typing import Final

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

SERVICE: Final = os.getenv("POWERTOOLS_SERVICE_NAME") or "dynamo-queue"
NAMESPACE: Final = os.getenv("POWERTOOLS_METRICS_NAMESPACE") or "DynamoQueue"
# Invoke events carry no request id of their own; Lambda's `function_request_id` identifies those.
CORRELATION_ID_PATH: Final = correlation_paths.API_GATEWAY_REST

logger = Logger(
    service=SERVICE,
    level=os.getenv("POWERTOOLS_LOG_LEVEL") or os.getenv("LOG_LEVEL") or "INFO",
)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)

# Reads (stats, peek, get) publish no metric; that is expected, not worth a warning in every log stream.
warnings.filterwarnings("ignore", message="No application metrics to publish")


def count(name: str, value: int) -> None:
    """Adds `value` to the counter `name`; zero is left out so an idle poll publishes nothing."""
    if value:
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
