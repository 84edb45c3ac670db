"""Tells the kinds of event a function receives apart and hands each to its handler.

An API Gateway REST proxy event goes to the function's resolver; any other event to its invoke actions, where an
event without `action` (an EventBridge rule's `Scheduled Event`, a Scheduler's configured input) runs the
function's scheduled action when it has one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import RouteNotFound, error_answer
from .invoke import Action, dispatch

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver


def is_http_event(event: Any) -> bool:
    return isinstance(event, Mapping) and "httpMethod" in event and "requestContext" in event


def handle_event(
    event: Any,
    context: Any,
    *,
    actions: Mapping[str, Action],
    app: APIGatewayRestResolver | None = None,
    scheduled: str | None = None,
) -> dict[str, Any]:
    """The function's answer to `event`: an API Gateway proxy answer, or an invoke answer (JSON or error)."""
    if is_http_event(event):
        from .resolver import proxy_response, resolve

        if app is None:
            return proxy_response(*error_answer(RouteNotFound("this function serves no HTTP routes")))
        return resolve(app, event, context)
    return dispatch(actions, event, context, default_action=scheduled)
