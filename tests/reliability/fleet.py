"""The deployed shape under the stress ledger: a fleet of Lambda containers, each a process of its own.

The stress runs (`stress`) drive one core client from many threads: one process, one cache, one clock. Deployed,
the queue is reached by many containers of five functions (producer, poller, the SQS endpoint, the DLQ operator,
the sweeper), each with its own DynamoDB client and core: its own settings and layout caches, load meter, attempt
records and a clock up to 50 ms off. A container is created cold, serves a few invocations, is frozen between
them (for seconds, or for minutes of queue time with everything it cached), thawed, reclaimed, or killed in the
middle of a call: an exception raised from a botocore hook once a write was sent, so the write may have been
applied and nothing after it runs, not even the `finally` of the core (every later call of the container is
refused). Producers are the many: each carries a small share of the load, as Lambda spreads it. An SQS call
whose container was killed fails for the caller, who sends the same request again (the SDK's retry of a 5xx),
served by another container: a receive with a `ReceiveRequestAttemptId` then lands in the middle of its own
two steps.

Underneath, DynamoDB throttles (`bench.throttling`; its limits, the core's own per-key estimates and the rate of
throttles the core takes for a hot key scaled down alike, so that the fleet's load is past one shard key's), its
index lags (`tests.index_lag`), and calls fail, time out and lose their answers (`faults`, an injector per
container, so that a claim whose answer was lost is known to have been its own). Nobody reshards by hand: shard
counts follow the load by the queues' own decisions (the sweep's, and throttled processes'). The operator's
two-step work (move tasks back to the source and to another queue, at a DLQ's URL and at a dead-letter target's,
FIFO included) and a migration of the table are killed between any two of their writes and finished by whoever
comes next.

Every handle any process was ever given comes back: receipt handles, DLQ handles and receive attempt ids are kept,
and sent again at random moments, by any container, to every action that takes one (delete, batch delete,
visibility 0 and longer, release, transactional delete, DLQ delete and DLQ visibility, a receive repeated with the
same attempt id). A stale handle (its message deleted with it, or claimed again since; for FIFO, its group
claimed again since, but for a plain delete: as in SQS, a handle deletes its message until that message is
received again, even after a later claim took the messages before it) must change nothing: concurrently, the
ledger sees any second holder, and a change of visibility a stale handle was allowed is a violation by itself; at
audits, with the fleet stopped, each stale handle is sent alone (first those whose message another claim holds
now) to an action it is stale to, and the table must be the same before and after it, and what is in flight must
still be exactly what the consumers hold.

Invariants: today's ledger (one holder, FIFO order by claims, nothing lost, nothing stranded, nothing in flight that
no consumer holds, counts at audits), a receive repeated with its attempt id answers what its first answer held,
no message reported stuck for a passing fault, and no key left throttling without growth or a stated reason: a
queue whose keys DynamoDB refused in every half minute for two minutes must have grown, or said why it holds its
count (the core's log line "throttled ..., shards stay ..."); nor may a queue grow past what its busiest minute
needs.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import math
import random
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from queue_core import QueueClient, QueueError, ReceiptHandleStale, ReceivedMessage
from queue_core.autoshard import KEY_WRITE_UNITS, SIZE_FOR, THROTTLE_GROWTH
from queue_core.keys import _b64 as b64_group
from queue_core.layout import CURRENT_LAYOUT
from queue_core.receipts import unsigned
from queue_core.table import table_definition
from sqs_api.dead_letters import dlq_name

from bench.meter import Meter
from bench.scenarios.load_step import core_limits_scaled
from bench.throttling import Limits, Throttler
from tests.conftest import TABLE, FakeClock
from tests.index_lag import IndexLag
from tests.reliability.faults import WRITES, FaultInjector, Kind
from tests.reliability.ledger import Hold, Ledger
from tests.reliability.paths import ACCOUNT, SQS_ENDPOINT, in_process_sqs, sqs_received
from tests.reliability.shared_marks import every_putter_reads_the_marks
from tests.reliability.stress import RAW_LAYOUT_KEY, STALL_SECONDS, Gate
from tests.reliability.truth import DEAD_LETTERS, FIFO_MESSAGES, STANDARD_MESSAGES, TableTruth, label_of, table_snapshot

STANDARD, FIFO = "fleet", "fleet.fifo"
MAIN_QUEUES = (STANDARD, FIFO)
# Each main queue names a dead-letter target of its kind (read over SQS besides its own DLQ URL), and move tasks
# take its dead letters into another queue of its kind.
TARGETS = {STANDARD: "fleet-dead", FIFO: "fleet-dead.fifo"}
MOVED = {STANDARD: "fleet-moved", FIFO: "fleet-moved.fifo"}
QUEUES = (*MAIN_QUEUES, *TARGETS.values(), *MOVED.values())
CLIENT = "a"
VISIBILITY = 30
MAX_RECEIVE_COUNT = 3
DEDUP_WINDOW_SECONDS = 300
GROUPS = 8
POISON_EVERY = 11
# Two containers' clocks differ by up to twice this: a claim taken by a clock ahead of its holder's ends that much
# earlier for the ledger.
CLOCK_OFFSET_SECONDS = 0.05
SKEW_MS = int(2 * CLOCK_OFFSET_SECONDS * 1000)
# Queue time per DynamoDB call: the fleet carries about a message a second of queue time (a third of the stress
# runs' pace per call), so that its producers, each a small share, add up to more than one shard key takes.
SECONDS_PER_CALL = 0.05
# DynamoDB's limits (and the core's own estimate of a key's) divided by this.
LOAD_SCALE = 1000
TABLE_UNITS = 400_000.0  # the table's quota, unscaled: only keys are meant to run hot
BUCKET_SECONDS = 20.0
INDEX_LAG_SECONDS = 3.0
LOOK_SECONDS = 1.0  # wall time between the driver's looks at the table
SWEEP_EVERY_SECONDS = 60.0
SWEEP_BUDGET_SECONDS = 8.0
DLQ_EVERY_SECONDS = 40.0
DLQ_HOLD_SECONDS = 90
BACKLOG_CAP = 24  # messages stored and not settled, per main queue: keeps moto's table small
# Containers alive at most per function; producers are the many.
POOLS = {"producer": 40, "poller": 8, "sqs": 8, "operator": 3, "sweeper": 2}
# A container serves this many invocations at most before it is reclaimed, and is frozen between them: mostly
# for seconds, now and then for minutes of queue time.
LIFETIME = (3, 16)
SHORT_FREEZE_SECONDS = (0.0, 10.0)
LONG_FREEZE_SECONDS = (60.0, 200.0)
LONG_FREEZE_SHARE = 0.3
# Invocations that end with the container killed between two writes: (chance, the write it may die after, at most).
KILLS = {
    "send": (0.05, 2),
    "sqs send": (0.05, 2),
    "poll": (0.06, 8),
    "sqs receive": (0.08, 8),
    "dead letters": (0.3, 12),
    "sweep": (0.3, 30),
    "migrate": (0.5, 40),
}
FUNCTION_OF = {
    "send": "producer",
    "sqs send": "sqs",
    "poll": "poller",
    "sqs receive": "sqs",
    "dead letters": "operator",
    "sweep": "sweeper",
    "migrate": "sweeper",
}
# Extensions followed by work past the first visibility (inside the extended one).
SLOW_AFTER_EXTENSION = 0.25
REPLAY_SHARE = 0.25  # invocations that also send kept handles again
LOST_ANSWERS = 0.3  # receives with an attempt id whose answer is lost on its way: sent again by the caller
# A key is hot in a window of queue time with this many refusals; hot this long without growth is reported.
# A message's life writes its shard's index key four times (the send, the claim's move, the delete).
WRITES_PER_LIFE = 4
HOT_WINDOW_SECONDS = 30.0
HOT_REFUSALS = 5
HOT_FOR_SECONDS = 120.0
CLAIM = "claim"
IDLE_SECONDS = 0.01
IDLE_MAX_SECONDS = 0.25
IDLE_QUEUE_SECONDS = 1.0
LIVE_ACTIONS = (
    "delete",
    "delete batch",
    "visibility 0",
    "visibility 60",
    "release",
    "transactional delete",
    "sqs delete",
    "sqs delete batch",
    "sqs visibility 0",
    "sqs visibility 60",
)
# The deletes that remove a FIFO message with the handle of a claim whose lock ran out while nobody took the
# message again, even once a later claim took the messages before it (`FifoHolds.delete`, as SQS): to them such a
# handle is stale only when its very message was claimed again. A transactional delete acks the group's lock in
# its transaction and is refused, as a change of visibility or a release is.
LATE_DELETES = ("delete", "delete batch", "sqs delete", "sqs delete batch")
# An attempt id another process is sending again now (`FleetRun.attempts_repeated`).
_RUNNING = 2**62
DEAD_ACTIONS = (
    "sqs delete",
    "sqs visibility 0",
    "sqs visibility 120",
    "dlq delete",
    "dlq visibility 0",
    "dlq visibility 120",
)


class Killed(BaseException):
    """The container was killed in the middle of a call: nothing after it runs (not an `Exception`, so no handler
    of the core catches it)."""


@dataclass(frozen=True)
class FleetScale:
    """How big a fleet run is: messages to the main queues, invocation threads, audits (the fleet stopped, stale
    handles sent alone), handles each audit sends, move tasks of each kind (back to the source, to another queue),
    and the fewest containers a run must have used."""

    messages: int
    workers: int = 6
    audits: int = 2
    audit_replays: int = 16
    redrives: int = 2
    moves: int = 2
    processes: int = 50
    # The queues' ceiling (None: the core's): a receive that finds a shard empty looks at every other one, and a
    # fleet's cold containers know nothing of which are empty, so the short form keeps the count low.
    max_shards: int | None = 8


SHORT = FleetScale(messages=64, workers=4, audits=3, audit_replays=12)
FULL = FleetScale(messages=1_000, audits=6, audit_replays=40, redrives=6, moves=6, processes=300, max_shards=64)


@dataclass(frozen=True)
class Planned:
    index: int
    queue: str
    label: str
    group_id: str | None
    dedup_id: str | None


@dataclass
class Issued:
    """A handle some process was given: a receipt handle (`live`), a dead letter's (`dead`, with the URL it was read
    at), or a receive's attempt id (`attempt`, with its request and the ledger's name of what it reads)."""

    kind: str
    queue: str
    handle: str
    hold: Hold | None = None
    url: str = ""
    request: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    dead: bool = False


def plan(total: int) -> list[Planned]:
    """Messages alternately to the standard and the FIFO queue; one in `POISON_EVERY` always fails. FIFO messages
    spread over `GROUPS` groups; every FIFO message and half the standard ones carry a dedup id."""
    planned = []
    for index in range(total):
        queue = MAIN_QUEUES[index % 2]
        poison = index % POISON_EVERY == POISON_EVERY - 1
        label = f"{queue}/{index:05d}" + ("/poison" if poison else "")
        fifo = queue == FIFO
        group = f"g{index // 2 % GROUPS}" if fifo else None
        dedup = f"d{index}" if fifo or index % 4 == 0 else None
        planned.append(Planned(index, queue, label, group, dedup))
    return planned


def url_of(queue: str) -> str:
    return f"{SQS_ENDPOINT}/sqs/{CLIENT}/{ACCOUNT}/{queue}"


def arn_of(queue: str) -> str:
    return f"arn:aws:sqs:us-east-1:{ACCOUNT}:{queue}"


def dead_name(source: str) -> str:
    """The ledger's name for a source queue's DLQ (its dead letters, wherever they are read)."""
    return f"{dlq_name(source)}/{CLIENT}"


# boto3's default session must not make clients on two threads at once.
_CLIENTS = threading.Lock()


class Process:
    """One container: its own DynamoDB client and core, its clock `offset` off the fleet's, and (for the SQS
    function) the SQS handler on that core, reached through boto3's SQS client."""

    def __init__(self, fleet: FleetRun, function: str, number: int, offset: float, plain: bool = False) -> None:
        self.fleet = fleet
        self.function = function
        self.number = number
        self.offset = offset
        with _CLIENTS:
            self.dynamodb = boto3.client(
                "dynamodb", region_name="us-east-1", config=Config(retries={"mode": "standard", "max_attempts": 5})
            )
        events = self.dynamodb.meta.events
        events.register("before-call.dynamodb", self._before_call)
        self.injector = None if plain else fleet.underneath(self.dynamodb)
        events.register("after-call.dynamodb", self._after_call)
        self.core = QueueClient(TABLE, dynamodb=self.dynamodb, clock=self.now)
        self._sqs: Any = None
        self.dead = False
        self.kill_at: int | None = None
        self.writes = 0
        self.invocations = 0
        self.lifetime = 0
        self.thaw_at = 0.0
        self.frozen_long = False
        self.killed_counted = False

    def now(self) -> float:
        return self.fleet.clock() + self.offset

    @property
    def sqs(self) -> Any:
        if self._sqs is None:
            with _CLIENTS:
                self._sqs = in_process_sqs(self.core, CLIENT)
        return self._sqs

    def arm(self, kill_at: int | None) -> None:
        self.writes, self.kill_at = 0, kill_at

    def _before_call(self, model: Any, **_: Any) -> None:
        if self.dead:
            raise Killed(f"container {self.function}-{self.number} is gone")
        self.fleet.tick(model.name)

    def _after_call(self, model: Any, **_: Any) -> None:
        if model.name not in WRITES or self.kill_at is None:
            return
        self.writes += 1
        if self.writes >= self.kill_at:
            self.dead = True
            raise Killed(f"container {self.function}-{self.number} killed after write {self.writes}")

    def retire(self) -> None:
        """The container is gone (reclaimed or killed): its threads end."""
        context = self.core._ctx
        context.pool.shutdown(wait=False)
        context.inner_pool.shutdown(wait=False)


