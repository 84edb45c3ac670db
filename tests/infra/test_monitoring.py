"""Alarms on what an operator must act on, and one dashboard of depth, age, throughput, conflicts, health."""

from __future__ import annotations

import json
from typing import Any

from infra.props import DynamoQueueProps
from tests.infra.synth import Synthesized


def _alarms(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    return {key: value["Properties"] for key, value in synthesized.of_type("AWS::CloudWatch::Alarm").items()}


def _alarm(synthesized: Synthesized, construct_id: str) -> dict[str, Any]:
    (alarm,) = [
        value for key, value in _alarms(synthesized).items() if key.startswith(f"QueueMonitoring{construct_id}")
    ]
    return alarm


def test_dlq_depth_alarm_fires_on_the_first_dead_letter(synthesized: Synthesized) -> None:
    alarm = _alarm(synthesized, "DlqNotEmpty")
    assert alarm["Namespace"] == "DynamoQueue"
    assert alarm["MetricName"] == "DlqDepth"
    assert "Dimensions" not in alarm
    assert alarm["Statistic"] == "Maximum"
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["Threshold"] == 0


def test_oldest_message_alarm_uses_the_configured_age(synthesized: Synthesized) -> None:
    alarm = _alarm(synthesized, "OldestMessageTooOld")
    assert alarm["MetricName"] == "OldestMessageAgeSeconds"
    assert "Dimensions" not in alarm
    assert alarm["Threshold"] == DynamoQueueProps().oldest_message_age_alarm_seconds


def test_every_function_has_error_and_throttle_alarms(synthesized: Synthesized) -> None:
    for function in synthesized.stack.queue.functions.values():
        function_ref = {"Ref": synthesized.logical_id(function)}
        for kind, metric in (("Errors", "Errors"), ("Throttles", "Throttles")):
            alarm = _alarm(synthesized, f"{function.node.id}{kind}")
            assert alarm["MetricName"] == metric
            assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": function_ref}]
            assert alarm["Threshold"] == 0


def test_table_throttling_and_user_errors_are_alarmed(synthesized: Synthesized) -> None:
    throttled = _alarm(synthesized, "TableThrottled")
    metric_names = {
        query["MetricStat"]["Metric"]["MetricName"] for query in throttled["Metrics"] if "MetricStat" in query
    }
    user_errors = _alarm(synthesized, "DynamoDbUserErrors")

    assert metric_names == {"ReadThrottleEvents", "WriteThrottleEvents"}
    assert user_errors["MetricName"] == "UserErrors"
    assert user_errors["Threshold"] == DynamoQueueProps().dynamodb_user_errors_alarm_threshold


def test_alarms_have_no_actions_unless_a_topic_is_asked_for(synthesized: Synthesized) -> None:
    assert all("AlarmActions" not in alarm for alarm in _alarms(synthesized).values())
    assert not synthesized.of_type("AWS::SNS::Topic")


def test_dashboard_shows_depth_age_throughput_conflicts_and_function_health(synthesized: Synthesized) -> None:
    (dashboard,) = synthesized.of_type("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])

    for figure in (
        "DlqDepth",
        "VisibleMessages",
        "InFlightMessages",
        "DelayedMessages",
        "OldestMessageAgeSeconds",
        "ClaimConflicts",
        "MessagesSent",
        "MessagesReceived",
        "MessagesDeleted",
        "ConditionalCheckFailedRequests",
        "Invocations",
        "Errors",
        "Throttles",
        "Duration",
    ):
        assert figure in body, figure


def _dashboard_expressions(synthesized: Synthesized) -> list[str]:
    """The math expressions of every widget, from the dashboard body with its references blanked out."""
    (dashboard,) = synthesized.of_type("AWS::CloudWatch::Dashboard").values()
    _, parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"]
    body = json.loads("".join(part if isinstance(part, str) else "ref" for part in parts))
    return [
        entry["expression"]
        for widget in body["widgets"]
        for metric in widget.get("properties", {}).get("metrics", [])
        for entry in metric
        if isinstance(entry, dict) and "expression" in entry
    ]


def test_dashboard_sums_sub_queue_depths_and_counters_over_their_dimensions(synthesized: Synthesized) -> None:
    expressions = _dashboard_expressions(synthesized)

    assert """SUM(SEARCH('{"DynamoQueue",client,queue} MetricName="VisibleMessages"', 'Maximum', 60))""" in expressions
    assert """SUM(SEARCH('Namespace="DynamoQueue" MetricName="MessagesSent"', 'Sum', 60))""" in expressions
    assert """SEARCH('{"DynamoQueue",queue} MetricName="Shards"', 'Maximum', 60)""" in expressions
