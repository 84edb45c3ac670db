"""Load steps against a DynamoDB that throttles: how fast an automatic shard count follows the load.

moto never throttles, so these runs put `bench.throttling` in front of it: every request is charged its read and
write units on its partition keys (table and index) and on the table, on a simulated clock, and refused as
DynamoDB refuses it past 1,000 WU / 3,000 RU per key per second and past the table's quota, with nothing applied.

Twenty thousand real messages a second cannot go through moto on two cores (it carries about a hundred), so the
runs are scaled: the offered load and every limit are divided by the same factor `SCALE`, and so are the per-key
limits the core's automatic sharding compares its own estimates with (`queue_core.autoshard.KEY_WRITE_UNITS` and
`KEY_READ_UNITS`). Units per key and per table grow with the load while the number of keys does not, so a queue
needs the same shard count, and meets the same limits, at 1/SCALE of the load against 1/SCALE of the limits. Time
is simulated: the clock the throttler refills by and the core reads moves on by `TICK` seconds after each tick's
requests, and each tick carries its share of the load (sends in batches of 10, receives of 10, deletes), spread
over `WORKERS` producer-consumers with their own core clients (as Lambda instances have). A producer whose batch
comes back throttled sends the rest of its backlog at the next tick; consumers receive only while messages wait
(idle polling is a fixed number of requests a second, which a scaled run would make SCALE times heavier); the
core's own backoff between retries of a refused batch moves that worker's simulated clock on instead of sleeping;
the sweep runs every simulated minute, as the deployed schedule runs it. What scaling changes: each key sees SCALE
times fewer requests a second, so its traffic is burstier than the real one; buckets hold `WINDOW` seconds of
their rate to smooth that. The first step (10 msg/s) carries almost no message at this scale: it is the starting
state. The FIFO run keeps its 10,000 groups at any scale, so that each group's keys see its messages as often,
against their limits, as at full scale. Two things scaling cannot keep: a request's size against a key's bucket (at
1/500 a key takes 2 WU a second and its bucket holds 10, while one receive of 10 moves 10 index entries, 20 WU on
one key; at full scale 20 of 1,000), so heavily scaled steps throttle receives that would pass at full scale; and
a shard's depth (a shard holds SCALE times fewer messages, and a receive stops at the first shard that had fewer
than it asked, `shards.visit`), so consumers here receive less per call than stored while the load lasts, and
catch up after. Every refused attempt counts in the throttled fraction, the core's retries
included.

A step is carried when, over the last `CARRY_WINDOW` simulated seconds, fewer than 1 % of requests were throttled
and at least 99 % of the offered messages were stored; the time to carry counts from the step. Producers keep
what was refused and send it later, so once the shard count has caught up the queue still absorbs that backlog at
full speed (throttled while it does) before the step counts as carried. After
the load stops, the run drains the queue and advances the clock a minute at a time until the shard count is back to its
minimum. At the end every stored message must have been received: nothing is lost.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Final

from queue_core import QueueClient, QueueError

from ..backend import moto_backend, new_client
from ..throttling import Limits, SimClock, Stats, Throttler

NAME: Final = "load_step"
TITLE: Final = "Load steps against a throttling DynamoDB"
SCALE: Final = 100
TICK: Final = 1.0
WORKERS: Final = 8
WINDOW: Final = 5.0
CARRY_WINDOW: Final = 10.0
SWEEP_SECONDS: Final = 60.0
BODY_BYTES: Final = 700
VISIBILITY: Final = 30
IDLE_LIMIT_SECONDS: Final = 1_200.0
LIFTED: Final = 1e12
TABLE: Final = "load-step"


@dataclass(frozen=True)
class Phase:
    label: str
    rate: float  # messages a second offered, at full scale
    seconds: float
    table_units: float = 40_000.0  # the table-level quota in force, read and write
    scale: float | None = None  # load and limits divided by this (default: the run's; see the docstring)
    window: float = WINDOW  # seconds of its rate a key's bucket holds (see `FULL`)


FULL: Final = (
    Phase("10 msg/s", 10, 20),
    Phase("20,000 msg/s", 20_000, 60, 200_000, scale=200),
    # At 1/250 a key takes 4 write units a second, and a bucket of 5 s holds one receive of 10 (20 units on one
    # index key), where at full scale it holds 250: buckets of 10 s hold two. DynamoDB keeps up to 300 s of a
    # partition's unused capacity for bursts, so even 10 s is stricter than DynamoDB.
    Phase("50,000 msg/s", 50_000, 60, 500_000, scale=250, window=10.0),
)
QUICK: Final = (Phase("10 msg/s", 10, 5), Phase("2,000 msg/s", 2_000, 30, 200_000))
# Partition keys whose traffic follows the number of processes and shards, not of messages: a sub-queue's shard
# marks (a sender puts a shard's mark at most once per `shard_marks.MARK_SECONDS`, so the workers here put as many
# as the same workers would at full scale), and a queue's settings (each process reads them once its cache of
# `limits.SETTINGS_CACHE_SECONDS` of real time runs out, and a throttled process at most once per
# `autoshard.FLUSH_SECONDS`: as many reads as the same workers make at full scale, and many more a simulated
# second, as the run goes about fifteen times slower than its clock). They meet the full per-key limits.
PER_PROCESS_KEYS: Final = ("K#", "Q#")
# Buckets of 10 s, as the 50,000 msg/s step's: at 1/250 a shard's group items take one receive of 10 and its
# deletes (claims and unlocks write each group item's index entry) in a 5 s bucket of their index key.
FIFO_FULL: Final = (Phase("20,000 msg/s, 10,000 groups", 20_000, 60, 400_000, scale=250, window=10.0),)
# Not scaled down with the load: a group's messages then come as often, against its keys' limits, as at full scale
# (fewer groups carrying the same scaled load would each be SCALE times hotter than a real group).
FIFO_GROUPS: Final = 10_000


@contextmanager
def core_limits_scaled() -> Iterator[Any]:
    """The core's automatic sharding compares its unit estimates with DynamoDB's per-key limits: in a run scaled
    down, with the limits scaled down alike. Yields `scale(factor)`; the limits are restored at the end."""
    from queue_core import autoshard
    from queue_core.shards import SendRotation

    saved = autoshard.KEY_WRITE_UNITS, autoshard.KEY_READ_UNITS
    run = SendRotation.RUN

    def scale(factor: float) -> None:
        autoshard.KEY_WRITE_UNITS, autoshard.KEY_READ_UNITS = saved[0] / factor, saved[1] / factor  # type: ignore[misc]
        # A sender's run on one shard is a rate too (messages a second before it moves on): a worker here carries
        # `factor` times the messages it sends, and at full scale would have gone round that many more shards.
        SendRotation.RUN = max(1, round(run / factor))  # type: ignore[misc]

    try:
        yield scale
    finally:
        autoshard.KEY_WRITE_UNITS, autoshard.KEY_READ_UNITS = saved  # type: ignore[misc]
        SendRotation.RUN = run  # type: ignore[misc]


@dataclass
class Ledger:
    """Messages by body: stored (the send succeeded), received, deleted."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    stored: set[str] = field(default_factory=set)
    received: set[str] = field(default_factory=set)
    deleted: int = 0
    send_failures: int = 0
    other_errors: list[str] = field(default_factory=list)


