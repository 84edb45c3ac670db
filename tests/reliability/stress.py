"""A crash-and-fault stress run: producers and consumers on threads, the fake clock moved by the work they do.

Consumers misbehave on purpose: some crash without deleting (the message must come back when its visibility runs
out), some give messages back, some extend their visibility while they work, some race a second delete of the same
handle, some are too slow and lose their claim. Producers send with dedup ids and retry whatever failed with the
same id, so that a send whose answer was lost never stores a message twice. Half of the consumers are queue-wide
(each sub-queue gives two of its four): they receive from every client of their queue at once, beside the
per-client consumers. The
driver runs the sweep beside the consumers and, at checkpoints, stops everyone and the clock to compare the stats
with the table and the ledger.

An operator works beside them all: it changes the shard count of both queues again and again (up past eight and
back down to one), and it deletes two queues of their own (standard and FIFO, with producers and consumers of
their own) and creates them again under the same name. Halfway through, it upgrades the table in place (`dq
migrate`, `QueueClient.migrate`) after dropping its layout record, as a table of a release before records were
kept has none: the migration puts every sub-queue's ready marker and records the layout while everyone works on.
Each send to the churn queues records the *epoch* it returned in (the epoch moves on when a delete starts, when
the creation after it starts and when that is done), each receive the epoch it started in: a message sent before
a delete must never be delivered by a receive that started after the queue was created again.

Beside the library's own calls, every other path that hands a message to someone has queues of its own, watched by
the same ledger (`paths`): push dispatchers (two on one consumer, with a batching window, batches split for the
payload limit, a consumer function that fails some messages, fails whole batches or times out), the SQS protocol
(boto3's SQS client against the SQS handler in-process: receives, deletes, visibility changes, DLQ reads, deletes
by DLQ handle and redrives by move task), large bodies (compressed, and offloaded to S3) and sends with priorities
and delivery times (a message must never be claimed before its delivery time).

Every delivery is recorded in a `Ledger` (who held what, when, on the fake clock); every delete DynamoDB applied
is recorded by `TableTruth`. The checks at the end compare the two with what the producers sent.

The fake clock moves with the work, not with the wall clock: every DynamoDB call moves it on by
`SECONDS_PER_CALL`. A loaded machine then runs the same run, only slower: a clock moving with wall time outran a
starved run (claims ran out between a receive and its delete, messages went to the DLQ, dedup windows passed
during a send). The run ends when every message is settled; what catches a hang is `STALL_SECONDS` without any
progress at all.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import boto3
from queue_core import (
    QueueClient,
    QueueError,
    QueueExists,
    QueueNotFound,
    QueueWide,
    ReceiptHandleStale,
    ReceivedMessage,
    SubQueue,
    Throttled,
    reasons,
)
from queue_core.layout import CURRENT_LAYOUT, TableLayout

from bench.messages import event_log, random_bytes
from tests.conftest import FakeClock
from tests.reliability.faults import FaultInjector
from tests.reliability.ledger import Hold, Ledger
from tests.reliability.paths import PUSH_QUEUE, SQS_QUEUES, Paths
from tests.reliability.truth import DEAD_LETTERS, FIFO_MESSAGES, STANDARD_MESSAGES, TableTruth, label_of

STANDARD, FIFO = "stress", "stress.fifo"
SUB_QUEUES: tuple[tuple[str, str], ...] = ((STANDARD, "a"), (STANDARD, "b"), (FIFO, "a"), (FIFO, "b"))
MAIN_QUEUES = (STANDARD, FIFO)
# The other delivery paths, each with sub-queues of its own (`paths`), and the path of every sub-queue.
LIBRARY, PUSH, SQS, BODIES, TIMED = "library", "push", "sqs", "bodies", "timed"
PATH_SUB_QUEUES: dict[str, tuple[tuple[str, str], ...]] = {
    PUSH: (("push", "a"),),
    SQS: (("sqs", "a"), ("sqs.fifo", "a")),
    BODIES: (("bodies", "a"), ("bodies.fifo", "a")),
    TIMED: (("timed", "a"),),
}
PATHS = (LIBRARY, *PATH_SUB_QUEUES)
PATH_OF: dict[tuple[str, str], str] = {
    **{key: LIBRARY for key in SUB_QUEUES},
    **{key: path for path, keys in PATH_SUB_QUEUES.items() for key in keys},
}
ALL_SUB_QUEUES: tuple[tuple[str, str], ...] = tuple(PATH_OF)
ALL_QUEUES: tuple[str, ...] = tuple(dict.fromkeys(queue for queue, _ in ALL_SUB_QUEUES))
# Consumers of the pulled paths' sub-queues (the library's own calls), each.
PULL_CONSUMERS = 2
# Large bodies: above `OFFLOAD_BYTES` stored they go to S3; chatty ones are stored compressed.
BUCKET = "stress-bodies"
OFFLOAD_BYTES = 6 * 1024
# Sends with delivery times: `deliver_at` up to this far ahead, or a delay up to it.
LATEST_DELIVERY_SECONDS = 90
VISIBILITY = 30
MAX_RECEIVE_COUNT = 3
# Days the main queues' archives keep a message: longer than any run's fake time, so none expires during it.
ARCHIVE_DAYS = 90
ARCHIVED = "V"
STANDARD_SHARDS = 2
# The shard counts each queue is changed to, in turn: up past eight, and back down to one.
# Readers visit every layout a message may still live under, so the widest one comes late: it costs each later
# receive and stats call.
RESHARDS: dict[str, tuple[int, ...]] = {
    STANDARD: (3, 1, 4, 2, 5, 1, 3, 6, 9, 2, 12, 1, 16, 3),
    FIFO: (2, 4, 1, 3, 5, 2, 1, 6, 9, 2, 12, 1, 16, 3),
}
RESHARD_ATTEMPTS = 40
# The counts the churn queues take by themselves in turn (automatic changes, forced at moments of the run's choice).
CHURN_RESHARDS = (4, 1, 8, 2)
# The queues deleted and created again during the run, with a producer and a consumer each.
CHURN_STANDARD, CHURN_FIFO = "churn", "churn.fifo"
CHURN_QUEUES = (CHURN_STANDARD, CHURN_FIFO)
CHURN_CLIENT = "c"
CHURN_GROUPS = 3
CHURN_SEND_PAUSE_SECONDS = 0.25  # a light load beside the main queues
CHURN_GAP_SECONDS = 0.1  # between a delete and the creation after it: sends meet QueueNotFound meanwhile
GROUPS_PER_SUB_QUEUE = 12
POISON_EVERY = 49  # one message in 49 (in every sub-queue) always fails: it must end in the DLQ, blocking nothing
# The other paths' sub-queues get fewer messages: one in 9 of each always fails, so that each has dead letters (the
# SQS path reads, deletes and redrives its DLQs).
PATH_POISON_EVERY = 9
BACKLOG_CAP = 30  # messages stored and not yet settled, per sub-queue: keeps moto's table (and its scans) small
# Fake seconds per DynamoDB call: about the pace the wall clock gave (50 fake seconds a second) on a quiet machine.
SECONDS_PER_CALL = 0.2
CLOCK_TICK_SECONDS = 0.02  # how often the driver and the operator look (wall time; no clock moves with it)
SWEEP_EVERY_FAKE_SECONDS = 100.0
# Wall seconds a leased pass of the sweep has: under load the churn queues' tombstones take a few before the
# sub-queues, so that passes run out of time and resume (and, between them, still go round within a run).
SWEEP_BUDGET_SECONDS = 8.0
SETTLED_EVERY_SECONDS = 1.0
# A run that makes no progress at all (nothing sent, settled, resharded or recreated) for this long has hung.
STALL_SECONDS = 300.0
# The table's layout record (`queue_core.keys.layout_key`), as the low-level client names it.
RAW_LAYOUT_KEY = {"pk": {"S": "META"}, "sk": {"S": "LAYOUT"}}
IDLE_FIRST_SECONDS = 0.01
IDLE_MAX_SECONDS = 0.25


def _place(cursor: str | None) -> tuple[str, str]:
    """A sweep's cursor as its place in the sweep's order (queue, then client); None: before the first."""
    queue, _, client = (cursor or "").partition("/")
    return queue, client


def _went_past(start: str | None, stop: str | None, mark: str | None) -> bool:
    """Whether a resumed pass, from after `start` round to `stop`, went past `mark` (None: the first queue's
    start): the round of passes that began at `mark` has reached every sub-queue."""
    after, to, at = _place(start), _place(stop), _place(mark)
    return after < at <= to if after < to else (at > after or at <= to)


@dataclass(frozen=True)
class Scale:
    """How big a run is: messages to the two main queues, messages to each sub-queue of the other paths, workers,
    checkpoints (runs without faults only), shard changes per main queue (at most `len(RESHARDS[...])`),
    deletes-and-creations of the churn queues, and redrives by move task of each SQS path's DLQ."""

    messages: int
    path_messages: int = 40
    consumers: int = 16
    producers: int = 4
    checkpoints: int = 2
    reshards: int = 10
    recreations: int = 3
    redrives: int = 2


