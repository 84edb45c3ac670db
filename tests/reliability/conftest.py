"""Fixtures of the reliability tests: the table's own account of what happened, and the run's size."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from queue_core import QueueClient

from tests.reliability.stress import FULL, SHORT, Scale
from tests.reliability.truth import DeleteTap, TableTruth, TransactionDeleteTap


@pytest.fixture
def truth(client: QueueClient) -> Iterator[TableTruth]:
    """Raw reads and every effective delete, from inside the embedded DynamoDB (created with the table): alone,
    and in a transaction that moves no message (an ack with the archive's copy, an ack with the caller's writes)."""
    with DeleteTap(TableTruth(client.table_name)) as recorded, TransactionDeleteTap(recorded):
        yield recorded


@pytest.fixture
def scale(request: pytest.FixtureRequest) -> Scale:
    return FULL if request.config.getoption("--stress") else SHORT
