"""A crash-and-fault stress run: producers and consumers on threads, a driver that moves the fake clock.

Consumers misbehave on purpose: some crash without deleting (the message must come back when its visibility runs
out), some give messages back, some extend their visibility while they work, some race a second delete of the same
handle, some are too slow and lose their claim. Producers send with dedup ids and retry whatever failed with the
same id, so that a send whose answer was lost never stores a message twice. The driver advances the clock, runs the
sweep beside the consumers, and at checkpoints stops everyone to compare the stats with the table's content.

Every delivery is recorded in a `Ledger` (who held what, when, on the fake clock); every delete DynamoDB applied
is recorded by `TableTruth`. The checks at the end compare the two with what the producers sent.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from queue_core import QueueClient, QueueError, ReceiptHandleStale, ReceivedMessage, SubQueue

from tests.conftest import FakeClock
from tests.reliability.faults import FaultInjector
from tests.reliability.ledger import Hold, Ledger
from tests.reliability.truth import TableTruth

logger = logging.getLogger("tests.reliability")

STANDARD, FIFO = "stress", "stress.fifo"
SUB_QUEUES: tuple[tuple[str, str], ...] = ((STANDARD, "a"), (STANDARD, "b"), (FIFO, "a"), (FIFO, "b"))
VISIBILITY = 30
MAX_RECEIVE_COUNT = 3
STANDARD_SHARDS = 2
GROUPS_PER_SUB_QUEUE = 12
POISON_EVERY = 50  # one message in 50 always fails: it must end in the DLQ, and nothing else may be blocked
BACKLOG_CAP = 30  # messages stored and not yet settled, per sub-queue: keeps moto's table (and its scans) small
CLOCK_STEP_SECONDS = 0.5
CLOCK_TICK_SECONDS = 0.02
SWEEP_EVERY_SECONDS = 2.0
IDLE_FIRST_SECONDS = 0.01
IDLE_MAX_SECONDS = 0.25
SLOW_SLEEP_SECONDS = 1.7  # more than VISIBILITY on the fake clock: the slow consumer loses its claim


@dataclass(frozen=True)
class Scale:
    messages: int
    consumers: int = 16
    producers: int = 4
    checkpoints: int = 2
    deadline_seconds: float = 240.0


SHORT = Scale(messages=750)
FULL = Scale(messages=10_000, checkpoints=6, deadline_seconds=3600.0)


@dataclass(frozen=True)
class Planned:
    """A message a producer must get stored exactly once."""

    index: int
    queue: str
    client: str
    body: str
    group_id: str | None
    dedup_id: str | None
    poison: bool


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
    counts: Counter = field(default_factory=Counter)

    def add(self, name: str, amount: int = 1) -> None:
        self.counts[name] += amount


def plan(total: int) -> list[Planned]:
    """Messages spread over the four sub-queues; FIFO ones over groups; half the standard ones without a dedup
    id (a batch write, whose partial failures must be reported), the rest with one."""
    planned = []
    for index in range(total):
        queue, client = SUB_QUEUES[index % len(SUB_QUEUES)]
        fifo = queue == FIFO
        poison = index % POISON_EVERY == POISON_EVERY - 1
        body = f"{queue}/{client}/{index:06d}" + ("/poison" if poison else "")
        group = f"g{(index // len(SUB_QUEUES)) % GROUPS_PER_SUB_QUEUE}" if fifo else None
        dedup = f"d{index}" if fifo or index % 8 < 4 else None
        planned.append(Planned(index, queue, client, body, group, dedup, poison))
    return planned


class Gate:
    """Lets the driver stop every worker at a safe point (between calls) and let them go again."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._paused = False
        self._parked = 0
        self.active = 0

    def enter(self) -> None:
        with self._condition:
            self.active += 1

    def leave(self) -> None:
        with self._condition:
            self.active -= 1
            self._condition.notify_all()

    def wait_if_paused(self) -> None:
        with self._condition:
            if not self._paused:
                return
            self._parked += 1
            self._condition.notify_all()
            while self._paused:
                self._condition.wait()
            self._parked -= 1

    def pause(self, timeout: float) -> bool:
        with self._condition:
            self._paused = True
            return self._condition.wait_for(lambda: self._parked >= self.active, timeout=timeout)

    def resume(self) -> None:
        with self._condition:
            self._paused = False
            self._condition.notify_all()


