"""Tells the kinds of event a function receives apart and hands each to what serves it.

An API Gateway REST proxy event goes to the function's resolver; any other event to its invoke actions, where an
event without `action` (an EventBridge rule's `Scheduled Event`, a Scheduler's configured input) runs the
function's scheduled action when it has one.

Both are built from `queue_api.operations` on the first event that needs them, not when the handler is imported:
a cold start loads pydantic, Powertools' validation, the models and the core only for the request in hand (a
well-formed request of a fast route, `queue_api.fast_routes`, loads none but the core), and an invoke never
builds the resolver.
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
        from .resolver import answer_http

        return answer_http(function, event, context)
    from .fast_actions import answer_invoke

    fast = answer_invoke(function, event, context)
    if fast is not None:
        return fast
    from .invoke import actions_for, dispatch

    return dispatch(actions_for(function), event, context, default_action=scheduled_action(function))