class Worker:
    """One producer-consumer: a Lambda instance with its own core client (its own caches and load reports)."""

    def __init__(self, number: int, client: Any, clock: SimClock, queue: str, ledger: Ledger, groups: int) -> None:
        self.number = number
        self.clock = clock
        self.core = QueueClient(TABLE, dynamodb=client, clock=clock)
        self.sub = self.core.queue(queue, "tenant")
        self.ledger = ledger
        self.groups = groups
        self.pending: list[str] = []
        self.handles: list[str] = []
        self.made = 0

    def _body(self) -> str:
        self.made += 1
        head = f"w{self.number}-{self.made}-"
        return head + "x" * (BODY_BYTES - len(head))

    def tick(self, offered: int, receive_budget: int) -> None:
        self.clock.enter()
        try:
            self.pending.extend(self._body() for _ in range(offered))
            self._send()
            self._delete(self.handles)
            self._receive(receive_budget)
        finally:
            self.clock.leave()

    def _entry(self, body: str) -> dict[str, Any]:
        if not self.groups:
            return {"body": body}
        return {"body": body, "group_id": f"g{random.randrange(self.groups)}"}

    def _send(self) -> None:
        """In batches of 10 until one comes back throttled: then, as a producer backing off, the rest waits for
        the next tick (the core has already retried that batch)."""
        left: list[str] = []
        for start in range(0, len(self.pending), 10):
            chunk = self.pending[start : start + 10]
            if left:
                left.extend(chunk)
                continue
            try:
                result = self.sub.send_batch([self._entry(body) for body in chunk])
            except QueueError:
                left.extend(chunk)
                continue
            failed = {entry["index"] for entry in result.failed}
            with self.ledger.lock:
                self.ledger.stored.update(body for i, body in enumerate(chunk) if i not in failed)
                self.ledger.send_failures += len(failed)
            left.extend(body for i, body in enumerate(chunk) if i in failed)
        self.pending = left

    def _receive(self, budget: int) -> None:
        while budget > 0:
            try:
                got = self.sub.receive(10)
            except QueueError:
                return
            if not got:
                return
            budget -= len(got)
            with self.ledger.lock:
                self.ledger.received.update(message.body for message in got)
            self._delete([message.receipt_handle for message in got])
            if len(got) < 10:  # the queue is shallow now: another receive would mostly find nothing
                return

    def _delete(self, handles: list[str]) -> None:
        if not handles:
            return
        try:
            result = self.sub.delete_batch(handles)
        except QueueError:
            self.handles = list(handles)
            return
        failed = [handles[entry["index"]] for entry in result.failed if entry.get("code") == "Throttled"]
        with self.ledger.lock:
            self.ledger.deleted += len(result.successful)
        self.handles = failed