# The short form keeps every path, every kind of fault and every operator step (each path still meets a poison
# message: `PATH_POISON_EVERY`), at a size that runs side by side with the other stress file within `make test`'s
# budget: half the messages and operator steps of its earlier form, which took 262 and 290 s at a load of 4 (now
# 159 and 183 s at a load of 5).
SHORT = Scale(messages=150, path_messages=10, reshards=5, recreations=2, redrives=1)
# The long form: every operator step of `RESHARDS`, at a size one core runs in well under an hour. moto's index
# queries read every item of the table, and the archives keep one per acknowledgement, so a run's cost grows faster
# than its size: 10,000 messages (and 1,000 to each other path's sub-queue) would take about twice as long again.
FULL = Scale(messages=5_000, path_messages=500, checkpoints=6, reshards=14, recreations=12, redrives=8)


@dataclass(frozen=True)
class Planned:
    """A message a producer must get stored exactly once. `label` names it everywhere (it is the body, or the
    body's start and its `label` attribute when the body is large); `delivery` is how its first visibility is
    given: ("deliver_at" or "delay", seconds from the send) or None."""

    index: int
    queue: str
    client: str
    body: str
    group_id: str | None
    dedup_id: str | None
    poison: bool
    label: str = ""
    priority: int | None = None
    delivery: tuple[str, int] | None = None

    @property
    def path(self) -> str:
        return PATH_OF[(self.queue, self.client)]


@dataclass
class Figures:
    """What happened during a run, for the report and for the checks."""

    sent: int = 0
    send_retries: int = 0
    duplicates_answered: int = 0
    deliveries: int = 0
    crashes: int = 0
    releases: int = 0
    extensions: int = 0
    delete_races: int = 0
    slow_consumers: int = 0
    stale_handles: int = 0
    receive_errors: int = 0
    settle_errors: int = 0
    sweeps: int = 0
    checkpoints: int = 0
    reshards: int = 0
    recreations: int = 0
    migrations: int = 0
    churn_sent: int = 0
    churn_refused: int = 0
    churn_deliveries: int = 0
    counts: Counter = field(default_factory=Counter)

    def add(self, name: str, amount: int = 1) -> None:
        self.counts[name] += amount


