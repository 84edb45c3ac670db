"""Prices the cost figures use: on-demand and provisioned DynamoDB and SQS, us-east-1, as published for 2024
onwards (Standard table class)."""

from __future__ import annotations

from typing import Final

WRITE_REQUEST_UNIT: Final = 0.625 / 1_000_000  # dollars per write request unit
READ_REQUEST_UNIT: Final = 0.125 / 1_000_000  # dollars per read request unit
WRITE_CAPACITY_UNIT_HOUR: Final = 0.00065  # dollars per provisioned write capacity unit an hour
READ_CAPACITY_UNIT_HOUR: Final = 0.00013  # dollars per provisioned read capacity unit an hour
TARGET_UTILIZATION: Final = 0.70  # the stack's default auto scaling target
DYNAMODB_STORAGE_GB_MONTH: Final = 0.25  # dollars per GB-month, Standard table class
S3_PUT: Final = 0.005 / 1_000  # dollars per PUT (S3 Standard)
S3_GET: Final = 0.0004 / 1_000  # dollars per GET
S3_LIST: Final = 0.005 / 1_000  # dollars per LIST (as a PUT)
S3_DELETE: Final = 0.0  # DELETE and DeleteObjects requests are free
S3_STORAGE_GB_MONTH: Final = 0.023  # dollars per GB-month, first 50 TB
SQS_STANDARD_REQUEST: Final = 0.40 / 1_000_000  # dollars per request (64 KB chunk), beyond the free tier
SQS_FIFO_REQUEST: Final = 0.50 / 1_000_000
SQS_REQUESTS_PER_MESSAGE: Final = 3  # send, receive, delete
SQS_BATCH: Final = 10  # messages per batched request

SOURCE: Final = (
    "on-demand, us-east-1, 2024+: $0.625 per million write request units, $0.125 per million read request "
    "units; SQS $0.40 (standard) and $0.50 (FIFO) per million requests of up to 64 KB, free tier ignored"
)
PROVISIONED_SOURCE: Final = (
    "provisioned, us-east-1, Standard table class: $0.00065 per write capacity unit-hour, $0.00013 per read "
    "capacity unit-hour (the table's and the index's alike), paid for what is provisioned: at a utilization u, "
    "each unit consumed costs 1/u of a unit-second"
)
STORAGE_SOURCE: Final = (
    "on-demand, us-east-1: DynamoDB storage $0.25 per GB-month (Standard table class); S3 Standard $0.005 per "
    "1,000 PUT and LIST, $0.0004 per 1,000 GET, DELETE free, $0.023 per GB-month; free tiers ignored"
)


def dynamodb_dollars_per_million(write_units: float, read_units: float) -> float:
    """Dollars per million messages for the given units per message."""
    return 1_000_000 * (write_units * WRITE_REQUEST_UNIT + read_units * READ_REQUEST_UNIT)


def provisioned_dollars_per_million(write_units: float, read_units: float, utilization: float) -> float:
    """Dollars per million messages for the given units per message on a table whose provisioned units are
    consumed at `utilization` (0.7: auto scaling holding its 70 % target) at a steady load."""
    per_write = WRITE_CAPACITY_UNIT_HOUR / 3_600 / utilization
    per_read = READ_CAPACITY_UNIT_HOUR / 3_600 / utilization
    return 1_000_000 * (write_units * per_write + read_units * per_read)
