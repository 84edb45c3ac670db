"""Shared fixtures: moto with serialized request handling, a fake clock, a ready table."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator

import boto3
import botocore.session
import pytest
from botocore.loaders import create_loader
from moto import mock_aws
from queue_core import QueueClient

from tests.dynamo_calls import CallCounter

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.pop("AWS_ENDPOINT_URL_DYNAMODB", None)

TABLE = "queue-test"


@functools.cache
def _one_loader(search_path_string: str | None = None) -> object:
    """botocore's data loader, one per search path for the whole test process. Each botocore session makes its own
    and reads the service models and the endpoint rules again (JSON of megabytes); moto starts a new default session
    for every test, and the core makes sessions of its own: half of an ordinary core test's time went there. A
    session caches its models for all its clients already, so sharing them between sessions changes nothing else."""
    return create_loader(search_path_string)


botocore.session.create_loader = _one_loader


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options live here, the root of the tests, so that `pytest --stress` works from any starting path."""
    parser.addoption(
        "--stress",
        action="store_true",
        default=False,
        help="run the reliability stress tests at full size (thousands of messages) instead of the short form",
    )
    parser.addoption(
        "--prop-sweep",
        action="store_true",
        default=False,
        help="check the deploy-time rules on every deployment setting at each of its extremes alone (a synth each, "
        "about two minutes), besides the defaults and all extremes at once",
    )


# Whether this run is `--stress`, set before any test module is imported (pytest configures, then collects), so
# that a module's Hypothesis settings can size themselves with `examples`.
_STRESS = [False]


def pytest_configure(config: pytest.Config) -> None:
    _STRESS[0] = bool(config.getoption("--stress"))


def stress_run() -> bool:
    """Whether this run is `--stress` (for sizes chosen at import time)."""
    return _STRESS[0]


def examples(full: int) -> int:
    """A property test's number of examples: `full` under `--stress`, a quarter of it (at least 10) in `make
    test`, whose ten minutes the generated tests would otherwise fill."""
    return full if _STRESS[0] else min(full, max(10, full // 4))


# The longest files first, so that `make test`'s two workers (each taking whole files, in this order: the Makefile
# turns off xdist's own ordering by test count) run them side by side at the start instead of one after the other
# at the end, where they were the suite's tail.
SLOWEST_FILES = (
    "tests/reliability/test_stress.py",
    "tests/reliability/test_stress_faults.py",
    "tests/reliability/test_model.py",
    "tests/reliability/test_fleet.py",
    "tests/reliability/test_hostile_http.py",
    "tests/readme/test_readme.py",
    "tests/core/test_fifo_queue.py",
    "tests/cli/test_batch_send.py",
    "tests/core/test_standard_queue.py",
    "tests/console/test_browser.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: position for position, path in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


class FakeClock:
    """Epoch seconds that move only when a test says so."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def instant_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's pause between retries of a throttled call made instant, for tests that throttle every call
    and count the throttles, not the time (a batch send's eight tries wait about a second of real time)."""
    import queue_core.store

    monkeypatch.setattr(queue_core.store, "_backoff", lambda _attempt: None)


@pytest.fixture
def dynamodb() -> Iterator[object]:
    from dq.embedded_dynamodb import (
        fast_queries,
        fast_serialization,
        fast_transactions,
        idempotent_transactions,
        serialize_moto_requests,
        untracked_items,
    )

    serialize_moto_requests()
    fast_queries()
    fast_transactions()
    idempotent_transactions()
    untracked_items()
    fast_serialization()
    with mock_aws():
        yield boto3.client("dynamodb", region_name="us-east-1")


@pytest.fixture
def client(dynamodb: object, clock: FakeClock) -> QueueClient:
    queue_client = QueueClient(TABLE, dynamodb=dynamodb, clock=clock)
    queue_client.create_table()
    return queue_client


@pytest.fixture
def counter(dynamodb: object) -> Iterator[CallCounter]:
    counting = CallCounter().attach(dynamodb)
    yield counting
    counting.detach(dynamodb)
