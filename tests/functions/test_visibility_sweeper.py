"""The visibility sweeper: both schedule shapes sweep within the function's time and publish depths."""

from __future__ import annotations

from typing import Any

import pytest
from queue_api import visibility_sweeper
from queue_core import QueueClient

from functions.visibility_sweeper import handler as sweeper
from tests.events import FakeLambdaContext, api_event, scheduled_rule_event, scheduler_event
from tests.functions.conftest import emf_records, invoke, metric_values

REPORT_KEYS = {
    "sub_queues",
    "skipped",
    "moved_to_dlq",
    "expired_deleted",
    "groups_freed",
    "items_read",
    "complete",
    "replays_resumed",
    "replayed",
    "cursor",
    "depths",
    "shards",
    "held",
    "failures",
}


@pytest.fixture
def queues(core: QueueClient) -> QueueClient:
    """orders/a: one message over its receive limit, one waiting; orders/b: one waiting; jobs.fifo/a: one."""
    core.create_queue("orders", max_receive_count=1)
    core.create_queue("jobs.fifo")
    a = core.queue("orders", "a")
    a.send("failed")
    a.receive(visibility_timeout=0)
    a.send("waiting")
    core.queue("orders", "b").send("waiting")
    core.queue("jobs.fifo", "a").send("job", group_id="g")
    return core


@pytest.mark.parametrize(
    "event", [scheduler_event(), scheduled_rule_event(), {}], ids=["scheduler", "rule", "empty-input"]
)
def test_every_schedule_shape_sweeps(queues: QueueClient, event: dict[str, Any]) -> None:
    report = invoke(sweeper, event)
    assert set(report) == REPORT_KEYS
    assert report["sub_queues"] == 3 and report["moved_to_dlq"] == 1 and report["complete"]
    assert queues.queue("orders", "a").stats().dlq == 1


def test_the_report_lists_each_sub_queue_depth(queues: QueueClient) -> None:
    depths = {(depth["queue"], depth["client"]): depth for depth in invoke(sweeper, scheduler_event())["depths"]}
    assert set(depths) == {("orders", "a"), ("orders", "b"), ("jobs.fifo", "a")}
    assert (depths[("orders", "a")]["visible"], depths[("orders", "a")]["dlq"]) == (1, 1)


def test_depths_are_published_per_sub_queue_and_as_totals(
    queues: QueueClient, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    invoke(sweeper, scheduled_rule_event())
    records = emf_records(capsys.readouterr().out)

    per_queue = {
        (record["queue"], record["client"]): record
        for record in records
        if record["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["queue", "client"]]
    }
    assert set(per_queue) == {("orders", "a"), ("orders", "b"), ("jobs.fifo", "a")}
    orders_a = per_queue[("orders", "a")]
    names = {metric["Name"] for metric in orders_a["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert names == {"VisibleMessages", "InFlightMessages", "DelayedMessages", "DlqDepth", "OldestMessageAgeSeconds"}
    assert (orders_a["VisibleMessages"], orders_a["DlqDepth"]) == ([1], [1])
    assert orders_a["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "DynamoQueue"

    [totals] = [record for record in records if record["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [[]]]
    assert totals["DlqDepth"] == [1] and "OldestMessageAgeSeconds" in totals
    assert "queue" not in totals and "service" not in totals


def test_each_queue_shard_count_is_published(queues: QueueClient, capsys: pytest.CaptureFixture[str]) -> None:
    queues.create_queue("wide", shards=4)
    capsys.readouterr()
    report = invoke(sweeper, scheduler_event())
    assert {entry["queue"]: (entry["shards"], entry["auto"]) for entry in report["shards"]} == {
        "orders": (1, True),
        "jobs.fifo": (1, True),
        "wide": (4, False),
    }
    records = emf_records(capsys.readouterr().out)
    shards = {
        record["queue"]: record["Shards"]
        for record in records
        if record["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["queue"]]
    }
    assert shards == {"orders": [1], "jobs.fifo": [1], "wide": [4]}


def test_a_throttled_queue_the_sweep_does_not_grow_is_published_with_the_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    capsys.readouterr()
    held = {"queue": "busy", "shards": 1, "reason": "unexplained", "throttles_per_minute": 300}
    visibility_sweeper.publish_shards([{"queue": "busy", "shards": 1, "auto": True}], [held])
    records = emf_records(capsys.readouterr().out)
    [record] = [r for r in records if r["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["queue", "reason"]]]
    assert (record["queue"], record["reason"], record["ShardGrowthHeld"]) == ("busy", "unexplained", [300])


def test_moves_to_the_dlq_are_counted(queues: QueueClient, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    invoke(sweeper, scheduler_event())
    assert metric_values(capsys.readouterr().out, "MessagesMovedToDlq") == [1]


@pytest.mark.parametrize(
    ("remaining_ms", "event", "budget"),
    [
        (60_000, scheduler_event(), 48.0),
        (10_000, scheduled_rule_event(), 8.0),
        (1_500, scheduler_event(), 1.0),
        (60_000, {"action": "sweep", "budget_seconds": 5}, 5.0),
    ],
)
def test_the_sweep_budget_is_the_remaining_time_less_a_margin(
    monkeypatch: pytest.MonkeyPatch, remaining_ms: int, event: dict[str, Any], budget: float
) -> None:
    budgets: list[float | None] = []
    original = QueueClient.sweep

    def recording(self: QueueClient, budget_seconds: float | None = None, **options: Any) -> Any:
        budgets.append(budget_seconds)
        return original(self, budget_seconds=budget_seconds, **options)

    monkeypatch.setattr(QueueClient, "sweep", recording)
    invoke(sweeper, event, FakeLambdaContext(remaining_ms=remaining_ms))
    assert budgets == [pytest.approx(budget)]


def test_a_spent_budget_reports_an_incomplete_sweep(queues: QueueClient) -> None:
    report = invoke(sweeper, {"action": "sweep", "budget_seconds": 1e-9})
    assert not report["complete"] and report["sub_queues"] < 3


def test_a_pass_out_of_time_publishes_what_it_saw_but_no_totals(
    queues: QueueClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """The next pass resumes after it, so each would sum another part: the DLQ alarm on the totals would go off
    and on again round after round. The totals come from passes that saw every sub-queue."""
    capsys.readouterr()
    report = invoke(sweeper, {"action": "sweep", "budget_seconds": 1e-9})
    records = emf_records(capsys.readouterr().out)
    dimensions = [record["_aws"]["CloudWatchMetrics"][0]["Dimensions"] for record in records]
    assert not report["complete"] and [["queue", "client"]] in dimensions and [[]] not in dimensions


@pytest.mark.parametrize(
    "event",
    [{"action": "receive"}, {"action": "sweep", "budget_seconds": 0}, {"action": "sweep", "queue": "orders"}],
)
def test_other_invokes_are_a_400(event: dict[str, Any]) -> None:
    answer = invoke(sweeper, event)
    assert (answer["status"], answer["error"]["code"]) == (400, "ValidationError")


def test_an_api_gateway_event_is_a_404() -> None:
    answer = sweeper.lambda_handler(api_event("GET", "/queues"), FakeLambdaContext())
    assert answer["statusCode"] == 404
