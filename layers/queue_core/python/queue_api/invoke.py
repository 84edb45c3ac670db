"""Direct-invoke events: `{"action": "<name>", "queue": "q", "client": "c", ...fields of the HTTP body...}`.

An action validates its address fields (the HTTP route's path parameters) and the rest of the event (the HTTP
body) with the same models as the route, calls the same operation, and answers the same JSON. Errors answer
`{"error": {"code", "message"}, "status": 4xx}` instead of raising, so a caller using the SDK gets a result it
can read rather than a function error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import BaseModel, TypeAdapter

from .errors import UnsupportedBody, error_answer
from .models import NoAddress

Operation = Callable[[Any, Any], BaseModel]


@dataclass(frozen=True)
class Action:
    """One invoke action: where it points (`address`), what it takes (`request`) and what it runs.

    `run` takes the validated address and request, and the Lambda context for actions that budget their time.
    """

    run: Callable[[Any, Any, Any], BaseModel]
    address: type[BaseModel] = NoAddress
    request: Any = NoAddress

    @classmethod
    def of(cls, operation: Operation, address: type[BaseModel] = NoAddress, request: Any = NoAddress) -> Action:
        """An action for an operation that needs no Lambda context."""
        return cls(run=lambda where, what, _context: operation(where, what), address=address, request=request)

    @cached_property
    def request_adapter(self) -> TypeAdapter[Any]:
        """Built on first use: a cold start serves one action, not all of them."""
        return TypeAdapter(self.request)


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
    return action.run(address, request, context).model_dump(mode="json")
