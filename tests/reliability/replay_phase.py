"""The stress runs' last phase: the main queues' archives replayed into them while DynamoDB fails underneath.

After a run, one client of each main queue (standard and FIFO) replays its whole archive (every acknowledgement
the run made) with the run's faults on: throttles and timeouts stop a run of the replay, lost answers leave a
commit's outcome unknown, writes applied and repeated by the SDK come back as failed conditions. Each stop is a
crash of the replay's runner: a new run goes on from where the job stands, or (the first stop) nobody comes back
and the sweep finds the replay orphaned once its job has not moved for a while and runs it on, faults and all, as
the scheduled sweeper does in a deployed stack. The table then holds, for each archived
copy, exactly one new message whose `replayed_from` names it (never two: at most once per replay; never none: the
job goes on until done), and the job's count says as much.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from typing import Any

from queue_core import QueueClient, QueueError, SubQueue, replays
from queue_core.keys import MessageRef, shard_of

from tests.conftest import FakeClock
from tests.reliability.faults import FaultInjector
from tests.reliability.truth import FIFO_MESSAGES, STANDARD_MESSAGES, TableTruth

ARCHIVED = "V"
CLIENT = "a"
# Runs of a replay before the phase gives up: far more than its faults need. A run goes on until its end or a fault
# stops it (this many seconds of the run's clock, which moves with the calls, is more than any replay here needs).
MAX_RUNS = 5_000
RUN_SECONDS = 3600
# Sweeps that may pass after a stop before one runs the replay on.
SWEEPS_A_STOP = 10


def replay_archives(
    client: QueueClient,
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
    archived = _archived_copies(truth)
    ended = {}
    for queue in queues:
        ended[queue], _ = _replay(client, sub_queues[(queue, CLIENT)], clock, figures, faults, "replay")
        figures["replayed"] += ended[queue].replayed
    replayed = _replayed_origins(truth)
    for queue in queues:
        copies, origins, status = archived[queue], replayed[queue], ended[queue]
        problems += [
            f"{queue}/{CLIENT}: {message_id} archived {copies[message_id]} times, replayed {origins[message_id]}"
            for message_id in set(copies) | set(origins)
            if copies[message_id] != origins[message_id]
        ]
        if (status.state, status.replayed) != ("done", sum(copies.values())):
            problems.append(
                f"{queue}/{CLIENT}: the replay ended {status.state} with {status.replayed} replayed, "
                f"{status.skipped} skipped, {status.failed} failed ({status.last_error})"
            )
    figures["replay ms"] = int((time.monotonic() - started) * 1000)
    return problems, figures


def replay_dead_letters(
    client: QueueClient,
    queues: tuple[str, ...],
    sub_queues: dict[tuple[str, str], Any],
    truth: TableTruth,
    clock: FakeClock,
    faults: FaultInjector | None,
) -> tuple[list[str], Counter]:
    """Replays each queue's dead letters of `CLIENT` (the run's poison messages) to the end under `faults`, as the
    archives are: each dead letter there at the start becomes exactly one new message naming it and leaves the DLQ,
    and the job counts them all."""
    problems: list[str] = []
    figures: Counter = Counter()
    for queue in queues:
        sub_queue: SubQueue = sub_queues[(queue, CLIENT)]
        fifo = sub_queue.settings.fifo
        dead = Counter(_dead_letter_id(item, fifo) for item in truth.dlq_items(queue, CLIENT))
        status, replay_id = _replay(client, sub_queue, clock, figures, faults, "dead letter replay", source="dlq")
        figures["dead letters replayed"] += status.replayed
        origins = _replayed_origins(truth, replay_id)[queue]
        left = {_dead_letter_id(item, fifo) for item in truth.dlq_items(queue, CLIENT)}
        problems += [
            f"{queue}/{CLIENT}: dead letter {message_id} was in the DLQ {dead[message_id]} times, replayed "
            f"{origins[message_id]}" + (", and is still there" if message_id in left else "")
            for message_id in set(dead) | set(origins)
            if dead[message_id] != origins[message_id] or message_id in left
        ]
        if (status.state, status.replayed) != ("done", sum(dead.values())):
            problems.append(
                f"{queue}/{CLIENT}: the DLQ replay ended {status.state} with {status.replayed} replayed of "
                f"{sum(dead.values())} dead letters ({status.last_error})"
            )
    return problems, figures


def _replay(
    client: QueueClient,
    sub_queue: SubQueue,
    clock: FakeClock,
    figures: Counter,
    faults: FaultInjector | None,
    label: str,
    **selection: Any,
) -> tuple[Any, str]:
    """A replay of everything up to now, at the top rate, run to its end under `faults`: its last status and id;
    its stops and the sweeps' runs of it counted in `figures`."""
    replay_id = sub_queue.replay_start(until=int(clock() * 1000), rate=1000, **selection).replay_id
    if faults is not None:
        faults.enabled = True
    try:
        status, stops, swept = _run_to_end(client, sub_queue, replay_id, clock, figures, faults)
    finally:
        if faults is not None:
            faults.enabled = False
    figures[f"{label} stops"] += stops
    figures["replays run on by a sweep"] += swept
    return status, replay_id


