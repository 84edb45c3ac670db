"""Exactly-once effects under stress: transactional sends and acks with redeliveries, crashes and DynamoDB failing.

The short form runs in `make test`; `pytest tests/reliability/test_exactly_once.py --stress` runs the full size.
"""

from __future__ import annotations

import logging
import random
import time

import pytest
from queue_core import QueueClient

from tests.conftest import FakeClock
from tests.reliability.exactly_once import FULL, SHORT, ExactlyOnceRun, Scale
from tests.reliability.faults import FaultInjector, Kind

logger = logging.getLogger("tests.reliability")

pytestmark = pytest.mark.timeout(FULL.deadline_seconds + 300)


@pytest.fixture
def once_scale(request: pytest.FixtureRequest) -> Scale:
    return FULL if request.config.getoption("--stress") else SHORT


def test_every_effect_is_applied_exactly_once_despite_redeliveries_crashes_and_faults(
    client: QueueClient, clock: FakeClock, once_scale: Scale
) -> None:
    pause = random.Random(5)
    faults = FaultInjector(
        before_rate=0.04,
        after_rate=0.02,
        retried_rate=0.04,
        rates={"TransactWriteItems": 0.06},
        meanwhile=lambda: time.sleep(pause.uniform(0, 0.01)),
        seed=17,
    )
    run = ExactlyOnceRun(client, clock, once_scale)
    run.create()
    faults.attach(client.dynamodb)
    try:
        run.run()
    finally:
        faults.detach()
    run.figures.faults.update({str(kind): count for kind, count in faults.counts.items()})
    problems = run.verify()
    report = run.figures.report(once_scale)
    logger.info("exactly-once stress (%.1f s): %s", run.elapsed, report)
    print(f"\nexactly-once stress ({run.elapsed:.1f} s): {report}")
    assert not problems, "\n".join(problems[:20])
    assert run.figures.redeliveries and run.figures.stale_acks, "claims ran out and stale acks were refused"
    assert faults.counts[Kind.ANSWER_LOST_RETRIED], "commits applied and repeated by the SDK were injected"
