"""Shards that follow the load: an automatic queue's count goes up when its busiest shard key nears DynamoDB's per-key
limit (or is throttled) and back down after a quiet period.

What a process learns costs no write per message: each process counts, in memory, the write units its sends put on
each shard of a sub-queue (a message's life writes its shard's index key four times: the send, the claim, which
moves the entry, and the delete) and the throttles DynamoDB answered. Every `FLUSH_SECONDS` of the clock it puts one
report of those rates in the sub-queue's load partition (`Space.load_key`, one item per process, overwritten,
TTL'd), and only when it carried at least `REPORT_MIN_SHARE` of a key's limit in all or was throttled: a quiet queue
writes nothing.

Decisions are made where code already runs. The sweep reads every client's reports once per pass and sizes the count
for `SIZE_FOR` of a key's limit on the busiest shard; a process whose sends or receives were throttled, at
`THROTTLES_PER_MINUTE` or more, reads its client's reports and decides at once. Either way the count goes straight
to the need the reports measure (a standard client's sends go round its shards: its busiest key carries its total
over the count), and a throttled one at least `THROTTLE_GROWTH` times, since senders that back off measure less
than they want to send; throttles the measured load does not explain (a table-level quota, a change still
settling) grow nothing, as more shards would not help. On a FIFO queue the same holds for one busy group: it keeps to
one shard at any count, so a report also carries its busiest shard's load but that shard's busiest group
(`spread_wu`, counted in memory per window), and only that part sizes the count, grows it on throttles, or keeps it
from shrinking. A decision is
written as a change by hand is (`Registry.reshard`: conditional on the settings' version and generation, its own
write recognised after a lost answer), and keeps the same layout history, so nothing is stranded when the count goes
down.

Hysteresis: a count grows when the busiest key passes `GROW_AT`, is sized for `SIZE_FOR`, and shrinks only after
`QUIET_SECONDS` without a change and with every report of that period under `SHRINK_AT`; it goes straight to the
need (one layout change, not a staircase), in powers of two.
"""

from __future__ import annotations

import logging
import math
import threading
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from .errors import QueueError
from .keys import Space
from .settings import QueueSettings
from .store import load as writes

if TYPE_CHECKING:
    from .context import Context

logger = logging.getLogger("queue_core")

# DynamoDB's limits per partition key, per second.
KEY_WRITE_UNITS: Final = 1_000
KEY_READ_UNITS: Final = 3_000
# Writes of a message's life on the busier of its shard's keys, the index partition: the send's entry, the claim
# (the entry moves: a delete and a put), the delete (a write unit per KB each).
LIFE_WRITES: Final = 4
GROW_AT: Final = 0.5
SIZE_FOR: Final = 0.25
SHRINK_AT: Final = 0.1
THROTTLE_GROWTH: Final = 4
# Throttles a minute that say a key is past its limit: a few now and then are noise (a burst, a hot moment of the
# table), not a reason to grow.
THROTTLES_PER_MINUTE: Final = 120
FLUSH_SECONDS: Final = 5
REPORT_MIN_SHARE: Final = 0.05
# Reports this recent say what the load is now; a change waits this long after the last one (a process's cached
# settings catch up within `limits.SETTINGS_CACHE_SECONDS`, then a report window passes).
FRESH_SECONDS: Final = 20
GROW_COOLDOWN_SECONDS: Final = 20
QUIET_SECONDS: Final = 300

# This process in the load reports (each meter adds its own suffix: see `LoadMeter.reporter`).
PROCESS: Final = uuid.uuid4().hex[:12]


@dataclass
class _Window:
    started: int
    units: dict[int, float] = field(default_factory=dict)
    throttles: int = 0
    # FIFO: each group's units on its shard, to tell the load more shards can spread from what one group carries.
    groups: dict[tuple[int, str], float] = field(default_factory=dict)


