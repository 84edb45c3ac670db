"""Deployment settings from CDK context (`cdk deploy -c dynamo-queue:<field>=<value>`) reach the resources."""

from __future__ import annotations

import pathlib
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_logs as logs

from infra.props import DynamoQueueProps
from tests.infra.synth import Synthesized, cdk_context, synthesize

CUSTOMER_KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
OPTIONS = {
    "dynamo-queue:removal_policy": "DESTROY",
    "dynamo-queue:deletion_protection": "false",
    "dynamo-queue:sweeper_interval_minutes": "5",
    "dynamo-queue:sweeper_reserved_concurrency": "1",
    "dynamo-queue:api_account_logging_role": "false",
    "dynamo-queue:alarm_email": "ops@example.com",
    "dynamo-queue:log_retention": "ONE_WEEK",
    "dynamo-queue:api_throttle_rate_limit": "50",
    "dynamo-queue:tracing": "true",
    "dynamo-queue:encryption_key_arn": CUSTOMER_KEY,
}


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("options.out"), **OPTIONS)


def test_context_values_are_converted_to_the_props_types() -> None:
    app = cdk.App(context=cdk_context(**OPTIONS))
    props = DynamoQueueProps.from_context(app.node)

    assert props.removal_policy is cdk.RemovalPolicy.DESTROY
    assert props.deletion_protection is False
    assert props.sweeper_interval_minutes == 5
    assert props.alarm_email == "ops@example.com"
    assert props.log_retention is logs.RetentionDays.ONE_WEEK
    assert props.api_throttle_rate_limit == 50.0


def test_unknown_context_fields_are_refused() -> None:
    app = cdk.App(context={"dynamo-queue": {"sweeper_rate": 5}})
    with pytest.raises(ValueError, match="not a DynamoQueueProps field"):
        DynamoQueueProps.from_context(app.node)


def test_a_development_table_can_be_destroyed(configured: Synthesized) -> None:
    (table,) = configured.of_type("AWS::DynamoDB::Table").values()
    assert table["DeletionPolicy"] == "Delete"
    assert table["Properties"]["DeletionProtectionEnabled"] is False


def test_sweeper_interval_and_an_opted_in_reservation_follow_the_props(configured: Synthesized) -> None:
    (schedule,) = configured.of_type("AWS::Scheduler::Schedule").values()
    sweeper = configured.resource(configured.stack.queue.sweeper)
    assert schedule["Properties"]["ScheduleExpression"] == "rate(5 minutes)"
    assert sweeper["Properties"]["ReservedConcurrentExecutions"] == 1


def test_without_the_account_logging_role_the_stack_leaves_the_account_setting_alone(
    configured: Synthesized,
) -> None:
    (stage,) = configured.of_type("AWS::ApiGateway::Stage").values()
    roles = configured.of_type("AWS::IAM::Role").values()
    trusted = [role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] for role in roles]

    assert configured.of_type("AWS::ApiGateway::Account") == {}
    assert {"Service": "apigateway.amazonaws.com"} not in trusted
    assert "DependsOn" not in stage
    assert stage["Properties"]["MethodSettings"][0]["LoggingLevel"] == "ERROR"
    assert "AccessLogSetting" in stage["Properties"]


def test_alarm_email_gets_an_encrypted_topic_that_every_alarm_notifies(configured: Synthesized) -> None:
    (topic_id,) = configured.of_type("AWS::SNS::Topic")
    (subscription,) = configured.of_type("AWS::SNS::Subscription").values()
    topic = configured.resources[topic_id]["Properties"]
    alarms = configured.of_type("AWS::CloudWatch::Alarm").values()

    assert "KmsMasterKeyId" in topic
    assert subscription["Properties"]["Protocol"] == "email"
    assert subscription["Properties"]["Endpoint"] == "ops@example.com"
    assert all(alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}] for alarm in alarms)


