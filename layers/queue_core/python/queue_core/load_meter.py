"""What one process learns of the load it puts on a sub-queue, in memory, and when that is worth a report.

Reports are samples, so that their cost stays bounded however the load is spread over processes. Each process
counts the write units its sends put on the sub-queue's keys and the throttles DynamoDB answered, and reports once
per `unit_quantum` units (and once per `throttle_quantum` throttles) it carried, from a random point: a process
that carries `u` units reports `u / unit_quantum` times on average, each report worth one quantum. One that carries
less than a quantum in all (a thin sender of a fleet, a short-lived function instance) reports once with
probability `u / unit_quantum` and is then worth the quantum, `u / p`: the sum of the reports estimates the load
of every process together, without bias, whatever the number of processes and however long each lives, and the
number of reports stays about the load over the quantum, never one per process.

A report also says which groups of a FIFO queue carried a large part of the units since the previous report
(`HEAVY_SHARE` of them or more), each with its part of the report's worth: a group keeps to one shard at any
count, so how the load is split among groups decides what more shards can spread (see `autoshard`). And it says
which part of its throttles was the old placement's, met where an earlier count placed FIFO groups that are still
there (a group stays while it has messages; `Store.at_old_place`): a larger count would not relieve that load.

The meter knows nothing of DynamoDB's limits nor of decisions: its caller gives the quanta and writes the reports.
"""

from __future__ import annotations

import itertools
import math
import random
import threading
import uuid
from dataclasses import dataclass, field
from typing import Final, TypeVar

from .keys import Space

# Writes of a message's life on the busier of its shard's keys, the index partition: the send's entry, the claim
# (the entry moves: a delete and a put), the delete (a write unit per KB each).
LIFE_WRITES: Final = 4
# A group that carried this share of a report's units or more is named in it; there are at most 1 / HEAVY_SHARE.
HEAVY_SHARE: Final = 0.125

_K = TypeVar("_K")

# This process in the load reports (each meter adds its own suffix: see `LoadMeter.reporter`).
PROCESS: Final = uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class Sample:
    """One report, made at `at` (ms), of what a process carried since its previous one, as estimates: `units`
    write units, `throttles` throttles, and `groups` the units of the FIFO groups that carried a large part.
    `quantum` is what one report stands for (`units` is a whole number of them); `number` tells apart the
    reports of one meter; `reporter` is the meter's, as read back; `at_old_places` is the part of `throttles`
    that was an earlier count's placement's (`Store.at_old_place`)."""

    at: int
    units: float
    throttles: float
    groups: dict[str, float] = field(default_factory=dict)
    quantum: float = 0.0
    number: int = 0
    reporter: str = ""
    at_old_places: float = 0.0


@dataclass
class _Tally:
    """A sub-queue's traffic since this process's last report, and how much more it carries before the next."""

    unit_quantum: float
    unit_credit: float
    throttle_quantum: float
    throttle_credit: float
    units: float = 0.0
    groups: dict[str, float] = field(default_factory=dict)
    throttles: float = 0.0
    at_old_places: float = 0.0


def _crossings(credit: float, quantum: float) -> tuple[int, float]:
    """How many quanta a credit used up (at or under zero), and the credit left towards the next one."""
    if credit > 0:
        return 0, credit
    passed = math.floor(-credit / quantum) + 1
    return passed, credit + passed * quantum


def _rescaled(credit: float, old: float, new: float) -> float:
    """A credit drawn against quantum `old`, as the same fraction of quantum `new`: the next report stays as likely
    as before for the units to come (the quantum follows the shard count)."""
    return credit * new / old


