"""Invoke events answered without loading pydantic, when that is certain: a schedule's run of the sweeper.

The sweeper runs every few minutes from a schedule whose event carries nothing to validate (no `action`, or
`{"action": "sweep"}` alone), so its first answer need not load pydantic and the models only to check that
nothing was given: it runs the same work as the `sweep` action (`visibility_sweeper.sweep_report`) and writes
the report as `SweepAnswer` writes it (`queue_api.answer_shapes`), falling back to the model for any report it
is not sure of. Every other event goes to `queue_api.invoke`, as before.
"""

from __future__ import annotations

from typing import Any

from .answer_shapes import SWEEP_ANSWER
from .error_mapping import error_answer
from .operations import VISIBILITY_SWEEPER, scheduled_action
from .request_checks import Unsure


def answer_invoke(function: str, event: Any, context: Any) -> dict[str, Any] | None:
    """The invoke answer to `event` by `function`, or None (nothing done) when `queue_api.invoke` must answer."""
    if function != VISIBILITY_SWEEPER or type(event) is not dict or scheduled_action(function) != "sweep":
        return None
    if "action" in event and event != {"action": "sweep"}:
        return None
    from .visibility_sweeper import sweep_report

    try:
        report = sweep_report(None, context)
        try:
            return SWEEP_ANSWER(report)
        except Unsure:
            from .schemas import SweepAnswer

            return SweepAnswer.model_validate(report).model_dump(mode="json")
    except Exception as error:  # mapped as `queue_api.invoke.dispatch` maps it
        status, body = error_answer(error)
        return {**body, "status": status}
