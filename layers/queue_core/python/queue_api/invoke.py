"""Direct-invoke events: `{"action": "<name>", "queue": "q", "client": "c", ...fields of the HTTP body...}`.

An action validates its address fields (the HTTP route's path parameters) and the rest of the event (the HTTP
body) with the same models as the route, calls the same operation, and answers the same JSON. Errors answer
`{"error": {"code", "message"}, "status": 4xx}` instead of raising, so a caller using the SDK gets a result it
can read rather than a function error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

from pydantic import BaseModel, TypeAdapter

from . import operations
from .error_mapping import UnsupportedBody, error_answer
from .operations import Operation
from .schemas import ADDRESSES


@dataclass(frozen=True)
class Action:
    """One invoke action: where it points (`address`), what it takes (`request`) and what it runs.

    `run` takes the validated address and request, and the Lambda context for actions that budget their time;
    it returns the answer model, or the answer and the status its HTTP route would answer.
    """

    run: Callable[[Any, Any, Any], Any]
    address: type[BaseModel]
    request: Any

    @classmethod
    def of(cls, operation: Operation) -> Action:
        handler = operation.handler()
        run = handler if operation.uses_context else lambda where, what, _context: handler(where, what)
        return cls(run=run, address=ADDRESSES[operation.path_parameters], request=operation.request_type())

    @cached_property
    def request_adapter(self) -> TypeAdapter[Any]:
        """Built on first use: a cold start serves one action, not all of them."""
        return TypeAdapter(self.request)


@cache
def actions_for(function: str) -> Mapping[str, Action]:
    """`function`'s invoke actions by name, built on its first invoke."""
    return {
        operation.name: Action.of(operation) for operation in operations.of_function(function) if operation.invocable
    }


def dispatch(
    actions: Mapping[str, Action], event: Any, context: Any, default_action: str | None = None
) -> dict[str, Any]:
    """Runs the event's action and answers its JSON, or the error with its HTTP status.

    An object without `action` runs `default_action` with none of its fields: a schedule's envelope or configured
    input says when to run, not what to do.
    """
    try:
        if not isinstance(event, Mapping):
            raise UnsupportedBody("an invoke event must be a JSON object with an 'action' field")
        name = event.get("action")
        if name is None and default_action is not None:
            return run_action(actions[default_action], {}, context)
        if name is None:
            raise UnsupportedBody(f"the event has no 'action'; this function takes: {', '.join(sorted(actions))}")
        action = actions.get(name) if isinstance(name, str) else None
        if action is None:
            known = ", ".join(sorted(actions))
            raise UnsupportedBody(f"unknown action {name!r}; this function takes: {known}")
        return run_action(action, event, context)
    except Exception as error:
        status, body = error_answer(error)
        return {**body, "status": status}


def run_action(action: Action, fields: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """Validates `fields` (minus `action`) and runs `action`; raises what the operation raises."""
    address_names = set(action.address.model_fields)
    address = action.address.model_validate({k: v for k, v in fields.items() if k in address_names})
    rest = {k: v for k, v in fields.items() if k != "action" and k not in address_names}
    request = action.request_adapter.validate_python(rest)
    answer = action.run(address, request, context)
    return (answer[0] if isinstance(answer, tuple) else answer).model_dump(mode="json")