@dataclass(frozen=True)
class Risk:
    """What a kill (or a failure) during a call may leave held with nobody to hold it: `count` messages or groups
    of the ledger's `name`, until `until` (ms), or, for claims the call itself makes or extends, `seconds` from when
    it is killed or fails, if later: a claim is written some time after the call begins (a receive reads first, and
    every worker's calls move the clock meanwhile), and lasts from its write."""

    name: str
    count: int
    until: int
    seconds: int = 0

    def left(self, now_ms: int) -> tuple[str, int, int]:
        """The phantom it leaves at `now_ms`: (ledger name, count, until when)."""
        later = now_ms + self.seconds * 1000 + SKEW_MS if self.seconds else 0
        return (self.name, self.count, max(self.until, later))


@dataclass
class Invocation:
    """One invocation of a function on a container; `risk` is what a kill during the current call may leave held.
    It stays set until the call ends, across the containers the caller's SDK sends it to after a kill: each one
    killed in it may leave its own."""

    kind: str
    process: Process
    risk: Risk | None = None
    used: list[Process] = field(default_factory=list)


class FleetRun:
    """One run: `create_queues()`, `run()` (returns when every message is settled, or when nothing progressed for
    `STALL_SECONDS`), `verify()` for the problems by invariant, `report()` for the figures."""

    def __init__(
        self,
        admin: QueueClient,
        clock: FakeClock,
        truth: TableTruth,
        scale: FleetScale,
        faults: FaultInjector | None = None,
        seed: int = 23,
    ) -> None:
        self.admin = admin
        self.clock = clock
        self.truth = truth
        self.scale = scale
        # Each container's client fails on its own (the injector `faults` is the pattern of each): what failed
        # under one call is that container's.
        self.faults = faults
        self.injectors: list[FaultInjector] = []
        self.injecting = faults is not None
        self.seed = seed
        self.ledger = Ledger()
        self.meter = Meter()
        self.meter.register_table(table_definition(TABLE))
        limits = dataclasses.replace(Limits().with_table(TABLE_UNITS).scaled(LOAD_SCALE), window=BUCKET_SECONDS)
        self.throttler = Throttler(self.meter, clock, limits)
        self.planned = plan(scale.messages)
        self.by_label = {message.label: message for message in self.planned}
        self.pending: list[Planned] = list(self.planned)
        self.stored: dict[str, set[str]] = defaultdict(set)
        self.stored_by_queue: Counter = Counter()
        self.stored_at: dict[str, list[float]] = defaultdict(list)
        # Copies a message may rightly have beyond its first: a send that failed may have stored it, and a resend
        # stores it again without a dedup id, or with one past the window since that send.
        self.extra_copies: Counter = Counter()
        self.uncertain_since: dict[str, int] = {}
        self.settled_by_queue: dict[str, int] = {}
        self.live_count = 0
        self.problems: dict[str, list[str]] = defaultdict(list)
        self.figures: Counter = Counter()
        self.kills: Counter = Counter()
        self.issued: list[Issued] = []
        self._issued_by_kind: dict[str, list[Issued]] = defaultdict(list)
        self.handles: dict[str, Hold] = {}
        # Who was handed each handle (the invocation and its container), to explain a violation.
        self.via: dict[str, str] = {}
        self.deleted_by_replay: set[str] = set()
        # Handles whose delete succeeded: their message is gone.
        self.spent: set[str] = set()
        # Claims a killed call may have left with nobody to hold them: (ledger name, count, until).
        self.phantoms: list[tuple[str, int, int]] = []
        # Move tasks begun and ended per source queue: a receive repeated across one may rightly answer anew.
        self.moves_begun: Counter = Counter()
        # DLQ handles whose copy was gone after a move task: stale from then on.
        self.moved_away: set[str] = set()
        self.shards: dict[str, list[tuple[float, int]]] = {queue: [] for queue in QUEUES}
        self.reasons: list[tuple[float, str]] = []
        self.left_held: list[tuple[float, str]] = []
        # Attempt ids whose answer the core said it could neither keep nor give back (`receive_attempts.UNKEPT`).
        self.unkept: set[str] = set()
        # When another process last ended sending each attempt id again (`_RUNNING` while it does: `_repeat_attempt`):
        # it may work on what the kept answer held, and the attempt is then spent for the caller that first used it,
        # as SQS spends it.
        self.attempts_repeated: dict[str, int] = {}
        self.calls = 0
        self.calls_by_kind: Counter = Counter()
        self.elapsed = 0.0
        self.settled_count = 0
        self.migrated = False
        self._layout_dropped = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticking = threading.Event()
        self._gate = Gate()
        self._local = threading.local()
        self._numbers = iter(range(10**9))
        self._pools: dict[str, list[Process]] = {function: [] for function in POOLS}
        self._alive: Counter = Counter()
        self._busy: set[str] = set()
        self._next_sweep = 0.0
        self._next_dlq = 0.0
        self._attempts = iter(range(10**9))
        self._receives = iter(range(10**9))
        self._lag: IndexLag | None = None
        self._started_at = clock()

    # Set-up and what every container's client carries.
    def create_queues(self) -> None:
        common: dict[str, Any] = {"visibility_timeout": VISIBILITY, "max_receive_count": MAX_RECEIVE_COUNT}
        if self.scale.max_shards is not None:
            common["max_shards"] = self.scale.max_shards
        for queue in QUEUES:
            created = self.admin.create_queue(queue, dedup_window_seconds=DEDUP_WINDOW_SECONDS, **common)
            # The count from the start: the driver's first look may come after a throttled process changed it.
            self.shards[queue].append((self.clock(), created.shards))
        for source, target in TARGETS.items():
            self.admin.update_queue(source, dead_letter_target=target)
        self._audit_process = Process(self, "audit", -1, 0.0, plain=True)

    def underneath(self, dynamodb: Any) -> FaultInjector | None:
        """DynamoDB as every container meets it: failing calls (its own injector, returned), the meter,
        throttling."""
        injector = None
        if self.faults is not None:
            with self._lock:
                injector = dataclasses.replace(
                    self.faults,
                    seed=self.faults.seed * 7919 + len(self.injectors),
                    label=_claim_or_not,
                    counts=Counter(),
                    counts_by_label=Counter(),
                    attempts=Counter(),
                    enabled=self.injecting,
                )
                self.injectors.append(injector)
            injector.attach(dynamodb)
        self.meter.attach(dynamodb)
        self.throttler.attach(dynamodb)
        return injector

    def _inject(self, enabled: bool) -> None:
        with self._lock:
            self.injecting = enabled
            for injector in self.injectors:
                injector.enabled = enabled

    def fault_counts(self) -> Counter:
        total: Counter = Counter()
        with self._lock:
            for injector in self.injectors:
                total.update(injector.counts)
        return total

    def _answers_lost(self, invocation: Invocation) -> int:
        """Claims of the invocation's containers whose answers were lost: each may hold a message nobody was given
        (the core leaves it to its visibility timeout, as SQS does)."""
        return sum(
            process.injector.counts_by_label[(CLAIM, Kind.ANSWER_LOST)]
            for process in invocation.used
            if process.injector is not None
        )

    def tick(self, operation: str) -> None:
        """Every DynamoDB call moves queue time on (not while the fleet stands still for an audit's reads)."""
        if self._ticking.is_set():
            self.clock.advance(SECONDS_PER_CALL)
            with self._lock:
                self.calls += 1
                self.calls_by_kind[(getattr(self._local, "kind", "core threads"), operation)] += 1

    def _wait_idle(self, seconds: float) -> None:
        if self._ticking.is_set():
            self.clock.advance(seconds)

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self.figures[name] += amount

    def _keep(self, issued: Issued) -> None:
        """Every handle and attempt id any process was given (called with the lock held)."""
        self.issued.append(issued)
        self._issued_by_kind[issued.kind].append(issued)

    def problem(self, invariant: str, text: str) -> None:
        with self._lock:
            self.problems[invariant].append(text)

    # Containers.
    def _take(self, function: str, rng: random.Random) -> Process | None:
        """A warm container of the function whose freeze is over, else a cold one (the oldest frozen one is
        reclaimed when the function is at its size)."""
        now = self.clock()
        with self._lock:
            pool = self._pools[function]
            ready = [process for process in pool if process.thaw_at <= now]
            if ready and (self._alive[function] >= POOLS[function] or rng.random() > 0.1):
                process = rng.choice(ready)
                pool.remove(process)
                if process.frozen_long:
                    self.figures["thawed after minutes"] += 1
                self.figures["warm starts"] += 1
                return process
            reclaimed = None
            if self._alive[function] >= POOLS[function]:
                if not pool:
                    return None
                reclaimed = max(pool, key=lambda process: process.thaw_at)
                pool.remove(reclaimed)
                self.figures["reclaimed"] += 1
            else:
                self._alive[function] += 1
            number = next(self._numbers)
            self.figures["cold starts"] += 1
            self.figures[f"containers {function}"] += 1
        if reclaimed is not None:
            reclaimed.retire()
        offset = rng.uniform(-CLOCK_OFFSET_SECONDS, CLOCK_OFFSET_SECONDS)
        process = Process(self, function, number, offset)
        process.lifetime = rng.randint(*LIFETIME)
        return process

    def _give_back(self, process: Process, rng: random.Random) -> None:
        process.arm(None)
        process.invocations += 1
        if process.dead or process.invocations >= process.lifetime:
            with self._lock:
                self._alive[process.function] -= 1
                if not process.dead:
                    self.figures["reclaimed"] += 1
            process.retire()
            return
        long = rng.random() < LONG_FREEZE_SHARE
        seconds = rng.uniform(*(LONG_FREEZE_SECONDS if long else SHORT_FREEZE_SECONDS))
        process.thaw_at, process.frozen_long = self.clock() + seconds, long
        with self._lock:
            self.figures["frozen for minutes" if long else "frozen"] += 1
            self._pools[process.function].append(process)

    # The invocations.
    def _worker(self, number: int) -> None:
        rng = random.Random(self.seed * 1009 + number)
        invokers: dict[str, Callable[[Invocation, random.Random], None]] = {
            "send": self._send,
            "sqs send": self._sqs_send,
            "poll": self._poll,
            "sqs receive": self._sqs_receive,
            "dead letters": self._dead_letters,
            "sweep": self._sweep,
            "migrate": self._migrate,
        }
        idle = IDLE_SECONDS
        self._gate.enter()
        try:
            while not self._stop.is_set():
                self._gate.wait_if_paused()
                self._local.found_nothing = False
                kind = self._choose(rng)
                process = self._take(FUNCTION_OF[kind], rng)
                if process is None:  # every container of the function is frozen, and it has as many as it may
                    self._done(kind)
                    time.sleep(IDLE_SECONDS)
                    continue
                invocation = Invocation(kind, process, used=[process])
                self._add(f"invocations {kind}")
                self._local.kind = kind
                self._local.where = f"{kind} by {process.function}-{process.number}"
                chance, latest = KILLS[kind]
                process.arm(rng.randint(1, latest) if rng.random() < chance else None)
                try:
                    invokers[kind](invocation, rng)
                    if rng.random() < REPLAY_SHARE:
                        self._replay(invocation, rng)
                except Killed:
                    self._killed(invocation)
                finally:
                    self._done(kind)
                    for used in invocation.used:
                        self._give_back(used, rng)
                # Pollers that find nothing back off, as deployed ones do: a long poll's wait, in which queue time
                # passes without a call (messages in flight or delayed come back meanwhile).
                if self._local.found_nothing:
                    self._wait_idle(IDLE_QUEUE_SECONDS)
                    time.sleep(rng.uniform(idle / 2, idle))
                    idle = min(idle * 2, IDLE_MAX_SECONDS)
                else:
                    idle = IDLE_SECONDS
        finally:
            self._gate.leave()

    def _choose(self, rng: random.Random) -> str:
        """The scheduled work when due (one of each kind at a time), else a send or a receive."""
        now = self.clock()
        with self._lock:
            if not self.migrated and self.settled_count >= len(self.planned) // 2 and "migrate" not in self._busy:
                self._busy.add("migrate")
                return "migrate"
            if now >= self._next_sweep and "sweep" not in self._busy:
                self._busy.add("sweep")
                self._next_sweep = now + SWEEP_EVERY_SECONDS
                return "sweep"
            if now >= self._next_dlq and "dead letters" not in self._busy:
                self._busy.add("dead letters")
                self._next_dlq = now + DLQ_EVERY_SECONDS
                return "dead letters"
            sending = bool(self.pending)
        kinds = ["poll", "sqs receive"] + (["send", "send", "sqs send"] if sending else [])
        return rng.choice(kinds)

    def _done(self, kind: str) -> None:
        with self._lock:
            self._busy.discard(kind)

    def _killed(self, invocation: Invocation) -> None:
        process = invocation.process
        with self._lock:
            if process.killed_counted:
                return
            process.killed_counted = True
            self.kills[(invocation.kind, process.writes)] += 1
            if invocation.risk is not None:
                self.phantoms.append(invocation.risk.left(self.now_ms()))
            if invocation.kind == "sweep":
                # A sweep holds a stuck FIFO group while it tidies its head: killed then, the hold runs out.
                until = self.now_ms() + 2 * VISIBILITY * 1000
                self.phantoms += [(f"{queue}/{CLIENT}", 10**6, until) for queue in QUEUES if queue.endswith(".fifo")]

    def _switch(self, invocation: Invocation, rng: random.Random) -> bool:
        """The caller's next SQS request goes to another container of the endpoint (its last one was killed)."""
        self._killed(invocation)
        replacement = self._take("sqs", rng)
        if replacement is None:
            return False
        invocation.process = replacement
        invocation.used.append(replacement)
        self._local.where = f"{invocation.kind} by {replacement.function}-{replacement.number} after a kill"
        return True

    # Sends.
    def _backlog(self, queue: str) -> int:
        with self._lock:
            return self.stored_by_queue[queue] - self.settled_by_queue.get(queue, 0)

    def _take_pending(self, rng: random.Random) -> list[Planned]:
        """A small share for one producer: one to three messages of one queue, in planned order."""
        with self._lock:
            queues = [queue for queue in MAIN_QUEUES if any(message.queue == queue for message in self.pending)]
        queues = [queue for queue in queues if self._backlog(queue) < BACKLOG_CAP]
        if not queues:
            return []
        queue = rng.choice(queues)
        want = rng.randint(1, 3)
        with self._lock:
            taken = [message for message in self.pending if message.queue == queue][:want]
            for message in taken:
                self.pending.remove(message)
        return taken

    def _put_back(self, messages: list[Planned], started: int, uncertain: bool, deduplicated: bool) -> None:
        """Messages a send did not store for sure go back to be sent again."""
        if uncertain:
            self._may_have_stored(messages, started, deduplicated)
        with self._lock:
            self.pending[:0] = messages

    def _may_have_stored(self, messages: list[Planned], started: int, deduplicated: bool) -> None:
        """A send that failed, or was sent again, may have stored its messages: a later send stores them again
        without their dedup id (`deduplicated`: this one carried it), or past its window."""
        with self._lock:
            for message in messages:
                if deduplicated and message.dedup_id is not None:
                    self.uncertain_since.setdefault(message.label, started)
                else:
                    self.extra_copies[message.label] += 1

    def _stored(self, message: Planned, message_id: str, ended: int, deduplicated: bool) -> None:
        with self._lock:
            first = not self.stored[message.label]
            self.stored[message.label].add(message_id)
            if first:
                self.stored_by_queue[message.queue] += 1
                self.stored_at[message.queue].append(self.clock())
                self.figures["sent"] += 1
            since = self.uncertain_since.get(message.label)
            # The window counts on the storing container's clock, and is read on the next sender's: up to
            # `SKEW_MS` apart.
            if since is not None and (not deduplicated or ended + SKEW_MS >= since + DEDUP_WINDOW_SECONDS * 1000):
                self.figures["stored again after an uncertain send"] += 1
                self.extra_copies[message.label] += 1

    def _entry(self, message: Planned) -> dict[str, Any]:
        entry: dict[str, Any] = {"body": message.label}
        if message.group_id is not None:
            entry["group_id"] = message.group_id
        if message.dedup_id is not None:
            entry["dedup_id"] = message.dedup_id
        return entry

    def _send(self, invocation: Invocation, rng: random.Random) -> None:
        batch = self._take_pending(rng)
        if not batch:
            return
        sub = invocation.process.core.queue(batch[0].queue, CLIENT)
        started = self.now_ms()
        try:
            result = sub.send_batch([self._entry(message) for message in batch])
        except QueueError:
            self._put_back(batch, started, True, deduplicated=True)
            self._add("send errors")
            return
        except Killed:
            self._put_back(batch, started, True, deduplicated=True)
            raise
        ended = self.now_ms()
        done = set()
        for success in result.successful:
            self._stored(batch[success["index"]], success["message_id"], ended, deduplicated=True)
            done.add(success["index"])
        throttled = {failure["index"] for failure in result.failed if failure.get("code") == "Throttled"}
        self._put_back([m for n, m in enumerate(batch) if n in throttled], started, True, deduplicated=True)
        self._put_back([m for n, m in enumerate(batch) if n not in done | throttled], started, False, True)

    def _sqs_send(self, invocation: Invocation, rng: random.Random) -> None:
        """Sends through the SQS endpoint: a killed container fails the caller, who sends again elsewhere."""
        batch = self._take_pending(rng)
        if not batch:
            return
        entries = []
        for n, message in enumerate(batch):
            entry: dict[str, Any] = {"Id": str(n), "MessageBody": message.label}
            if message.group_id is not None:  # only FIFO messages carry their dedup id over SQS
                entry["MessageGroupId"] = message.group_id
                entry["MessageDeduplicationId"] = message.dedup_id
            entries.append(entry)
        fifo = batch[0].queue == FIFO
        started = self.now_ms()
        containers = len(invocation.used)
        answer = self._sqs(invocation, rng, "send_message_batch", QueueUrl=url_of(batch[0].queue), Entries=entries)
        if len(invocation.used) > containers:  # sent again after a killed container, which may have stored some
            self._may_have_stored(batch, started, deduplicated=fifo)
        if answer is None:
            self._put_back(batch, started, True, deduplicated=fifo)
            return
        ended = self.now_ms()
        done = set()
        for success in answer.get("Successful", []):
            self._stored(batch[int(success["Id"])], success["MessageId"], ended, deduplicated=fifo)
            done.add(int(success["Id"]))
        self._put_back([m for n, m in enumerate(batch) if n not in done], started, True, deduplicated=fifo)

    def _sqs(self, invocation: Invocation, rng: random.Random, action: str, **params: Any) -> Any:
        """One SQS request of the caller; a 5xx (the container killed in the middle) is sent again, as the SDK
        does, and lands on another container. None when it failed."""
        for _ in range(3):
            try:
                return getattr(invocation.process.sqs, action)(**params)
            except Killed:
                if not self._switch(invocation, rng):
                    return None
            except (ClientError, BotoCoreError) as error:
                code = error.response["Error"]["Code"] if isinstance(error, ClientError) else "transport"
                self._add(f"sqs error {code}")
                return None
        return None

    # Holding messages.
    def _deliver(
        self,
        name: str,
        messages: list[ReceivedMessage],
        before: int,
        after: int,
        visibility: int,
        lock_of: Callable[[ReceivedMessage], str] | None = None,
        url: str = "",
        dead: bool = False,
    ) -> list[Hold]:
        """What a receive answered, recorded. A handle some process was handed before is the same claim, answered
        again to a receive repeated with its attempt id (by any process): held on from this answer, unless a later
        claim took its message meanwhile."""
        with self._lock:
            known = {message.receipt_handle: self.handles.get(message.receipt_handle) for message in messages}
        again = {handle: hold for handle, hold in known.items() if hold is not None}
        for hold in again.values():
            if self.ledger.superseded(hold, before):
                self.problem(
                    "attempts",
                    f"{name} {hold.body}: a receive repeated with its attempt id answered a handle whose message was "
                    f"claimed again since",
                )
            self.ledger.extended(hold, before - SKEW_MS, after + SKEW_MS, visibility)
        fresh = [message for message in messages if message.receipt_handle not in again]
        made = self.ledger.deliver(name, fresh, before - SKEW_MS, after + SKEW_MS, visibility, lock_of)
        queue = name.rsplit("/", 1)[0]
        with self._lock:
            for message, hold in zip(fresh, made, strict=True):
                label = label_of({"attrs": message.attributes, "body": message.body})
                if label not in self.by_label:
                    self.problems["bodies"].append(f"{name}: a message never sent delivered: {label}")
                self.handles[message.receipt_handle] = hold
                self.via[message.receipt_handle] = getattr(self._local, "where", "audit")
                self._keep(Issued("dead" if dead else "live", queue, message.receipt_handle, hold, url))
            self.figures["deliveries"] += len(made)
            self.figures["answered again"] += len(again)
            return [self.handles[message.receipt_handle] for message in messages]

    def _settle(self, invocation: Invocation, holds: list[Hold], call: Callable[[], Any], deleting: bool) -> bool:
        """A delete or a give-back: the holders give the messages up from now; a call that fails (or a container
        killed in it) may have left them held until their claims end. A handle whose delete succeeded is spent:
        nothing it is sent to again may change anything."""
        now = self.now_ms()
        for hold in holds:
            self.ledger.settling(hold, now)
        risk = Risk(holds[0].sub_queue, len(holds), max(hold.lock.ends_hi for hold in holds) + SKEW_MS)
        if not self._risked(invocation, risk, call):
            return False
        if deleting:
            with self._lock:
                self.spent.update(hold.handle for hold in holds)
        return True

    def _extend(self, invocation: Invocation, hold: Hold, call: Callable[[], Any], seconds: int) -> bool:
        before = self.now_ms()
        self.ledger.extending(hold, before, seconds)
        if not self._risked(invocation, Risk(hold.sub_queue, 1, before + seconds * 1000 + SKEW_MS, seconds), call):
            return False
        self.ledger.extended(hold, before - SKEW_MS, self.now_ms() + SKEW_MS, seconds)
        return True

    def _risked(self, invocation: Invocation, risk: Risk, call: Callable[[], Any]) -> bool:
        """Whether `call` succeeded. A stale handle's call fails holding nothing; any other failure (and a kill,
        which leaves `risk` on the invocation) may leave `risk` held: (ledger name, how many, until when)."""
        invocation.risk = risk
        try:
            call()
        except ReceiptHandleStale:
            self._add("stale handles")
            succeeded = False
        except QueueError as error:
            self._add(f"settle error {error.code}")
            self._add("settle errors")
            with self._lock:
                self.phantoms.append(risk.left(self.now_ms()))
            succeeded = False
        else:
            succeeded = True
        invocation.risk = None
        return succeeded

    def _slow(self, seconds: float) -> None:
        """A consumer that works for `seconds` of queue time: the time passes (a fleet has few workers, and one
        waiting for the others' calls to move the clock could wait for ever when they all do)."""
        self._gate.wait_if_paused()
        self.clock.advance(seconds)

    def _poll(self, invocation: Invocation, rng: random.Random) -> None:
        """The poller: receives with the library, then works through each message or FIFO group."""
        queue = rng.choice([STANDARD, FIFO, STANDARD, FIFO, MOVED[STANDARD], MOVED[FIFO]])
        sub = invocation.process.core.queue(queue, CLIENT)
        name = f"{queue}/{CLIENT}"
        want = rng.randint(1, 4)
        before = self.now_ms()
        invocation.risk = Risk(name, want, before + VISIBILITY * 1000 + SKEW_MS, VISIBILITY)
        lost = self._answers_lost(invocation)
        try:
            messages = sub.receive(max_messages=want, visibility_timeout=VISIBILITY)
        except QueueError as error:
            # A claim whose head DynamoDB then refused to read, and its unlock too, fails the receive and leaves its
            # group locked until the lock runs out (as SQS may leave a failed receive's messages in flight); so
            # does a claim whose answer was lost.
            invocation.risk = None
            with self._lock:
                self.phantoms.append((name, want, self.now_ms() + VISIBILITY * 1000 + SKEW_MS))
            self._add(f"receive error {error.code}")
            return
        invocation.risk = None
        self._lost_claims(invocation, name, lost, VISIBILITY, want)
        if not messages:
            self._local.found_nothing = True
            return
        holds = self._deliver(name, messages, before, self.now_ms(), VISIBILITY)
        for unit in _units(holds):
            self._work(invocation, unit, rng, library=sub)

    def _lost_claims(self, invocation: Invocation, name: str, before: int, visibility: int, most: int) -> None:
        """Claims whose answers were lost since `before` (`_answers_lost`, of a receive of `most` messages at
        most) may hold messages until they run out."""
        lost = min(self._answers_lost(invocation) - before, most)
        if lost > 0:
            with self._lock:
                self.phantoms.append((name, lost, self.now_ms() + visibility * 1000 + SKEW_MS))
                self.figures["claims whose answer was lost"] += lost

    def _work(self, invocation: Invocation, unit: list[Hold], rng: random.Random, library: Any = None) -> None:
        """One message, or a FIFO group's messages in order: processed, given back, abandoned, extended, deleted
        one by one, in a batch, or in a transaction; with the library's sub-queue `library`, or over SQS."""
        url = url_of(unit[0].sub_queue.rsplit("/", 1)[0])
        over = "" if library is not None else "sqs "

        def call(action: str, holds: list[Hold]) -> Callable[[], Any]:
            return self._call_for(invocation, rng, action, [hold.handle for hold in holds], library, url)

        for position, hold in enumerate(unit):
            roll = rng.choice((0.04, 0.12)) if hold.body.endswith("/poison") else rng.random()
            rest = unit[position:]
            if roll < 0.08:
                self._add("crashes")
                return
            if roll < 0.16:
                self._add("releases")
                for later in rest:
                    action = f"release {rng.choice((0, 5))}" if library is not None else "sqs visibility 0"
                    self._settle(invocation, [later], call(action, [later]), deleting=False)
                return
            if roll < 0.26:
                self._add("extensions")
                if not self._extend(invocation, hold, call(f"{over}visibility 60", [hold]), 60):
                    return
                if rng.random() < SLOW_AFTER_EXTENSION:
                    # It works past its first visibility, inside the extended one: nobody else may claim it
                    # meanwhile, and its delete then still holds.
                    self._add("slow after an extension")
                    self._slow(VISIBILITY + 1)
            elif roll < 0.28:
                self._add("slow consumers")
                self._slow(VISIBILITY + 1)
            done = list(itertools.takewhile(lambda later: not later.body.endswith("/poison"), rest))
            if 0.3 <= roll < 0.4 and len(done) > 1:
                self._add("batch deletes")
                # Up to a message that always fails: the rest of the group is left to its visibility timeout.
                self._settle(invocation, done, call(f"{over}delete batch", done), deleting=True)
                return
            action = "transactional delete" if 0.4 <= roll < 0.5 and library is not None else f"{over}delete"
            if not self._settle(invocation, [hold], call(action, [hold]), deleting=True):
                return

    def _call_for(
        self, invocation: Invocation, rng: random.Random, action: str, handles: list[str], sub: Any, url: str
    ) -> Callable[[], Any]:
        """The call that sends `handles` (one, but for a batch) to `action`: with the library's sub-queue `sub`,
        or over SQS at `url` (`sqs ...`). A number at the end is the seconds of a visibility or a release."""
        seconds, handle = _seconds(action), handles[0]
        base = action.rstrip("0123456789 ")
        if base.startswith("sqs "):
            params: dict[str, Any] = {"QueueUrl": url, "ReceiptHandle": handle}
            if base == "sqs delete batch":
                params = {
                    "QueueUrl": url,
                    "Entries": [{"Id": str(n), "ReceiptHandle": h} for n, h in enumerate(handles)],
                }
            if base == "sqs visibility":
                params["VisibilityTimeout"] = seconds
            name = {"sqs delete": "delete_message", "sqs delete batch": "delete_message_batch"}.get(
                base, "change_message_visibility"
            )
            return partial(self._sqs_settle, invocation, rng, name, **params)
        calls: dict[str, Callable[[], Any]] = {
            "delete": partial(sub.delete, handle),
            "delete batch": partial(_delete_batch, sub, handles),
            "visibility": partial(sub.change_visibility, handle, seconds),
            "release": partial(sub.release, handle, seconds),
            "transactional delete": partial(_transactional_delete, sub, handle),
            "dlq delete": partial(_dlq_delete, sub, handle),
            "dlq visibility": partial(sub.dlq_change_visibility, handle, seconds),
        }
        return calls[base]

    def _sqs_settle(self, invocation: Invocation, rng: random.Random, action: str, **params: Any) -> None:
        """An SQS settle as the library's are judged: `ReceiptHandleStale` when SQS says the message is not in
        flight, `QueueError` when the request failed. A container killed in the middle fails the request; the
        caller's SDK sends it again, to another container."""
        for _ in range(3):
            try:
                answer = getattr(invocation.process.sqs, action)(**params)
                break
            except Killed:
                if not self._switch(invocation, rng):
                    raise
            except ClientError as error:
                if error.response["Error"]["Code"] == "MessageNotInflight":
                    raise ReceiptHandleStale("not in flight") from None
                raise QueueError(error.response["Error"]["Code"]) from None
            except BotoCoreError:
                raise QueueError("transport") from None
        else:
            raise QueueError("the endpoint failed every time")
        if answer.get("Failed"):  # a batch: SQS answers a stale handle's delete with success
            raise QueueError(answer["Failed"][0].get("Code", "batch entry failed"))

    def _sqs_receive(self, invocation: Invocation, rng: random.Random) -> None:
        """A consumer over SQS; FIFO receives carry an attempt id, and half of them lose their first answer."""
        queue = rng.choice(MAIN_QUEUES)
        request: dict[str, Any] = {
            "QueueUrl": url_of(queue),
            "MaxNumberOfMessages": rng.randint(1, 4),
            "VisibilityTimeout": VISIBILITY,
            "AttributeNames": ["All"],
            "MessageAttributeNames": ["All"],
        }
        if queue == FIFO and rng.random() < 0.7:
            request["ReceiveRequestAttemptId"] = f"attempt-{next(self._attempts)}"
        holds = self._receive_over_sqs(invocation, rng, f"{queue}/{CLIENT}", request, VISIBILITY)
        self._local.found_nothing = not holds
        for unit in _units(holds):
            self._work(invocation, unit, rng)

    def _receive_over_sqs(
        self,
        invocation: Invocation,
        rng: random.Random,
        name: str,
        request: dict[str, Any],
        visibility: int,
        dead: bool = False,
    ) -> list[Hold]:
        """A receive over SQS and, with an attempt id, its repeat: after a container killed in the middle (the
        caller's SDK sends it again) or an answer lost on its way (the caller sends it again itself). While the
        claims of the first answer still run, the repeat must answer them."""
        lost_before = self._answers_lost(invocation)
        try:
            attempt = request.get("ReceiveRequestAttemptId")
            if attempt is not None:
                with self._lock:
                    self._keep(
                        Issued("attempt", name.rsplit("/", 1)[0], attempt, request=dict(request), name=name, dead=dead)
                    )
            want = request["MaxNumberOfMessages"]
            moves = self.moves_begun[_source_of(name)] if dead else 0
            before = self.now_ms()
            invocation.risk = Risk(name, want, before + visibility * 1000 + SKEW_MS, visibility)
            first: dict[str, Any] | None = None
            first_after = 0
            try:
                first = invocation.process.sqs.receive_message(**request)
                first_after = self.now_ms()
            except Killed:
                if attempt is None or not self._switch(invocation, rng):
                    raise
                self._add("receives repeated after a killed container")
            except (ClientError, BotoCoreError):
                self._add("sqs receive errors")
                if attempt is None:
                    invocation.risk = None
                    return []
            lost = first is not None and attempt is not None and rng.random() < LOST_ANSWERS
            if first is not None and not lost:
                invocation.risk = None
                messages = [sqs_received(raw, CLIENT) for raw in first.get("Messages", [])]
                return self._deliver_read(name, messages, before, first_after, visibility, request, dead)
            if lost:
                self._add("answers lost, repeated with their attempt id")
            # Said unkept by the first call, not by the repeat (which may log the same id when it receives anew).
            with self._lock:
                first_unkept = attempt in self.unkept
            again_before = self.now_ms()
            answer = self._sqs(invocation, rng, "receive_message", **request)
            again_after = self.now_ms()
            invocation.risk = None
            if answer is None:
                with self._lock:
                    self.phantoms.append((name, want, again_after + visibility * 1000 + SKEW_MS))
                return []
            messages = [sqs_received(raw, CLIENT) for raw in answer.get("Messages", [])]
            if first is not None:
                was = sorted(raw["ReceiptHandle"] for raw in first.get("Messages", []))
                now = sorted(message.receipt_handle for message in messages)
                still_held = first_after + visibility * 1000 - 2 * SKEW_MS > again_after
                moved = dead and self.moves_begun[_source_of(name)] != moves
                if was and was != now and still_held and not moved:
                    if first_unkept:
                        # Neither kept nor given back, said in a log line: the lost answer's claims run out unheld.
                        self._add("repeats of an answer said unkept")
                    elif self.attempts_repeated.get(attempt, 0) >= before:
                        # Another process sent the same attempt id meanwhile (running, or ended since `before`: the
                        # times only grow) and may have settled what it was answered.
                        self._add("repeats of an attempt another process repeated meanwhile")
                    else:
                        self.problem(
                            "attempts",
                            f"{request['QueueUrl'].rsplit('/', 1)[-1]}: a receive repeated with its attempt id "
                            f"{attempt} answered {len(now)} messages, not the {len(was)} of its first answer, whose "
                            f"claims ran until {first_after + visibility * 1000} (repeat at {again_before})",
                        )
                    with self._lock:
                        self.phantoms.append((name, len(was), first_after + visibility * 1000 + SKEW_MS))
            # The answer's claims were made by the first call or by the repeat: claimed within both, held from the
            # repeat on.
            holds = self._deliver_read(name, messages, before, again_after, visibility, request, dead)
            for hold in holds:
                self.ledger.extended(hold, again_before - SKEW_MS, again_after + SKEW_MS, visibility)
            return holds
        finally:
            self._lost_claims(invocation, name, lost_before, visibility, request["MaxNumberOfMessages"])

    def _deliver_read(
        self,
        name: str,
        messages: list[ReceivedMessage],
        before: int,
        after: int,
        visibility: int,
        request: dict[str, Any],
        dead: bool,
    ) -> list[Hold]:
        if not messages:
            return []
        if not dead:
            return self._deliver(name, messages, before, after, visibility, url=request["QueueUrl"])
        # Dead letters read at a target's URL are the source's: recorded under that source's DLQ. A DLQ answers in
        # the order letters arrived, not by their sequence in the source (a redriven one comes back later): the
        # ledger judges no order there, only holders.
        receive = next(self._receives)
        holds: list[Hold] = []
        by_source: dict[str, list[ReceivedMessage]] = defaultdict(list)
        for message in messages:
            by_source[_label_queue(message.body)].append(dataclasses.replace(message, sequence=""))
        for source, own in by_source.items():
            holds += self._deliver(
                dead_name(source),
                own,
                before,
                after,
                visibility,
                lock_of=lambda message: f"{receive}|{message.group_id or message.message_id}",
                url=request["QueueUrl"],
                dead=True,
            )
        order = {message.receipt_handle: n for n, message in enumerate(messages)}
        return sorted(holds, key=lambda hold: order[hold.handle])

    # The operator of the DLQs: reads at a DLQ's URL or at a dead-letter target's, deletes, gives back, extends,
    # and moves what it kept back to the source or into another queue.
    def _dead_letters(self, invocation: Invocation, rng: random.Random) -> None:
        source = rng.choice(MAIN_QUEUES)
        at_target = rng.random() < 0.5
        url = url_of(TARGETS[source] if at_target else dlq_name(source))
        request: dict[str, Any] = {
            "QueueUrl": url,
            "MaxNumberOfMessages": rng.randint(1, 5),
            "VisibilityTimeout": DLQ_HOLD_SECONDS,
            "AttributeNames": ["All"],
            "MessageAttributeNames": ["All"],
        }
        if source == FIFO and rng.random() < 0.4:
            request["ReceiveRequestAttemptId"] = f"attempt-{next(self._attempts)}"
        holds = self._receive_over_sqs(invocation, rng, dead_name(source), request, DLQ_HOLD_SECONDS, dead=True)
        self._add("DLQ reads at a dead-letter target" if at_target else "DLQ reads", len(holds))
        kept = []
        for hold in holds:
            roll = rng.random()
            if roll < 0.15:
                self._add("dead letters left held")
            elif roll < 0.35 or (roll < 0.55 and self.figures["redrives"] >= self.scale.redrives):
                self._add("DLQ deletes")
                call = self._call_for(invocation, rng, "sqs delete", [hold.handle], None, url)
                self._settle(invocation, [hold], call, deleting=True)
            elif roll < 0.65:
                self._add("DLQ releases")
                call = self._call_for(invocation, rng, "sqs visibility 0", [hold.handle], None, url)
                self._settle(invocation, [hold], call, deleting=False)
            else:
                kept.append(hold)
        with self._lock:
            redrives, moves = self.figures["redrives"], self.figures["moves to another queue"]
        if redrives < self.scale.redrives or moves < self.scale.moves:
            to_other = moves < self.scale.moves and (redrives >= self.scale.redrives or rng.random() < 0.5)
            self._move(invocation, rng, source, url, to_other)

    def _move(self, invocation: Invocation, rng: random.Random, source: str, url: str, to_other: bool) -> None:
        """A move task (StartMessageMoveTask) of the source's dead letters: every copy may go, held or not, so
        every DLQ hold of the source counts as given up from its start. Only the copies gone after it make their
        handles stale: a move that failed, was killed, or skipped a group it could not append to (throttled)
        leaves copies behind, and their claims with them."""
        now = self.now_ms()
        with self._lock:
            self.moves_begun[source] += 1
            held = [hold for hold in self.handles.values() if hold.sub_queue == dead_name(source)]
        for hold in held:
            self.ledger.settling(hold, now)
        params: dict[str, Any] = {"SourceArn": arn_of(url.rsplit("/", 1)[-1])}
        if to_other:
            params["DestinationArn"] = arn_of(MOVED[source])
        answer = self._sqs(invocation, rng, "start_message_move_task", **params)
        with self._lock:
            # Handles read before the table is: a copy missing from it is gone for good, never one not written yet.
            held = [hold for hold in self.handles.values() if hold.sub_queue == dead_name(source)]
        left = {str(item.get("dlq_id", "")) for item in self.truth.dlq_items(source, CLIENT)}
        with self._lock:
            self.moves_begun[source] += 1
            self.moved_away.update(hold.handle for hold in held if _dead_copy(hold.handle) not in left)
        if answer is not None:
            self._add("moves to another queue" if to_other else "redrives")

    # Scheduled work.
    def _sweep(self, invocation: Invocation, rng: random.Random) -> None:
        try:
            report = invocation.process.core.sweep(
                budget_seconds=SWEEP_BUDGET_SECONDS, lease_seconds=SWEEP_EVERY_SECONDS / 2
            )
        except QueueError as error:
            self._add(f"sweep error {error.code}")
            self._tidy_holds_left()
            return
        self._add("sweeps" if not report.skipped else "sweeps skipped")
        if report.failures:
            self._tidy_holds_left()

    def _tidy_holds_left(self) -> None:
        """A sweep step DynamoDB throttled (or whose answer was lost) passes its sub-queue over: a FIFO group whose
        expired lock it had just taken to tidy the head stays locked by it, held by nobody, until that lock runs
        out (`_TIDY_LOCK_SECONDS`, as long as a claim's visibility here), one group per sub-queue at most."""
        until = self.now_ms() + VISIBILITY * 1000 + SKEW_MS
        with self._lock:
            self.phantoms += [(f"{queue}/{CLIENT}", 1, until) for queue in QUEUES if queue.endswith(".fifo")]

    def _migrate(self, invocation: Invocation, rng: random.Random) -> None:
        """The table upgraded under the fleet: its layout record dropped once (as a table of an older release has
        none), then migrated, by whichever sweeper container comes next after one was killed in it."""
        if not self._layout_dropped:
            self.admin.dynamodb.delete_item(TableName=TABLE, Key=RAW_LAYOUT_KEY)
            self._layout_dropped = True
        try:
            invocation.process.core.migrate()
        except QueueError as error:
            self._add(f"migration error {error.code}")
            return
        found = self.admin.table_layout()
        if found.layout == CURRENT_LAYOUT and found.migrating_to is None:
            with self._lock:
                self.migrated = True
                self.figures["migrations"] += 1

    # Handles sent again.
    def _replay(self, invocation: Invocation, rng: random.Random) -> None:
        """A handle any process was given, sent again by this one to an action that takes it."""
        kind = rng.choice(("live", "dead", "attempt"))
        with self._lock:
            kept = self._issued_by_kind[kind]
            if not kept:
                return
            issued = rng.choice(kept)
        if issued.kind == "attempt":
            self._repeat_attempt(invocation, rng, issued)
            return
        assert issued.hold is not None
        actions = LIVE_ACTIONS if issued.kind == "live" else DEAD_ACTIONS
        action = rng.choice(actions)
        started = self.now_ms()
        stale = self._stale(issued, started, action)
        if "delete" in action:  # it may delete the message whatever it answers (a lost answer, a kill)
            with self._lock:
                self.deleted_by_replay.add(issued.hold.body)
        accepted = self._act(invocation, rng, issued, action)
        self._add(f"replayed {issued.kind} {action}")
        if accepted and stale and ("visibility" in action or action == "release"):
            self.problem(
                "stale handles",
                f"{issued.hold.sub_queue} {issued.hold.body}: {action} with a stale {issued.kind} handle "
                f"succeeded (its message was deleted, or claimed again, before {started})",
            )

    def _stale(self, issued: Issued, at_ms: int, action: str = "") -> bool:
        """To `action`: a delete with the handle succeeded, a later claim took its message (or group: but for
        `LATE_DELETES`) for sure, or a move task took its dead letter's copy. A late delete of a FIFO message or
        dead letter that no later claim took removes it, live or dead alike (SQS: an old handle's delete succeeds
        and may remove the message); only a change of visibility or a release is spent with the group."""
        assert issued.hold is not None
        with self._lock:
            if issued.handle in self.spent or issued.handle in self.moved_away:
                return True
        return self.ledger.superseded(issued.hold, at_ms, message_only=action in LATE_DELETES)

    def _why_stale(self, issued: Issued) -> str:
        assert issued.hold is not None
        hold, start = issued.hold, self._started_at * 1000
        if issued.handle in self.spent:
            return f"deleted with it; claimed {hold.lock.claimed_lo - start:.0f}, {self.via.get(issued.handle)}"
        if issued.handle in self.moved_away:
            return f"its copy moved by a move task; claimed {hold.lock.claimed_lo - start:.0f}"
        later = [
            f"{lock.token[:6]} at {lock.claimed_lo - start:.0f}"
            for lock in (
                self.ledger.group_locks.get((hold.sub_queue, hold.lock.group), [])
                if hold.lock.group is not None
                else [other.lock for other in self.ledger.holds.get((hold.sub_queue, hold.message_id), [])]
            )
            if lock.token != hold.lock.token and lock.claimed_lo > hold.lock.claimed_hi
        ]
        return f"claimed {hold.lock.claimed_lo - start:.0f} by {hold.lock.token[:6]}, later {later}"

    def _locks(self, queue: str) -> dict[str, str]:
        """The FIFO sub-queue's groups locked now, with their claims' tokens."""
        now = self.now_ms()
        return {
            str(item["sk"]): str(item.get("tok", ""))
            for item in self.truth.scan()
            if str(item["pk"]).startswith(f"F#{queue}#{CLIENT}#") and int(item.get("available_at", 0)) > now
        }

    def _act(self, invocation: Invocation, rng: random.Random, issued: Issued, action: str) -> bool:
        """Sends the handle to `action` with the ledger told as a holder's call tells it; whether it succeeded."""
        hold = issued.hold
        assert hold is not None
        queue = _label_queue(hold.body) if issued.kind == "dead" else issued.queue
        sub = invocation.process.core.queue(queue, CLIENT)
        call = self._call_for(invocation, rng, action, [hold.handle], sub, issued.url or url_of(queue))
        if _gives_up(action):
            return self._settle(invocation, [hold], call, deleting="delete" in action)
        return self._extend(invocation, hold, call, _seconds(action))

    def _repeat_attempt(self, invocation: Invocation, rng: random.Random, issued: Issued, work: bool = True) -> None:
        """`_repeat_one_attempt`, said in `attempts_repeated` while it runs and when it ended."""
        with self._lock:
            self.attempts_repeated[issued.handle] = _RUNNING
        try:
            self._repeat_one_attempt(invocation, rng, issued, work)
        finally:
            with self._lock:
                self.attempts_repeated[issued.handle] = self.now_ms()

    def _repeat_one_attempt(self, invocation: Invocation, rng: random.Random, issued: Issued, work: bool) -> None:
        """A receive sent again with an attempt id some process used: it answers what that receive kept, while
        each of those claims still holds, or receives anew; whatever it answers, this process then holds."""
        name, dead = issued.name, issued.dead
        visibility = int(issued.request["VisibilityTimeout"])
        self._add("replayed attempt ids")
        before = self.now_ms()
        want = int(issued.request["MaxNumberOfMessages"])
        invocation.risk = Risk(name, want, before + visibility * 1000 + SKEW_MS, visibility)
        lost_before = self._answers_lost(invocation)
        try:
            answer = self._sqs(invocation, rng, "receive_message", **issued.request)
        finally:
            self._lost_claims(invocation, name, lost_before, visibility, want)
        after = self.now_ms()
        invocation.risk = None
        if answer is None:
            # A receive anew may have claimed what its failed answer never carried, as in `_receive_over_sqs`.
            with self._lock:
                self.phantoms.append((name, want, after + visibility * 1000 + SKEW_MS))
            return
        messages = [sqs_received(raw, CLIENT) for raw in answer.get("Messages", [])]
        with self._lock:
            kept = all(message.receipt_handle in self.handles for message in messages)
        holds = self._deliver_read(name, messages, before, after, visibility, issued.request, dead)
        if kept and work:  # the kept answer (or nothing): the same claims, held on; their holder works on them
            return
        if dead or not work:
            # A dead letter goes back at once, and so does what an audit received or held again (nobody else runs
            # meanwhile: a kept answer's holder is stopped, and what the repeat held on would be held by nobody).
            url = issued.request["QueueUrl"]
            for hold in holds:
                call = self._call_for(invocation, rng, "sqs visibility 0", [hold.handle], None, url)
                self._settle(invocation, [hold], call, deleting=False)
            return
        for unit in _units(holds):
            self._work(invocation, unit, rng)

    # The driver.
    def run(self) -> None:
        started = time.monotonic()
        watched = _ReasonLog(self)
        with (
            core_limits_scaled() as scale_limits,
            _throttle_rate_scaled(),
            IndexLag(INDEX_LAG_SECONDS, self.clock) as lag,
            watched,
            every_putter_reads_the_marks(),
        ):
            scale_limits(LOAD_SCALE)
            self._lag = lag
            threads = [
                threading.Thread(target=self._worker, args=(n,), name=f"fleet-worker-{n}", daemon=True)
                for n in range(self.scale.workers)
            ]
            self._ticking.set()
            for thread in threads:
                thread.start()
            try:
                self._drive()
            finally:
                self._stop.set()
                self._gate.resume()
                for thread in threads:
                    thread.join(timeout=60)
                self.elapsed = time.monotonic() - started
            self._inject(False)
            with lag.settled():
                self._finish()
        self._ticking.clear()

    def _drive(self) -> None:
        total = len(self.planned)
        audit_at = [total * (n + 1) // (self.scale.audits + 1) for n in range(self.scale.audits)]
        progress, progressed = self._progress(), time.monotonic()
        looked = 0.0
        while True:
            # A look scans the table, and nothing else reaches it meanwhile: a larger table is looked at less often.
            time.sleep(max(LOOK_SECONDS, 4 * looked))
            began = time.monotonic()
            self._look()
            looked = time.monotonic() - began
            if audit_at and self.settled_count >= audit_at[0]:
                audit_at.pop(0)
                self._audit()
                progressed = time.monotonic()
            if self._finished() and not audit_at:
                return
            now = self._progress()
            if now != progress:
                progress, progressed = now, time.monotonic()
            elif time.monotonic() - progressed > STALL_SECONDS:
                self.problem(
                    "nothing lost",
                    f"no progress for {STALL_SECONDS:.0f} s: {self.settled_count} of {total} settled, "
                    f"{self.figures['sent']} stored",
                )
                return

    def _progress(self) -> tuple[int, ...]:
        with self._lock:
            return (
                self.figures["sent"],
                self.settled_count,
                self.figures["redrives"],
                self.figures["moves to another queue"],
                self.migrated,
            )

    def _finished(self) -> bool:
        with self._lock:
            sent_all = not self.pending and len(self.stored) == len(self.planned)
            operated = (
                self.migrated
                and self.figures["redrives"] >= self.scale.redrives
                and self.figures["moves to another queue"] >= self.scale.moves
            )
            created = self.figures["cold starts"] >= self.scale.processes
            live = self.live_count
        return sent_all and operated and created and self.settled_count >= len(self.planned) and not live

    def _look(self) -> None:
        """The driver's look (one scan): what is settled and what still lives, each queue's shard count, TTL's
        work."""
        items = self.truth.by_sub_queue([STANDARD_MESSAGES, FIFO_MESSAGES, DEAD_LETTERS])
        settled = set(self.truth.deleted_bodies(QUEUES)) | set(self.truth.dead_deleted_bodies(QUEUES))
        live = 0
        for (queue, _), found in items.items():
            if queue not in QUEUES:
                continue
            dead = [item for item in found if str(item["pk"]).startswith(f"{DEAD_LETTERS}#")]
            settled.update(label_of(item) for item in dead)
            live += len(found) - len(dead)
        settled &= set(self.by_label)
        by_queue = Counter(_label_queue(label) for label in settled)
        with self._lock:
            self.settled_count = len(settled)
            self.settled_by_queue = dict(by_queue)
            self.live_count = live
        now = self.clock()
        for queue in QUEUES:
            shards = self.admin.get_queue(queue).shards
            history = self.shards[queue]
            if not history or history[-1][1] != shards:
                history.append((now, shards))
        if self.figures["looks"] % 10 == 0:
            self._add("items expired by TTL", self.truth.expire(self.now_ms()))
        self._add("looks")

    @contextmanager
    def _stopped(self) -> Iterator[bool]:
        """The fleet stands still (every worker between invocations, queue time too, no faults injected)."""
        self._ticking.clear()
        stopped = self._gate.pause(timeout=STALL_SECONDS)
        injecting = self.injecting
        self._inject(False)
        try:
            if not stopped:
                self.problem("nothing stranded", f"audit: the fleet did not stop: {self._gate.running()}")
            yield stopped
        finally:
            self._inject(injecting)
            self._gate.resume()
            self._ticking.set()

    def _audit(self) -> None:
        """The fleet stopped: the stats against the table and the ledger, then stale handles sent alone, each
        against a snapshot of the whole table."""
        with self._stopped() as stopped:
            if not stopped:
                return
            self._add("audits")
            assert self._lag is not None
            with self._lag.settled():
                self._checkpoint(QUEUES)
            rng = random.Random(self.seed * 31 + self.figures["audits"])
            with self._lock:
                issued = list(self.issued)
            rng.shuffle(issued)
            # The handles whose message or group another claim holds now first: a stale handle's harm shows there.
            now = self.now_ms()
            issued.sort(key=lambda item: item.hold is None or not self._taken_over(item.hold, now))
            attempts = [item for item in issued if item.kind == "attempt"][: self.scale.audit_replays // 3]
            sent = 0
            for item in attempts + [item for item in issued if item.kind != "attempt"]:
                if sent >= self.scale.audit_replays:
                    break
                sent += self._audit_one(item, rng)

    def _taken_over(self, hold: Hold, now: int) -> bool:
        """Whether a later claim holds the hold's message (its group, for FIFO) now."""
        lock = hold.lock
        with self._lock:
            if lock.group is not None:
                others = self.ledger.group_locks.get((hold.sub_queue, lock.group), [])
            else:
                others = [other.lock for other in self.ledger.holds.get((hold.sub_queue, hold.message_id), [])]
        return any(
            other.token != lock.token and other.claimed_lo > lock.claimed_hi and other.group_ends_lo() > now
            for other in others
        )

    def _audit_one(self, issued: Issued, rng: random.Random) -> int:
        """One kept handle sent alone, by a container of its own (no faults, no throttling): a stale one must
        leave the table as it was. A repeated attempt id may receive anew: what it answers is given back, and
        nothing else may be held by it. Then what is in flight must be exactly what the holders hold."""
        process = self._audit_process
        invocation = Invocation("audit", process, used=[])
        self._ticking.set()
        try:
            if issued.kind == "attempt":
                queue = issued.queue
                locked = self._locks(queue)
                failed = self.figures["settle errors"]
                self._repeat_attempt(invocation, rng, issued, work=False)
                self._add("audited attempt ids")
                # What it answered it gave back at once: any group it locked since is one it did not answer.
                left = {group: token for group, token in self._locks(queue).items() if locked.get(group) != token}
                if left and self.figures["settle errors"] == failed:
                    self.problem(
                        "attempts",
                        f"{queue}: a receive repeated with its attempt id {issued.handle} left group(s) locked that "
                        f"it did not answer: {sorted(left.items())}",
                    )
                touched = [queue] if queue in QUEUES else []
            else:
                assert issued.hold is not None
                now = self.now_ms()
                actions = [
                    a for a in (LIVE_ACTIONS if issued.kind == "live" else DEAD_ACTIONS) if self._stale(issued, now, a)
                ]
                if not actions:
                    return 0
                action = rng.choice(actions)
                why = self._why_stale(issued)  # before it is sent: a delete that succeeds spends it
                before = table_snapshot(TABLE)
                accepted = self._act(invocation, rng, issued, action)
                changed = _changed(before, table_snapshot(TABLE))
                self._add(f"audited stale {issued.kind} handles")
                if changed:
                    self.problem(
                        "stale handles",
                        f"{issued.hold.sub_queue} {issued.hold.body} ({issued.hold.message_id}): {action} with a "
                        f"stale {issued.kind} handle ({why}) "
                        f"{'succeeded and ' if accepted else ''}changed {len(changed)} items, e.g. {changed[:2]}",
                    )
                touched = [issued.queue] if issued.kind == "live" else []
        except Killed:
            return 1
        finally:
            self._ticking.clear()
        assert self._lag is not None
        with self._lag.settled():
            self._checkpoint(touched, exact=False)
        return 1

    def _checkpoint(self, queues: Any, exact: bool = True) -> None:
        """Each sub-queue's stats against the table (`exact`) and its in-flight count against what the holders
        hold, with what a killed call may have left (`phantoms`)."""
        observer = QueueClient(TABLE, dynamodb=self.admin.dynamodb, clock=self.clock)
        now = self.now_ms()
        for queue in queues:
            stats = observer.queue(queue, CLIENT).stats()
            name = f"{queue}/{CLIENT}"
            fifo = queue.endswith(".fifo")
            with self._lock:
                phantoms = sum(count for sub, count, until in self.phantoms if sub == name and until > now)
            if exact:
                # A FIFO group's count is off while a removal's count update is lost (a fault, a killed container)
                # until a receive finds the group empty: only its DLQ is counted exactly (the end checks the rest).
                live = len(self.truth.live_messages(queue, CLIENT))
                dead = len(self.truth.dlq_items(queue, CLIENT))
                shown = stats.visible + stats.delayed + stats.in_flight
                if (shown != live and not fifo) or stats.dlq != dead:
                    self.problem(
                        "nothing stranded",
                        f"audit {name}: stats {stats.to_dict()} but {live} live, {dead} DLQ"
                        + (self._groups(queue, now) if fifo else ""),
                    )
            if exact and stats.stuck:
                # Every message here fits a DLQ copy: none can be stuck but for a passing fault taken for good.
                self.problem("stuck", f"audit {name}: {stats.stuck} messages reported stuck, holding their groups")
            held_at = self.ledger.groups_held_at if fifo else self.ledger.held_at
            low, high = held_at(name, now, SKEW_MS)
            high += phantoms
            if not low <= stats.in_flight <= high:
                self.problem(
                    "nothing stranded",
                    f"audit {name}: {stats.in_flight} in flight, the consumers hold {low} to {high}"
                    + (self._locked_groups(queue, now) if fifo else self._held_messages(queue, now))
                    + self._said_held(now),
                )

    def _locked_groups(self, queue: str, now: int) -> str:
        """The groups the table holds locked now, each with the claims the ledger knows of it."""
        found = []
        for item in self.truth.scan():
            if not str(item["pk"]).startswith(f"F#{queue}#{CLIENT}#") or int(item.get("available_at", 0)) <= now:
                continue
            group, token = str(item["sk"]), str(item.get("tok", ""))
            claims = [
                f"{lock.token[:6]} {lock.claimed_lo - now}..{lock.ends_lo - now} ms "
                f"{self.via.get(lock.holds[0].handle, '?') if lock.holds else ''}"
                + (" settled" if lock.holds and all(hold.settled_lo is not None for hold in lock.holds) else "")
                for lock in self.ledger.group_locks.get((f"{queue}/{CLIENT}", group), [])[-3:]
            ]
            shown = ("acked", "retry_at", "changed", "stuck", "unlocked_by")
            fields = {name: item[name] for name in shown if name in item}
            found.append(
                f"{group} locked by {token[:6]} for {int(item['available_at']) - now} ms {fields}; claims {claims}"
            )
        return f" (locked: {'; '.join(found)})"

    def _said_held(self, now: int) -> str:
        """What the core said it left held in the last visibility timeout (a give-back that failed)."""
        with self._lock:
            said = [text for at, text in self.left_held if at * 1000 > now - VISIBILITY * 1000 - SKEW_MS]
        return f"; the core said: {' | '.join(said)}" if said else ""

    def _held_messages(self, queue: str, now: int) -> str:
        """The standard sub-queue's messages in flight now, each with the last claim the ledger knows of it."""
        found = []
        for item in self.truth.live_messages(queue, CLIENT):
            if int(item.get("visible_at", 0)) <= now or "tok" not in item:
                continue
            label = label_of(item)
            holds = [hold for holds in self.ledger.holds.values() for hold in holds if hold.body == label]
            last = holds[-1] if holds else None
            known = "no claim known"
            if last is not None:
                lock = last.lock
                settled = "" if last.settled_lo is None else f" settled {last.settled_lo - now}"
                known = f"last claim {lock.token[:6]} {lock.claimed_lo - now}..{lock.ends_lo - now}{settled}"
                known += f" {self.via.get(last.handle)}"
            found.append(f"{label} held by {str(item['tok'])[:6]} for {int(item['visible_at']) - now} ms: {known}")
        return f" (in flight: {'; '.join(found)})"

    def _groups(self, queue: str, now: int) -> str:
        """Each group item of the FIFO sub-queue (its place, count, lock) beside the group's live messages."""
        items = self.truth.scan()
        live = Counter(
            str(item["pk"]).rsplit("#", 1)[-1]
            for item in items
            if str(item["pk"]).startswith(f"{FIFO_MESSAGES}#{queue}#{CLIENT}#")
        )
        groups = []
        for item in items:
            if not str(item["pk"]).startswith(f"F#{queue}#{CLIENT}#") or str(item["pk"]).endswith("#dlq"):
                continue
            place, group = str(item["pk"]).rsplit("#", 1)[-1], str(item["sk"])
            state = (" moved" if item.get("moved") else "") + (
                " locked" if int(item.get("available_at", 0)) > now else ""
            )
            groups.append(f"{group}@{place} count {item.get('msg_count')} live {live[group]}{state}")
        return f" (groups: {'; '.join(sorted(groups))})"

    def explain(self, violation: str) -> str:
        """The claims behind a violation of the ledger: when each was made, until when, by whom."""
        words = violation.split()
        if violation.startswith("two claims of FIFO group"):
            sub_queue, group = words[5], words[6].strip("'")
            locks = self.ledger.group_locks.get((sub_queue, group), [])
            holds = [lock.holds[0] for lock in locks if lock.holds]
        elif violation.startswith("two holders of"):
            holds = self.ledger.holds.get((words[3], words[4].rstrip(":")), [])
        else:
            return violation
        now = self._started_at * 1000
        claims = [
            f"[{hold.lock.token[:6]} {hold.receive_count}: "
            f"{hold.lock.claimed_lo - now:.0f}..{hold.lock.ends_lo - now:.0f}"
            f"{'' if hold.settled_lo is None else f' settled {hold.settled_lo - now:.0f}'} "
            f"{self.via.get(hold.handle, '?')}]"
            for hold in holds[-4:]
        ]
        return f"{violation}; claims {' '.join(claims)}"

    def _finish(self) -> None:
        """What a consumer still polling would find once all is settled: nothing; then one last sweep."""
        self.clock.advance(VISIBILITY * 10)
        observer = QueueClient(TABLE, dynamodb=self.admin.dynamodb, clock=self.clock)
        for queue in QUEUES:
            left = observer.queue(queue, CLIENT).receive(max_messages=10)
            if left:
                self.problem(
                    "nothing lost", f"{queue}/{CLIENT}: {len(left)} delivered after the end, e.g. {left[0].body}"
                )
        observer.sweep()
        for queue in QUEUES:
            stats = observer.queue(queue, CLIENT).stats()
            dead = len(self.truth.dlq_items(queue, CLIENT))
            if (stats.visible, stats.in_flight, stats.delayed, stats.dlq) != (0, 0, 0, dead):
                self.problem("nothing stranded", f"{queue}/{CLIENT}: final stats {stats.to_dict()}, {dead} in its DLQ")

    # The verdict.
    def verify(self) -> dict[str, list[str]]:
        """Every invariant's problems (an empty list: it held)."""
        problems = self.problems
        for violation in self.ledger.violations + self.ledger.recheck():
            problems["FIFO order" if "FIFO order" in violation else "two holders"].append(self.explain(violation))
        self._verify_accounts(problems["nothing lost"])
        problems["growth"] += self._verify_throttling() + self._verify_overgrowth()
        with self._lock:
            created = self.figures["cold starts"]
        if created < self.scale.processes:
            problems["fleet"].append(f"{created} containers, fewer than {self.scale.processes}")
        if not self.migrated:
            problems["fleet"].append("the migration never completed")
        return {invariant: found for invariant, found in problems.items() if found}

    def _verify_accounts(self, problems: list[str]) -> None:
        labels = set(self.by_label)
        missing = labels - set(self.stored)
        if missing:
            problems.append(f"{len(missing)} messages never stored, e.g. {sorted(missing)[:3]}")
        deleted = self.truth.deleted_bodies(QUEUES)
        dead_deleted = self.truth.dead_deleted_bodies(QUEUES)
        dead: Counter = Counter()
        for queue in QUEUES:
            for item in self.truth.dlq_items(queue, CLIENT):
                dead[label_of(item)] += 1
            live = self.truth.live_messages(queue, CLIENT)
            if live:
                problems.append(f"{queue}/{CLIENT}: {len(live)} messages left, e.g. {label_of(live[0])}")
        for label in labels:
            copies = 1 + self.extra_copies[label]
            if deleted[label] + dead[label] + dead_deleted[label] > copies:
                problems.append(
                    f"{label} settled {deleted[label] + dead[label] + dead_deleted[label]} times (deleted "
                    f"{deleted[label]}, in a DLQ {dead[label]}, deleted from one {dead_deleted[label]}), "
                    f"stored at most {copies}"
                )
            if not (deleted[label] or dead[label] or dead_deleted[label]):
                problems.append(f"{label} neither deleted nor in a DLQ")
            elif label.endswith("/poison") and not (
                dead[label] or dead_deleted[label] or label in self.deleted_by_replay
            ):
                problems.append(f"{label} always fails but never reached a DLQ")
        problems += [f"{label} deleted but never sent" for label in deleted if label not in labels]
        self.figures["deleted"] = sum(deleted.values())
        self.figures["in a DLQ at the end"] = sum(dead.values())
        self.figures["deleted from a DLQ"] = sum(dead_deleted.values())

    def _verify_throttling(self) -> list[str]:
        """No key of an automatic queue that more shards would split (a standard shard's messages, a shard's index
        entries) stays hot (refusals in every window for `HOT_FOR_SECONDS`) while its queue's count stays put below
        its ceiling, unless the product said why. A FIFO group's own partition is one key at any count."""
        problems = []
        by_queue: dict[str, list[float]] = defaultdict(list)
        keys: dict[str, set[str]] = defaultdict(set)
        for at, (_, key, _), _ in self.throttler.refusals:
            parts = key.split("#")
            if len(parts) >= 3 and parts[0] in (STANDARD_MESSAGES, "F") and parts[1] in QUEUES:
                by_queue[parts[1]].append(at)
                keys[parts[1]].add(key)
        for queue, times in sorted(by_queue.items()):
            windows = Counter(int(at // HOT_WINDOW_SECONDS) for at in times)
            run: list[int] = []
            for window in range(min(windows), max(windows) + 2):
                if windows[window] >= HOT_REFUSALS:
                    run.append(window)
                    continue
                if len(run) * HOT_WINDOW_SECONDS >= HOT_FOR_SECONDS:
                    problems += self._grew_or_said(queue, run, windows, keys[queue])
                run = []
        return problems

    def _verify_overgrowth(self) -> list[str]:
        """No queue grows past what its load needs: the busiest minute's sends (a life's writes each, on one key)
        sized as the core sizes them, times the growth a throttled process may add, and one doubling more."""
        problems = []
        limit = KEY_WRITE_UNITS / LOAD_SCALE
        for queue in MAIN_QUEUES:
            minutes = Counter(int(at // 60) for at in self.stored_at[queue])
            busiest = max(minutes.values(), default=0) * WRITES_PER_LIFE / 60
            allowed = _power_of_two(busiest / limit / SIZE_FOR) * THROTTLE_GROWTH * 2
            most = max((shards for _, shards in self.shards[queue]), default=1)
            if most > allowed:
                problems.append(
                    f"{queue}: grew to {most} shards, where its busiest minute ({max(minutes.values(), default=0)} "
                    f"messages, {busiest:.2f} WU/s a key) needs at most {allowed // (THROTTLE_GROWTH * 2)} "
                    f"({allowed} with growth on throttles)"
                )
        return problems

    def _grew_or_said(self, queue: str, run: list[int], windows: Counter, keys: set[str]) -> list[str]:
        start, end = run[0] * HOT_WINDOW_SECONDS, (run[-1] + 1) * HOT_WINDOW_SECONDS
        history = self.shards[queue]
        before = [shards for at, shards in history if at <= start] or [history[0][1]]
        during = [shards for at, shards in history if start < at <= end + SWEEP_EVERY_SECONDS]
        if any(shards > before[-1] for shards in during):
            return []
        said = [
            text for at, text in self.reasons if start <= at <= end and f"queue {queue}: " in text and "stay" in text
        ]
        if said:
            return []
        settings = self.admin.get_queue(queue)
        if before[-1] >= settings.max_shards:
            return []
        refused = sum(windows[window] for window in run)
        return [
            f"{queue}: its keys ({len(keys)}, e.g. {sorted(keys)[0]}) were throttled {refused} times from "
            f"{start - self._started_at:.0f} s to {end - self._started_at:.0f} s of queue time and "
            f"its shard count stayed at {before[-1]}, with no reason stated"
        ]

    def report(self) -> str:
        """The run's figures on one line (`verify` first)."""
        figures = self.figures
        containers = {f[11:]: n for f, n in sorted(figures.items()) if f.startswith("containers ")}
        calls: Counter = Counter()
        for (kind, _), count in self.calls_by_kind.items():
            calls[kind] += count
        kills: Counter = Counter()
        for (kind, _), count in self.kills.items():
            kills[kind] += count
        replayed = {f[9:]: n for f, n in sorted(figures.items()) if f.startswith("replayed ")}
        faults = {str(kind): n for kind, n in self.fault_counts().items()}
        changes = {queue: [shards for _, shards in history] for queue, history in self.shards.items() if history}
        return (
            f"{figures['sent']} messages ({figures['deleted']} deleted, {figures['in a DLQ at the end']} in a DLQ, "
            f"{figures['deleted from a DLQ']} deleted from one), {figures['cold starts']} containers {containers} "
            f"({figures['warm starts']} warm starts, {figures['frozen for minutes']} frozen for minutes, "
            f"{figures['thawed after minutes']} thawed after minutes, {figures['reclaimed']} reclaimed), "
            f"{sum(kills.values())} killed mid-call {dict(kills)} at writes "
            f"{sorted({write for _, write in self.kills})}, {figures['deliveries']} deliveries, "
            f"{figures['answered again']} answered again under their attempt id, "
            f"{figures['claims whose answer was lost']} claims whose answer was lost, "
            f"{len(self.issued)} handles and attempt ids issued, {sum(replayed.values())} sent again {replayed}, "
            f"{figures['audits']} audits ({figures['audited stale live handles']} stale receipt handles, "
            f"{figures['audited stale dead handles']} stale DLQ handles, {figures['audited attempt ids']} attempt ids "
            f"sent alone), {figures['redrives']} redrives and {figures['moves to another queue']} moves by move "
            f"task, {figures['migrations']} migration, {figures['sweeps']} sweeps, shard counts {changes}, "
            f"{self.throttler.stats.throttled} requests throttled, faults {sum(faults.values())} {faults}, "
            f"{self.calls} DynamoDB calls {dict(calls.most_common())}, {self.clock() - self._started_at:.0f} s of "
            f"queue time, {self.elapsed:.1f} s"
        )


@contextmanager
def _throttle_rate_scaled() -> Iterator[None]:
    """The core takes a queue for throttled past `THROTTLES_PER_MINUTE`: a rate of requests, which a run carrying
    1/`LOAD_SCALE` of the load meets that many times less often, as it meets units (`core_limits_scaled`)."""
    from queue_core import autoshard

    saved = autoshard.THROTTLES_PER_MINUTE
    autoshard.THROTTLES_PER_MINUTE = saved / LOAD_SCALE  # type: ignore[misc]
    try:
        yield
    finally:
        autoshard.THROTTLES_PER_MINUTE = saved  # type: ignore[misc]


class _ReasonLog(logging.Handler):
    """What the core says of the automatic shard decisions it makes or holds back (and why), and of claims it
    could not give back, with the queue time."""

    def __init__(self, run: FleetRun) -> None:
        super().__init__(logging.INFO)
        self.run = run
        self._logger = logging.getLogger("queue_core")
        self._level = self._logger.level

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        unkept = re.fullmatch(r"a receive under attempt id '([^']+)' answers \d+ message\(s\) it did not keep", text)
        if unkept:
            with self.run._lock:
                self.run.unkept.add(unkept[1])
            return
        if any(said in text for said in ("until its visibility ends", "until its lock ends", "group bookkeeping")):
            # a claim the core left held
            with self.run._lock:
                self.run.left_held.append((self.run.clock(), text))
            return
        if not ("automatic" in text or "shards stay" in text):
            return
        changed = re.fullmatch(r"queue (\S+): shards \d+ -> (\d+) \(automatic\)", text)
        with self.run._lock:
            self.run.reasons.append((self.run.clock(), text))
            if changed and changed[1] in self.run.shards:
                self.run.shards[changed[1]].append((self.run.clock(), int(changed[2])))

    def __enter__(self) -> _ReasonLog:
        self._logger.addHandler(self)
        self._logger.setLevel(logging.INFO)
        return self

    def __exit__(self, *_: object) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(self._level)


def _units(holds: list[Hold]) -> list[list[Hold]]:
    """One unit per FIFO claim's group (its messages in order), one per standard message."""
    units: dict[str, list[Hold]] = {}
    for hold in holds:
        key = f"g:{hold.lock.token}:{hold.lock.group}" if hold.lock.group is not None else f"m:{hold.message_id}"
        units.setdefault(key, []).append(hold)
    return list(units.values())


def _label_queue(label: str) -> str:
    return label.split("/", 1)[0]


def _source_of(dead: str) -> str:
    """The source queue of a DLQ's ledger name (`fleet.dlq.fifo/a` -> `fleet.fifo`)."""
    name = dead.rsplit("/", 1)[0]
    return name.replace(".dlq", "")


def _power_of_two(value: float) -> int:
    return 1 if value <= 1 else 1 << math.ceil(math.log2(value))


def _claim_or_not(request: dict[str, Any]) -> str:
    """A write that takes a claim (it sets the claim's token: a message's, a FIFO group's, a dead letter's)."""
    return CLAIM if "tok = :tok" in str(request.get("UpdateExpression", "")) else ""


def _seconds(action: str) -> int:
    last = action.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


def _gives_up(action: str) -> bool:
    """A delete, a release, or a visibility of 0: the holder gives the message up."""
    return "delete" in action or action.startswith("release") or _seconds(action) == 0


def _delete_batch(sub: Any, handles: list[str]) -> None:
    """A batch delete judged as one: stale when every entry that failed was stale, failed when any other did."""
    codes = {entry.get("code", "") for entry in sub.delete_batch(handles).failed}
    if codes - {"ReceiptHandleStale"}:
        raise QueueError(sorted(codes)[0] or "batch entry failed")
    if codes:
        raise ReceiptHandleStale("stale")


def _transactional_delete(sub: Any, handle: str) -> None:
    sub.transact([*sub.delete_transact_items(handle)])


def _dlq_delete(sub: Any, handle: str) -> None:
    if not sub.dlq_delete(handle):
        raise ReceiptHandleStale("the dead letter's copy is gone or claimed since")


def _dead_copy(handle: str) -> str:
    """The DLQ copy (its `dlq_id`) a dead letter's handle names, read unverified from its payload."""
    return unsigned(handle).decode().split("|")[5]


def _changed(before: frozenset[str], after: frozenset[str]) -> list[str]:
    """The keys of the items that differ (with what differs), load reports and shard marks aside: a report is a
    process's own, written by any call; a mark only says where a receive should look (an ack built for the caller's
    own transaction marks its group's shard before anyone knows whether it will commit), and a mark too many costs a
    query, never a message."""
    old = {_key(item): item for item in map(_attributes, before - after)}
    new = {_key(item): item for item in map(_attributes, after - before)}
    changes = []
    for key in sorted(set(old) | set(new)):
        if key.startswith(("L#", "K#")):
            continue
        was, now = old.get(key, {}), new.get(key, {})
        fields = sorted(name for name in set(was) | set(now) if was.get(name) != now.get(name))
        if was and now and _gave_back_gone_copies(was, now, fields, after):
            continue
        changes.append(f"{key}: {', '.join(fields) if was and now else 'added' if now else 'removed'}")
    return changes


def _gave_back_gone_copies(was: dict[str, Any], now: dict[str, Any], fields: list[str], after: frozenset[str]) -> bool:
    """A FIFO DLQ group's claim that only gave back dead letters gone from the DLQ (a delete by the handle of a
    copy a move task took): bookkeeping, not a change. A claim holds nothing for a copy that is gone, and a
    receive takes over a group whose claim's copies are all gone (`dead_letter_groups`)."""
    pk, group = str(was.get("pk", "")), str(was.get("sk", ""))
    if fields != ["held_copies"] or not pk.startswith("F#") or not pk.endswith("#dlq"):
        return False
    kept, held = set(now.get("held_copies", [])), set(was.get("held_copies", []))
    if not kept < held:
        return False
    copies_pk = "D#" + pk[2 : -len("dlq")] + "0"
    present = {_key(item) for item in map(_attributes, after)}
    return not any(f"{copies_pk} {b64_group(group)}.{sequence}" in present for sequence in held - kept)


def _attributes(text: str) -> dict[str, Any]:
    return {name: next(iter(value.values())) for name, value in json.loads(text)["Attributes"].items()}


def _key(item: dict[str, Any]) -> str:
    return f"{item.get('pk')} {item.get('sk')}"
