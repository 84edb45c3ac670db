"""Which function owns which route: the API Gateway resources of the deployed API, for the local server.

The routes are `queue_api.operations`' own, so the local server serves exactly what is deployed and documented.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote

from queue_api.operations import OPERATIONS, PRODUCER
from sqs_api import routes as sqs_routes


@dataclass(frozen=True)
class Route:
    method: str
    resource: str
    function: str


ROUTES: Final = tuple(
    Route(operation.method, operation.path, operation.function)
    for operation in OPERATIONS
    if operation.method is not None and operation.path is not None
)
# Amazon SQS's protocol: not REST routes of the OpenAPI document, served by their own function.
SQS_ROUTES: Final = tuple(Route(sqs_routes.METHOD, resource, sqs_routes.FUNCTION) for resource in sqs_routes.RESOURCES)
# Where a request no route matches goes: its resolver answers the API's 404 error.
FALLBACK_FUNCTION: Final = PRODUCER


@dataclass(frozen=True)
class Match:
    route: Route | None
    path_parameters: dict[str, str]

    @property
    def function(self) -> str:
        return self.route.function if self.route else FALLBACK_FUNCTION

    @property
    def resource(self) -> str:
        """The matched resource; API Gateway's greedy catch-all when nothing matched."""
        return self.route.resource if self.route else "/{proxy+}"


def match(method: str, raw_path: str) -> Match:
    """The route for a method and a percent-encoded path, with its path parameters decoded (as API Gateway
    decodes them)."""
    segments = raw_path.strip("/").split("/") if raw_path.strip("/") else []
    for route in ROUTES + SQS_ROUTES:
        if route.method != method:
            continue
        parameters = _bind(route.resource, segments)
        if parameters is not None:
            return Match(route, parameters)
    return Match(None, {"proxy": unquote(raw_path.lstrip("/"))})


def allowed_methods(raw_path: str) -> list[str]:
    """The methods some route takes at this path, in a stable order; empty when no route has the path. A method
    outside them is API Gateway's to refuse, before any function runs: 405 with these in `Allow`."""
    segments = raw_path.strip("/").split("/") if raw_path.strip("/") else []
    methods = {route.method for route in ROUTES + SQS_ROUTES if _bind(route.resource, segments) is not None}
    return sorted(methods)


def _bind(resource: str, segments: list[str]) -> dict[str, str] | None:
    template = resource.strip("/").split("/") if resource.strip("/") else []
    if len(template) != len(segments):
        return None
    parameters: dict[str, str] = {}
    for expected, actual in zip(template, segments, strict=True):
        if expected.startswith("{") and expected.endswith("}"):
            if not actual:
                return None
            parameters[expected[1:-1]] = unquote(actual)
        elif expected != actual:
            return None
    return parameters
