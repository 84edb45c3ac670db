"""`capacity="provisioned"`: the table and its index get provisioned units kept by auto scaling (target tracking on
utilization, the props' floors and ceilings); on demand stays the default and has no scaling at all."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest

from infra.props import DynamoQueueProps
from tests.infra.synth import Synthesized, cdk_context, cfn_lint, synthesize

PROVISIONED = {
    "dynamo-queue:capacity": "provisioned",
    "dynamo-queue:capacity_target_utilization": "70",
    "dynamo-queue:min_write_capacity": "10",
    "dynamo-queue:max_write_capacity": "2000",
    "dynamo-queue:index_min_write_capacity": "12",
    "dynamo-queue:index_max_write_capacity": "3000",
}
INDEX = "gsi1"


@pytest.fixture(scope="module")
def provisioned(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("provisioned.out"), **PROVISIONED)


def _table(synthesized: Synthesized) -> dict[str, Any]:
    (table,) = synthesized.of_type("AWS::DynamoDB::Table").values()
    return table["Properties"]


def _targets(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    """Each scalable target by its dimension and whether it is the index's: `table/write`, `index/read`, ..."""
    found = {}
    for target in synthesized.of_type("AWS::ApplicationAutoScaling::ScalableTarget").values():
        properties = target["Properties"]
        resource = "index" if INDEX in str(properties["ResourceId"]) else "table"
        dimension = "write" if "WriteCapacityUnits" in properties["ScalableDimension"] else "read"
        found[f"{resource}/{dimension}"] = properties
    return found


def test_on_demand_is_the_default_and_scales_nothing(synthesized: Synthesized) -> None:
    assert DynamoQueueProps().capacity == "on_demand"
    assert _table(synthesized)["BillingMode"] == "PAY_PER_REQUEST"
    assert "ProvisionedThroughput" not in _table(synthesized)
    assert not synthesized.of_type("AWS::ApplicationAutoScaling::ScalableTarget")
    assert not synthesized.of_type("AWS::ApplicationAutoScaling::ScalingPolicy")


def test_a_provisioned_table_and_its_index_start_at_their_floors(provisioned: Synthesized) -> None:
    table = _table(provisioned)
    assert table.get("BillingMode", "PROVISIONED") == "PROVISIONED"
    assert table["ProvisionedThroughput"] == {"ReadCapacityUnits": 5, "WriteCapacityUnits": 10}
    (index,) = table["GlobalSecondaryIndexes"]
    assert index["IndexName"] == INDEX
    assert index["ProvisionedThroughput"] == {"ReadCapacityUnits": 5, "WriteCapacityUnits": 12}


def test_auto_scaling_tracks_utilization_between_each_floor_and_ceiling(provisioned: Synthesized) -> None:
    targets = _targets(provisioned)
    bounds = {name: (target["MinCapacity"], target["MaxCapacity"]) for name, target in targets.items()}
    assert bounds == {
        "table/read": (5, 1_000),
        "table/write": (10, 2_000),
        "index/read": (5, 1_000),
        "index/write": (12, 3_000),
    }
    assert all(target["ServiceNamespace"] == "dynamodb" for target in targets.values())
    policies = provisioned.of_type("AWS::ApplicationAutoScaling::ScalingPolicy").values()
    tracked = [policy["Properties"]["TargetTrackingScalingPolicyConfiguration"] for policy in policies]
    assert len(tracked) == 4
    metrics = sorted(config["PredefinedMetricSpecification"]["PredefinedMetricType"] for config in tracked)
    assert metrics == ["DynamoDBReadCapacityUtilization"] * 2 + ["DynamoDBWriteCapacityUtilization"] * 2
    assert {config["TargetValue"] for config in tracked} == {70}


def test_the_provisioned_stack_passes_cdk_nag_and_cfn_lint(provisioned: Synthesized) -> None:
    for report in provisioned.validation_report()["pluginReports"]:
        assert report["violations"] == []
    assert cfn_lint(provisioned) == ""


def test_capacity_settings_come_from_context_as_numbers() -> None:
    props = DynamoQueueProps.from_context(cdk.App(context=cdk_context(**PROVISIONED)).node)
    assert props.provisioned
    assert props.capacity_bounds["index_write"] == (12, 3_000)


@pytest.mark.parametrize(
    ("settings", "complaint"),
    [
        ({"capacity": "reserved"}, "capacity must be one of on_demand, provisioned"),
        ({"capacity": "provisioned", "capacity_target_utilization": 95}, "capacity_target_utilization"),
        ({"capacity": "provisioned", "capacity_target_utilization": 10}, "capacity_target_utilization"),
        ({"capacity": "provisioned", "min_write_capacity": 0}, "floor"),
        ({"capacity": "provisioned", "index_min_read_capacity": 50, "index_max_read_capacity": 10}, "ceiling"),
    ],
)
def test_capacity_settings_that_could_not_deploy_are_refused(settings: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        DynamoQueueProps(**settings)
