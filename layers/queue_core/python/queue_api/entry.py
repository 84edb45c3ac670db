"""Tells the kinds of event a function receives apart and hands each to what serves it.

An API Gateway REST proxy event goes to the function's resolver; any other event to its invoke actions, where an
event without `action` (an EventBridge rule's `Scheduled Event`, a Scheduler's configured input) runs the
function's scheduled action when it has one.

Both are built from `queue_api.operations` on the first event that needs them, not when the handler is imported:
a cold start loads pydantic, Powertools' validation, the models and the core only for the request in hand, and
an invoke never builds the resolver.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .operations import scheduled_action


def is_http_event(event: Any) -> bool:
    return isinstance(event, Mapping) and "httpMethod" in event and "requestContext" in event


def handle_event(event: Any, context: Any, *, function: str) -> dict[str, Any]:
    """`function`'s answer to `event`: an API Gateway proxy answer, or an invoke answer (JSON or error)."""
    if is_http_event(event):
        from .resolver import proxy_response, resolve, resolver_for

        app = resolver_for(function)
        if app is None:
            from .error_mapping import RouteNotFound, error_answer

            return proxy_response(*error_answer(RouteNotFound("this function serves no HTTP routes")))
        return resolve(app, event, context)
    from .invoke import actions_for, dispatch

    return dispatch(actions_for(function), event, context, default_action=scheduled_action(function))
