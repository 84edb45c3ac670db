"""The sweeper runs every minute from EventBridge Scheduler, once, with its own narrowly trusted role."""

from __future__ import annotations

import json
from typing import Any

from tests.infra.synth import Synthesized


def _schedule(synthesized: Synthesized) -> dict[str, Any]:
    (schedule,) = synthesized.of_type("AWS::Scheduler::Schedule").values()
    return schedule["Properties"]


def test_sweeper_runs_every_minute(synthesized: Synthesized) -> None:
    schedule = _schedule(synthesized)
    assert schedule["ScheduleExpression"] == "rate(1 minute)"
    assert schedule["State"] == "ENABLED"
    assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}


def test_sweeper_gets_the_sweep_action_and_no_retries(synthesized: Synthesized) -> None:
    target = _schedule(synthesized)["Target"]
    sweeper_id = synthesized.logical_id(synthesized.stack.queue.sweeper)

    assert target["Arn"] == {"Fn::GetAtt": [sweeper_id, "Arn"]}
    assert json.loads(target["Input"]) == {"action": "sweep"}
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60}


def test_schedule_role_may_only_invoke_the_sweeper(synthesized: Synthesized) -> None:
    target = _schedule(synthesized)["Target"]
    role_id = target["RoleArn"]["Fn::GetAtt"][0]
    sweeper_arn = {"Fn::GetAtt": [synthesized.logical_id(synthesized.stack.queue.sweeper), "Arn"]}
    (policy,) = [
        policy["Properties"]["PolicyDocument"]["Statement"]
        for policy in synthesized.of_type("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
    ]
    trust = synthesized.resources[role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]

    assert policy == [
        {
            "Action": "lambda:InvokeFunction",
            "Effect": "Allow",
            "Resource": [sweeper_arn, {"Fn::Join": ["", [sweeper_arn, ":*"]]}],
        }
    ]
    assert trust[0]["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust[0]["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
