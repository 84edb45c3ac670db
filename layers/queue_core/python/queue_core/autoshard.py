"""Shards that follow the load: an automatic queue's count goes up when its busiest shard key nears DynamoDB's per-key
limit (or is throttled) and back down after a quiet period.

What the processes learn costs no write per message and a number of report writes that does not grow with the
fleet. Each process counts, in memory (`load_meter`), the write units its sends put on each sub-queue's keys (a
message's life writes its shard's index key four times: the send, the claim, which moves the entry, and the
delete) and the throttles DynamoDB answered, and reports a sample of them in the sub-queue's load partition
(`Space.load_pk`, an item per report, sorted by time, TTL'd): once per `REPORT_SHARE` of a key's limit over
`FLUSH_SECONDS` carried per shard of the count (a quarter of a key's limit spread over any count makes about one
report a second), and once per `THROTTLES_PER_REPORT` throttles, each report worth that much; a process that carries
less reports with the probability of its share of a quantum, and is then worth the quantum. The sum of the reports
estimates what every process carried together without bias, two processes or two thousand, each living for hours
or seconds; a quiet queue writes nothing.

Decisions are made where code already runs. The sweep reads every client's reports once per pass, and a process whose
report carried throttles reads its own client's (at most once every `FLUSH_SECONDS`, and only while a change could be
made): it decides once those reports, whichever processes made them, show throttles that have gone on for
`FLUSH_SECONDS` (the reports of a load that just rose do not show its rate yet). A fleet's processes each meet a
throttle or two in their life, so none would ever see that much of its own, and a sweep may be minutes away or busy with
other queues. The load is the highest rate the reports show beyond their sampling error over the last 5, 10 or 20
seconds (so a step shows within seconds, and one thin sender's lucky report does not grow a queue). It says what each
count would carry, whatever count the processes used while they measured it: a standard client's sends go round its
shards, so its busiest key carries its total over the count; on a FIFO queue a group keeps to one shard at any count, so
the groups a report names as carrying a large part of it are placed where the count would place them, the rest is spread
evenly, and a shard's heaviest group is left out (more shards cannot split it). The count goes straight to the smallest
power of two whose busiest key carries at most `SIZE_FOR` of a key's limit (one layout change, not a staircase).
Throttles grow it when the measured load explains them, at least `THROTTLE_GROWTH` times, since senders that back off
measure less than they want to send; throttles counted before every process sends by the current count (`counted_from`)
are the previous count's and are left out, and so are those of requests at a place where an earlier count put a FIFO
group that is still there (a send to such a group; a claim in a partition that holds some, in the part they are of its
due groups): a group stays at its old place while it has messages, so a backlog keeps its old key busy after the
change, and more shards would not move it. Throttles on partitions no count splits (a FIFO group's own messages, the
shard marks, dedup buckets, the settings: `Store.unsharded_throttles`) never count towards growth, nor those of the
table's capacity. A queue throttled past `THROTTLES_PER_MINUTE` that does not grow says
why (`Decision.held`), in a log line (the sweep's once a pass; a throttled process's that decided, at most once a minute
each, as a sweep's pass may fail or be minutes away) and in the sweep's report, for a metric: the measured load does
not explain the throttles (a table-level quota; `"unexplained"`), one FIFO group carries its key alone
(`"one_group"`), the last change is still reaching every process or FIFO group (`"settling"`), it changed less than
`GROW_COOLDOWN_SECONDS` ago (`"cooldown"`), it is at its `max_shards` (`"max_shards"`), it keeps too many layouts
to change now (`"layouts_full"`), or the change could not be written (throttled, or not sent in time: `"unwritten"`).

A decision is written as a change by hand is (`Registry.reshard`: conditional on the settings' version and
generation, its own write recognised after a lost answer), and keeps the same layout history, so nothing is
stranded when the count goes down.

Hysteresis: a count grows when the busiest key passes `GROW_AT` and shrinks only after `QUIET_SECONDS` without a
change and with the load of every 20 s of that period under `SHRINK_AT` and no throttling; either way it goes to
the need, in powers of two.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from . import limits
from .context import Context
from .errors import QueueError, ValidationError
from .keys import Space, group_shard
from .load_meter import Sample, message_units
from .messages import Entry
from .settings import QueueSettings
from .store import load as reports_store

logger = logging.getLogger("queue_core")

# DynamoDB's limits per partition key, per second.
KEY_WRITE_UNITS: Final = 1_000
KEY_READ_UNITS: Final = 3_000
GROW_AT: Final = 0.5
SIZE_FOR: Final = 0.25
SHRINK_AT: Final = 0.1
THROTTLE_GROWTH: Final = 4
# Throttles a minute that say a key is past its limit: a few now and then are noise (a burst, a hot moment of the
# table), not a reason to grow.
THROTTLES_PER_MINUTE: Final = 120
# A process reports once per this share of a key's limit, over `FLUSH_SECONDS`, per shard of the count, that it
# carried; and once per `THROTTLES_PER_REPORT` throttles.
REPORT_SHARE: Final = 0.05
FLUSH_SECONDS: Final = 5
THROTTLES_PER_REPORT: Final = 5
# The windows a rate is measured over (the shortest is also the least span any rate is divided by).
RATE_WINDOWS: Final = (5, 10, 20)
THROTTLE_SECONDS: Final = 60
GROW_COOLDOWN_SECONDS: Final = 20
QUIET_SECONDS: Final = 300
# The quiet period is judged step by step, each as long as the longest rate window.
QUIET_STEP_SECONDS: Final = 20
# A FIFO group is placed apart from the rest (see `Load.busiest`) once the reports of a window name it for this
# many quanta or more.
HEAVY_QUANTA: Final = 3
# The most reports read for one client at a time, newest first: past it, the older ones are cut off (the load was
# then far above what shrinks a queue, about four times the reports of a quiet period at `SHRINK_AT`).
MAX_REPORTS_READ: Final = 500


def unit_quantum(shards: int) -> float:
    """Write units a report stands for, at a count of `shards`."""
    return REPORT_SHARE * KEY_WRITE_UNITS * FLUSH_SECONDS * shards


def note_traffic(
    ctx: Context,
    settings: QueueSettings,
    space: Space,
    entries: Iterable[Entry],
    throttles: int,
    stored_at_most: int | None,
    at_old_places: float = 0.0,
) -> None:
    """Called after a send (its `entries`, sent or not) or a receive (none) and the `throttles` DynamoDB answered
    it, `at_old_places` of them the old placement's (`Store.at_old_place`): writes the report they
    complete, if any, and when it carried throttles, decides whether to grow at once. Never fails the caller: a
    report is only a hint."""
    if not settings.auto_shards:
        return
    now = ctx.now_ms()
    units = [
        (float(message_units(entry.body, entry.attributes, stored_at_most)), entry.group_id if settings.fifo else None)
        for entry in entries
    ]
    old = min(at_old_places, throttles)
    sample = ctx.load.record(space, now, unit_quantum(settings.shards), THROTTLES_PER_REPORT, units, throttles, old)
    if sample is None:
        return
    try:
        key = space.load_key(sample.at, ctx.load.reporter, sample.number)
        ctx.store.write(reports_store.report_load(key, _item(sample), now // 1000 + 2 * QUIET_SECONDS))
        if sample.throttles and _may_grow(settings, now) and ctx.load.may_decide(space, now, FLUSH_SECONDS * 1000):
            # The client's other processes' reports too: a receiver throttled on claims sends nothing itself, and a
            # fleet's throttles are spread over processes that each meet a few.
            reports = _read(ctx, space, now - THROTTLE_SECONDS * 1000)
            if throttled_since(reports, now) <= now - FLUSH_SECONDS * 1000:
                decide(ctx, settings.name, reports=[reports], grow_only=True)
    except QueueError as error:  # e.g. a tenant confined to its sub-queue may not change settings
        logger.debug("load report or decision skipped: %s", error)


def _may_grow(settings: QueueSettings, now: int) -> bool:
    """Whether a decision now could grow the queue, as this process's settings say (a stale copy only costs a read
    of the reports): not at its ceiling, past the cooldown, and its throttles counted by the current count."""
    cooled = now - settings.shards_changed_at >= GROW_COOLDOWN_SECONDS * 1000
    return settings.shards < settings.max_shards and cooled and now >= counted_from(settings)


def throttled_since(reports: Reports, now: int) -> int:
    """When the throttles the reports show began (ms; `now` when they show none): the first report that carried
    throttles, whichever process made it. The reports of a load that just rose do not show its rate yet, so a
    throttled process decides only once the throttles have gone on for `FLUSH_SECONDS`."""
    return min((sample.at for sample in reports.samples if sample.throttles), default=now)


def _item(sample: Sample) -> dict[str, Any]:
    item: dict[str, Any] = {"at": sample.at, "throttles": sample.throttles}
    if sample.units:
        item |= {"wu": sample.units, "q": sample.quantum}
    if sample.groups:
        item["groups"] = sample.groups
    if sample.at_old_places:
        item["old"] = sample.at_old_places
    return item


@dataclass(frozen=True)
class Reports:
    """One client's reports, newest first, as read back to `read_from` (ms): before it, unknown (cut off)."""

    samples: list[Sample]
    read_from: int