@dataclass
class Second:
    """What one simulated second carried (summed over its ticks)."""

    at: float
    phase: str
    offered: float = 0
    stored: int = 0
    received: int = 0
    requests: int = 0
    throttled: int = 0
    shards: int = 0
    table_wu: float = 0.0


class Run:
    def __init__(self, backend: Any, scale: float, core_scale: Any, groups: int = 0, shards: int | None = None) -> None:
        self.core_scale = core_scale
        self.backend = backend
        self.scale = self.default_scale = scale
        self.groups = groups
        self.clock = SimClock()
        self.start = self.clock.now
        self.throttler = Throttler(backend.meter, self.clock, self._limits(40_000)).attach(backend.client)
        self.admin = QueueClient(TABLE, dynamodb=backend.client, clock=self.clock)
        self.admin.create_table()
        self.observer = QueueClient(TABLE, dynamodb=new_client(), clock=self.clock)
        self.queue = "fifo" if groups else "standard"
        settings: dict[str, Any] = {"visibility_timeout": VISIBILITY, "fifo": bool(groups)}
        if shards is not None:  # a fixed count, to compare with
            settings["shards"] = shards
        self.admin.create_queue(self.queue, **settings)
        self.ledger = Ledger()
        self.workers = [Worker(n, backend.client, self.clock, self.queue, self.ledger, groups) for n in range(WORKERS)]
        self.pool = ThreadPoolExecutor(WORKERS)
        self.seconds: list[Second] = []
        self.changes: list[tuple[float, int]] = []
        self._carry = 0.0
        self._last_sweep = self.clock.now
        self.min_shards = self.shards()

    def _limits(self, table_units: float, window: float = WINDOW) -> Limits:
        scaled = Limits(unscaled_keys=PER_PROCESS_KEYS).with_table(table_units).scaled(self.scale)
        return replace(scaled, window=window)

    def elapsed(self) -> float:
        return self.clock.now - self.start

    def shards(self) -> int:
        """Read beside the system, through a client the throttler does not see (an observer costs nothing)."""
        return self.observer._ctx.registry.get(self.queue, fresh=True).shards

    def _sweep_if_due(self) -> None:
        if self.clock.now - self._last_sweep >= SWEEP_SECONDS:
            self._last_sweep = self.clock.now
            try:
                self.admin.sweep()
            except QueueError as error:  # a sweep throttled: the next one does its work
                self.ledger.other_errors.append(f"sweep: {error}")

    def _tick(self, phase: Phase, receive_factor: float = 2.0) -> tuple[int, Stats]:
        self._carry += phase.rate * TICK / self.scale
        offered = int(self._carry)
        self._carry -= offered
        shares = [offered // WORKERS + (1 if n < offered % WORKERS else 0) for n in range(WORKERS)]
        random.shuffle(shares)
        # Consumers poll as long-pollers do, only while messages wait: idle polling is a fixed number of requests
        # a second, which a run scaled down would make SCALE times heavier against its limits.
        backlog = max(len(self.ledger.stored) - len(self.ledger.received), 0)
        wanted = backlog + int(receive_factor * offered) if backlog or offered else 0
        budgets = [wanted // WORKERS + (1 if n < wanted % WORKERS else 0) for n in range(WORKERS)]
        random.shuffle(budgets)
        before = self.throttler.stats.copy()
        list(self.pool.map(lambda args: args[0].tick(*args[1:]), zip(self.workers, shares, budgets, strict=True)))
        self.clock.advance(TICK)
        self._sweep_if_due()
        return offered, self.throttler.stats - before

    def run_phase(self, phase: Phase) -> dict[str, Any]:
        self.scale = phase.scale or self.default_scale
        self.core_scale(self.scale)
        self.throttler.set_limits(self._limits(phase.table_units, phase.window))
        started = self.elapsed()
        carried_at: float | None = None
        ticks_per_second = round(1 / TICK)
        ticks = round(phase.seconds / TICK)
        second: Second | None = None
        for tick in range(ticks):
            if tick % ticks_per_second == 0:
                stored_before, received_before = len(self.ledger.stored), len(self.ledger.received)
                second = Second(at=self.elapsed(), phase=phase.label)
            offered, stats = self._tick(phase)
            second.offered += offered * self.scale
            second.requests += stats.admitted + stats.throttled
            second.throttled += stats.throttled
            second.table_wu += stats.write_units * self.scale
            if tick % ticks_per_second == ticks_per_second - 1:
                second.stored = (len(self.ledger.stored) - stored_before) * self.scale
                second.received = (len(self.ledger.received) - received_before) * self.scale
                second.shards = self.shards()
                if not self.changes or self.changes[-1][1] != second.shards:
                    self.changes.append((second.at, second.shards))
                self.seconds.append(second)
                if len(self.seconds) % 10 == 0:
                    print(
                        f"    {second.at:5.0f} s: {second.shards} shards, stored {second.stored:,.0f}/s, "
                        f"throttled {second.throttled}/{second.requests}",
                        flush=True,
                    )
                if carried_at is None and self._carried(phase):
                    carried_at = self.elapsed() - started
        window = [s for s in self.seconds if s.phase == phase.label][-int(CARRY_WINDOW) :]
        return {
            "phase": phase.label,
            "rate": phase.rate,
            "table_units": phase.table_units,
            "scale": self.scale,
            "bucket_seconds": phase.window,
            "seconds": phase.seconds,
            "carried_after": carried_at,
            "shards_at_end": self.shards(),
            "throttled_last_window": _fraction(window),
            "stored_last_window": sum(s.stored for s in window) / max(sum(s.offered for s in window), 1),
        }

    def _carried(self, phase: Phase) -> bool:
        window = [s for s in self.seconds if s.phase == phase.label][-int(CARRY_WINDOW) :]
        if len(window) < CARRY_WINDOW:
            return False
        offered = sum(s.offered for s in window)
        return _fraction(window) < 0.01 and sum(s.stored for s in window) >= 0.99 * offered

    def drain(self, limit: int = 120) -> None:
        """Receives until every stored message was received (unsent ones are still sent), with the limits lifted:
        this only checks that every message is there, it measures nothing."""
        self.throttler.set_limits(Limits(*(LIFTED,) * 4))
        self.core_scale(1)
        drain = Phase("drain", 0, 0)
        for _ in range(limit):
            if not any(w.pending for w in self.workers) and len(self.ledger.received) >= len(self.ledger.stored):
                return
            self._tick(drain, receive_factor=0)

    def idle(self) -> dict[str, Any]:
        """Drains, then lets simulated minutes pass without load until the count is back to its minimum."""
        stopped = self.elapsed()
        self.drain()
        settled_at = None
        while self.elapsed() - stopped < IDLE_LIMIT_SECONDS:
            self.clock.advance(SWEEP_SECONDS)
            self._sweep_if_due()
            shards = self.shards()
            self.seconds.append(Second(at=self.elapsed(), phase="idle", shards=shards))
            if self.changes[-1][1] != shards:
                self.changes.append((self.elapsed(), shards))
            if shards <= self.min_shards:
                settled_at = self.elapsed() - stopped
                break
        return {"back_to_minimum_after": settled_at, "minimum": self.min_shards, "shards": self.shards()}

    def verdict(self) -> dict[str, Any]:
        ledger = self.ledger
        lost = ledger.stored - ledger.received
        return {
            "stored": len(ledger.stored),
            "received": len(ledger.received),
            "lost": len(lost),
            "never_stored": sum(len(w.pending) for w in self.workers),
            "requests": self.throttler.stats.admitted + self.throttler.stats.throttled,
            "throttled": self.throttler.stats.throttled,
            "reasons": dict(self.throttler.stats.refused),
            "refused_keys": [
                (f"{space} {kind}# {operation}", count)
                for (space, kind, operation), count in self.throttler.stats.refused_keys.most_common(8)
            ],
        }

    def close(self) -> None:
        self.pool.shutdown()
        self.throttler.detach()


def _fraction(window: list[Second]) -> float:
    requests = sum(s.requests for s in window)
    return sum(s.throttled for s in window) / requests if requests else 0.0


def run_steps(
    phases: tuple[Phase, ...], scale: float, groups: int = 0, idle: bool = True, shards: int | None = None
) -> dict[str, Any]:
    started = time.perf_counter()
    with moto_backend() as backend, core_limits_scaled() as core_scale:
        core_scale(scale)
        run = Run(backend, scale, core_scale, groups=groups, shards=shards)
        try:
            with run.clock.simulated_sleep():
                steps = []
                for phase in phases:
                    steps.append(run.run_phase(phase))
                    print(
                        f"  {phase.label}: carried after {steps[-1]['carried_after']} s, "
                        f"{steps[-1]['shards_at_end']} shards, throttled {steps[-1]['throttled_last_window']:.1%}",
                        flush=True,
                    )
                if idle:
                    after = run.idle()
                else:
                    after = None
                    run.drain()
                verdict = run.verdict()
        finally:
            run.close()
    return {
        "scale": scale,
        "groups": groups,
        "steps": steps,
        "idle": after,
        "verdict": verdict,
        "seconds": [s.__dict__ for s in run.seconds],
        "changes": run.changes,
        "wall_seconds": time.perf_counter() - started,
    }


def run(quick: bool = False) -> dict[str, Any]:
    standard = run_steps(QUICK if quick else FULL, SCALE)
    results = {"standard": standard}
    if not quick:
        fifo_scale = FIFO_FULL[0].scale or SCALE
        results["fifo"] = run_steps(FIFO_FULL, fifo_scale, groups=FIFO_GROUPS, idle=False)
    return results


def _seconds(value: float | None) -> str:
    return "not within the step" if value is None else f"{value:.0f} s"


def steady(result: dict[str, Any], step: dict[str, Any]) -> float | None:
    """The share of requests throttled from the moment a step was carried to its end (its steady state), or None
    when it was never carried."""
    if step["carried_after"] is None:
        return None
    seconds = [s for s in result["seconds"] if s["phase"] == step["phase"]]
    since = seconds[0]["at"] + step["carried_after"]
    after = [s for s in seconds if s["at"] >= since] or seconds[-int(CARRY_WINDOW) :]
    requests = sum(s["requests"] for s in after)
    return sum(s["throttled"] for s in after) / requests if requests else 0.0


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _step_rows(result: dict[str, Any]) -> list[str]:
    rows = []
    for step in result["steps"]:
        rows.append(
            f"| {step['phase']} | 1/{step['scale']:.0f} | {step['table_units']:,.0f} | {step['seconds']:.0f} s | "
            f"{_seconds(step['carried_after'])} | {_percent(steady(result, step))} | {step['shards_at_end']} | "
            f"{step['throttled_last_window']:.1%} | {step['stored_last_window']:.0%} |"
        )
    return rows


def section(figures: dict[str, Any], images: tuple[str, ...] = ("bench-load-step.png",)) -> list[str]:
    """This scenario's part of docs/benchmarks.md, in Markdown."""
    intro = "\n\n".join(" ".join(part.split()) for part in (__doc__ or "").strip().split("\n\n")[1:])
    standard = figures["standard"]
    verdict = standard["verdict"]
    idle = standard["idle"] or {}
    lines = [
        f"## {TITLE}\n",
        intro + "\n",
        f"Ticks of {TICK:.0f} simulated second, buckets of {WINDOW:.0f} seconds (a step's own `window` aside), "
        f"{WORKERS} producer-consumers; "
        f"{standard['wall_seconds']:.0f} s of wall-clock time. Each step has its own scale (the heavier the load, "
        "the smaller the fraction carried), limits and the core's per-key limits scaled alike. Reproduce with "
        "`.venv/bin/python -m bench.run --only load_step`.\n",
        "| step (one client, standard) | scale | table quota (units/s) | length | carried after | requests throttled "
        "from then to the end | shards at the end | "
        f"requests throttled, last {CARRY_WINDOW:.0f} s | stored ÷ offered, last {CARRY_WINDOW:.0f} s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *_step_rows(standard),
    ]
    if "fifo" in figures:
        lines += [row.replace("| 20,000", "| FIFO: 20,000", 1) for row in _step_rows(figures["fifo"])[-1:]]
    lines += [
        "",
        f"After the load stopped, the queue was drained and the shards were back to {idle.get('minimum', '?')} "
        f"after {_seconds(idle.get('back_to_minimum_after'))} of simulated time (the shard count at the end: "
        f"{idle.get('shards', '?')}). Messages stored: {verdict['stored']:,}; received: {verdict['received']:,}; "
        f"lost: {verdict['lost']}. Requests: {verdict['requests']:,}, of which {verdict['throttled']:,} throttled "
        f"({', '.join(f'{reason} {count:,}' for reason, count in verdict['reasons'].items()) or 'none'}).\n",
        "Shard changes (simulated second, count): "
        + ", ".join(f"{at:.0f} s → {count}" for at, count in standard["changes"])
        + ". The most refused (table or index, key kind, operation): "
        + ", ".join(f"{what} {count:,}" for what, count in verdict.get("refused_keys", [])[:4])
        + ".\n",
        _ceiling_note(),
        *(f"![{TITLE}](img/{name})\n" for name in images),
    ]
    return lines


def _ceiling_note() -> str:
    from queue_core import limits

    most = limits.MAX_SHARDS * 1_000 / 4
    return (
        f"A client's queue takes at most {limits.MAX_SHARDS} shards, and a message's life writes its shard's index "
        f"key four times (the send, the claim moving the entry, the delete): one client is carried up to about "
        f"{most:,.0f} msg/s; more goes through more clients (docs: the ceilings above).\n"
    )


def plot(figures: dict[str, Any], images: Any) -> tuple[str, ...]:
    from .. import plots

    names = [plots.load_step(figures["standard"], images / "bench-load-step.png", "One client, standard")]
    if "fifo" in figures:
        result = figures["fifo"]
        title = f"FIFO, 20,000 msg/s across {result['groups']:,} groups, at 1/{result['scale']:.0f} scale"
        names.append(plots.load_step(result, images / "bench-load-step-fifo.png", title))
    return tuple(names)


def summary(figures: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Rows of the summary table of docs/benchmarks.md: (figure, target, measured, met?)."""
    rows = []
    runs = [("one client", figures["standard"])] + ([("FIFO", figures["fifo"])] if "fifo" in figures else [])
    for label, result in runs:
        for step in result["steps"][1 if label == "one client" else 0 :]:
            rows.append(
                (
                    f"load step to {step['phase']} ({label}, table quota {step['table_units']:,.0f}, simulated at "
                    f"1/{step['scale']:.0f}): time until < 1 % of requests are throttled and ≥ 99 % stored "
                    f"over {CARRY_WINDOW:.0f} s",
                    "reported",
                    f"{_seconds(step['carried_after'])}; {step['shards_at_end']} shards; "
                    f"{_percent(steady(result, step))} throttled from then to the end "
                    f"({step['throttled_last_window']:.1%} in the last {CARRY_WINDOW:.0f} s)",
                    "reported",
                )
            )
    idle = figures["standard"]["idle"] or {}
    rows.append(
        (
            "after the load stops: time until the shards are back to the minimum (simulated)",
            "reported",
            f"{_seconds(idle.get('back_to_minimum_after'))} (to {idle.get('minimum', '?')})",
            "reported",
        )
    )
    verdict = figures["standard"]["verdict"]
    rows.append(
        ("messages lost in the load steps", "0", f"{verdict['lost']}", "yes" if verdict["lost"] == 0 else "**no**")
    )
    return rows