class LoadMeter:
    """This process's traffic per sub-queue since its last report: memory only. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tallies: dict[Space, _Tally] = {}
        # Its own reports: clients in one process (threads, a worker pool) each count only their own load.
        self.reporter = f"{PROCESS}-{uuid.uuid4().hex[:6]}"
        # When this process last read a sub-queue's reports to decide (see `may_decide`), and last said why a
        # queue it was throttled on did not grow (see `may_say`).
        self._decided_at: dict[Space, int] = {}
        self._said_at: dict[str, int] = {}
        self._numbers = itertools.count()

    def record(
        self,
        space: Space,
        now: int,
        unit_quantum: float,
        throttle_quantum: float,
        units: list[tuple[float, str | None]],
        throttles: int = 0,
        at_old_places: float = 0.0,
    ) -> Sample | None:
        """Counts `units` (each a message's write units and its FIFO group, or None) and `throttles`, of which
        `at_old_places` an earlier count's placement's; the report they complete, or None. The first credit of a
        sub-queue is drawn at random in (0, quantum]."""
        with self._lock:
            tally = self._tallies.get(space)
            if tally is None:
                tally = self._tallies[space] = _Tally(
                    unit_quantum,
                    unit_quantum * (1 - random.random()),
                    throttle_quantum,
                    throttle_quantum * (1 - random.random()),
                )
            if unit_quantum != tally.unit_quantum:
                tally.unit_credit = _rescaled(tally.unit_credit, tally.unit_quantum, unit_quantum)
                tally.unit_quantum = unit_quantum
            if throttle_quantum != tally.throttle_quantum:
                tally.throttle_credit = _rescaled(tally.throttle_credit, tally.throttle_quantum, throttle_quantum)
                tally.throttle_quantum = throttle_quantum
            if not units and not throttles:
                return None
            for amount, group in units:
                tally.units += amount
                if group is not None:
                    tally.groups[group] = tally.groups.get(group, 0.0) + amount
            unit_reports, tally.unit_credit = _crossings(tally.unit_credit - sum(a for a, _ in units), unit_quantum)
            tally.throttles += throttles
            tally.at_old_places += at_old_places
            throttle_reports, tally.throttle_credit = _crossings(tally.throttle_credit - throttles, throttle_quantum)
            if not unit_reports and not throttle_reports:
                return None
            worth = unit_reports * unit_quantum
            groups: dict[str, float] = {}
            if unit_reports:
                groups = {
                    group: worth * carried / tally.units
                    for group, carried in tally.groups.items()
                    if carried >= HEAVY_SHARE * tally.units
                }
                tally.units, tally.groups = 0.0, {}
            throttled = throttle_reports * throttle_quantum
            old = 0.0
            if throttle_reports:
                old = throttled * min(1.0, tally.at_old_places / max(tally.throttles, 1.0))
                tally.throttles, tally.at_old_places = 0.0, 0.0
            return Sample(now, worth, throttled, groups, unit_quantum, next(self._numbers), at_old_places=old)

    def may_decide(self, space: Space, now: int, every_ms: int) -> bool:
        """Called when a report of `space` carried throttles: whether this process may read the sub-queue's reports
        and decide now, at most once every `every_ms`. Whether the throttles have gone on long enough to decide is
        for those reports to say, the whole fleet's: a process of a fleet meets a throttle or two in its life."""
        return self._once_every(self._decided_at, space, now, every_ms)

    def may_say(self, queue: str, now: int, every_ms: int) -> bool:
        """Called when a decision this process made held a throttled queue's count: whether it says so in a log
        line others see now, at most once every `every_ms` (else at debug level). The sweep says it once a pass,
        but a pass may fail or be minutes away while a key goes on throttling; a fleet's processes each say it
        at most that often, and only those throttled."""
        return self._once_every(self._said_at, queue, now, every_ms)

    def _once_every(self, last_at: dict[_K, int], key: _K, now: int, every_ms: int) -> bool:
        with self._lock:
            last = last_at.get(key)
            if last is not None and now - last < every_ms:
                return False
            last_at[key] = now
            return True


def message_units(body: str, attributes: dict[str, str] | None = None, stored_at_most: int | None = None) -> int:
    """Write units of one message's life on its shard's key (item size rounded up to the KB, about). A body larger
    than `stored_at_most` (a client's offload threshold) goes to S3 and leaves a pointer in the item: counted at
    that size, or a few large bodies a second would read as the load of thousands of small ones."""
    body_bytes = len(body.encode())
    if stored_at_most is not None:
        body_bytes = min(body_bytes, stored_at_most)
    size = body_bytes + sum(len(k) + len(v) for k, v in (attributes or {}).items()) + 300
    return LIFE_WRITES * math.ceil(size / 1024)