def _sample(item: dict[str, Any]) -> Sample:
    reporter = str(item["sk"]).split("#")[1] if "sk" in item else ""
    groups = {str(group): float(units) for group, units in (item.get("groups") or {}).items()}
    return Sample(
        int(item["at"]),
        float(item.get("wu", 0)),
        float(item.get("throttles", 0)),
        groups,
        float(item.get("q", 0)),
        reporter=reporter,
        at_old_places=float(item.get("old", 0)),
    )


def _read(ctx: Context, space: Space, since: int) -> Reports:
    items = list(reports_store.reports_since(ctx.store, space.load_pk(), Space.load_from(since), MAX_REPORTS_READ))
    samples = [_sample(item) for item in items]
    cut_off = len(items) >= MAX_REPORTS_READ
    return Reports(samples, min(sample.at for sample in samples) if cut_off and samples else since)


def read_reports(ctx: Context, settings: QueueSettings, clients: list[str], now: int | None = None) -> list[Reports]:
    """Every client's recent reports (one query each): those of the quiet period when the count could shrink, else
    of the last minute."""
    now = ctx.now_ms() if now is None else now
    quiet = now - settings.shards_changed_at >= QUIET_SECONDS * 1000 and settings.shards > settings.min_shards
    since = now - (QUIET_SECONDS if quiet else THROTTLE_SECONDS) * 1000
    return [_read(ctx, Space(settings.name, client, settings.generation), since) for client in clients]


