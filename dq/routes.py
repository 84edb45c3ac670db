"""Which function owns which route: the API Gateway resources of the deployed API, for the local server.

A test checks this table against the OpenAPI document generated from the handlers, so the two cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote

FUNCTIONS: Final = ("producer", "poller", "dlq_redriver", "visibility_sweeper")
SUB_QUEUE: Final = "/queues/{q}/clients/{c}"


@dataclass(frozen=True)
class Route:
    method: str
    resource: str
    function: str


ROUTES: Final = (
    Route("GET", "/openapi.json", "producer"),
    Route("GET", "/queues", "producer"),
    Route("PUT", "/queues/{q}", "producer"),
    Route("GET", "/queues/{q}", "producer"),
    Route("DELETE", "/queues/{q}", "producer"),
    Route("PATCH", "/queues/{q}", "producer"),
    Route("GET", "/queues/{q}/clients", "producer"),
    Route("POST", f"{SUB_QUEUE}/messages", "producer"),
    Route("POST", f"{SUB_QUEUE}/receive", "poller"),
    Route("POST", f"{SUB_QUEUE}/delete", "poller"),
    Route("POST", f"{SUB_QUEUE}/visibility", "poller"),
    Route("POST", f"{SUB_QUEUE}/release", "poller"),
    Route("GET", f"{SUB_QUEUE}/messages", "poller"),
    Route("DELETE", f"{SUB_QUEUE}/messages", "poller"),
    Route("GET", f"{SUB_QUEUE}/messages/{{id}}", "poller"),
    Route("DELETE", f"{SUB_QUEUE}/messages/{{id}}", "poller"),
    Route("GET", f"{SUB_QUEUE}/stats", "poller"),
    Route("GET", f"{SUB_QUEUE}/dlq", "dlq_redriver"),
    Route("POST", f"{SUB_QUEUE}/dlq/redrive", "dlq_redriver"),
    Route("POST", f"{SUB_QUEUE}/messages/{{id}}/dlq", "dlq_redriver"),
)
# Where a request no route matches goes: its resolver answers the API's 404 error.
FALLBACK_FUNCTION: Final = "producer"


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
    for route in ROUTES:
        if route.method != method:
            continue
        parameters = _bind(route.resource, segments)
        if parameters is not None:
            return Match(route, parameters)
    return Match(None, {"proxy": unquote(raw_path.lstrip("/"))})


def _bind(resource: str, segments: list[str]) -> dict[str, str] | None:
    template = resource.strip("/").split("/")
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