def plan(total: int, per_path_sub_queue: int = 0) -> list[Planned]:
    """`total` messages spread over the four main sub-queues, then `per_path_sub_queue` to each sub-queue of the
    other paths, interleaved; FIFO ones over groups; half the standard ones without a dedup id (a batch write,
    whose partial failures must be reported), the rest with one. Large bodies alternate chatty (compressed) and
    random (offloaded); timed messages alternate a delivery time, a delay and none, with priorities 0-9."""
    targets = [SUB_QUEUES[index % len(SUB_QUEUES)] for index in range(total)]
    others = [key for path in PATH_SUB_QUEUES for key in PATH_SUB_QUEUES[path]]
    extra = [others[index % len(others)] for index in range(per_path_sub_queue * len(others))]
    # The other paths' messages spread evenly through the main ones, so that every path works all run long.
    step = max(1, len(targets) // max(1, len(extra)))
    for n, key in enumerate(extra):
        targets.insert(min(len(targets), n * (step + 1)), key)
    seen: Counter = Counter()
    planned = []
    for index, (queue, client) in enumerate(targets):
        position = seen[(queue, client)]
        seen[(queue, client)] += 1
        fifo = queue.endswith(".fifo")
        path = PATH_OF[(queue, client)]
        poison = (
            index % POISON_EVERY == POISON_EVERY - 1
            if path == LIBRARY
            else position % PATH_POISON_EVERY == PATH_POISON_EVERY - 1
        )
        label = f"{queue}/{client}/{index:06d}" + ("/poison" if poison else "")
        group = f"g{position % GROUPS_PER_SUB_QUEUE}" if fifo else None
        dedup = f"d{index}" if fifo or index % 8 < 4 else None
        body, priority, delivery = label, None, None
        if path == BODIES:
            filler = event_log(3 * OFFLOAD_BYTES, seed=index) if position % 2 else random_bytes(OFFLOAD_BYTES, index)
            body = f"{label}|{filler}"
        elif path == PUSH:
            body = f"{label}|{random_bytes(600, index)}"  # a few to an event part (`paths.PUSH_PAYLOAD_BYTES`)
        elif path == TIMED:
            priority = index % 10
            kind = ("deliver_at", "delay", None)[position % 3]
            delivery = None if kind is None else (kind, (index * 37) % LATEST_DELIVERY_SECONDS)
        planned.append(Planned(index, queue, client, body, group, dedup, poison, label, priority, delivery))
    return planned


class Gate:
    """Lets the driver stop every worker at a safe point (between calls) and let them go again."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._paused = False
        self._parked = 0
        self.active = 0
        # The workers (thread names) that entered, and those stopped now: who kept a pause waiting.
        self._entered: Counter = Counter()
        self._stopped: Counter = Counter()

    def enter(self) -> None:
        with self._condition:
            self.active += 1
            self._entered[threading.current_thread().name] += 1

    def leave(self) -> None:
        with self._condition:
            self.active -= 1
            self._entered[threading.current_thread().name] -= 1
            self._condition.notify_all()

    def wait_if_paused(self) -> None:
        with self._condition:
            if not self._paused:
                return
            self._parked += 1
            self._stopped[threading.current_thread().name] += 1
            self._condition.notify_all()
            while self._paused:
                self._condition.wait()
            self._parked -= 1
            self._stopped[threading.current_thread().name] -= 1

    def running(self) -> list[str]:
        """The workers that have not stopped for the pause."""
        with self._condition:
            return sorted((self._entered - self._stopped).elements())

    def pause(self, timeout: float) -> bool:
        with self._condition:
            self._paused = True
            return self._condition.wait_for(lambda: self._parked >= self.active, timeout=timeout)

    @property
    def paused(self) -> bool:
        with self._condition:
            return self._paused

    def resume(self) -> None:
        with self._condition:
            self._paused = False
            self._condition.notify_all()


class StressRun:
    """One run: `create_queues()`, `run()` (returns when every message is settled, or when nothing progressed for
    `STALL_SECONDS`), then `verify()` for the list of every invariant broken, and `report()` for the figures."""

    def __init__(
        self,
        client: QueueClient,
        clock: FakeClock,
        truth: TableTruth,
        scale: Scale,
        faults: FaultInjector | None = None,
        seed: int = 7,
    ) -> None:
        self.client = client
        self.clock = clock
        self.truth = truth
        self.scale = scale
        self.faults = faults
        if faults is not None and faults.label is None:
            faults.label = self.path_of_request  # the faults are counted by the path whose items they fail
        self.seed = seed
        self.ledger = Ledger()
        self.figures = Figures()
        self.planned = plan(scale.messages, scale.path_messages)
        self.by_label = {message.label: message for message in self.planned}
        self.stored: dict[str, str] = {}
        self.stored_by_sub_queue: Counter = Counter()
        self.dead_by_sub_queue: Counter = Counter()
        self.problems: list[str] = []
        # Messages that may rightly be stored twice: a send whose answer was lost may have stored its message,
        # and the caller's own resend stores it again when it has no dedup id (`unconfirmed`), or when its dedup
        # id's window had passed by the resend (`resent_after_window`).
        self.unconfirmed: set[str] = set()
        # The reasons of the releases DynamoDB applied, by message label: (attempt, reason) each.
        self.reasons_given: dict[str, set[tuple[int, str]]] = {}
        # Every release sent, applied or not: one whose answer was lost may have been applied (its reason shown).
        self.reasons_sent: dict[str, set[tuple[int, str]]] = {}
        self.resent_after_window: set[str] = set()
        # The earliest a message may be claimed (its delivery time, or the end of its delay), by label.
        self.visible_from: dict[str, int] = {}
        self.calls = 0
        self._settled_count = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._gate = Gate()
        self._ticking = threading.Event()
        self._path = threading.local()
        self._racers = ThreadPoolExecutor(4, thread_name_prefix="stress-race")
        self.bodies_client = QueueClient(
            client.table_name, dynamodb=client.dynamodb, clock=clock, s3=boto3.client("s3"), bucket=BUCKET,
            offload_bytes=OFFLOAD_BYTES,
        )  # fmt: skip
        self.sub_queues = {
            (queue, name): (self.bodies_client if PATH_OF[(queue, name)] == BODIES else client).queue(queue, name)
            for queue, name in ALL_SUB_QUEUES
        }
        self.elapsed = 0.0
        self.paths = Paths(self, VISIBILITY)
        # The churn queues: the epoch each send returned in, each delivery with the epoch its receive started in.
        self._epoch = 0
        self._churn_bodies = iter(range(10**9))
        self.churn_sent: dict[str, int] = {}
        self.churn_delivered: list[tuple[str, int]] = []
        self._operator_done = threading.Event()

    # Set-up.
    def create_queues(self) -> None:
        # The main queues keep an archive: every acknowledgement archived exactly once (`_verify_archive`).
        self.client.create_queue(STANDARD, shards=STANDARD_SHARDS, archive_days=ARCHIVE_DAYS, **_COMMON)
        self.client.create_queue(FIFO, archive_days=ARCHIVE_DAYS, **_COMMON)
        for queue in CHURN_QUEUES:
            self.client.create_queue(queue, **_COMMON)
        for queue in ALL_QUEUES:
            if queue not in MAIN_QUEUES:
                self.client.create_queue(queue, **_COMMON)
        self.paths.create_dead_letter_targets()
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        self.client.dynamodb.meta.events.register_first("before-call.dynamodb", self._work_done)

    def _work_done(self, **_: Any) -> None:
        """Every DynamoDB call (every attempt, failed or not) moves the fake clock on, apart from checkpoints."""
        if self._ticking.is_set():
            self.clock.advance(SECONDS_PER_CALL)
            with self._lock:
                self.calls += 1

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def path(self) -> str:
        """The delivery path the calling thread works for."""
        return getattr(self._path, "name", LIBRARY)

    def path_of_request(self, request: dict[str, Any]) -> str:
        """The delivery path whose items a DynamoDB request names (every key of a sub-queue holds
        `#{queue}#{client}#`), else the calling thread's: the core makes some calls on threads of its own."""
        text = json.dumps(request)
        return next((path for (queue, client), path in PATH_OF.items() if f"#{queue}#{client}#" in text), self.path())

    def serve(self, path: str) -> None:
        self._path.name = path

    # What the other paths' workers use of the run.
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        """Every worker ends its loop (and a `wait_fake` returns): the end of the run."""
        self._stop.set()

    def pausing(self) -> bool:
        return self._gate.paused

    def enter(self) -> None:
        self._gate.enter()

    def leave(self) -> None:
        self._gate.leave()

    def wait_if_paused(self) -> None:
        self._gate.wait_if_paused()

    def label(self, hold: Hold) -> str:
        """The label of a held message (its body, unless the body is large)."""
        return hold.body.split("|", 1)[0]

    def deliver(self, queue: str, messages: list[ReceivedMessage], before: int, after: int) -> list[Hold]:
        return self._deliver(queue, messages, before, after)

    def wait_fake(self, seconds: float) -> None:
        """Waits until the fake clock moved on by `seconds` (the others' work moves it), or the run stops. It parks
        for a checkpoint meanwhile: the clock stands still during one, and a worker waiting for it to move would
        keep the checkpoint from ever seeing every worker stopped."""
        until = self.clock() + seconds
        while self.clock() < until and not self._stop.wait(0.01):
            self._gate.wait_if_paused()

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self.figures, name, getattr(self.figures, name) + 1)

    # Producers.
    def _produce(self, worker: int) -> None:
        rng = random.Random(self.seed * 1000 + worker)
        mine = [message for message in self.planned if message.index % self.scale.producers == worker]
        by_sub_queue: dict[tuple[str, str], list[Planned]] = {}
        for message in mine:
            by_sub_queue.setdefault((message.queue, message.client), []).append(message)
        chunks = []
        for messages in by_sub_queue.values():
            position = 0
            while position < len(messages):
                size = rng.randint(1, 5)
                chunks.append(messages[position : position + size])
                position += size
        chunks.sort(key=lambda chunk: chunk[0].index)
        self._gate.enter()
        try:
            for chunk in chunks:
                self.serve(chunk[0].path)
                self._send_until_stored(chunk, rng)
        finally:
            self._gate.leave()

    def _backlog(self, queue: str, client: str) -> int:
        """Messages of the sub-queue stored and not yet settled: dead letters count as settled (the driver counts
        them), or a sub-queue whose consumers dead-letter many would stop its producer for good."""
        with self._lock:
            stored = self.stored_by_sub_queue[(queue, client)] - self.dead_by_sub_queue[(queue, client)]
        return stored - self.truth.deleted_by_sub_queue[(queue, client)]

    def _send_until_stored(self, chunk: list[Planned], rng: random.Random) -> None:
        """Waits for room in the backlog, then sends until every message is stored; what failed is sent again at
        once, with the same entry (dedup id, delivery time).

        Which messages may be stored twice is known exactly: a send that failed with `Throttled` (or whose whole
        call failed) may have stored its messages with its answer lost. Sent again without a dedup id, such a
        message may be stored twice (`unconfirmed`, at least once as the queue promises for plain sends); with a
        dedup id, only when the resend read a clock at or past the failed attempt's start plus the dedup window,
        which the dedup item of that attempt cannot outlast (`resent_after_window`). Any other copy is a bug."""
        sub = self.sub_queues[(chunk[0].queue, chunk[0].client)]
        pending = list(chunk)
        while self._backlog(chunk[0].queue, chunk[0].client) > BACKLOG_CAP and not self._stop.is_set():
            self._gate.wait_if_paused()
            time.sleep(0.01)
        first_ms = self.now_ms()
        entries = {message.index: self._entry(message, first_ms) for message in pending}
        failed_at: dict[int, int] = {}  # the start of each message's first attempt that may have stored it
        while pending and not self._stop.is_set():
            self._gate.wait_if_paused()
            started = self.now_ms()
            try:
                result = sub.send_batch([entries[message.index] for message in pending])
            except QueueError:
                for message in pending:
                    failed_at.setdefault(message.index, started)
                self._count("send_retries")
                time.sleep(rng.uniform(0, 0.01))
                continue
            ended = self.now_ms()
            done = set()
            for success in result.successful:
                message = pending[success["index"]]
                self._stored(message, success["message_id"], bool(success.get("duplicate")))
                if message.queue in (*SQS_QUEUES, PUSH_QUEUE):
                    self.paths.note_sqs_id(message.queue, message.label, result.sqs_message_ids[success["index"]])
                self._may_be_copied(message, failed_at.get(message.index), ended)
                done.add(message.index)
            if result.failed:
                for failure in result.failed:
                    message = pending[failure["index"]]
                    if failure["code"] == "Throttled":
                        failed_at.setdefault(message.index, started)
                        if message.dedup_id is None:
                            self.unconfirmed.add(message.label)
                self._count("send_retries")
                time.sleep(rng.uniform(0, 0.01))
            pending = [message for message in pending if message.index not in done]

    def _may_be_copied(self, message: Planned, failed_at: int | None, resend_ended: int) -> None:
        if message.dedup_id is not None and failed_at is not None and resend_ended >= failed_at + DEDUP_WINDOW_MS:
            with self._lock:
                self.resent_after_window.add(message.label)

    def _entry(self, message: Planned, first_ms: int) -> dict[str, Any]:
        """The entry every attempt of a message sends: a delivery time is fixed at the first attempt, and the
        earliest moment it may be claimed recorded then (a lost answer may have stored it at that attempt)."""
        entry: dict[str, Any] = {"body": message.body}
        if message.group_id is not None:
            entry["group_id"] = message.group_id
        if message.dedup_id is not None:
            entry["dedup_id"] = message.dedup_id
        if message.label != message.body:
            entry["attributes"] = {"label": message.label}
        if message.priority is not None:
            entry["priority"] = message.priority
        if message.delivery is not None:
            kind, seconds = message.delivery
            if kind == "deliver_at":
                entry["deliver_at"] = first_ms // 1000 + seconds
                earliest = entry["deliver_at"] * 1000
            else:
                entry["delay_seconds"] = seconds
                earliest = first_ms + seconds * 1000
            with self._lock:
                self.visible_from[message.label] = earliest
        return entry

    def _stored(self, message: Planned, message_id: str, duplicate: bool) -> None:
        with self._lock:
            earlier = self.stored.get(message.label)
            if earlier is None:
                self.stored[message.label] = message_id
                self.stored_by_sub_queue[(message.queue, message.client)] += 1
                self.figures.sent += 1
            elif earlier != message_id:
                self.problems.append(f"{message.label} stored twice: as {earlier} and as {message_id}")
            if duplicate:
                self.figures.duplicates_answered += 1

    # Consumers.
    def _consume(self, worker: int, lane: tuple[str, str] | None = None) -> None:
        """A consumer of one of the main sub-queues (`lane` None: chosen by `worker`), or of another path's
        sub-queue pulled with the library's calls (large bodies, timed sends)."""
        rng = random.Random(self.seed * 7919 + worker)
        queue, client = lane or SUB_QUEUES[worker % len(SUB_QUEUES)]
        # Some consumers of each main queue serve every client of it (a queue-wide worker pool) beside the
        # per-client ones: two of each sub-queue's four. With one of four, a pool that served both clients met
        # one client's messages once or twice a short run, and none in one clean-clone run: the per-client
        # consumers, a query cheaper since a receive takes its priorities from the shard marks, won the rest. The
        # standard queue's pool starts
        # mid-run, once a third of the messages (at most 20) are settled: its first receive switches the queue's
        # ready markers on while sends go on (the FIFO queue's from the start), and the sweep builds the missing
        # ones. Not later: in the short form a pool started at a third met each client only 3 to 6 times, and
        # once (at a load of 4) none of one client's messages.
        wide = lane is None and worker % 8 in (0, 1, 6, 7)
        wide_after = min(self.scale.messages // 3, 20) if queue == STANDARD else 0
        sub: SubQueue | QueueWide = self.sub_queues[(queue, client)]
        self.serve(PATH_OF[(queue, client)])
        idle = IDLE_FIRST_SECONDS
        self._gate.enter()
        try:
            while not self._stop.is_set():
                self._gate.wait_if_paused()
                if wide and not isinstance(sub, QueueWide) and self._settled_count >= wide_after:
                    sub = self.client.queue_wide(queue)
                before = self.now_ms()
                try:
                    messages = sub.receive(max_messages=rng.randint(1, 4), visibility_timeout=VISIBILITY)
                except QueueError as error:
                    self._count("receive_errors")
                    with self._lock:
                        self.figures.add(f"receive error {queue}/{client} {error.code}")
                    time.sleep(rng.uniform(0, 0.01))
                    continue
                after = self.now_ms()
                if not messages:
                    time.sleep(rng.uniform(idle / 2, idle))
                    idle = min(idle * 2, IDLE_MAX_SECONDS)
                    continue
                idle = IDLE_FIRST_SECONDS
                if isinstance(sub, QueueWide):
                    with self._lock:
                        self.figures.add(f"queue_wide:{queue}", len(messages))
                        self.figures.add(f"queue_wide_clients:{queue}:{messages[0].client}")
                holds = self._deliver(queue, messages, before, after)
                for unit in _units(holds, messages):
                    self._work(sub, unit, rng)
        finally:
            self._gate.leave()

    def _deliver(self, queue: str, messages: list[ReceivedMessage], before: int, after: int) -> list[Hold]:
        """The ledger's holds, in the messages' order, each recorded under its own sub-queue."""
        by_client: dict[str, list[ReceivedMessage]] = {}
        for message in messages:
            by_client.setdefault(message.client, []).append(message)
        held: dict[str, Hold] = {}
        for client, own in by_client.items():
            holds = self.ledger.deliver(f"{queue}/{client}", own, before, after, VISIBILITY)
            held.update((message.receipt_handle, hold) for message, hold in zip(own, holds, strict=True))
        holds = [held[message.receipt_handle] for message in messages]
        self.check_delivered(messages, holds)
        return holds

    def check_delivered(self, messages: list[ReceivedMessage], holds: list[Hold]) -> None:
        """What every path must hand over: the body exactly as sent, never before its delivery time."""
        for message, hold in zip(messages, holds, strict=True):
            label = label_of({"attrs": message.attributes, "body": message.body})
            planned = self.by_label.get(label)
            if planned is None:
                self.ledger.violation(f"{hold.sub_queue}: a message never sent delivered: {message.body[:60]}")
                continue
            if message.body != planned.body:
                self.ledger.violation(f"{label}: delivered with another body ({len(message.body)} characters)")
            with self._lock:
                earliest = self.visible_from.get(label)
            if earliest is not None:
                self.ledger.not_before(hold, earliest, "delivery time")

    def _work(self, sub: SubQueue | QueueWide, unit: list[tuple[Hold, ReceivedMessage]], rng: random.Random) -> None:
        """One message, or a FIFO group's messages in order: each is processed, given back or abandoned. A
        failure gives back the rest of a FIFO unit too, so that no consumer runs a group out of order."""
        for position, (hold, message) in enumerate(unit):
            roll = rng.random()
            if label_of({"attrs": message.attributes, "body": message.body}).endswith("/poison"):
                roll = rng.choice((0.05, 0.15))
            if roll < 0.10:
                self._count("crashes")
                return
            if roll < 0.20:
                self._count("releases")
                for later_hold, later in unit[position:]:
                    self._release(sub, later_hold, rng.choice((0, 0, None, 5)), label_of(_item_of(later)))
                return
            if roll < 0.30:
                self._count("extensions")
                if not self._extend(sub, hold, rng):
                    return
            elif roll < 0.35:
                self._count("delete_races")
                racer = self._racers.submit(self._delete, sub, hold)
                self._delete(sub, hold)
                racer.result()
                continue
            elif roll < 0.36:
                self._count("slow_consumers")
                self.wait_fake(VISIBILITY + 1)  # too slow: its claim runs out before it deletes
            self._delete(sub, hold)

    def _delete(self, sub: SubQueue | QueueWide, hold: Hold) -> bool:
        self.ledger.settling(hold, self.now_ms())
        return self._settle(lambda: sub.delete(hold.handle))

    def _release(self, sub: SubQueue | QueueWide, hold: Hold, delay: int | None, label: str) -> bool:
        """With a reason naming the message and the attempt, kept if the release was applied (`check_reasons`)."""
        self.ledger.settling(hold, self.now_ms())
        reason = f"{label} attempt {hold.receive_count}: given back by a stress consumer"
        with self._lock:
            self.reasons_sent.setdefault(label, set()).add((hold.receive_count, reason))
        released = self._settle(lambda: sub.release(hold.handle, delay_seconds=delay, reason=reason))
        if released:
            with self._lock:
                self.reasons_given.setdefault(label, set()).add((hold.receive_count, reason))
        return released

    def _extend(self, sub: SubQueue | QueueWide, hold: Hold, rng: random.Random) -> bool:
        seconds = VISIBILITY * 2
        before = self.now_ms()
        self.ledger.extending(hold, before, seconds)
        try:
            sub.change_visibility(hold.handle, seconds)
        except ReceiptHandleStale:
            self._count("stale_handles")
            return False
        except QueueError:
            self._count("settle_errors")
            return True
        self.ledger.extended(hold, before, self.now_ms(), seconds)
        time.sleep(rng.uniform(0, 0.05))
        return True

    def _settle(self, call: Callable[[], Any]) -> bool:
        """A delete or release, retried while DynamoDB throttles (both are idempotent for the same handle)."""
        for _ in range(6):
            try:
                call()
                return True
            except ReceiptHandleStale:
                self._count("stale_handles")
                return False
            except QueueError as error:
                if error.code != "Throttled":
                    self._count("settle_errors")
                    return False
                self._count("settle_errors")
                time.sleep(0.005)
        return False

    # The operator: shard changes and deletes-and-creations, spread over the run by the messages sent so far.
    def _operate(self) -> None:
        plan: list[tuple[float, Callable[[], None]]] = []
        for n in range(self.scale.reshards):
            for offset, queue in enumerate(MAIN_QUEUES):
                at = (n + 0.5 * offset + 0.5) / (self.scale.reshards + 1)
                # Every other change is the queue's own (an automatic decision), the others by hand.
                step = partial(self._reshard, queue, RESHARDS[queue][n], automatic=n % 2 == 1)
                plan.append((at, step))
        plan += [(0.1 + 0.8 * n / self.scale.recreations, self._recreate) for n in range(self.scale.recreations)]
        # The churn queues are automatic (created without `shards`) and busy: they reshard by themselves too,
        # between their deletes and creations.
        plan += [
            ((n + 0.25) / (self.scale.recreations + 1), partial(self._churn_reshard, CHURN_RESHARDS[n % 4]))
            for n in range(self.scale.recreations + 1)
        ]
        plan.append((0.55, self._migrate))
        plan.sort(key=lambda step: step[0])
        try:
            for at, step in plan:
                while self.figures.sent < at * len(self.planned):
                    if self._stop.wait(CLOCK_TICK_SECONDS):
                        return
                step()
        finally:
            self._operator_done.set()

    def _reshard(self, queue: str, shards: int, automatic: bool = False) -> None:
        """A change of `shards`, tried again while the sweep changed the settings meanwhile or DynamoDB throttles.
        `automatic`: the queue's own decision (switched back to automatic first when a change by hand fixed it)."""
        for _ in range(RESHARD_ATTEMPTS):
            try:
                if automatic:
                    self._reshard_automatically(queue, shards)
                else:
                    self.client.update_queue(queue, shards=shards)
            except (QueueExists, Throttled):
                time.sleep(0.01)
                continue
            except QueueError as error:
                self.problems.append(f"{queue}: shards={shards} refused: {error.code} {error}")
                return
            self._count("reshards")
            return
        self.problems.append(f"{queue}: shards={shards} not applied in {RESHARD_ATTEMPTS} attempts")

    def _reshard_automatically(self, queue: str, shards: int) -> None:
        """Raises `QueueExists` while the change did not land (another writer of the settings won the race)."""
        if not self.client.get_queue(queue).auto_shards:
            self.client.update_queue(queue, shards="auto")
        self.client.reshard_automatically(queue, shards)
        if self.client.get_queue(queue).shards != shards:
            raise QueueExists(f"{queue} changed meanwhile")
        self._count_name("automatic reshards")

    def _churn_reshard(self, shards: int) -> None:
        """Both churn queues reshard by themselves; one deleted at that moment has nothing to change."""
        for queue in CHURN_QUEUES:
            for _ in range(RESHARD_ATTEMPTS):
                try:
                    self._reshard_automatically(queue, shards)
                except QueueNotFound:
                    break
                except (QueueExists, Throttled):
                    time.sleep(0.01)
                    continue
                break

    def _count_name(self, name: str) -> None:
        with self._lock:
            self.figures.counts[name] += 1

    def _recreate(self) -> None:
        """Both churn queues deleted, then created again under their names, while their workers go on. Epochs
        `3k` are live, `3k + 1` deleting, `3k + 2` creating."""
        self._next_epoch()
        for queue in CHURN_QUEUES:
            self._until_done(lambda queue=queue: self.client.delete_queue(queue), QueueNotFound)
        time.sleep(CHURN_GAP_SECONDS)
        self._next_epoch()
        for queue in CHURN_QUEUES:
            self._until_done(lambda queue=queue: self.client.create_queue(queue, **_COMMON), None)
        self._next_epoch()
        self._count("recreations")

    def _migrate(self) -> None:
        """The table upgraded under load: its layout record dropped (with the raw client, past the faults), then
        migrated, again after any failure (a run stopped halfway is finished by the next)."""
        for _ in range(RESHARD_ATTEMPTS):
            try:
                self.client.dynamodb.delete_item(TableName=self.client.table_name, Key=RAW_LAYOUT_KEY)
                break
            except Exception:  # an injected fault: the delete is tried again
                time.sleep(0.01)
        self._until_done(self.client.migrate, None)
        found = self._table_layout()
        if found is None or found.layout != CURRENT_LAYOUT or found.migrating_to is not None:
            self.problems.append(f"the migration left the table at {found.describe() if found else 'unread'}")
            return
        # Completed migrations, not attempts: a run stopped halfway by a throttle and resumed by the next is one.
        self._count("migrations")

    def _table_layout(self) -> TableLayout | None:
        """The layout record as stored, read again while the read is throttled."""
        for _ in range(RESHARD_ATTEMPTS):
            try:
                return self.client.table_layout()
            except Throttled:
                time.sleep(0.01)
        return None

    def _next_epoch(self) -> None:
        with self._lock:
            self._epoch += 1

    def _until_done(self, call: Callable[[], object], done: type[QueueError] | None) -> None:
        """An administrative call repeated until it succeeds (or raises `done`: the work was done before)."""
        for _ in range(RESHARD_ATTEMPTS):
            try:
                call()
                return
            except QueueError as error:
                if done is not None and isinstance(error, done):
                    return
                time.sleep(0.01)
        self.problems.append(f"an administrative call failed {RESHARD_ATTEMPTS} times")

    def epoch(self) -> int:
        with self._lock:
            return self._epoch

    # The churn queues' own workers: nothing they send must outlive a delete.
    def _churn_produce(self, queue: str) -> None:
        sub = self.client.queue(queue, CHURN_CLIENT)
        while not self._stop.wait(CHURN_SEND_PAUSE_SECONDS):
            number = next(self._churn_bodies)
            body = f"{queue}/{number:06d}"
            try:
                sub.send(body, group_id=f"g{number % CHURN_GROUPS}" if queue == CHURN_FIFO else None)
                self._count("churn_sent")
            except QueueNotFound:
                self._count("churn_refused")
            except QueueError:
                pass
            with self._lock:
                self.churn_sent[body] = self._epoch

    def _churn_consume(self, queue: str) -> None:
        sub = self.client.queue(queue, CHURN_CLIENT)
        while not self._stop.is_set():
            self._churn_receive(sub)

    def _churn_receive(self, sub: SubQueue) -> int:
        started = self.epoch()
        try:
            messages = sub.receive(max_messages=5, visibility_timeout=VISIBILITY)
        except QueueError:
            time.sleep(0.02)
            return 0
        with self._lock:
            self.churn_delivered += [(message.body, started) for message in messages]
            self.figures.churn_deliveries += len(messages)
        for message in messages:
            try:
                sub.delete(message.receipt_handle)
            except QueueError:
                break
        if not messages:
            time.sleep(CHURN_SEND_PAUSE_SECONDS)
        return len(messages)

    # The driver.
    def run(self) -> None:
        started = time.monotonic()
        threads = [
            threading.Thread(target=self._produce, args=(i,), name=f"stress-producer-{i}", daemon=True)
            for i in range(self.scale.producers)
        ]
        threads += [
            threading.Thread(target=self._consume, args=(i,), name=f"stress-consumer-{i}", daemon=True)
            for i in range(self.scale.consumers)
        ]
        pulled = [key for path in (BODIES, TIMED) for key in PATH_SUB_QUEUES[path]]
        threads += [
            threading.Thread(target=self._consume, args=(1000 + n, key), name=f"stress-pull-{key[0]}", daemon=True)
            for n, key in enumerate(pulled * PULL_CONSUMERS)
        ]
        threads += self.paths.threads()
        threads.append(threading.Thread(target=self._sweep_steadily, name="stress-sweeper", daemon=True))
        threads.append(threading.Thread(target=self._operate, name="stress-operator", daemon=True))
        for queue in CHURN_QUEUES:
            threads.append(threading.Thread(target=self._churn_produce, args=(queue,), name="churn-producer"))
            threads.append(threading.Thread(target=self._churn_consume, args=(queue,), name="churn-consumer"))
        self._ticking.set()
        for thread in threads:
            thread.daemon = True
            thread.start()
        total = len(self.planned)
        checkpoint_at = [total * (n + 1) // (self.scale.checkpoints + 1) for n in range(self.scale.checkpoints)]
        last_look = time.monotonic()
        progress, progressed = self._progress(), time.monotonic()
        try:
            while True:
                time.sleep(CLOCK_TICK_SECONDS)
                if time.monotonic() - last_look >= SETTLED_EVERY_SECONDS:
                    last_look = time.monotonic()
                    settled = self._settled()
                    if settled >= total and self._operator_done.is_set() and self.paths.redrives_done():
                        break
                    now = self._progress()
                    if now != progress:
                        progress, progressed = now, time.monotonic()
                    elif time.monotonic() - progressed > STALL_SECONDS:
                        self.problems.append(
                            f"no progress for {STALL_SECONDS:.0f} s: {settled} of {total} messages settled, "
                            f"{self.figures.sent} stored"
                        )
                        break
                if checkpoint_at and self.faults is None and self.figures.sent >= checkpoint_at[0]:
                    checkpoint_at.pop(0)
                    self._checkpoint()
                    progressed = time.monotonic()  # the workers stood still for it: no stall of their own
        finally:
            self.stop()
            self._gate.resume()
            for thread in threads:
                thread.join(timeout=30)
            self._racers.shutdown(wait=True)
            self.paths.close()
            self.elapsed = time.monotonic() - started
        if self.faults is not None:
            self.faults.enabled = False
        self._last_poll()
        self._sweep()
        self._ticking.clear()

    def _progress(self) -> tuple[int, ...]:
        """What moves when the run is not stuck: messages stored, settled, and the operator's steps."""
        with self._lock:
            sent, reshards, recreations = self.figures.sent, self.figures.reshards, self.figures.recreations
        return sent, self._settled_count, reshards, recreations, self.paths.redrives

    def _sweep_steadily(self) -> None:
        """The scheduled sweeper, beside the consumers: leased passes of `SWEEP_BUDGET_SECONDS` each, as the
        deployed sweeper runs them (a pass that runs out of time leaves where it stopped on the lease's item, the
        next one resumes there and goes round past the last queue). Every `SWEEP_EVERY_FAKE_SECONDS` of the fake
        clock a round of passes starts, one after the other until they have gone round once. It stops for
        checkpoints between passes, like the workers."""
        self._gate.enter()
        in_round, wait = False, CLOCK_TICK_SECONDS
        # Where the last pass stopped (None: it was complete, the next starts at the first queue), and where the
        # round's first pass started.
        stopped: str | None = None
        round_from: str | None = None
        rounds = 0
        next_pass = self.clock() + SWEEP_EVERY_FAKE_SECONDS
        try:
            while not self._stop.wait(wait):
                self._gate.wait_if_paused()
                if not in_round and self.clock() < next_pass:
                    continue
                if not in_round:
                    next_pass = self.clock() + SWEEP_EVERY_FAKE_SECONDS
                    in_round, round_from = True, stopped
                    expired = self.truth.expire(self.now_ms())
                    with self._lock:
                        self.figures.add("expired_by_ttl", expired)
                began = time.monotonic()
                try:
                    report = self.client.sweep(
                        budget_seconds=SWEEP_BUDGET_SECONDS, lease_seconds=SWEEP_EVERY_FAKE_SECONDS / 2
                    )
                except QueueError as error:
                    with self._lock:
                        self.figures.add("sweep_errors")
                        self.figures.add(f"sweep error {error.code}")
                    in_round, wait = False, CLOCK_TICK_SECONDS
                    continue
                if report.skipped:  # a lease a lost release left: it runs out on the fake clock
                    with self._lock:
                        self.figures.add("sweep_skipped")
                    wait = CLOCK_TICK_SECONDS
                    continue
                with self._lock:
                    self.figures.add("sweep_passes")
                    self.figures.add("sweep_sub_queues", report.sub_queues)
                    self.figures.add("sweep_passes_out_of_time", not report.complete)
                    self.figures.add("sweep_ms", int((time.monotonic() - began) * 1000))
                went_round = report.complete or _went_past(stopped, report.cursor, round_from)
                stopped = None if report.complete else report.cursor
                if went_round:
                    self._count("sweeps")
                    rounds += 1
                    if rounds % 2 == 0:
                        # Now and then a whole pass without a budget, as a manual invoke runs it: every queue's
                        # whole-queue steps (old layouts dropped, shard counts, markers built) under load, which
                        # resumed passes give a queue only when one pass sees all of its clients.
                        self._sweep()
                in_round = not went_round
                wait = 0 if in_round else CLOCK_TICK_SECONDS
        finally:
            self._gate.leave()

    def _last_poll(self) -> None:
        """What a consumer still polling would do once everything is settled: find nothing. A receive that meets
        a FIFO group whose count a fault left too high (a delete applied, its group update lost) finds it empty
        and sets the count right, so the final stats are checked after it."""
        self.clock.advance(VISIBILITY * 10)
        for (queue, client), sub in self.sub_queues.items():
            left = sub.receive(max_messages=10)
            if left:
                self.problems.append(f"{queue}/{client}: {len(left)} delivered after the end, e.g. {left[0].body}")
        for queue in CHURN_QUEUES:
            while self._churn_receive(self.client.queue(queue, CHURN_CLIENT)):
                pass

    def _sweep(self, cursor: str | None = None, budget_seconds: float | None = None) -> str | None:
        """One sweep (or the slice of one that starts at `cursor`); returns where the next slice starts, None when
        the pass is complete (or failed: the next one starts over)."""
        if cursor is None:
            expired = self.truth.expire(self.now_ms())
            with self._lock:
                self.figures.add("expired_by_ttl", expired)
        try:
            report = self.client.sweep(budget_seconds=budget_seconds, cursor=cursor)
            if not report.complete and report.cursor in (None, cursor):
                # The budget ran out before the slice swept anything: the rest of the pass goes without one.
                report = self.client.sweep(cursor=cursor)
        except QueueError as error:
            with self._lock:
                self.figures.add("sweep_errors")
                self.figures.add(f"sweep error {error.code}")
            return None
        if report.complete:
            self._count("sweeps")
            return None
        return report.cursor

    def _settled(self) -> int:
        """Messages deleted, in the DLQ or deleted from it, by the table's own account (each counted once, so a
        message deleted twice never makes the run end before another one is settled). Keeps the dead letters per
        sub-queue for the producers' backlog."""
        dead = self.truth.dead_letter_labels()
        settled = set(self.truth.deleted_bodies(ALL_QUEUES)) | set(self.truth.dead_deleted_bodies(ALL_QUEUES))
        settled.update(label for key in ALL_SUB_QUEUES for label in dead[key])
        with self._lock:
            for key in ALL_SUB_QUEUES:
                self.dead_by_sub_queue[key] = len(dead[key])
            self._settled_count = len(settled)
        return len(settled)

    def _checkpoint(self) -> None:
        """Everyone stops between calls; the stats must then agree with the table and with the ledger."""
        self._ticking.clear()
        # A worker stops between calls; on a loaded machine one call (moto answers one request at a time) or one
        # slice of the sweep can take many seconds of wall time: only a worker that never stops is a failure.
        if not self._gate.pause(timeout=STALL_SECONDS):
            self.problems.append(
                f"checkpoint: the workers did not stop within {STALL_SECONDS:.0f} s: {self._gate.running()}"
            )
            self._gate.resume()
            self._ticking.set()
            return
        try:
            self.figures.checkpoints += 1
            now = self.now_ms()
            # One read of the table for every sub-queue: a Scan's cost grows with the table (the archives too).
            all_live = self.truth.by_sub_queue([STANDARD_MESSAGES, FIFO_MESSAGES])
            all_dead = self.truth.by_sub_queue([DEAD_LETTERS])
            for (queue, client), sub in self.sub_queues.items():
                stats = sub.stats()
                live = all_live.get((queue, client), [])
                dead = len(all_dead.get((queue, client), []))
                label = f"{queue}/{client}"
                if stats.visible + stats.in_flight + stats.delayed != len(live) or stats.dlq != dead:
                    self.problems.append(
                        f"checkpoint {label}: stats {stats.to_dict()} but {len(live)} live, {dead} DLQ"
                    )
                fifo = queue.endswith(".fifo")
                held = self.ledger.groups_held_at(label, now) if fifo else self.ledger.held_at(label, now)
                if PATH_OF[(queue, client)] == PUSH:
                    held = (held[0], held[1] + self.paths.unsent_claims(now))
                if not held[0] <= stats.in_flight <= held[1]:
                    self.problems.append(
                        f"checkpoint {label}: {stats.in_flight} in flight, the consumers hold {held[0]} to {held[1]}"
                    )
        finally:
            self._gate.resume()
            self._ticking.set()

    # The verdict.
    def copies(self, label: str) -> int:
        """How many times a message may rightly be stored (see `_send_until_stored`)."""
        return 2 if label in self.unconfirmed or label in self.resent_after_window else 1

    def verify(self) -> list[str]:
        """Every check of the run; an empty list means every invariant held."""
        problems = list(self.problems) + list(self.ledger.violations) + self.ledger.recheck()
        if self.figures.migrations != 1:
            problems.append(f"{self.figures.migrations} migrations, not the one the operator runs")
        labels = set(self.by_label)
        missing = labels - set(self.stored)
        if missing:
            problems.append(f"{len(missing)} messages never stored, e.g. {sorted(missing)[:3]}")
        deleted = self.truth.deleted_bodies(ALL_QUEUES)
        dead_deleted = self.truth.dead_deleted_bodies(ALL_QUEUES)
        problems += [f"{label} deleted {count} times" for label, count in deleted.items() if count > self.copies(label)]
        problems += [f"{label} deleted but never sent" for label in deleted if label not in labels]
        dead: Counter = Counter()
        all_live = self.truth.by_sub_queue([STANDARD_MESSAGES, FIFO_MESSAGES])
        all_dead = self.truth.by_sub_queue([DEAD_LETTERS])
        for queue, client in ALL_SUB_QUEUES:
            for item in all_dead.get((queue, client), []):
                dead[label_of(item)] += 1
                if int(item["receive_count"]) != MAX_RECEIVE_COUNT:
                    problems.append(f"{label_of(item)} in the DLQ after {item['receive_count']} receives")
                given = self.reasons_given.get(label_of(item), set()) if (queue, client) in SUB_QUEUES else None
                sent = self.reasons_sent.get(label_of(item), set())
                problems += check_reasons(item, given if self.copies(label_of(item)) == 1 else None, sent)
            live = all_live.get((queue, client), [])
            if live:
                problems.append(f"{queue}/{client}: {len(live)} messages left, e.g. {label_of(live[0])}")
            stats = self.sub_queues[(queue, client)].stats()
            in_dlq = sum(count for label, count in dead.items() if label.startswith(f"{queue}/{client}/"))
            if (stats.visible, stats.in_flight, stats.delayed, stats.dlq) != (0, 0, 0, in_dlq):
                problems.append(
                    f"{queue}/{client}: final stats {stats.to_dict()}, but {in_dlq} in the DLQ and none left"
                )
        # A message stored twice (`copies`) is two messages, each deleted or dead on its own.
        problems += [f"{label} in the DLQ {count} times" for label, count in dead.items() if count > self.copies(label)]
        problems += [
            f"{label} both deleted and in the DLQ"
            for label in set(dead) & set(deleted)
            if deleted[label] + dead[label] > self.copies(label)
        ]
        problems += [
            f"{label} deleted from the DLQ {count} times, deleted {deleted[label]} and in the DLQ {dead[label]}"
            for label, count in dead_deleted.items()
            if count + deleted[label] + dead[label] > self.copies(label)
        ]
        unaccounted = labels - set(dead) - set(deleted) - set(dead_deleted)
        if unaccounted:
            problems.append(
                f"{len(unaccounted)} messages neither deleted nor in the DLQ, e.g. {sorted(unaccounted)[:3]}"
            )
        poison_alive = [
            label for label in labels if label.endswith("/poison") and label not in dead and label not in dead_deleted
        ]
        problems += [f"{label} always fails but is not in the DLQ" for label in poison_alive]
        for holds in self.ledger.holds.values():
            for hold in holds:
                if hold.receive_count > MAX_RECEIVE_COUNT:
                    problems.append(
                        f"{hold.sub_queue} {hold.message_id} delivered with receive count {hold.receive_count}"
                    )
        problems += self.paths.verify()
        self.figures.deliveries = self.ledger.deliveries
        self.figures.add("dlq", sum(dead.values()))
        self.figures.add("deleted", len(deleted))
        problems += self._verify_churn()
        problems += self._verify_archive()
        self._by_path(deleted, dead, dead_deleted, problems)
        return problems

    def _verify_archive(self) -> list[str]:
        """The main queues' archives hold each acknowledgement DynamoDB applied exactly once, and nothing else:
        neither a message moved to the DLQ, nor a delete the SDK or a racing consumer repeated."""
        archived: Counter = Counter()
        for (queue, _), items in self.truth.by_sub_queue([ARCHIVED]).items():
            if queue in MAIN_QUEUES:
                archived.update(label_of(item) for item in items)
        acked = Counter(entry.body for entry in self.truth.deleted if entry.queue in MAIN_QUEUES)
        self.figures.add("archived", sum(archived.values()))
        return [
            f"{label} acknowledged {acked[label]} times, archived {archived[label]} times"
            for label in set(acked) | set(archived)
            if acked[label] != archived[label]
        ]

    def _by_path(self, deleted: Counter, dead: Counter, dead_deleted: Counter, problems: list[str]) -> None:
        """The figures of each delivery path, for `report`: messages, deliveries, redeliveries, faults by kind,
        violations (each problem counted for the path of the first sub-queue it names)."""
        paths: dict[str, Counter] = {path: Counter() for path in PATHS}
        for label in self.by_label:
            path = self.by_label[label].path
            paths[path]["messages"] += 1
            paths[path]["deleted"] += deleted[label]
            paths[path]["dlq"] += dead[label]
            paths[path]["deleted from the DLQ"] += dead_deleted[label]
        for (sub_queue, _), holds in self.ledger.holds.items():
            queue, client = sub_queue.split("/", 1)
            path = PATH_OF[(queue, client)]
            paths[path]["deliveries"] += len(holds)
            paths[path]["redeliveries"] += len(holds) - 1
        for problem in problems:
            named = next((path for path in PATHS if problem.startswith(f"{path}:")), None) or next(
                (path for (queue, client), path in PATH_OF.items() if f"{queue}/{client}" in problem), None
            )
            paths[named or LIBRARY]["violations"] += 1
        if self.faults is not None:
            for (path, kind), count in self.faults.counts_by_label.items():
                paths[path][f"fault {kind}"] += count
        self.path_figures = paths

    def _verify_churn(self) -> list[str]:
        """Nothing sent before a delete is delivered by a receive that started after the creation that followed.
        A send that returned while the queue was live (epoch `3k`) or being deleted (`3k + 1`, so into the old
        queue if anywhere) must not be delivered from the next live epoch on (`3k + 3`); one that returned while
        the queue was being created (`3k + 2`) may have reached the new queue, so not from the live epoch after
        the next delete on (`3k + 6`)."""
        problems = []
        for body, started in self.churn_delivered:
            sent = self.churn_sent.get(body)
            if sent is None:
                problems.append(f"{body} delivered by a churn queue but never sent")
                continue
            live_again = sent - sent % 3 + (6 if sent % 3 == 2 else 3)
            if started % 3 == 0 and started >= live_again:
                problems.append(f"{body} sent in epoch {sent}, before a delete, delivered in epoch {started}")
        epochs = {started for _, started in self.churn_delivered if started % 3 == 0}
        if self.scale.recreations and len(epochs) < 2:
            problems.append(f"the churn queues delivered in {len(epochs)} incarnation(s) only: nothing was tested")
        return problems

    def report(self) -> str:
        """The run's figures, then each delivery path's on a line of its own (`verify` first)."""
        figures = self.figures
        faults = {str(kind): count for kind, count in self.faults.counts.items()} if self.faults is not None else {}
        lines = [
            f"{figures.sent} messages ({figures.counts['deleted']} deleted, {figures.counts['dlq']} to the DLQ), "
            f"{self.scale.consumers} consumers, {self.scale.producers} producers, {figures.deliveries} deliveries, "
            f"{figures.crashes} crashes, {figures.releases} releases, {figures.extensions} extensions, "
            f"{figures.delete_races} delete races, {figures.slow_consumers} slow consumers, "
            f"{figures.stale_handles} stale handles, {figures.send_retries} send retries, "
            f"{figures.duplicates_answered} duplicates answered, {figures.receive_errors} receive errors, "
            f"{figures.settle_errors} settle errors, "
            f"{figures.sweeps} sweeps ({figures.counts['sweep_passes']} leased passes, "
            f"{figures.counts['sweep_passes_out_of_time']} out of time, {figures.counts['sweep_sub_queues']} "
            f"sub-queues in {figures.counts['sweep_ms'] / 1000:.1f} s, {figures.counts['sweep_skipped']} skipped; "
            f"{figures.counts['sweep_errors']} failed: "
            f"{_named(figures.counts, 'sweep error ')}), "
            f"{figures.checkpoints} checkpoints, {figures.counts['expired_by_ttl']} items expired by TTL, "
            f"{figures.migrations} migrations, "
            f"{figures.reshards} shard changes ({figures.counts['automatic reshards']} automatic, of the churn queues "
            f"too), {figures.recreations} deletes and creations of the churn queues "
            f"({figures.churn_sent} sent, {figures.churn_refused} refused as not found, "
            f"{figures.churn_deliveries} delivered), "
            f"queue-wide deliveries {figures.counts['queue_wide:' + STANDARD]} standard, "
            f"{figures.counts['queue_wide:' + FIFO]} FIFO (receives that answered each client: "
            f"{_named(figures.counts, 'queue_wide_clients:')}; ready markers built: "
            f"{', '.join(q for q in MAIN_QUEUES if self.client.get_queue(q).markers_built) or 'none'}), "
            f"{len(self.unconfirmed)} unconfirmed sends, {len(self.resent_after_window)} resent after the dedup "
            f"window, receive errors by code {_named(figures.counts, 'receive error ')}, "
            f"faults {sum(faults.values())} {faults}, {self.calls} DynamoDB calls, "
            f"{self.elapsed:.1f} s",
        ]
        for path, counts in getattr(self, "path_figures", {}).items():
            kinds = {name[6:]: count for name, count in sorted(counts.items()) if name.startswith("fault ")}
            lines.append(
                f"  {path}: {counts['messages']} messages ({counts['deleted']} deleted, {counts['dlq']} in the DLQ, "
                f"{counts['deleted from the DLQ']} deleted from it), {counts['deliveries']} deliveries, "
                f"{counts['redeliveries']} redeliveries, faults {sum(kinds.values())} {kinds}, "
                f"{counts['violations']} violations{self.paths.report(path)}"
            )
        return "\n".join(lines)


# A resend after this long may store a message with a dedup id again (see `_send_until_stored`).
DEDUP_WINDOW_SECONDS = 300
DEDUP_WINDOW_MS = DEDUP_WINDOW_SECONDS * 1000
_COMMON: dict[str, int] = {
    "visibility_timeout": VISIBILITY,
    "max_receive_count": MAX_RECEIVE_COUNT,
    "dedup_window_seconds": DEDUP_WINDOW_SECONDS,
}


def _named(counts: Counter, prefix: str) -> dict[str, int]:
    return {name[len(prefix) :]: count for name, count in sorted(counts.items()) if name.startswith(prefix)}


def _item_of(message: ReceivedMessage) -> dict[str, Any]:
    return {"attrs": message.attributes, "body": message.body}


def check_reasons(
    item: dict[str, Any], given: set[tuple[int, str]] | None, sent: set[tuple[int, str]] | None = None
) -> list[str]:
    """A dead letter's attempts: one for each receive it keeps (the last five), numbered in order, each with a
    reason; the reason of a release is the one given to it (never another message's or another attempt's), and,
    when the releases DynamoDB applied are known (`given`), none of them lost by the move to the DLQ. A release
    whose answer was lost may have been applied: a reason shown needs only to have been sent (`sent`)."""
    label = label_of(item)
    count = int(item["receive_count"])
    shown = reasons.history(item, dead=True)
    problems = []
    expected = list(range(max(1, count - reasons.KEPT_ATTEMPTS + 1), count + 1))
    numbers = [a["attempt"] for a in shown][-len(expected) :] if expected else []
    if not item.get(reasons.DROPPED) and numbers != expected:
        problems.append(f"{label}: attempts {[a['attempt'] for a in shown]} kept after {count} receives")
    problems += [f"{label}: attempt {a['attempt']} without a reason" for a in shown if not a["reason"]]
    if given is None:
        return problems
    released = {(a["attempt"], a["reason"]) for a in shown if a["outcome"] == reasons.RELEASED}
    problems += [
        f"{label}: attempt {n} shows a reason never given to it: {why}" for n, why in released - given - (sent or set())
    ]
    kept_from = count - reasons.KEPT_ATTEMPTS + 1
    problems += [
        f"{label}: the reason of attempt {n}'s release was lost" for n, why in given - released if n >= kept_from
    ]
    return problems


def _units(holds: list[Hold], messages: list[ReceivedMessage]) -> list[list[tuple[Hold, ReceivedMessage]]]:
    """One unit per FIFO group (its messages in order), one per standard message."""
    units: dict[str, list[tuple[Hold, ReceivedMessage]]] = {}
    for hold, message in zip(holds, messages, strict=True):
        key = f"g:{message.client}:{message.group_id}" if message.group_id is not None else f"m:{message.message_id}"
        units.setdefault(key, []).append((hold, message))
    return list(units.values())


def assert_queue_wide_consumers_served_every_client(run: StressRun) -> None:
    """The invariants held with queue-wide consumers among the per-client ones, of both queues and both clients."""
    counts = run.figures.counts
    for queue in MAIN_QUEUES:
        assert counts[f"queue_wide:{queue}"], f"no queue-wide delivery from {queue}"
        for client in ("a", "b"):
            assert counts[f"queue_wide_clients:{queue}:{client}"], f"no queue-wide delivery from {queue}/{client}"
        # Switched on by the first queue-wide receive (mid-run on the standard queue), never by its creation.
        assert run.client.get_queue(queue).queue_wide, f"{queue}: ready markers never switched on"
