"""Which shards a receiver visits, and in what order.

Receivers start at a random shard, so that they spread over a sharded queue, and skip for a moment the shards they
just found empty, so that a queue with many shards and little traffic does not pay one query per empty shard on
every receive. A receive that found nothing elsewhere still visits the skipped shards before it returns empty, so a
hint can make a receive cheaper but never makes it miss a visible message.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable
from enum import IntEnum
from typing import Any, Final

from . import partial
from .errors import Throttled

EMPTY_SHARD_SECONDS: Final = 5.0
# How long a process trusts what it knows of a sub-queue's priorities before it reads its ready markers again: a
# priority first used by another process is received in its order at most this late.
BANDS_SECONDS: Final = 1.0


class ShardPicker:
    def __init__(self, shards: int) -> None:
        self.shards = shards
        self._lock = threading.Lock()
        self._empty_until: dict[int, float] = {}

    def order(self) -> tuple[list[int], list[int]]:
        """(shards to visit first, from a random one; shards found empty lately, visited only if needed)."""
        start = random.randrange(self.shards)
        ring = [(start + step) % self.shards for step in range(self.shards)]
        now = time.monotonic()
        with self._lock:
            quiet = {shard for shard, until in self._empty_until.items() if until > now}
        return [s for s in ring if s not in quiet], [s for s in ring if s in quiet]

    def found(self, shard: int, anything: bool) -> None:
        with self._lock:
            if anything:
                self._empty_until.pop(shard, None)
            else:
                self._empty_until[shard] = time.monotonic() + EMPTY_SHARD_SECONDS


class ConflictGauge:
    """How hard receivers of this sub-queue fight over the same messages (a moving average of lost claims per
    claim). While it is low, a receive claims the head in order; when it rises, receives read a wider window and
    claim at random inside it, so concurrent consumers stop landing on the same items."""

    WIDEN: Final = 8
    WEIGHT: Final = 0.3

    def __init__(self) -> None:
        self.level = 0.0

    def window(self, need: int) -> int:
        """How many entries a receive of `need` reads: one more at least, so that it knows whether it took the last
        (`Seen.TAKEN`: a receive of one message that empties its shard says so, and the next visits it only if a
        mark says it was refilled)."""
        return need + max(1, need // 2) + int(self.level * self.WIDEN * need)

    def record(self, attempts: int, lost: int) -> None:
        if attempts:
            self.level = (1 - self.WEIGHT) * self.level + self.WEIGHT * (lost / attempts)

    @property
    def contended(self) -> bool:
        return self.level > 0.02


class Seen(IntEnum):
    """What a shard's query saw besides what the receive took from it (the second part of a `ShardReceive`'s
    answer; a plain bool means NONE or MORE)."""

    NONE = 0  # no candidate: nothing due there
    MORE = 1  # candidates, and perhaps more than it took
    TAKEN = 2  # candidates, every one of them taken (or lost to another receive), and the query read them all


ShardReceive = Callable[[int, int], tuple[list[Any], bool]]


def visit(picker: ShardPicker, want: int, receive_shard: ShardReceive) -> list[Any]:
    """Receives shard by shard until `want` are found, or a shard gave some but fewer than asked (the queue is
    shallow: more shards would mostly cost empty queries); the quiet shards only when nothing was found elsewhere.
    `receive_shard(shard, need)` returns what it claimed and whether the shard had any candidate at all. A shard
    that throttled is asked nothing more and not marked empty; what it claimed first is kept, the other shards are
    still asked (a throttle is per partition), and the throttle is raised with all of it (see `partial`)."""
    got: list[Any] = []
    throttle: Throttled | None = None
    first, quiet = picker.order()
    for shards in (first, quiet):
        if got:
            break
        for shard in shards:
            if len(got) >= want:
                break
            need = want - len(got)
            found, saw_candidates, throttled = ask(receive_shard, shard, need)
            got += found
            if throttled:
                throttle = partial.kept(throttle, throttled)
                continue
            picker.found(shard, saw_candidates)
            if found and len(found) < need:
                break
    if throttle is not None:
        raise partial.after(throttle, got) from partial.original(throttle)
    return got


def ask(receive_shard: ShardReceive, shard: int, need: int) -> tuple[list[Any], bool, Throttled | None]:
    """One shard's answer: (claimed, whether it had any candidate, None); after a throttle, (what it claimed
    first, False, the throttle): that shard is asked nothing more, and not taken for empty."""
    try:
        found, saw_candidates = receive_shard(shard, need)
    except Throttled as error:
        return partial.received(error), False, error
    return found, saw_candidates, None


class SendRotation:
    """Standard sends go round the shards from a random one: an even spread, so no shard partition is hotter than
    the others (a random choice per message leaves the busiest shard well above the average). They go round by
    runs of `RUN` messages, and a process that sends fewer than `RUN` a second stays on its shard: a trickle then
    lands where one query finds it together, and keeps one shard mark alive instead of one per shard
    (`shard_marks`). `RUN` messages a second are a few percent of what a partition takes, and many such
    processes, each on its own random shard, still spread."""

    RUN: Final = 10

    def __init__(self, shards: int) -> None:
        self.shards = shards
        self._next = random.randrange(shards)
        self._lock = threading.Lock()
        self._second = 0.0
        self._sent = 0

    def next(self, now_ms: int) -> int:
        """The shard of the next message sent at `now_ms` (the queue's clock)."""
        with self._lock:
            now = now_ms / 1000
            if now - self._second >= 1.0:
                self._second, self._sent = now, 0
            self._sent += 1
            if self._sent > self.RUN and (self._sent - 1) % self.RUN == 0:
                self._next = (self._next + 1) % self.shards
            return self._next


class Traffic:
    """What this process learns about one sub-queue and keeps across calls: which shards were empty, how much
    receivers collide, where the next send goes, and each FIFO group's last sequence (so that a send's guess of
    it is right and its transaction is not wasted)."""

    GROUPS_REMEMBERED: Final = 10_000

    def __init__(self, read_shards: int, send_shards: int) -> None:
        self.picker = ShardPicker(read_shards)
        self.gauge = ConflictGauge()
        self.rotation = SendRotation(send_shards)
        self._last_seq: dict[str, int] = {}
        self._lock = threading.Lock()
        self._read_shards = read_shards
        self._pickers: dict[int, ShardPicker] = {0: self.picker}
        self._bands: set[int] = {0}
        self._bands_until = 0.0

    def picker_for(self, priority: int) -> ShardPicker:
        with self._lock:
            return self._pickers.setdefault(priority, ShardPicker(self._read_shards))

    def note_bands(self, priorities: Iterable[int]) -> None:
        """Priorities this process sent: known at once, and for a moment the whole of what it knows."""
        with self._lock:
            self._bands.update(priorities)
            if not self._bands_until:
                self._bands_until = time.monotonic() + BANDS_SECONDS

    def bands(self, read: Callable[[], set[int]]) -> list[int]:
        """The sub-queue's priorities, highest first, 0 always among them; `read` refreshes them when stale."""
        with self._lock:
            fresh = time.monotonic() < self._bands_until
            known = set(self._bands)
        if not fresh:
            known = read() | {0}
            with self._lock:
                self._bands = known
                self._bands_until = time.monotonic() + BANDS_SECONDS
        return sorted(known, reverse=True)

    def last_seq(self, group: str) -> int | None:
        with self._lock:
            return self._last_seq.get(group)

    def remember_last_seq(self, group: str, last_seq: int) -> None:
        with self._lock:
            if len(self._last_seq) >= self.GROUPS_REMEMBERED:
                self._last_seq.clear()
            self._last_seq[group] = last_seq
