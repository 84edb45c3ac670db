"""Prices the cost figures use: on-demand DynamoDB and SQS, us-east-1, as published for 2024 onwards."""

from __future__ import annotations

from typing import Final

WRITE_REQUEST_UNIT: Final = 0.625 / 1_000_000  # dollars per write request unit
READ_REQUEST_UNIT: Final = 0.125 / 1_000_000  # dollars per read request unit
SQS_STANDARD_REQUEST: Final = 0.40 / 1_000_000  # dollars per request (64 KB chunk), beyond the free tier
SQS_FIFO_REQUEST: Final = 0.50 / 1_000_000
SQS_REQUESTS_PER_MESSAGE: Final = 3  # send, receive, delete
SQS_BATCH: Final = 10  # messages per batched request

SOURCE: Final = (
    "on-demand, us-east-1, 2024+: $0.625 per million write request units, $0.125 per million read request "
    "units; SQS $0.40 (standard) and $0.50 (FIFO) per million requests of up to 64 KB, free tier ignored"
)


def dynamodb_dollars_per_million(write_units: float, read_units: float) -> float:
    """Dollars per million messages for the given units per message."""
    return 1_000_000 * (write_units * WRITE_REQUEST_UNIT + read_units * READ_REQUEST_UNIT)
