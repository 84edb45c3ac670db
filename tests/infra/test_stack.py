"""The stack's outputs: what `dq`, a deployment pipeline or another stack needs to reach the queue."""

from __future__ import annotations

from infra.functions import FUNCTIONS
from tests.infra.synth import Synthesized


def test_outputs_name_the_api_table_layer_and_functions(synthesized: Synthesized) -> None:
    queue = synthesized.stack.queue
    outputs = synthesized.template_json["Outputs"]

    assert outputs["TableName"]["Value"] == {"Ref": synthesized.logical_id(queue.table)}
    assert outputs["LayerArn"]["Value"] == {"Ref": synthesized.logical_id(queue.layer)}
    assert {"Ref": synthesized.logical_id(queue.api)} in outputs["ApiUrl"]["Value"]["Fn::Join"][1]
    for output_id, name in (
        ("ProducerFunctionArn", "producer"),
        ("PollerFunctionArn", "poller"),
        ("DlqRedriverFunctionArn", "dlq_redriver"),
        ("VisibilitySweeperFunctionArn", "visibility_sweeper"),
    ):
        function_id = synthesized.logical_id(queue.functions[name])
        assert outputs[output_id]["Value"] == {"Fn::GetAtt": [function_id, "Arn"]}


def test_stack_holds_one_table_its_functions_one_api_and_one_schedule(synthesized: Synthesized) -> None:
    counts = {
        resource_type: len(synthesized.of_type(resource_type))
        for resource_type in (
            "AWS::DynamoDB::Table",
            "AWS::Lambda::Function",
            "AWS::Lambda::LayerVersion",
            "AWS::ApiGateway::RestApi",
            "AWS::Scheduler::Schedule",
            "AWS::CloudWatch::Dashboard",
        )
    }
    assert counts == {
        "AWS::DynamoDB::Table": 1,
        "AWS::Lambda::Function": len(FUNCTIONS),
        "AWS::Lambda::LayerVersion": 1,
        "AWS::ApiGateway::RestApi": 1,
        "AWS::Scheduler::Schedule": 1,
        "AWS::CloudWatch::Dashboard": 1,
    }