class LoadMeter:
    """This process's load per sub-queue since its last report: memory only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._windows: dict[Space, _Window] = {}
        # Its own report item: clients in one process (threads, a worker pool) each count only their own load,
        # and one's report must not overwrite another's.
        self.reporter = f"{PROCESS}-{uuid.uuid4().hex[:6]}"

    def record(self, space: Space, shard: int, units: float, now: int, group: str | None = None) -> None:
        with self._lock:
            window = self._windows.setdefault(space, _Window(now))
            window.units[shard] = window.units.get(shard, 0.0) + units
            if group is not None:
                window.groups[shard, group] = window.groups.get((shard, group), 0.0) + units

    def throttled(self, space: Space, now: int, count: int = 1) -> None:
        with self._lock:
            self._windows.setdefault(space, _Window(now)).throttles += count

    def take(self, space: Space, now: int) -> dict[str, Any] | None:
        """The report of a window at least `FLUSH_SECONDS` long (which starts a new one), or None: too early, or
        nothing worth a write (no throttle, all shards together under `REPORT_MIN_SHARE` of one key's limit)."""
        with self._lock:
            window = self._windows.get(space)
            if window is None or now - window.started < FLUSH_SECONDS * 1000:
                return None
            del self._windows[space]
        seconds = (now - window.started) / 1000
        busiest = max(window.units.values(), default=0.0) / seconds
        total = sum(window.units.values()) / seconds
        # The total, not the busiest shard: spread thin over many shards, a load must still keep them.
        if not window.throttles and total < REPORT_MIN_SHARE * KEY_WRITE_UNITS:
            return None
        rates = {"busiest_wu": math.ceil(busiest), "total_wu": math.ceil(total)}
        if window.groups:
            rates["spread_wu"] = math.ceil(_spreadable(window) / seconds)
        return {"at": now, **rates, "throttles": math.ceil(window.throttles * 60 / seconds)}


def _spreadable(window: _Window) -> float:
    """The most units on one shard that more shards could move elsewhere: the shard's load but its busiest group's.
    A group keeps to one shard at any count, so what it carries alone is its own keys' limit, not the queue's."""
    busiest_group: dict[int, float] = {}
    for (shard, _), units in window.groups.items():
        busiest_group[shard] = max(busiest_group.get(shard, 0.0), units)
    return max((units - busiest_group.get(shard, 0.0) for shard, units in window.units.items()), default=0.0)


def message_units(body: str, attributes: dict[str, str] | None = None, stored_at_most: int | None = None) -> int:
    """Write units of one message's life on its shard's key (item size rounded up to the KB, about). A body larger
    than `stored_at_most` (a client's offload threshold) goes to S3 and leaves a pointer in the item: counted at
    that size, or a few large bodies a second would read as the load of thousands of small ones."""
    body_bytes = len(body.encode())
    if stored_at_most is not None:
        body_bytes = min(body_bytes, stored_at_most)
    size = body_bytes + sum(len(k) + len(v) for k, v in (attributes or {}).items()) + 300
    return LIFE_WRITES * math.ceil(size / 1024)


def after_traffic(ctx: Context, settings: QueueSettings, space: Space) -> None:
    """Called after a send or a receive: flushes this process's report when its window is over, and when it saw
    throttles, grows the count at once. Never fails the caller: a report is only a hint."""
    if not settings.auto_shards:
        return
    now = ctx.now_ms()
    report = ctx.load.take(space, now)
    if report is None:
        return
    try:
        ctx.store.write(writes.report_load(space.load_key(ctx.load.reporter), report, now // 1000 + 2 * QUIET_SECONDS))
        if report["throttles"] >= THROTTLES_PER_MINUTE:
            # The client's other processes' reports too: a receiver throttled on claims sends nothing itself.
            reports = [list(ctx.store.query_all(space.load_pk()))]
            decide(ctx, settings.name, throttled=True, reports=reports, grow_only=True)
    except QueueError as error:  # e.g. a tenant confined to its sub-queue may not change settings
        logger.debug("load report or decision skipped: %s", error)


def _share(settings: QueueSettings, reports: list[list[dict[str, Any]]], since: int) -> float:
    """The busiest shard key's load at the current count as a share of a key's write limit, the most of any client
    (each has its own keys). A standard client's sends go round its shards, so each key carries the client's total
    over the count; a FIFO group keeps to one shard, so there it is the sum of each process's busiest shard but that
    shard's busiest group (`spread_wu`: a group's load stays on one key at any count, more shards only spread the
    rest; a report without it, from an older process, counts its busiest shard whole). Each process has one report
    (the latest)."""
    per_client = []
    for client in reports:
        recent = [r for r in client if int(r["at"]) >= since]
        if settings.fifo:
            per_client.append(sum(float(r.get("spread_wu", r["busiest_wu"])) for r in recent))
        else:
            per_client.append(sum(float(r["total_wu"]) for r in recent) / settings.shards)
    return max(per_client, default=0.0) / KEY_WRITE_UNITS


def _power_of_two(value: float) -> int:
    return 1 if value <= 1 else 1 << math.ceil(math.log2(value - 1e-9))


def wanted_shards(
    settings: QueueSettings, reports: list[list[dict[str, Any]]], now: int, throttled: bool = False
) -> int:
    """The count an automatic queue should have now (its current one when no change is due)."""
    current = settings.shards
    since_change = now - settings.shards_changed_at
    # What was measured before the last change says nothing of the shards as they are now.
    since = max(now - FRESH_SECONDS * 1000, settings.shards_changed_at + 1)
    fresh = [[r for r in client if int(r["at"]) >= since] for client in reports]
    throttled = throttled or any(int(r["throttles"]) >= THROTTLES_PER_MINUTE for client in fresh for r in client)
    share = _share(settings, fresh, since)
    # Throttles grow the count only when the measured load explains them (see the module's docstring).
    throttled = throttled and share >= SIZE_FOR
    if (share > GROW_AT or throttled) and since_change >= GROW_COOLDOWN_SECONDS * 1000:
        target = _power_of_two(current * share / SIZE_FOR)
        if throttled:
            target = max(target, current * THROTTLE_GROWTH)
        return max(current, min(target, settings.max_shards))
    recent = [[r for r in client if int(r["at"]) >= now - QUIET_SECONDS * 1000] for client in reports]
    recent_share = _share(settings, recent, now - QUIET_SECONDS * 1000)
    recently_throttled = any(int(r["throttles"]) >= THROTTLES_PER_MINUTE for client in recent for r in client)
    if since_change >= QUIET_SECONDS * 1000 and recent_share <= SHRINK_AT and not recently_throttled:
        target = _power_of_two(current * recent_share / SIZE_FOR)
        return min(current, max(target, settings.min_shards))
    return min(max(current, settings.min_shards), settings.max_shards)


def read_reports(ctx: Context, settings: QueueSettings, clients: list[str]) -> list[list[dict[str, Any]]]:
    """Every client's load reports (one query each)."""
    return [
        list(ctx.store.query_all(Space(settings.name, client, settings.generation).load_pk())) for client in clients
    ]


def decide(
    ctx: Context,
    name: str,
    throttled: bool = False,
    reports: list[list[dict[str, Any]]] | None = None,
    settings: QueueSettings | None = None,
    grow_only: bool = False,
) -> int | None:
    """Makes the automatic decision for queue `name` now; the new count when it changed, else None. With
    `grow_only` (a throttled process, which sees one client's reports), only growth is decided."""
    current = settings or ctx.registry.get(name, fresh=True)
    if not current.auto_shards:
        return None
    now = ctx.now_ms()
    wanted = wanted_shards(current, reports or [], now, throttled)
    if (grow_only or reports is None) and wanted < current.shards:
        return None
    return _apply(ctx, current, wanted, now)


def force(ctx: Context, name: str, shards: int) -> int | None:
    """An automatic change to `shards` whatever the load, fenced as any automatic change is: how tests and the
    reliability runs make a queue reshard by itself at a moment of their choosing."""
    current = ctx.registry.get(name, fresh=True)
    if not current.auto_shards:
        return None
    return _apply(ctx, current, min(max(shards, current.min_shards), current.max_shards), ctx.now_ms())


def _apply(ctx: Context, current: QueueSettings, wanted: int, now: int) -> int | None:
    if wanted == current.shards:
        return None
    try:
        changed = ctx.registry.reshard(current, wanted, now)
    except QueueError as error:  # too many layouts kept: the change waits until the oldest has gone
        logger.info("automatic shard change of %s to %d waits: %s", current.name, wanted, error)
        return None
    if changed is None:
        return None
    logger.info("queue %s: shards %d -> %d (automatic)", current.name, current.shards, wanted)
    return wanted
