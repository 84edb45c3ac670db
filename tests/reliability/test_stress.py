"""Nothing lost, nothing doubled, nobody sharing a message, no FIFO group out of order: with consumers that crash,
give back, extend, race and stall, and with DynamoDB failing underneath.

The short form runs in `make test`; `pytest tests/reliability --stress` runs twenty thousand messages.
"""

from __future__ import annotations

import logging

from queue_core import QueueClient

from tests.conftest import FakeClock
from tests.reliability.faults import FaultInjector
from tests.reliability.stress import Scale, StressRun
from tests.reliability.truth import TableTruth

logger = logging.getLogger("tests.reliability")


def test_crashing_consumers_lose_nothing_and_never_share_a_message(
    client: QueueClient, clock: FakeClock, truth: TableTruth, scale: Scale
) -> None:
    run = StressRun(client, clock, truth, scale)
    run.create_queues()
    run.run()
    problems = run.verify()
    logger.info("stress with crashes: %s", run.report())
    assert not problems, "\n".join(problems[:20])
    assert run.figures.crashes and run.figures.releases and run.figures.extensions and run.figures.delete_races
    assert run.figures.checkpoints == scale.checkpoints


def test_throttles_timeouts_and_lost_answers_lose_and_double_nothing(
    client: QueueClient, clock: FakeClock, truth: TableTruth, scale: Scale
) -> None:
    # Batch writes are rarer than the other calls (plain sends only): a higher rate gives them their share.
    faults = FaultInjector(before_rate=0.06, after_rate=0.03, rates={"BatchWriteItem": 0.3}, seed=11)
    run = StressRun(client, clock, truth, scale, faults=faults, seed=13)
    run.create_queues()
    faults.attach(client.dynamodb)
    try:
        run.run()
    finally:
        faults.detach()
    problems = run.verify()
    logger.info("stress with faults: %s", run.report())
    assert not problems, "\n".join(problems[:20])
    assert len(faults.counts) >= 6, f"most kinds of fault were injected: {dict(faults.counts)}"
