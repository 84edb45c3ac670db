"""The stress runs' last phase: the main queues' archives replayed into them while DynamoDB fails underneath.

After a run, one client of each main queue (standard and FIFO) replays its whole archive (every acknowledgement
the run made) with the run's faults on: throttles and timeouts stop a run of the replay, lost answers leave a
commit's outcome unknown, writes applied and repeated by the SDK come back as failed conditions. Each stop is a
crash of the replay's runner: a new run goes on from where the job stands. The table then holds, for each archived
copy, exactly one new message whose `replayed_from` names it (never two: at most once per replay; never none: the
job goes on until done), and the job's count says as much.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from queue_core import QueueError, SubQueue

from tests.conftest import FakeClock
from tests.reliability.faults import FaultInjector
from tests.reliability.truth import TableTruth

ARCHIVED = "V"
CLIENT = "a"
# Runs of a replay (each one batch) before the phase gives up: far more than its batches and its faults need.
MAX_RUNS = 5_000


def replay_archives(
    queues: tuple[str, ...],
    sub_queues: dict[tuple[str, str], Any],
    truth: TableTruth,
    clock: FakeClock,
    faults: FaultInjector | None,
) -> tuple[list[str], Counter]:
    """Replays each queue's archive of `CLIENT` to its end under `faults`; the problems found and the figures."""
    problems: list[str] = []
    figures: Counter = Counter()
    started = time.monotonic()
    for queue in queues:
        sub_queue: SubQueue = sub_queues[(queue, CLIENT)]
        archived = _archived_copies(truth, queue)
        until = int(clock() * 1000)
        replay_id = sub_queue.replay_start(until=until, rate=1000).replay_id
        if faults is not None:
            faults.enabled = True
        try:
            status, stops = _run_to_end(sub_queue, replay_id, clock)
        finally:
            if faults is not None:
                faults.enabled = False
        figures["replayed"] += status.replayed
        figures["replay stops"] += stops
        origins = Counter(
            json.loads(item["attrs"]["replayed_from"])["message_id"]
            for item in truth.live_messages(queue, CLIENT)
            if "replayed_from" in item.get("attrs", {})
        )
        problems += [
            f"{queue}/{CLIENT}: {message_id} archived {archived[message_id]} times, replayed {origins[message_id]}"
            for message_id in set(archived) | set(origins)
            if archived[message_id] != origins[message_id]
        ]
        if (status.state, status.replayed) != ("done", sum(archived.values())):
            problems.append(
                f"{queue}/{CLIENT}: the replay ended {status.state} with {status.replayed} replayed, "
                f"{status.skipped} skipped, {status.failed} failed ({status.last_error})"
            )
    figures["replay ms"] = int((time.monotonic() - started) * 1000)
    return problems, figures


def _archived_copies(truth: TableTruth, queue: str) -> Counter:
    """Each archived copy's message id (a message acknowledged twice has two), the replay jobs left out."""
    items = truth.by_sub_queue([ARCHIVED]).get((queue, CLIENT), [])
    return Counter(str(item["message_id"]) for item in items if "acked_at" in item)


def _run_to_end(sub_queue: SubQueue, replay_id: str, clock: FakeClock) -> tuple[Any, int]:
    """Runs the replay a batch at a time; each error stops that run, and a new one resumes it."""
    stops = 0
    for _ in range(MAX_RUNS):
        try:
            status = sub_queue.replay_run(replay_id, seconds=0, sleep=clock.advance)
        except QueueError:
            stops += 1
            continue
        if status.state != "running":
            return status, stops
    raise AssertionError(f"the replay {replay_id} did not end in {MAX_RUNS} runs")