@dataclass(frozen=True)
class Load:
    """One client's traffic as its reports estimate it: write units a second, those of the FIFO groups that carried
    a large part (by group), throttles a minute (`at_old_places`: the part of them an earlier count's placement
    of FIFO groups stands for)."""

    units: float = 0.0
    groups: dict[str, float] = field(default_factory=dict)
    throttles: float = 0.0
    at_old_places: float = 0.0

    def busiest(self, shards: int) -> float:
        """Units a second on the busiest shard key at a count of `shards` that more shards could move elsewhere:
        the load not named by group spread evenly (all of a standard client's), each named group where `shards`
        places it, less each shard's heaviest group."""
        spread = max(0.0, self.units - sum(self.groups.values())) / shards
        placed: dict[int, list[float]] = {}
        for group, units in self.groups.items():
            placed.setdefault(group_shard(group, shards), []).append(units)
        return max([spread, *(spread + sum(loads) - max(loads) for loads in placed.values())])

    def heaviest_group(self) -> float:
        return max(self.groups.values(), default=0.0)


def _estimate(reports: Reports, start: int, end: int, with_end: bool = True) -> tuple[Load, float]:
    """The load of the reports made from `start` to `end` (ms; `end` itself and later too unless `with_end` is
    False: a process whose clock is a little ahead stamps its reports later), as rates over that time, and the
    standard error of its units a second. Reports read only from a later time (`read_from`: the older ones cut off)
    count over the time they cover."""
    start = max(start, reports.read_from)
    chosen = [s for s in reports.samples if start <= s.at and (s.at < end or with_end)]
    if not chosen:
        return Load(), 0.0
    seconds = max(end - start, RATE_WINDOWS[0] * 1000) / 1000
    carried = [sample for sample in chosen if sample.units]
    groups: dict[str, float] = {}
    for sample in carried:
        for group, units in sample.groups.items():
            groups[group] = groups.get(group, 0.0) + units
    # A group counts as apart from the rest only on enough evidence: a report that stands for one message names
    # its group whatever its share of the traffic.
    enough = HEAVY_QUANTA * min((sample.quantum or sample.units for sample in carried), default=0.0)
    heavy = {group: units / seconds for group, units in groups.items() if units >= enough}
    units = sum(sample.units for sample in carried)
    throttles = sum(sample.throttles for sample in chosen) * 60 / seconds
    old = sum(sample.at_old_places for sample in chosen) * 60 / seconds
    return Load(units / seconds, heavy, throttles, old), _error(carried) / seconds


def _error(samples: list[Sample]) -> float:
    """The standard error of the units of `samples`. A process whose reports in the window stand for several
    quanta carried about that many, give or take one (it reports every quantum it carries); one whose reports
    stand for one may have carried any fraction of it (a thin sender, reporting with that probability): its report
    errs by about the quantum, and stands for the thin senders that made none."""
    quanta: dict[str, list[float]] = {}
    for sample in samples:
        quantum = sample.quantum or sample.units
        quanta.setdefault(sample.reporter, []).append(quantum)
        quanta[sample.reporter] += [quantum] * (round(sample.units / quantum) - 1)
    variance = sum(max(made) ** 2 * (0.25 if len(made) > 1 else 1.0) for made in quanta.values())
    return math.sqrt(variance)


