"""The bucket of offloaded message bodies: private, encrypted, TLS only, and emptied by a lifecycle rule.

The core writes an object before the item that points at it and removes it with the message, best effort; the
lifecycle rule is the backstop for what a removal missed (a crash between the two, a message expired by
DynamoDB's TTL rather than the sweep). A message item lives at most its queue's retention, then as long again in
the DLQ (a move keeps the first expiry unless retention is longer), so objects expire one day after twice the
longest retention a queue may have. A redrive starts a message's life again: it first copies an object that might
not outlive it onto itself, which restarts the object's age.
"""

from __future__ import annotations

import math
from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from constructs import Construct
from queue_core import limits

from infra.compliance import acknowledge
from infra.props import DynamoQueueProps
from infra.table import customer_key

# Retention in the queue, then in the DLQ, and a day's margin for the sweep and clocks.
BODY_EXPIRY_DAYS: Final = math.ceil(limits.OBJECT_LIFETIME_SECONDS / limits.DAY_SECONDS)


def build_bodies_bucket(scope: Construct, props: DynamoQueueProps) -> s3.Bucket:
    bucket = s3.Bucket(
        scope,
        "Bodies",
        encryption=s3.BucketEncryption.KMS if props.encryption_key_arn else s3.BucketEncryption.S3_MANAGED,
        encryption_key=customer_key(scope, props),
        bucket_key_enabled=True if props.encryption_key_arn else None,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        versioned=False,
        lifecycle_rules=[
            s3.LifecycleRule(
                id="expire-bodies",
                expiration=cdk.Duration.days(BODY_EXPIRY_DAYS),
                abort_incomplete_multipart_upload_after=cdk.Duration.days(1),
            )
        ],
        removal_policy=props.removal_policy,
    )
    acknowledge(
        bucket,
        "AwsSolutions-S1",
        "Only the queue's own functions and granted tenants read and write this bucket, through roles whose "
        "calls CloudTrail records; server access logs would need a second bucket and duplicate that record "
        "for objects that live at most a few weeks",
    )
    return bucket
