"""The one Logger, Tracer and Metrics of every function, configured from the environment.

Powertools shares state between instances of the same class, so creating them once here and importing them
everywhere is what keeps one JSON log format, one trace and one EMF namespace per function.

The Tracer records through the X-Ray SDK as Powertools' default does, but imports it when the first traced call
opens a subsegment instead of when the handler is imported, and never while tracing is off (the stack's default:
`POWERTOOLS_TRACE_DISABLED`): the SDK costs a first answer about as much as boto3.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from typing import Any, Final

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.tracing.base import BaseProvider

SERVICE: Final = os.getenv("POWERTOOLS_SERVICE_NAME") or "dynamo-queue"
NAMESPACE: Final = os.getenv("POWERTOOLS_METRICS_NAMESPACE") or "DynamoQueue"
# Invoke events carry no request id of their own; Lambda's `function_request_id` identifies those.
CORRELATION_ID_PATH: Final = correlation_paths.API_GATEWAY_REST


class UnrecordedSubsegment:
    """What a traced call gets while tracing is off: Powertools' Tracer still opens a subsegment around the
    handler and annotates it (the cold start, the service), and this records none of it."""

    def put_annotation(self, key: str, value: Any) -> None:
        return None

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        return None

    def add_exception(self, exception: BaseException, stack: Any = None, remote: bool = False) -> None:
        return None


@contextmanager
def _unrecorded() -> Any:
    yield UnrecordedSubsegment()


def tracing_disabled() -> bool:
    """Whether the Tracer switched the X-Ray SDK off (it does when disabled); `aws_xray_sdk` alone is its small
    configuration module, the recorder lives in `aws_xray_sdk.core`."""
    from aws_xray_sdk import global_sdk_config

    return not global_sdk_config.sdk_enabled()


class LazyXRayProvider(BaseProvider):
    """The X-Ray SDK's recorder, imported on first use, and not at all while tracing is off.

    It does what Powertools does with the recorder it imports itself: while tracing is on, subsegments are
    streamed one by one (`streaming_threshold=0`), and the modules the Tracer asks to patch (every supported one
    by default) are patched before the first subsegment opens, so every AWS call of an invocation is traced.
    While tracing is off the SDK's own recorder would hand out subsegments that record nothing: so do these,
    without importing it.
    """

    def __init__(self) -> None:
        self._recorder: Any = None
        self._patch_all = False
        self._patch_modules: tuple[str, ...] = ()

    def _loaded(self) -> Any:
        if self._recorder is None:
            from aws_xray_sdk import core, global_sdk_config

            if global_sdk_config.sdk_enabled():
                core.xray_recorder.configure(streaming_threshold=0)
            if self._patch_all:
                core.patch_all()
            elif self._patch_modules:
                core.patch(self._patch_modules)
            self._recorder = core.xray_recorder
        return self._recorder

    def in_subsegment(self, name: str | None = None, **kwargs: Any) -> Any:
        if self._recorder is None and tracing_disabled():
            return _unrecorded()
        return self._loaded().in_subsegment(name=name, **kwargs)

    def in_subsegment_async(self, name: str | None = None, **kwargs: Any) -> Any:
        return self._loaded().in_subsegment_async(name=name, **kwargs)

    def put_annotation(self, key: str, value: Any) -> None:
        self._loaded().put_annotation(key=key, value=value)

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        self._loaded().put_metadata(key=key, value=value, namespace=namespace)

    def patch(self, modules: Sequence[str]) -> None:
        self._patch_modules = tuple(modules)

    def patch_all(self) -> None:
        self._patch_all = True


logger = Logger(
    service=SERVICE,
    level=os.getenv("POWERTOOLS_LOG_LEVEL") or os.getenv("LOG_LEVEL") or "INFO",
)
tracer = Tracer(service=SERVICE, provider=LazyXRayProvider())
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
# Whether the handlers publish the ColdStart metric: not where metrics are switched off. Powertools prints that
# metric's EMF line even under POWERTOOLS_METRICS_DISABLED (it bypasses the switch), which put one JSON line per
# cold start into `dq local`'s request log.
COLD_START_METRIC: Final = (os.getenv("POWERTOOLS_METRICS_DISABLED") or "false").lower() != "true"

# Reads (stats, peek, get) publish no metric; that is expected, not worth a warning in every log stream.
warnings.filterwarnings("ignore", message="No application metrics to publish")


def count(name: str, value: int) -> None:
    """Adds `value` to the counter `name`; zero is left out so an idle poll publishes nothing."""
    if value:
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
