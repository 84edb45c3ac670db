"""The deployed shape under the ledger: a fleet of containers of each function, each with its own client, caches,
load meter, attempt records and clock, created cold, frozen for minutes, thawed and killed in the middle of calls,
against a DynamoDB that throttles, lags in its index and loses answers; every handle ever issued sent again.

One run (`fleet.FleetRun`) serves every test of this file: each test is one invariant. The short form runs in
`make test`; `pytest tests/reliability/test_fleet.py --stress` runs the long form.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from queue_core import QueueClient

from tests.conftest import TABLE, FakeClock
from tests.reliability.faults import FaultInjector, Kind
from tests.reliability.fleet import FULL, SHORT, FleetRun, _changed, b64_group
from tests.reliability.truth import DeleteTap, TableTruth, TransactionDeleteTap

logger = logging.getLogger("tests.reliability")

# A run ends when its work is done, or fails after `STALL_SECONDS` without progress; this is the last resort (the
# long form runs for an hour or more on a loaded machine).
pytestmark = pytest.mark.timeout(10800)


@pytest.fixture(scope="module")
def fleet(request: pytest.FixtureRequest) -> Iterator[FleetRun]:
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
    scale = FULL if request.config.getoption("--stress") else SHORT
    with mock_aws():
        clock = FakeClock()
        admin = QueueClient(TABLE, dynamodb=boto3.client("dynamodb", region_name="us-east-1"), clock=clock)
        admin.create_table()
        with DeleteTap(TableTruth(TABLE)) as truth, TransactionDeleteTap(truth):
            faults = FaultInjector(before_rate=0.02, after_rate=0.03, retried_rate=0.02, seed=29)
            run = FleetRun(admin, clock, truth, scale, faults=faults)
            run.create_queues()
            run.run()
            run.verify()
            logger.info("fleet: %s", run.report())
            yield run


def _held(run: FleetRun, invariant: str) -> None:
    found = run.problems.get(invariant, [])
    assert not found, f"{len(found)} problems:\n" + "\n".join(found[:20])


def test_the_fleet_runs_in_its_deployed_shape(fleet: FleetRun) -> None:
    figures = fleet.figures
    _held(fleet, "fleet")
    assert figures["cold starts"] >= fleet.scale.processes
    assert figures["thawed after minutes"], "containers frozen for minutes with their caches came back"
    assert sum(fleet.kills.values()), "containers were killed in the middle of calls"
    assert fleet.issued and any(name.startswith("replayed ") for name in figures), "handles were sent again"
    assert figures["audits"] == fleet.scale.audits
    assert fleet.throttler.stats.throttled, "DynamoDB throttled"
    assert fleet.fault_counts()[Kind.ANSWER_LOST], "calls failed and lost their answers"


def test_no_message_has_two_holders_at_once(fleet: FleetRun) -> None:
    _held(fleet, "two holders")


def test_fifo_groups_keep_their_order(fleet: FleetRun) -> None:
    _held(fleet, "FIFO order")


def test_nothing_is_lost_nor_stored_twice(fleet: FleetRun) -> None:
    _held(fleet, "nothing lost")
    _held(fleet, "bodies")


def test_nothing_is_in_flight_that_no_consumer_holds(fleet: FleetRun) -> None:
    _held(fleet, "nothing stranded")


def test_a_stale_handle_changes_nothing(fleet: FleetRun) -> None:
    _held(fleet, "stale handles")


def test_a_receive_repeated_with_its_attempt_id_answers_what_it_kept(fleet: FleetRun) -> None:
    _held(fleet, "attempts")


def test_no_message_is_left_stuck_by_a_passing_fault(fleet: FleetRun) -> None:
    _held(fleet, "stuck")


def test_no_key_is_left_throttling_without_growth_or_a_stated_reason(fleet: FleetRun) -> None:
    _held(fleet, "growth")


def _item(pk: str, sk: str, **attributes: Any) -> str:
    def typed(value: Any) -> dict[str, Any]:
        return {"SS": sorted(value)} if isinstance(value, set) else {"S": value}

    return json.dumps({"Attributes": {"pk": {"S": pk}, "sk": {"S": sk}} | {k: typed(v) for k, v in attributes.items()}})


def test_a_dlq_group_claim_giving_back_only_copies_gone_from_the_dlq_is_no_change() -> None:
    """A delete by the handle of a FIFO dead letter a move task took gives its copy back to the claim: bookkeeping
    of a copy that is gone (a claim whose copies are gone holds nothing). Giving back a copy still there is a
    change."""
    group_pk, copies_pk = "F#q.fifo#a#g1#dlq", "D#q.fifo#a#g1#0"
    copy = _item(copies_pk, f"{b64_group('g')}.0002", body="x")
    before = frozenset({_item(group_pk, "g", tok="t", held_copies={"0001", "0002"}), copy})
    gone = frozenset({_item(group_pk, "g", tok="t", held_copies={"0002"}), copy})
    assert _changed(before, gone) == []
    still_there = frozenset({_item(group_pk, "g", tok="t", held_copies={"0001"}), copy})
    assert _changed(before, still_there) == [f"{group_pk} g: held_copies"]
    retaken = frozenset({_item(group_pk, "g", tok="u", held_copies={"0002"}), copy})
    assert _changed(before, retaken) == [f"{group_pk} g: held_copies, tok"]