def recent_load(reports: Reports, now: int) -> Load:
    """The highest rate the reports show beyond their sampling error over the last `RATE_WINDOWS` seconds, with the
    groups and throttles of that window: a step up shows within seconds, a thin sender's lucky report does not."""
    best, best_units = Load(), 0.0
    for window in RATE_WINDOWS:
        load, error = _estimate(reports, now - window * 1000, now)
        if load.units - error > best_units:
            best, best_units = load, load.units - error
    return Load(best_units, best.groups, best.throttles, best.at_old_places)


@dataclass(frozen=True)
class Decision:
    """The count an automatic queue should have now (`shards`) and, when a throttled queue does not grow, why
    (`held`, with the throttles a minute it saw)."""

    shards: int
    held: str | None = None
    throttles_per_minute: float = 0.0
    # The count written by `decide` (None: it stays, or the change could not be made now).
    changed: int | None = None


def _need(settings: QueueSettings, loads: list[Load]) -> int:
    """The smallest power of two (within the bounds) whose busiest key carries at most `SIZE_FOR` of a key's limit
    for every client."""
    limit = SIZE_FOR * KEY_WRITE_UNITS
    shards = 1
    while shards < settings.max_shards and any(load.busiest(shards) > limit for load in loads):
        shards *= 2
    return min(max(shards, settings.min_shards), settings.max_shards)


def counted_from(settings: QueueSettings) -> int:
    """From when throttles say something of the current count (ms): once every process sends by it. A standard
    queue's sends use a process's cached count, which catches up within the settings cache; a FIFO queue's groups
    are placed by it from `placement_from` on (until then they stay at the previous count's places)."""
    if settings.fifo:
        return settings.placement_from
    return settings.shards_changed_at + int(limits.SETTINGS_CACHE_SECONDS * 1000)


def _throttles(reports: list[Reports], start: int, now: int, counted: bool = False) -> float:
    """The highest rate of throttles a minute any client's reports show over the last 5, 10, 20 or 60 seconds,
    from `start` on (`counted`: those met at the current count's places only)."""
    loads = [
        _estimate(client, max(start, now - window * 1000), now)[0]
        for client in reports
        for window in (*RATE_WINDOWS, THROTTLE_SECONDS)
        if max(start, now - window * 1000) < now
    ]
    return max((load.throttles - (load.at_old_places if counted else 0.0) for load in loads), default=0.0)


def wanted_shards(settings: QueueSettings, reports: list[Reports], now: int) -> int:
    """The count an automatic queue should have now (its current one when no change is due)."""
    return decision(settings, reports, now).shards


def decision(settings: QueueSettings, reports: list[Reports], now: int) -> Decision:
    """What an automatic queue's clients' reports ask of its count now (see the module's docstring)."""
    current = settings.shards
    bounded = min(max(current, settings.min_shards), settings.max_shards)
    since_change = now - settings.shards_changed_at
    loads = [recent_load(client, now) for client in reports]
    share = max((load.busiest(current) for load in loads), default=0.0) / KEY_WRITE_UNITS
    seen = _throttles(reports, now - THROTTLE_SECONDS * 1000, now)
    counted = _throttles(reports, counted_from(settings), now, counted=True)
    throttled = counted >= THROTTLES_PER_MINUTE
    explained = share >= SIZE_FOR
    cooled = since_change >= GROW_COOLDOWN_SECONDS * 1000
    if (share > GROW_AT or (throttled and explained)) and cooled:
        target = _need(settings, loads)
        if throttled and explained:
            target = max(target, current * THROTTLE_GROWTH)
        wanted = min(max(current, target), settings.max_shards)
        if wanted > current:
            return Decision(wanted, throttles_per_minute=seen)
    if seen >= THROTTLES_PER_MINUTE:
        return Decision(bounded, _held(settings, loads, throttled, explained), seen)
    if since_change >= QUIET_SECONDS * 1000:
        quiet = _quiet_loads(reports, now)
        if quiet is not None and all(
            load.busiest(current) <= SHRINK_AT * KEY_WRITE_UNITS and load.throttles < THROTTLES_PER_MINUTE
            for load in quiet
        ):
            return Decision(min(current, _need(settings, quiet)), throttles_per_minute=seen)
    return Decision(bounded, throttles_per_minute=seen)


