"""Fixtures of the core's large-body tests: a moto S3 bucket and a client that offloads to it."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from queue_core import QueueClient

from tests.conftest import TABLE, FakeClock

BUCKET = "queue-bodies"
OFFLOAD = 8 * 1024


@pytest.fixture
def s3(dynamodb: object) -> Any:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    return s3


@pytest.fixture
def large(dynamodb: object, s3: Any, clock: FakeClock) -> QueueClient:
    client = QueueClient(TABLE, dynamodb=dynamodb, clock=clock, s3=s3, bucket=BUCKET, offload_bytes=OFFLOAD)
    client.create_table()
    return client
