"""Nothing lost, nothing doubled, nobody sharing a message, no FIFO group out of order while DynamoDB throttles,
times out and loses answers (some after applying the write, some then repeated by the SDK), with consumers that
crash, give back, extend, race and stall, and queues resharded, deleted and created again as they run; then the
main queues' archives and DLQs replayed under the same faults, each archived copy and dead letter once (`replay_phase`).

The short form runs in `make test`; `pytest tests/reliability --stress` runs five thousand messages
(and 500 to each sub-queue of the other paths).
"""

from __future__ import annotations

import logging
import random
import time

import pytest
from queue_core import QueueClient, QueueSettings, registry

from tests.conftest import FakeClock
from tests.reliability.faults import FaultInjector, Kind
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

# The share of writes built from cached settings, and of changes of settings, held back by their deadline.
HELD_BACK_RATE = 0.1


def _held_back_now_and_then(monkeypatch: pytest.MonkeyPatch) -> None:
    """Some writes built from cached settings (sends, redrives, moves to the DLQ, transactional sends) and some
    changes of settings find their deadline passed (`Store.sent_by`), as after the SDK's retries of a slow call:
    they are held back and built again from settings read afresh, among every other fault."""
    held = random.Random(17)
    send_deadline = QueueSettings.send_deadline

    def sometimes_passed(settings: QueueSettings) -> float | None:
        deadline = send_deadline(settings)
        return time.monotonic() - 1 if deadline is not None and held.random() < HELD_BACK_RATE else deadline

    write_deadline = registry._deadline
    monkeypatch.setattr(QueueSettings, "send_deadline", sometimes_passed)
    monkeypatch.setattr(
        registry, "_deadline", lambda: time.monotonic() - 1 if held.random() < HELD_BACK_RATE else write_deadline()
    )


def test_throttles_timeouts_and_lost_answers_lose_and_double_nothing(
    client: QueueClient, clock: FakeClock, truth: TableTruth, scale: Scale, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Batch writes are rarer than the other calls (plain sends only): a higher rate gives them their share. A write
    # sent again by the SDK goes after a read timeout and a backoff: others work meanwhile.
    pause = random.Random(5)
    faults = FaultInjector(
        before_rate=0.06,
        after_rate=0.03,
        retried_rate=0.03,
        rates={"BatchWriteItem": 0.3},
        meanwhile=lambda: time.sleep(pause.uniform(0, 0.02)),
        seed=11,
    )
    run = StressRun(client, clock, truth, scale, faults=faults, seed=13)
    _held_back_now_and_then(monkeypatch)
    run.create_queues()
    faults.attach(client.dynamodb)
    try:
        run.run()
    finally:
        faults.detach()
    problems = run.verify()
    logger.info("stress with faults: %s", run.report())
    assert not problems, "\n".join(problems[:20])
    faults.attach(client.dynamodb)
    try:
        problems, figures = replay_archives(client, MAIN_QUEUES, run.sub_queues, truth, clock, faults)
        dead_problems, dead_figures = replay_dead_letters(client, MAIN_QUEUES, run.sub_queues, truth, clock, faults)
    finally:
        faults.detach()
    logger.info("replays of the archives with faults: %s, of the DLQs: %s", dict(figures), dict(dead_figures))
    assert not problems + dead_problems, "\n".join((problems + dead_problems)[:20])
    assert dead_figures["dead letters replayed"], "dead letters were replayed under faults"
    assert figures["replayed"] and figures["replay stops"], "replays were stopped by faults and resumed"
    swept = figures["replays run on by a sweep"] + dead_figures["replays run on by a sweep"]
    assert swept, "a replay stopped and left was run on by a sweep"
    assert len(faults.counts) >= 7, f"most kinds of fault were injected: {dict(faults.counts)}"
    assert faults.counts[Kind.ANSWER_LOST_RETRIED], "writes applied twice by the SDK's retry were injected"
    assert run.figures.reshards == 2 * scale.reshards and run.figures.recreations == scale.recreations
    assert_queue_wide_consumers_served_every_client(run)