def _held(settings: QueueSettings, loads: list[Load], throttled: bool, explained: bool) -> str:
    """Why a throttled queue does not grow now: `throttled` False when its throttles came before every process had
    the current count, or where an earlier count placed FIFO groups that are still there."""
    if settings.shards >= settings.max_shards:
        return "max_shards"
    if not throttled:
        return "settling"
    if not explained:
        one_group = settings.fifo and any(load.heaviest_group() >= SIZE_FOR * KEY_WRITE_UNITS for load in loads)
        return "one_group" if one_group else "unexplained"
    return "cooldown"


def _quiet_loads(reports: list[Reports], now: int) -> list[Load] | None:
    """Each client's load in each step of the quiet period, beyond its sampling error; None when the reports read
    do not reach back to its start (there were too many to read: not quiet)."""
    start = now - QUIET_SECONDS * 1000
    if any(client.read_from > start for client in reports):
        return None
    loads = []
    step = QUIET_STEP_SECONDS * 1000
    for client in reports:
        for begin in range(start, now, step):
            load, error = _estimate(client, begin, min(begin + step, now), with_end=begin + step >= now)
            loads.append(Load(max(0.0, load.units - error), load.groups, load.throttles))
    return loads


_WHY: Final = {
    "max_shards": "the queue is at its max_shards",
    "settling": "the last change of shards is still reaching every process or the FIFO groups active at old places",
    "cooldown": "the count changed less than a cooldown ago",
    "unexplained": "the measured load does not explain them (a table-level quota?): more shards would not help",
    "one_group": "one FIFO group carries its key alone: more shards would not move it",
    "layouts_full": "the queue keeps as many shard layouts as it may until the oldest is empty",
    "unwritten": "the change could not be written now (throttled, or not sent in time): the next decision makes it",
}


def decide(
    ctx: Context,
    name: str,
    reports: list[Reports] | None = None,
    settings: QueueSettings | None = None,
    grow_only: bool = False,
) -> Decision | None:
    """Makes the automatic decision for queue `name` now (None: not an automatic queue). With `grow_only` (a
    throttled process, which sees one client's reports), only growth is decided. A throttled queue that does not
    grow is logged with the reason: a warning from the sweep (once a pass), and from a throttled process at most
    once every `THROTTLE_SECONDS` (`LoadMeter.may_say`; its other decisions at debug level): a sweep's pass may
    fail or be minutes away while the key goes on throttling, and the throttled processes are the ones that know."""
    current = settings or ctx.registry.get(name, fresh=True)
    if not current.auto_shards:
        return None
    now = ctx.now_ms()
    made = decision(current, reports or [], now)
    changed = None
    if made.shards != current.shards and not (grow_only and made.shards < current.shards):
        changed, held = _apply(ctx, current, made.shards)
        if held and made.shards > current.shards and made.throttles_per_minute >= THROTTLES_PER_MINUTE:
            made = Decision(current.shards, held, made.throttles_per_minute)
    if made.held:
        said = not grow_only or ctx.load.may_say(name, now, THROTTLE_SECONDS * 1000)
        logger.log(
            logging.WARNING if said else logging.DEBUG,
            "queue %s: throttled %.0f a minute, shards stay %d (%s): %s",
            name,
            made.throttles_per_minute,
            current.shards,
            made.held,
            _WHY[made.held],
        )
    return Decision(made.shards, made.held, made.throttles_per_minute, changed)


def force(ctx: Context, name: str, shards: int) -> int | None:
    """An automatic change to `shards` whatever the load, fenced as any automatic change is: how tests and the
    reliability runs make a queue reshard by itself at a moment of their choosing."""
    current = ctx.registry.get(name, fresh=True)
    if not current.auto_shards:
        return None
    return _apply(ctx, current, min(max(shards, current.min_shards), current.max_shards))[0]


def _apply(ctx: Context, current: QueueSettings, wanted: int) -> tuple[int | None, str]:
    """The count written (None: none), and why a change was not made when it could not be (`_WHY`; "" when it
    was, or the queue changed meanwhile and the next decision is made on its new settings)."""
    if wanted == current.shards:
        return None, ""
    try:
        changed = ctx.registry.reshard(current, wanted, ctx.now_ms)
    except ValidationError as error:  # too many layouts kept: the change waits until the oldest has gone
        logger.info("automatic shard change of %s to %d waits: %s", current.name, wanted, error)
        return None, "layouts_full"
    except QueueError as error:  # throttled, or not sent in time
        logger.info("automatic shard change of %s to %d not made now: %s", current.name, wanted, error)
        return None, "unwritten"
    if changed is None:
        return None, ""
    logger.info("queue %s: shards %d -> %d (automatic)", current.name, current.shards, wanted)
    return wanted, ""
