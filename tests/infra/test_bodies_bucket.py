"""The bucket of offloaded bodies: private, encrypted, TLS only, unversioned, emptied by its lifecycle rule; each
function may do to it exactly what its code does."""

from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Match
from queue_core import limits

from infra.bodies_bucket import BODY_EXPIRY_DAYS
from infra.permissions import BUCKET_ACTIONS, BUCKET_LISTERS
from tests.infra.synth import Synthesized


def test_the_bucket_is_private_encrypted_unversioned_and_expires_bodies_after_the_longest_life(
    synthesized: Synthesized,
) -> None:
    (bucket,) = synthesized.of_type("AWS::S3::Bucket").values()
    properties = bucket["Properties"]
    assert properties["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    (encryption,) = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert "VersioningConfiguration" not in properties
    (rule,) = properties["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled" and rule["ExpirationInDays"] == BODY_EXPIRY_DAYS
    # A message lives its retention in the queue, then again in the DLQ; a day more for the sweep.
    assert BODY_EXPIRY_DAYS * 86_400 >= 2 * limits.MAX_RETENTION_SECONDS + 86_400
    assert bucket["DeletionPolicy"] == "Retain"


def test_the_bucket_refuses_every_request_without_tls(synthesized: Synthesized) -> None:
    (policy,) = synthesized.of_type("AWS::S3::BucketPolicy").values()
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Deny" and statement["Action"] == "s3:*"
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def _bucket_statements(synthesized: Synthesized, function: str) -> list[dict[str, Any]]:
    queue = synthesized.stack.queue
    role_id = synthesized.logical_id(queue.functions[function].role)
    statements = [
        statement
        for policy in synthesized.of_type("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    return [statement for statement in statements if "s3:" in str(statement["Action"])]


def test_each_function_knows_the_bucket_and_may_do_only_what_its_code_does(synthesized: Synthesized) -> None:
    queue = synthesized.stack.queue
    bucket_id = synthesized.logical_id(queue.bodies_bucket)
    for function in queue.functions:
        actions = BUCKET_ACTIONS[function]
        resource = synthesized.resource(queue.functions[function])
        assert resource["Properties"]["Environment"]["Variables"]["QUEUE_BUCKET"] == {"Ref": bucket_id}
        granted = {
            (action, str(statement["Resource"]))
            for statement in _bucket_statements(synthesized, function)
            for action in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
        }
        objects = {(action, resource) for action, resource in granted if action != "s3:ListBucket"}
        assert {action for action, _ in objects} == set(actions)
        assert all("/*" in resource for _, resource in objects)
        assert (("s3:ListBucket", str({"Fn::GetAtt": [bucket_id, "Arn"]})) in granted) == (function in BUCKET_LISTERS)


def test_the_stack_names_its_bucket(synthesized: Synthesized) -> None:
    outputs = synthesized.template_json["Outputs"]
    assert outputs["BodiesBucket"]["Value"] == {"Ref": synthesized.logical_id(synthesized.stack.queue.bodies_bucket)}
    synthesized.template.has_resource_properties("AWS::S3::Bucket", {"LifecycleConfiguration": Match.any_value()})