class StressRun:
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
        self.seed = seed
        self.ledger = Ledger()
        self.figures = Figures()
        self.planned = plan(scale.messages)
        self.stored: dict[str, str] = {}
        self.stored_by_sub_queue: Counter = Counter()
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._gate = Gate()
        self._ticking = threading.Event()
        self._racers = ThreadPoolExecutor(4, thread_name_prefix="stress-race")
        self.sub_queues = {(queue, name): client.queue(queue, name) for queue, name in SUB_QUEUES}
        self.elapsed = 0.0

    # Set-up.
    def create_queues(self) -> None:
        common = {"visibility_timeout": VISIBILITY, "max_receive_count": MAX_RECEIVE_COUNT, "dedup_window_seconds": 60}
        self.client.create_queue(STANDARD, shards=STANDARD_SHARDS, **common)
        self.client.create_queue(FIFO, **common)

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _note(self, problem: str) -> None:
        with self._lock:
            self.problems.append(problem)

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
                self._send_until_stored(chunk, rng)
        finally:
            self._gate.leave()

    def _backlog(self, queue: str, client: str) -> int:
        with self._lock:
            stored = self.stored_by_sub_queue[(queue, client)]
        return stored - self.truth.deleted_by_sub_queue[(queue, client)]

    def _send_until_stored(self, chunk: list[Planned], rng: random.Random) -> None:
        sub = self.sub_queues[(chunk[0].queue, chunk[0].client)]
        pending = list(chunk)
        while pending and not self._stop.is_set():
            self._gate.wait_if_paused()
            if self._backlog(chunk[0].queue, chunk[0].client) > BACKLOG_CAP:
                time.sleep(0.01)
                continue
            entries = [_entry(message) for message in pending]
            try:
                result = sub.send_batch(entries)
            except QueueError:
                self._count("send_retries")
                time.sleep(rng.uniform(0, 0.01))
                continue
            done = set()
            for success in result.successful:
                message = pending[success["index"]]
                self._stored(message, success["message_id"], bool(success.get("duplicate")))
                done.add(message.index)
            if result.failed:
                self._count("send_retries")
                time.sleep(rng.uniform(0, 0.01))
            pending = [message for message in pending if message.index not in done]

    def _stored(self, message: Planned, message_id: str, duplicate: bool) -> None:
        with self._lock:
            earlier = self.stored.get(message.body)
            if earlier is None:
                self.stored[message.body] = message_id
                self.stored_by_sub_queue[(message.queue, message.client)] += 1
                self.figures.sent += 1
            elif earlier != message_id:
                self.problems.append(f"{message.body} stored twice: as {earlier} and as {message_id}")
            if duplicate:
                self.figures.duplicates_answered += 1

    # Consumers.
    def _consume(self, worker: int) -> None:
        rng = random.Random(self.seed * 7919 + worker)
        queue, client = SUB_QUEUES[worker % len(SUB_QUEUES)]
        sub = self.sub_queues[(queue, client)]
        label = f"{queue}/{client}"
        idle = IDLE_FIRST_SECONDS
        self._gate.enter()
        try:
            while not self._stop.is_set():
                self._gate.wait_if_paused()
                before = self.now_ms()
                try:
                    messages = sub.receive(max_messages=rng.randint(1, 4), visibility_timeout=VISIBILITY)
                except QueueError:
                    self._count("receive_errors")
                    time.sleep(rng.uniform(0, 0.01))
                    continue
                after = self.now_ms()
                if not messages:
                    time.sleep(rng.uniform(idle / 2, idle))
                    idle = min(idle * 2, IDLE_MAX_SECONDS)
                    continue
                idle = IDLE_FIRST_SECONDS
                holds = self.ledger.deliver(label, messages, before, after, VISIBILITY)
                for unit in _units(holds, messages):
                    self._work(sub, unit, rng)
        finally:
            self._gate.leave()

    def _work(self, sub: SubQueue, unit: list[tuple[Hold, ReceivedMessage]], rng: random.Random) -> None:
        """One message, or a FIFO group's messages in order: each is processed, given back or abandoned. A
        failure gives back the rest of a FIFO unit too, so that no consumer runs a group out of order."""
        for position, (hold, message) in enumerate(unit):
            roll = rng.random()
            if message.body.endswith("/poison"):
                roll = rng.choice((0.05, 0.15))
            if roll < 0.10:
                self._count("crashes")
                return
            if roll < 0.20:
                self._count("releases")
                for later_hold, _ in unit[position:]:
                    self._release(sub, later_hold, rng.choice((0, 0, None, 5)))
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
                time.sleep(SLOW_SLEEP_SECONDS)
            self._delete(sub, hold)

    def _delete(self, sub: SubQueue, hold: Hold) -> bool:
        self.ledger.settling(hold, self.now_ms())
        return self._settle(lambda: sub.delete(hold.handle))

    def _release(self, sub: SubQueue, hold: Hold, delay: int | None) -> bool:
        self.ledger.settling(hold, self.now_ms())
        return self._settle(lambda: sub.release(hold.handle, delay_seconds=delay))

    def _extend(self, sub: SubQueue, hold: Hold, rng: random.Random) -> bool:
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

    # The driver.
    def _tick(self) -> None:
        """Moves the fake clock steadily, apart from checkpoints, whatever the other threads are doing."""
        while not self._stop.is_set():
            time.sleep(CLOCK_TICK_SECONDS)
            if self._ticking.is_set():
                self.clock.advance(CLOCK_STEP_SECONDS)

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
        threads.append(threading.Thread(target=self._tick, name="stress-clock", daemon=True))
        self._ticking.set()
        for thread in threads:
            thread.start()
        checkpoint_at = [
            self.scale.messages * (n + 1) // (self.scale.checkpoints + 1) for n in range(self.scale.checkpoints)
        ]
        last_sweep = time.monotonic()
        deadline = started + self.scale.deadline_seconds
        try:
            while time.monotonic() < deadline:
                time.sleep(CLOCK_TICK_SECONDS)
                if time.monotonic() - last_sweep >= SWEEP_EVERY_SECONDS:
                    last_sweep = time.monotonic()
                    self._sweep()
                    if self._settled() >= self.scale.messages:
                        break
                if checkpoint_at and self.faults is None and self.figures.sent >= checkpoint_at[0]:
                    checkpoint_at.pop(0)
                    self._checkpoint()
            else:
                self.problems.append(
                    f"not finished within {self.scale.deadline_seconds:.0f} s: {self._settled()} of "
                    f"{self.scale.messages} messages settled"
                )
        finally:
            self._stop.set()
            self._gate.resume()
            for thread in threads:
                thread.join(timeout=30)
            self._racers.shutdown(wait=True)
            self.elapsed = time.monotonic() - started
        if self.faults is not None:
            self.faults.enabled = False
        self._last_poll()
        self._sweep()

    def _last_poll(self) -> None:
        """What a consumer still polling would do once everything is settled: find nothing. A receive that meets
        a FIFO group whose count a fault left too high (a delete applied, its group update lost) finds it empty
        and sets the count right, so the final stats are checked after it."""
        self.clock.advance(VISIBILITY * 10)
        for (queue, client), sub in self.sub_queues.items():
            left = sub.receive(max_messages=10)
            if left:
                self.problems.append(f"{queue}/{client}: {len(left)} delivered after the end, e.g. {left[0].body}")

    def _sweep(self) -> None:
        self.figures.add("expired_by_ttl", self.truth.expire(self.now_ms()))
        try:
            self.client.sweep()
            self.figures.sweeps += 1
        except QueueError:
            self.figures.add("sweep_errors")

    def _settled(self) -> int:
        """Messages deleted or in the DLQ, by the table's own account."""
        dead = sum(
            len(self.truth.dlq_items(queue, client, STANDARD_SHARDS if queue == STANDARD else 1))
            for queue, client in SUB_QUEUES
        )
        return len(self.truth.deleted) + dead

    def _checkpoint(self) -> None:
        """Everyone stops between calls; the stats must then agree with the table and with the ledger."""
        self._ticking.clear()
        if not self._gate.pause(timeout=30):
            self.problems.append("checkpoint: the workers did not stop within 30 s")
            self._gate.resume()
            self._ticking.set()
            return
        try:
            self.figures.checkpoints += 1
            now = self.now_ms()
            for (queue, client), sub in self.sub_queues.items():
                stats = sub.stats()
                live = self._live(queue, client)
                dead = len(self.truth.dlq_items(queue, client, STANDARD_SHARDS if queue == STANDARD else 1))
                label = f"{queue}/{client}"
                if stats.visible + stats.in_flight + stats.delayed != len(live) or stats.dlq != dead:
                    self.problems.append(
                        f"checkpoint {label}: stats {stats.to_dict()} but {len(live)} live, {dead} DLQ"
                    )
                held = self.ledger.held_at(label, now) if queue == STANDARD else self.ledger.groups_held_at(label, now)
                if not held[0] <= stats.in_flight <= held[1]:
                    self.problems.append(
                        f"checkpoint {label}: {stats.in_flight} in flight, the consumers hold {held[0]} to {held[1]}"
                    )
        finally:
            self._gate.resume()
            self._ticking.set()

    def _live(self, queue: str, client: str) -> list[dict[str, Any]]:
        groups = [f"g{n}" for n in range(GROUPS_PER_SUB_QUEUE)] if queue == FIFO else []
        return self.truth.live_messages(queue, client, STANDARD_SHARDS, groups)

    # The verdict.
    def verify(self) -> list[str]:
        """Every check of the run; an empty list means every invariant held."""
        problems = list(self.problems) + list(self.ledger.violations) + self.ledger.recheck()
        bodies = {message.body for message in self.planned}
        missing = bodies - set(self.stored)
        if missing:
            problems.append(f"{len(missing)} messages never stored, e.g. {sorted(missing)[:3]}")
        deleted = self.truth.deleted_bodies()
        problems += [f"{body} deleted {count} times" for body, count in deleted.items() if count > 1]
        problems += [f"{body} deleted but never sent" for body in deleted if body not in bodies]
        dead: Counter = Counter()
        for queue, client in SUB_QUEUES:
            shards = STANDARD_SHARDS if queue == STANDARD else 1
            for item in self.truth.dlq_items(queue, client, shards):
                dead[item["body"]] += 1
                if int(item["receive_count"]) != MAX_RECEIVE_COUNT:
                    problems.append(f"{item['body']} in the DLQ after {item['receive_count']} receives")
            live = self._live(queue, client)
            if live:
                problems.append(f"{queue}/{client}: {len(live)} messages left, e.g. {live[0]['body']}")
            stats = self.sub_queues[(queue, client)].stats()
            in_dlq = sum(1 for body in dead if body.startswith(f"{queue}/{client}/"))
            if (stats.visible, stats.in_flight, stats.delayed, stats.dlq) != (0, 0, 0, in_dlq):
                problems.append(
                    f"{queue}/{client}: final stats {stats.to_dict()}, but {in_dlq} in the DLQ and none left"
                )
        problems += [f"{body} in the DLQ {count} times" for body, count in dead.items() if count > 1]
        problems += [f"{body} both deleted and in the DLQ" for body in set(dead) & set(deleted)]
        unaccounted = bodies - set(dead) - set(deleted)
        if unaccounted:
            problems.append(
                f"{len(unaccounted)} messages neither deleted nor in the DLQ, e.g. {sorted(unaccounted)[:3]}"
            )
        poison_alive = [body for body in bodies if body.endswith("/poison") and body not in dead]
        problems += [f"{body} always fails but is not in the DLQ" for body in poison_alive]
        for holds in self.ledger.holds.values():
            for hold in holds:
                if hold.receive_count > MAX_RECEIVE_COUNT:
                    problems.append(f"{hold.body} delivered with receive count {hold.receive_count}")
        self.figures.deliveries = self.ledger.deliveries
        self.figures.add("dlq", sum(dead.values()))
        self.figures.add("deleted", len(deleted))
        return problems

    def report(self) -> str:
        figures = self.figures
        faults = dict(self.faults.counts) if self.faults is not None else {}
        return (
            f"{figures.sent} messages ({figures.counts['deleted']} deleted, {figures.counts['dlq']} to the DLQ), "
            f"{self.scale.consumers} consumers, {self.scale.producers} producers, {figures.deliveries} deliveries, "
            f"{figures.crashes} crashes, {figures.releases} releases, {figures.extensions} extensions, "
            f"{figures.delete_races} delete races, {figures.slow_consumers} slow consumers, "
            f"{figures.stale_handles} stale handles, {figures.send_retries} send retries, "
            f"{figures.duplicates_answered} duplicates answered, {figures.receive_errors} receive errors, "
            f"{figures.settle_errors} settle errors, "
            f"{figures.sweeps} sweeps ({figures.counts['sweep_errors']} failed), "
            f"{figures.checkpoints} checkpoints, {figures.counts['expired_by_ttl']} items expired by TTL, "
            f"faults {sum(faults.values())} { ({str(kind): count for kind, count in faults.items()}) }, "
            f"{self.elapsed:.1f} s"
        )


def _entry(message: Planned) -> dict[str, Any]:
    entry: dict[str, Any] = {"body": message.body}
    if message.group_id is not None:
        entry["group_id"] = message.group_id
    if message.dedup_id is not None:
        entry["dedup_id"] = message.dedup_id
    return entry


def _units(holds: list[Hold], messages: list[ReceivedMessage]) -> list[list[tuple[Hold, ReceivedMessage]]]:
    """One unit per FIFO group (its messages in order), one per standard message."""
    units: dict[str, list[tuple[Hold, ReceivedMessage]]] = {}
    for hold, message in zip(holds, messages, strict=True):
        key = f"g:{message.group_id}" if message.group_id is not None else f"m:{message.message_id}"
        units.setdefault(key, []).append((hold, message))
    return list(units.values())