def test_tracing_turns_on_xray_for_the_stage_and_every_function_and_lets_them_write_traces(
    configured: Synthesized,
) -> None:
    (stage,) = configured.of_type("AWS::ApiGateway::Stage").values()
    functions = configured.of_type("AWS::Lambda::Function")
    ours = {key: value for key, value in functions.items() if "POWERTOOLS_SERVICE_NAME" in str(value)}
    policies = [policy["Properties"]["PolicyDocument"] for policy in configured.of_type("AWS::IAM::Policy").values()]
    xray = {"Action": ["xray:PutTelemetryRecords", "xray:PutTraceSegments"], "Effect": "Allow", "Resource": "*"}

    assert stage["Properties"]["TracingEnabled"] is True
    assert len(ours) >= 5
    for function in ours.values():
        properties = function["Properties"]
        assert properties["TracingConfig"] == {"Mode": "Active"}
        assert "POWERTOOLS_TRACE_DISABLED" not in properties["Environment"]["Variables"]
        assert properties["Environment"]["Variables"]["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"
        (role_id,) = [properties["Role"]["Fn::GetAtt"][0]]
        (policy,) = [
            policy["Properties"]["PolicyDocument"]
            for policy in configured.of_type("AWS::IAM::Policy").values()
            if {"Ref": role_id} in policy["Properties"]["Roles"]
        ]
        assert xray in policy["Statement"]
    assert any(xray in policy["Statement"] for policy in policies)


def test_log_retention_and_throttling_follow_the_props(configured: Synthesized) -> None:
    retentions = {
        group["Properties"]["RetentionInDays"] for group in configured.of_type("AWS::Logs::LogGroup").values()
    }
    (stage,) = configured.of_type("AWS::ApiGateway::Stage").values()
    assert retentions == {7}
    assert stage["Properties"]["MethodSettings"][0]["ThrottlingRateLimit"] == 50


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("sweeper_interval_minutes", 0),
        ("sweeper_interval_minutes", 1_441),
        ("log_level", "LOUD"),
        ("table_name", "ab"),
        ("table_name", "queue table"),
        ("table_name", "t" * 256),
        ("memory_size_mb", 127),
        ("memory_size_mb", 10_241),
        ("architecture", "aarch64"),
        ("service_name", ""),
        ("metrics_namespace", "AWS/DynamoQueue"),
        ("metrics_namespace", 'Dynamo"Queue'),
        ("metrics_namespace", "   "),
        ("sweeper_reserved_concurrency", -1),
        ("sweeper_reserved_concurrency", 2),
        ("api_stage_name", "v 1"),
        ("api_stage_name", "s" * 129),
        ("api_throttle_rate_limit", 0),
        ("api_throttle_rate_limit", 10_001),
        ("api_throttle_burst_limit", 5_001),
        ("oldest_message_age_alarm_seconds", 0),
        ("dlq_depth_alarm_threshold", -1),
        ("alarm_period_minutes", 1_441),
        ("alarm_email", "ops"),
        ("removal_policy", cdk.RemovalPolicy.SNAPSHOT),
    ],
)
def test_props_that_could_not_deploy_are_refused_before_synth(setting: str, value: object) -> None:
    with pytest.raises(ValueError, match=setting):
        DynamoQueueProps(**{setting: value})


def test_a_destroyable_table_must_not_be_deletion_protected() -> None:
    with pytest.raises(ValueError, match="deletion_protection=false"):
        DynamoQueueProps(removal_policy=cdk.RemovalPolicy.DESTROY)


def test_optional_resources_pass_cdk_nag_too(configured: Synthesized) -> None:
    (report,) = configured.validation_report()["pluginReports"]
    assert report["violations"] == []
    tracing_roles = {
        finding["acknowledgedAt"]
        for finding in report["suppressedViolations"]
        if finding["ruleName"] == "AwsSolutions-IAM5[Resource::*]"
    }
    assert {"DynamoQueue/Queue/ProducerRole", "DynamoQueue/Queue/PollerRole"} <= tracing_roles


def _only_properties(synthesized: Synthesized, kind: str) -> dict[str, Any]:
    (resource,) = synthesized.of_type(kind).values()
    return resource["Properties"]


def test_the_table_and_the_bucket_are_encrypted_with_the_customer_key(configured: Synthesized) -> None:
    sse = _only_properties(configured, "AWS::DynamoDB::Table")["SSESpecification"]
    assert sse == {"KMSMasterKeyId": CUSTOMER_KEY, "SSEEnabled": True, "SSEType": "KMS"}
    (rule,) = _only_properties(configured, "AWS::S3::Bucket")["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {"KMSMasterKeyID": CUSTOMER_KEY, "SSEAlgorithm": "aws:kms"}


def test_every_function_may_use_the_key_and_the_sqs_function_knows_it(configured: Synthesized) -> None:
    functions = configured.of_type("AWS::Lambda::Function").values()
    told = [f["Properties"]["Environment"]["Variables"].get("DQ_KMS_KEY_ARN") for f in functions]
    assert told and set(told) == {CUSTOMER_KEY}
    granted = [
        statement
        for policy in configured.of_type("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement.get("Resource") == CUSTOMER_KEY
    ]
    assert len(granted) == len(told)
    assert all(
        set(statement["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey"} for statement in granted
    )


def test_a_key_that_is_not_a_kms_key_arn_is_refused_before_synth(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="encryption_key_arn"):
        synthesize(tmp_path, **{"dynamo-queue:encryption_key_arn": "alias/my-key"})
