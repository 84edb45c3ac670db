"""Nothing lost, nothing doubled, nobody sharing a message, no FIFO group out of order: with consumers that crash,
give back, extend, race and stall, with both queues resharded and two others deleted and created again as they
run, and with DynamoDB failing underneath; then the main queues' archives replayed, each archived copy once.

The short form runs in `make test`; `pytest tests/reliability --stress` runs five thousand messages (and 500 to
each sub-queue of the other paths). The run with DynamoDB failing underneath is in `test_stress_faults.py` (a file
of its own, so that the two runs go to different test workers).
"""

from __future__ import annotations

import logging

import pytest
from queue_core import QueueClient

from tests.conftest import FakeClock
from tests.reliability.replay_phase import replay_archives, replay_dead_letters
from tests.reliability.stress import (
    MAIN_QUEUES,
    Scale,
    StressRun,
    assert_queue_wide_consumers_served_every_client,
)
from tests.reliability.truth import TableTruth

logger = logging.getLogger("tests.reliability")

# A run ends when its work is done, or fails after `STALL_SECONDS` without progress; this timeout is only the last
# resort against a hang the run cannot see (the full size runs for many minutes, past the suite's default). The
# short form took 38 and over 60 minutes under `make stress-loop` on two cores that other work loaded thirtyfold,
# progressing all the while: an hour stopped it there.
pytestmark = pytest.mark.timeout(10800)


def test_crashing_consumers_lose_nothing_and_never_share_a_message(
    client: QueueClient, clock: FakeClock, truth: TableTruth, scale: Scale
) -> None:
    run = StressRun(client, clock, truth, scale)
    run.create_queues()
    run.run()
    problems = run.verify()
    logger.info("stress with crashes: %s", run.report())
    assert not problems, "\n".join(problems[:20])
    problems, figures = replay_archives(client, MAIN_QUEUES, run.sub_queues, truth, clock, None)
    logger.info("replays of the archives: %s", dict(figures))
    assert not problems, "\n".join(problems[:20])
    assert figures["replayed"] > 0
    problems, figures = replay_dead_letters(client, MAIN_QUEUES, run.sub_queues, truth, clock, None)
    logger.info("replays of the DLQs: %s", dict(figures))
    assert not problems, "\n".join(problems[:20])
    assert figures["dead letters replayed"] > 0
    assert run.figures.crashes and run.figures.releases and run.figures.extensions and run.figures.delete_races
    assert_queue_wide_consumers_served_every_client(run)
    assert run.figures.checkpoints == scale.checkpoints
    assert run.figures.reshards == 2 * scale.reshards and run.figures.recreations == scale.recreations
    assert run.figures.counts["automatic reshards"] >= scale.reshards, "half by the queues themselves, and churn"