def _dead_letter_id(item: dict[str, Any], fifo: bool) -> str:
    ref = MessageRef.from_dlq_sk(item["sk"], shard_of(str(item["pk"])), fifo, int(item.get("priority", 0)))
    return ref.message_id


def _archived_copies(truth: TableTruth) -> defaultdict[str, Counter]:
    """Each archived copy's message id (a message acknowledged twice has two) by queue, the replay jobs left out:
    one scan."""
    copies: defaultdict[str, Counter] = defaultdict(Counter)
    for (queue, client), items in truth.by_sub_queue([ARCHIVED]).items():
        if client == CLIENT:
            copies[queue].update(str(item["message_id"]) for item in items if "acked_at" in item)
    return copies


def _replayed_origins(truth: TableTruth, replay_id: str | None = None) -> defaultdict[str, Counter]:
    """The id each new message of a replay (of `replay_id` alone, if given) names, by queue: one scan."""
    origins: defaultdict[str, Counter] = defaultdict(Counter)
    for (queue, client), items in truth.by_sub_queue([STANDARD_MESSAGES, FIFO_MESSAGES]).items():
        if client == CLIENT:
            named = [
                json.loads(item["attrs"]["replayed_from"]) for item in items if "replayed_from" in item.get("attrs", {})
            ]
            origins[queue].update(
                origin["message_id"] for origin in named if replay_id is None or origin["replay_id"] == replay_id
            )
    return origins


def _run_to_end(
    client: QueueClient,
    sub_queue: SubQueue,
    replay_id: str,
    clock: FakeClock,
    figures: Counter,
    faults: FaultInjector | None,
) -> tuple[Any, int, int]:
    """Runs the replay; each error stops that run, and a new run resumes it, or (the first stop) a sweep once the
    replay is orphaned. The replay's last status, its stops and the sweeps' runs of it."""
    stops = swept = 0
    by_sweep = sweep_tried = False
    for _ in range(MAX_RUNS):
        try:
            if by_sweep:
                # Passes until one runs the replay on (a pass under these faults often fails the very step of
                # its sub-queue): as the sweeper's schedule does, a minute apart.
                # A pass that ran it on moved its job, even when a fault stopped that run (the job is read with
                # the faults off).
                # When every such pass failed, one more runs with the faults off: what is checked is that a
                # sweep runs an orphaned replay on, not that a pass gets through these faults in so many tries.
                for attempt in range(SWEEPS_A_STOP + 1):
                    clock.advance(replays.ORPHANED_SECONDS)
                    before = _updated_at(sub_queue, replay_id, faults)
                    calm = attempt == SWEEPS_A_STOP and faults is not None
                    if calm:
                        faults.enabled = False
                    try:
                        report = client.sweep(sleep=clock.advance)
                        figures["replay sweeps failed"] += report.failures
                    except QueueError:  # the listing of queues failed: the whole pass
                        figures["replay sweeps failed"] += 1
                    finally:
                        if calm:
                            faults.enabled = True
                    if _updated_at(sub_queue, replay_id, faults) != before:
                        swept += 1
                        break
                status = sub_queue.replay_status(replay_id)
                by_sweep = False  # stopped short by a throttle, if still running: the next try is a run of our own
            else:
                status = sub_queue.replay_run(replay_id, seconds=RUN_SECONDS, sleep=clock.advance)
        except QueueError:
            stops += 1
            # Each pass sweeps the whole table under the faults: once a replay is enough. A stop whose commit ended
            # the replay (its last batch, applied and its answer lost) leaves nothing for a sweep to run on.
            status = _status(sub_queue, replay_id, faults)
            if status.state != "running":
                return status, stops, swept
            by_sweep = not sweep_tried
            sweep_tried = True
            continue
        if status.state != "running":
            return status, stops, swept
    raise AssertionError(f"the replay {replay_id} did not end in {MAX_RUNS} runs")


def _updated_at(sub_queue: SubQueue, replay_id: str, faults: FaultInjector | None) -> int:
    return _status(sub_queue, replay_id, faults).updated_at


def _status(sub_queue: SubQueue, replay_id: str, faults: FaultInjector | None) -> Any:
    """The replay as it stands, read with the faults off."""
    if faults is not None:
        faults.enabled = False
    try:
        return sub_queue.replay_status(replay_id)
    finally:
        if faults is not None:
            faults.enabled = True
