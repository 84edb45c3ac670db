"""The visibility sweeper's one operation: run the core's sweep inside the function's time and publish depths
and shard counts.
Its action (also what a schedule's event runs) is in `queue_api.operations`.

The sweep stops between sub-queues when its budget is spent, so the budget is the function's remaining time less
a margin for the sub-queue in progress and for publishing; an unfinished sweep resumes on the next schedule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from .core_client import queue_client
from .dispatcher import wake_dispatchers
from .observability import NAMESPACE, count, tracer

if TYPE_CHECKING:
    from .schemas import NoAddress, SweepAnswer, SweepRequest

SHARDS_METRIC: Final = "Shards"
# An automatic queue throttled that the sweep did not grow, with the reason (dimensions `queue` and `reason`).
HELD_METRIC: Final = "ShardGrowthHeld"
MIN_MARGIN_SECONDS: Final = 2.0
MARGIN_SHARE: Final = 0.2
MIN_BUDGET_SECONDS: Final = 1.0

# Per (queue, client) figure: report key, metric name, unit.
DEPTH_METRICS: Final = (
    ("visible", "VisibleMessages", MetricUnit.Count),
    ("in_flight", "InFlightMessages", MetricUnit.Count),
    ("delayed", "DelayedMessages", MetricUnit.Count),
    ("dlq", "DlqDepth", MetricUnit.Count),
    ("oldest_age_seconds", "OldestMessageAgeSeconds", MetricUnit.Seconds),
    # FIFO messages that can be neither delivered nor dead-lettered, each holding its group (only when any).
    ("stuck", "StuckMessages", MetricUnit.Count),
)


def budget_seconds(request: SweepRequest, context: Any) -> float | None:
    """The smaller of the asked budget and the function's remaining time less a margin; None: no limit."""
    return _budget(request.budget_seconds, context)


def _budget(asked: float | None, context: Any) -> float | None:
    budgets = [asked] if asked else []
    remaining_ms = getattr(context, "get_remaining_time_in_millis", None)
    if callable(remaining_ms):
        remaining = remaining_ms() / 1000
        budgets.append(max(MIN_BUDGET_SECONDS, remaining - max(MIN_MARGIN_SECONDS, MARGIN_SHARE * remaining)))
    return min(budgets) if budgets else None


@tracer.capture_method(capture_response=False)
def sweep(_address: NoAddress, request: SweepRequest, context: Any) -> SweepAnswer:
    from .schemas import SweepAnswer

    return SweepAnswer.model_validate(sweep_report(request.budget_seconds, context))


@tracer.capture_method(capture_response=False)
def sweep_report(asked_budget: float | None, context: Any) -> dict[str, Any]:
    """The sweep's work over plain values (its report as JSON), shared by the action and its fast form
    (`queue_api.fast_actions`), which answers a schedule's event without loading pydantic."""
    budget = _budget(asked_budget, context)
    # A fresh sweep of a function's run holds the lease for its budget: a sweep that overlaps it (a slow run, a
    # manual invoke) answers `skipped` instead of reading every sub-queue a second time.
    report = queue_client().sweep(budget_seconds=budget, lease_seconds=budget)
    count("MessagesMovedToDlq", report.moved_to_dlq)
    publish_depths(report.depths, with_totals=report.complete and not report.skipped)
    publish_shards(report.shards, report.held)
    wake_dispatchers(report.depths)
    return report.to_dict()


def publish_depths(depths: Iterable[Mapping[str, Any]], with_totals: bool = True) -> None:
    """One EMF record per (queue, client) with dimensions `queue` and `client`, and one without dimensions for
    the totals an alarm watches: DLQ depth summed, oldest message age the maximum. The totals only from a pass
    that saw every sub-queue: a pass out of time (the next resumes after it) or one that another's lease skipped
    saw a part or nothing, and its sum would turn the DLQ alarm off and on again round after round."""
    dlq_total, oldest = 0, None
    for depth in depths:
        per_queue = _metrics()
        per_queue.add_dimension(name="queue", value=str(depth["queue"]))
        per_queue.add_dimension(name="client", value=str(depth["client"]))
        for key, name, unit in DEPTH_METRICS:
            if depth.get(key) is not None:
                per_queue.add_metric(name=name, unit=unit, value=depth[key])
        per_queue.flush_metrics()
        dlq_total += depth.get("dlq") or 0
        age = depth.get("oldest_age_seconds")
        if age is not None:
            oldest = age if oldest is None else max(oldest, age)
    if not with_totals:
        return
    totals = _metrics()
    totals.add_metric(name="DlqDepth", unit=MetricUnit.Count, value=dlq_total)
    if oldest is not None:
        totals.add_metric(name="OldestMessageAgeSeconds", unit=MetricUnit.Seconds, value=oldest)
    totals.flush_metrics()


def publish_shards(queues: Iterable[Mapping[str, Any]], held: Iterable[Mapping[str, Any]] = ()) -> None:
    """`Shards` per queue (dimension `queue`): the count each queue swept whole has after this pass, so a
    dashboard shows an automatic queue's count follow its load. `ShardGrowthHeld` (dimensions `queue` and
    `reason`; its value the throttles a minute): an automatic queue throttled that this pass did not grow, and
    why (see `queue_core.autoshard`)."""
    for queue in queues:
        per_queue = _metrics()
        per_queue.add_dimension(name="queue", value=str(queue["queue"]))
        per_queue.add_metric(name=SHARDS_METRIC, unit=MetricUnit.Count, value=queue["shards"])
        per_queue.flush_metrics()
    for queue in held:
        reason = _metrics()
        reason.add_dimension(name="queue", value=str(queue["queue"]))
        reason.add_dimension(name="reason", value=str(queue["reason"]))
        reason.add_metric(name=HELD_METRIC, unit=MetricUnit.Count, value=queue["throttles_per_minute"])
        reason.flush_metrics()


def _metrics() -> EphemeralMetrics:
    """A metrics set of its own (not the function's shared one), with no service dimension, so each record
    carries exactly the dimensions given."""
    return EphemeralMetrics(namespace=NAMESPACE, service="")
