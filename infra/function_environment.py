"""What every function's environment holds beside its table and names: tracing, a deploy-time choice off by
default, and the settings that keep a cold start's first answer short. Free of CDK imports, so the benchmarks
run the handlers with exactly the environment the stack gives them.

Tracing is off by default. The functions trace through Powertools' Tracer, which records with the AWS X-Ray SDK
for Python: that SDK entered maintenance mode on 25 February 2026 and loses support on 25 February 2027 (AWS
recommends OpenTelemetry), and loading it costs a first answer about as much as boto3. The logs (a JSON line per
request, correlated by API Gateway's request id) and the metrics cover operating the queue; a deployment that
wants traces sets `tracing` and pays for them.
"""

from __future__ import annotations

from typing import Final

DEFAULT_TRACING: Final = False
# pydantic looks for plugins among the installed distributions' entry points when it builds its first model;
# the functions use none, and the scan is time every cold start would spend before its first validation.
COLD_START: Final = {"PYDANTIC_DISABLE_PLUGINS": "__all__"}


def tracing_environment(enabled: bool) -> dict[str, str]:
    """Off, Powertools' Tracer is disabled, so the X-Ray SDK is never imported: in Lambda, Powertools would
    otherwise trace every function, whether or not the function's tracing mode is active."""
    if enabled:
        # Responses carry message bodies (possibly large and sensitive): keep them out of X-Ray.
        return {"POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false"}
    return {"POWERTOOLS_TRACE_DISABLED": "true"}


def function_environment(tracing: bool) -> dict[str, str]:
    """The variables of this module's concern that every function gets."""
    return {**COLD_START, **tracing_environment(tracing)}
