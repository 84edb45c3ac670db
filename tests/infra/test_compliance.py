"""The synthesized stack passes cdk-nag's AWS Solutions rules and cfn-lint, and every exception is explained."""

from __future__ import annotations

from infra.compliance import MIN_REASON_LENGTH
from tests.infra.synth import Synthesized, cfn_lint

# Each accepted finding, reviewed: adding one to the stack must add it here too. With tracing on (not the
# default), each function role also acknowledges X-Ray's Resource '*' (tests/infra/test_options.py checks it).
EXPECTED_ACKNOWLEDGEMENTS = {
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
    "AmazonAPIGatewayPushToCloudWatchLogs]": {"DynamoQueue/Queue/Api/CloudWatchRole"},
    "AwsSolutions-APIG3": {"DynamoQueue/Queue/Api/DeploymentStage.v1"},
    "AwsSolutions-COG4": {"DynamoQueue/Queue/Api"},
    "AwsSolutions-IAM5[Resource::<QueueVisibilitySweeper60AB0B8B.Arn>:*]": {"DynamoQueue/Queue/SweeperScheduleRole"},
    "AwsSolutions-IAM5[Resource::<QueueBodies9CADB502.Arn>/*]": {
        "DynamoQueue/Queue/ProducerRole",
        "DynamoQueue/Queue/PollerRole",
        "DynamoQueue/Queue/DlqRedriverRole",
        "DynamoQueue/Queue/VisibilitySweeperRole",
        "DynamoQueue/Queue/SqsRole",
    },
    "AwsSolutions-S1": {"DynamoQueue/Queue/Bodies"},
}


def test_cdk_nag_reports_no_unacknowledged_finding(synthesized: Synthesized) -> None:
    reports = synthesized.validation_report()["pluginReports"]
    assert [report["pluginName"] for report in reports] == ["AwsSolutions"]
    for report in reports:
        assert report["conclusion"] == "success"
        assert report["violations"] == []


def test_every_acknowledgement_is_expected_and_has_a_reason(synthesized: Synthesized) -> None:
    acknowledged: dict[str, set[str]] = {}
    for report in synthesized.validation_report()["pluginReports"]:
        for finding in report["suppressedViolations"]:
            assert len(finding["reason"].strip()) >= MIN_REASON_LENGTH, finding["ruleName"]
            acknowledged.setdefault(finding["ruleName"], set()).add(finding["acknowledgedAt"])
    assert acknowledged == EXPECTED_ACKNOWLEDGEMENTS


def test_cfn_lint_finds_nothing(synthesized: Synthesized) -> None:
    assert cfn_lint(synthesized) == ""
