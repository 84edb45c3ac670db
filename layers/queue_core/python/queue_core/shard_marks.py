"""Which shards of a sub-queue may hold messages: shard marks, so that a receive on a queue of many shards reads
one small partition and visits the shards it names, instead of every shard. An empty receive then costs one
query whatever the shard count, and a receive at low load one query per shard that holds something.

A mark `(priority, shard, at)` says "this shard may hold messages of this priority from `at` on" (`at` 0: now).
Every write that makes a message visible at some time (a send, a release, a change of visibility, a FIFO group's
unlock, a redrive) puts its shard's *now mark* after it — unless this process put that very mark within the last
`MARK_SECONDS`: a process trusts its own recent put, so a steady sender pays one mark write per shard per
`MARK_SECONDS`, not one per message. It trusts as well, as long, a now mark another process put, seen in a list it
read (for its receives, or because it puts many marks: `BUSY_PUTS`), so that many fast senders on many shards share
their marks instead of each putting all of them. A receive drains a mark when the shard had
nothing due: it looks at the shard's first index entry (in flight, delayed, locked), puts an *at mark* for that
time, and drops the marks it read. Why no message is left without a mark:

- A mark's `put_at` only rises (`store.shard_marks.mark`), and a drop lands only on a mark put before its cutoff:
  for a now mark, `MARK_SECONDS`, `SKEW_SECONDS` and `limits.INDEX_LAG_GRACE_SECONDS` before the clock read just
  ahead of the shard's query. A process that skipped a put because it trusted a mark put at `p` (its own put, or
  another's it read) stored its message before `p + MARK_SECONDS` on its own clock. From its put or its read on,
  the mark's `put_at` was `p` or later, so a drop that lands after it had a cutoff past `p`: its query started at
  `p + MARK_SECONDS + SKEW_SECONDS` plus the grace or later on the dropper's clock, more than the grace after that
  message for clocks apart by less than `SKEW_SECONDS` (the putter's clock does not matter: `p` is the same number
  to both). Before its read, no drop matters: the mark was there, put at `p`. A process that did not skip put the
  mark after its write: either that put lands after the drop (the mark is back), or its `put_at` is past the
  cutoff and the drop does not land.
- An at mark is dropped after its grace only (`put_at` before the query's clock less the grace): nobody skips a
  put because of one, but a change of visibility that put it must show in the index the drain reads.
- The drain puts the at mark for the shard's first entry before it drops what it read; a look that finds
  something due keeps every mark.
- A write whose mark could not be put (throttled three times, or the process killed between the two) is found by
  the sweep, which reads every shard's entries anyway and puts the mark of each shard that holds something and
  has none (`backstop`): such a message waits at most one sweep pass (on a sub-queue of one shard, whose receives
  need no mark, the first pass once it has several). So do messages stored by a release that wrote no marks,
  until the first pass after the upgrade.

A receive of a sub-queue of one shard reads that shard as before; marks are still put, so that a queue that
grows finds them. Each process keeps the marks it read for `LIST_SECONDS`; a receive that finds nothing in the
listed shards (or in `STALE_VISITS` of them) reads the marks again before it answers empty, unless it read them
itself, so the cache makes a receive cheaper, never blind. Of the shards its process emptied with the marks as they
still are, a receive visits one (`shard_looks`): a message stored there under a trusted put comes a few receives
later instead of at once, and no mark goes because of it.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from . import limits, partial
from .errors import QueueError, Throttled
from .keys import Space
from .shard_looks import ShardLooks, Signature, Visits, behind
from .shards import Seen, ShardPicker, ShardReceive, ask
from .shards import visit as visit_every_shard
from .store import ConditionFailed
from .store import shard_marks as writes

if TYPE_CHECKING:
    from .context import Context

logger = logging.getLogger("queue_core")

# How long a process trusts a now mark it put (no new put for its shard and priority meanwhile). A longer time
# saves mark writes; a drain must wait as long past a mark's last put (an empty receive visits the shard, one
# query, until then).
MARK_SECONDS: Final = 10
# How far apart the clocks of two processes may be: a drain drops a now mark this much later than the trust in it
# and the index's grace allow on one clock (a dropper whose clock ran 2 s ahead of a trusting sender's dropped a
# mark that sender relied on within the grace of its write).
SKEW_SECONDS: Final = limits.CLOCK_SKEW_SECONDS
# A process that put this many marks of a sub-queue within the last second (of the queue's clock) reads the list
# before its next put, at most once per `LIST_SECONDS`, so as to trust the marks others put: fast senders that each
# go round hundreds of shards would otherwise each put every shard's mark, all into the one marks partition.
BUSY_PUTS: Final = 5
# How long a mark put ahead of a caller's own commit stays trusted at least (`ahead`).
AHEAD_SECONDS: Final = MARK_SECONDS // 2
# A receive visits at most this many shards that give nothing from a list it did not read itself, then reads the
# list again: a list a second old lacks the marks put since, and with many shards marked (FIFO messages to 50
# groups in turn, 64 shards) visiting all it named before reading again cost 11.6 queries a message (6.7 now; 4.3
# reading the list at each receive). Two cost FIFO messages to 3 groups from 5 senders 3.9 instead of 3.4.
STALE_VISITS: Final = 3
# How long a process reuses the marks it read before reading them again.
LIST_SECONDS: Final = 1.0
# Receives in a row that may each visit the shard their process last took messages from before reading a list
# older than `LIST_SECONDS`, when that list names no other shard due (`Marks.warm`): a consumer whose receives come
# a second or more apart paid the list and a shard for each message of a steady sender (standard sends stay on a
# shard at low rates), 2 queries a message. Messages marked since on other shards, or of a priority first used,
# wait at most this many receives more.
WARM_RECEIVES: Final = 3
# Receives in a row, and milliseconds of the queue's clock, that may each meet quiet shards and visit none of them by
# age (only shards with news, or quiet ones put first by a rule: a steady sender's, an own send's): then one visits
# the quiet shards first, by age. A message stored there under a trusted mark waits no longer behind shards that
# keep giving; a fast consumer does not pay a visit of the shards its sender left every few receives.
QUIET_EVERY: Final = 3
QUIET_EVERY_MS: Final = 500
# Receives that found messages, all from one shard last, after which that shard goes first after an odd number of
# empty receives too (`ShardLooks.order`): one steady sender slower than its consumer, not two senders of several
# going round that happened to share a shard (each round of those wasted two receives on it).
SOLE_TAKES: Final = 4
# How much the last guess counts in the odds that a guess finds a message (`Marks.guessing`).
GUESS_WEIGHT: Final = 0.3
# A mark put that DynamoDB throttled is tried again after these pauses; then the sweep puts it.
PUT_RETRY_PAUSES: Final = (0.05, 0.2)
# The most marks a receive reads of one priority (every shard at the cap, with room for at marks).
MAX_MARKS: Final = 4 * limits.MAX_SHARDS

Look = Callable[[int, int], "int | None"]


class HigherPriority(Exception):
    """A receive's own read of the marks, made in its visit of a priority, names a higher priority: that one goes
    first (`visit` with `yields`); its plan came from a list too old to serve. `priorities`: those the read names,
    highest first."""

    def __init__(self, priorities: list[int]) -> None:
        super().__init__(priorities)
        self.priorities = priorities


@dataclass(frozen=True)
class Mark:
    priority: int
    shard: int
    at: int
    put_at: int
    sk: str

    def cutoff(self, looked_at: int) -> int:
        """The latest `put_at` a drain whose query started at `looked_at` may drop (see the module's docstring)."""
        trusted = (MARK_SECONDS + SKEW_SECONDS) * 1000 if self.at == 0 else 0
        return looked_at - limits.INDEX_LAG_GRACE_SECONDS * 1000 - trusted


class Marks:
    """What this process knows of one sub-queue's marks: when it last put each now mark (trusted for
    `MARK_SECONDS`), the list it last read (every priority's, one query), and when its receives last took messages
    from each shard (the order they visit shards in)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._put: dict[tuple[int, int], int] = {}
        self._seen: dict[tuple[int, int], int] = {}
        self._recent_puts: list[int] = []
        self._listed_ms: int | None = None
        self._throttled_at: float | None = None
        self._read_at: float | None = None
        self._listed: dict[int, list[Mark]] = {}
        self._taken: dict[tuple[int, int], int] = {}
        self._visiting: dict[tuple[int, int], int] = {}
        self.looks = ShardLooks()
        self._began: dict[int, int] = {}
        # Per priority: (the shard its last receive that found messages took them from last, whether the receive
        # before that one took from it too, the receives in a row since that took from it without a list).
        self._warm: dict[int, tuple[int, bool, int]] = {}
        self._quiet_skips: dict[int, tuple[int, int]] = {}  # per priority: receives in a row, since when
        self._takes: dict[int, list[int]] = {}  # per priority: the shards the last receives that found took from last
        self._guessed: dict[int, float] = {}  # per priority: how often a guess from an old list found a message

    def way(self, priority: int, shards: list[int]) -> list[int]:
        """The order a receive visits `shards` in (a list in random order): those another receive of this process
        is visiting now last, then the one this process last took messages from longest ago first, never taken
        from before all. At low load, with several shards marked lately, the shard emptied longest ago is where a
        message most likely came since (a visit that finds nothing tells nothing of what comes next). A shard is
        noted when it gave messages, emptied or not: noted only when emptied, a shard with a backlog (never
        emptied by receives of one message) went first every time, and a message on a shard emptied once waited
        until that backlog was gone. Receivers of one process that all took that same way would meet on one
        shard, and the slowest of them would lose every race (the stress run's queue-wide receivers did), so a
        shard being visited goes last."""
        with self._lock:
            return sorted(
                shards,
                key=lambda shard: (
                    self._visiting.get((priority, shard), 0) > 0,
                    self._taken.get((priority, shard), -1),
                ),
            )

    def warm(self, priority: int, now: int) -> list[Mark] | None:
        """The marks, in its list however old, of the shard a receive of `priority` visits before reading the
        list again: the shard this process's last two receives that found messages both took them from last, when
        that list names no other shard (nor priority) due at `now` — a shard another mark names may hold a message
        the receive would pass — and fewer than `WARM_RECEIVES` receives in a row went there without reading the
        list (then one reads it, and visits the others first: `way`). A receive that gets them takes its place in
        that count at once, so that receives of several threads do not all go. None: the receive reads the list
        first."""
        with self._lock:
            marks = self._warm_marks(priority, now)
            if marks is not None:
                shard, repeated, streak = self._warm[priority]
                self._warm[priority] = (shard, repeated, streak + 1)
            return marks

    def _warm_marks(self, priority: int, now: int) -> list[Mark] | None:
        shard, repeated, streak = self._warm.get(priority, (-1, False, 0))
        if not repeated or streak >= WARM_RECEIVES or self._read_at is None:
            return None
        due = [mark for listed in self._listed.values() for mark in listed if mark.at <= now]
        if not due or any((mark.priority, mark.shard) != (priority, shard) for mark in due):
            return None
        return due

    def goes_warm(self, priority: int, now: int) -> bool:
        """Whether a receive of `priority` beginning at `now` would visit its warm shard first (`warm`)."""
        with self._lock:
            return self._warm_marks(priority, now) is not None

    def warm_priorities(self, now: int) -> list[int] | None:
        """The priorities of the list however old, highest first, when a receive of the highest of them visits
        its warm shard first (`warm`); None otherwise."""
        with self._lock:
            if self._read_at is None:
                return None
            known = sorted({priority for priority, listed in self._listed.items() if listed} | {0}, reverse=True)
            return known if self._warm_marks(known[0], now) is not None else None

    def note_ended(self, priority: int, took: int | None, warm: bool) -> None:
        """A receive of `priority` ended, having taken messages from `took` last (None: none); `warm`: it visited
        its warm shard without reading the list (and counted itself then: `warm`)."""
        with self._lock:
            shard, _, streak = self._warm.get(priority, (-1, False, 0))
            if took is None:
                if warm:  # the warm shard had nothing (or throttled): the next receive reads the list first
                    self._warm[priority] = (shard, False, 0)
                return
            self._warm[priority] = (took, took == shard, streak if warm else 0)
            self._takes[priority] = [*self._takes.get(priority, [])[1 - SOLE_TAKES :], took]

    def streak(self, priority: int) -> tuple[int | None, bool]:
        """The shard this process's last two receives of `priority` that found messages both took them from last,
        and whether its last `SOLE_TAKES` such receives all did (one steady sender, not senders going round)."""
        with self._lock:
            shard, repeated, _ = self._warm.get(priority, (-1, False, 0))
            takes = self._takes.get(priority, [])
            sole = repeated and len(takes) == SOLE_TAKES and all(take == shard for take in takes)
            return (shard if repeated else None), sole

    def guessing(self, priority: int) -> bool:
        """Whether a receive of `priority` from a list it did not read visits a quiet shard before it reads the
        marks: such visits found a message at least half the time lately (each saved the read of the marks when
        it did, and cost a query when it did not). Each receive that does not guess raises the odds (towards
        `0.5 + GUESS_WEIGHT`), so that it tries again after a receive or two."""
        with self._lock:
            odds = self._guessed.get(priority, GUESS_WEIGHT + 0.5)
            if odds >= 0.5:
                return True
            self._guessed[priority] = odds + GUESS_WEIGHT * (0.5 + GUESS_WEIGHT - odds)
            return False

    def note_guess(self, priority: int, found: bool) -> None:
        """A quiet shard visited from a list the receive did not read gave messages (`found`), or nothing."""
        with self._lock:
            odds = self._guessed.get(priority, GUESS_WEIGHT + 0.5)
            self._guessed[priority] = odds + GUESS_WEIGHT * (float(found) - odds)

    def quiet_turn(self, priority: int, now: int) -> bool:
        """Whether a receive of `priority` beginning at `now` visits the quiet shards before the others, taken
        longest ago first, its streak's shard as any other (`ShardLooks.order`): `QUIET_EVERY` receives in a row,
        over `QUIET_EVERY_MS` at least, met quiet shards and visited none of them but those put first by a rule
        (the streak's, an own send's echo, the one taken from last after an empty receive)."""
        with self._lock:
            skips, since = self._quiet_skips.get(priority, (0, now))
            return skips >= QUIET_EVERY and now >= since + QUIET_EVERY_MS

    def note_quiet(self, priority: int, had: bool, made: bool, now: int) -> None:
        """A receive of `priority` that began at `now` ended: it met quiet shards besides those put first by a rule
        (`had`), and visited one of them (`made`)."""
        with self._lock:
            if made or not had:
                self._quiet_skips.pop(priority, None)
            else:
                skips, since = self._quiet_skips.get(priority, (0, now))
                self._quiet_skips[priority] = (skips + 1, since)

    def began(self, priority: int, now: int) -> int | None:
        """When the last receive of `priority` by this process began to visit shards (None: none did); `now`
        becomes it."""
        with self._lock:
            last, self._began[priority] = self._began.get(priority), now
            return last

    def visiting(self, priority: int, shard: int, by: int) -> None:
        """A receive of this process begins (`by` 1) or ends (-1) its visit of the shard."""
        with self._lock:
            left = self._visiting.get((priority, shard), 0) + by
            if left > 0:
                self._visiting[(priority, shard)] = left
            else:
                self._visiting.pop((priority, shard), None)

    def note_taken(self, priority: int, shard: int, at: int) -> None:
        """A receive of this process took messages from the shard, in a query begun at `at`."""
        with self._lock:
            if len(self._taken) >= 4 * limits.MAX_SHARDS:
                self._taken.clear()
            self._taken[(priority, shard)] = at

    def trusted(self, priority: int, shard: int, now: int) -> bool:
        """Whether a write at `now` may skip the now mark's put: this process put it, or read it put by another,
        less than `MARK_SECONDS` before (see the module's docstring)."""
        with self._lock:
            put_at = max(self._put.get((priority, shard), -1), self._seen.get((priority, shard), -1))
        return put_at >= 0 and now < put_at + MARK_SECONDS * 1000

    def begin_busy_read(self, now: int) -> bool:
        """Whether this putter reads the list before its next put (and the one thread that does): it put
        `BUSY_PUTS` marks within the second before `now`, and read no list (nor began to) within `LIST_SECONDS`
        before `now`, all on the queue's clock."""
        with self._lock:
            self._recent_puts = [at for at in self._recent_puts if at > now - 1000]
            if len(self._recent_puts) < BUSY_PUTS:
                return False
            if self._listed_ms is not None and now < self._listed_ms + LIST_SECONDS * 1000:
                return False
            self._listed_ms = now
            return True

    def note_put(self, mark: Mark) -> None:
        """A mark this process put: a now mark is trusted for `MARK_SECONDS`, and any joins the list it read, so
        that its own receives know of it at once (the list stays as complete as when it was read)."""
        with self._lock:
            key = (mark.priority, mark.shard)
            if mark.at == 0 and mark.put_at > self._put.get(key, -1):
                self._put[key] = mark.put_at
            self._recent_puts = [*self._recent_puts[-max(BUSY_PUTS, 1) :], mark.put_at]
            if self._read_at is not None:
                kept = [old for old in self._listed.get(mark.priority, []) if old.sk != mark.sk]
                self._listed[mark.priority] = [*kept, mark]

    def listed(self, priority: int, since: float | None = None) -> tuple[float, list[Mark]] | None:
        """(when the list was read, its marks of `priority`); None once it is `LIST_SECONDS` old, unless it was
        read at `since` or later (by the receive that began then)."""
        with self._lock:
            read_at = self._fresh(since)
            return None if read_at is None else (read_at, list(self._listed.get(priority, [])))

    def priorities(self, since: float | None = None) -> list[int] | None:
        """The priorities the list names, highest first, 0 among them; None when it is not fresh (`listed`)."""
        with self._lock:
            if self._fresh(since) is None:
                return None
            return sorted({priority for priority, listed in self._listed.items() if listed} | {0}, reverse=True)

    def read_at(self) -> float | None:
        with self._lock:
            return self._read_at

    def _fresh(self, since: float | None) -> float | None:
        """When the list was read, if it may serve (see `listed`)."""
        read_at = self._read_at
        if read_at is None:
            return None
        fresh = (since is not None and read_at >= since) or time.monotonic() < read_at + LIST_SECONDS
        return read_at if fresh else None

    def note_listed(self, marks: list[Mark], read_at: float, read_ms: int) -> None:
        """Every priority's marks, read by a query begun at `read_at` (`time.monotonic()`), `read_ms` on the queue's
        clock."""
        by_priority: dict[int, list[Mark]] = {}
        for mark in marks:
            by_priority.setdefault(mark.priority, []).append(mark)
        with self._lock:
            self._read_at, self._listed = read_at, by_priority
            self._listed_ms = max(self._listed_ms or read_ms, read_ms)
            for mark in marks:
                key = (mark.priority, mark.shard)
                if mark.at == 0 and mark.put_at > self._seen.get(key, -1):
                    self._seen[key] = mark.put_at

    def note_drained(self, priority: int, dropped: set[tuple[str, int]], added: Mark | None) -> None:
        """A drain dropped these marks (`(sk, put_at)`: a list read since may hold the same mark put again, which
        stays) and put `added`."""
        with self._lock:
            if self._read_at is not None:
                kept = [
                    mark
                    for mark in self._listed.get(priority, [])
                    if (mark.sk, mark.put_at) not in dropped and (added is None or mark.sk != added.sk)
                ]
                self._listed[priority] = kept + ([added] if added else [])

    def note_throttled(self) -> None:
        with self._lock:
            self._throttled_at = time.monotonic()

    def throttled_since(self, since: float | None) -> bool:
        """Whether a read of the list was throttled at `since` or later (the receive that began then does not
        try again: it visits every shard)."""
        with self._lock:
            return since is not None and self._throttled_at is not None and self._throttled_at >= since


def _marks(ctx: Context, space: Space) -> Marks:
    return ctx.shared(("shard marks", space), Marks)


def announce(ctx: Context, space: Space, due: Iterable[tuple[int, int]]) -> None:
    """Puts the now mark of each `(priority, shard)`, after the write that made a message of it visible at some
    time, unless this process put it lately, or read it put lately by another. Logged, not raised, when it cannot
    be put: the write is done, and the sweep puts what is missing."""
    marks = _marks(ctx, space)
    for priority, shard in sorted(set(due)):
        marks.looks.sent(priority, shard, ctx.now_ms())
        if not _trusted(ctx, space, marks, priority, shard, 0):
            _put(ctx, space, marks, priority, shard, 0)


def ahead(ctx: Context, space: Space, due: Iterable[tuple[int, int]]) -> None:
    """The now marks of writes another party commits later (a caller's own transaction), put before them: unless
    this process's put of each stays trusted for `AHEAD_SECONDS` more, it is put now. Such a write committed
    within that time is found at once; later, once the next sweep pass puts its mark."""
    marks = _marks(ctx, space)
    for priority, shard in sorted(set(due)):
        marks.looks.sent(priority, shard, ctx.now_ms(), ahead_ms=AHEAD_SECONDS * 1000)
        if not _trusted(ctx, space, marks, priority, shard, AHEAD_SECONDS * 1000):
            _put(ctx, space, marks, priority, shard, 0)


def _trusted(ctx: Context, space: Space, marks: Marks, priority: int, shard: int, ahead_ms: int) -> bool:
    """Whether the now mark needs no put for a write `ahead_ms` from now (`Marks.trusted`); a busy putter reads
    the list first (`BUSY_PUTS`). A throttled read leaves the put to be made."""
    if marks.trusted(priority, shard, ctx.now_ms() + ahead_ms):
        return True
    if not marks.begin_busy_read(ctx.now_ms()):
        return False
    try:
        if _read_again(ctx, space, marks, priority) is None:
            return False
    except QueueError:  # the write is done: whatever the read met, the mark is put
        logger.debug("shard marks of %s not read; the mark is put", space.client, exc_info=True)
        return False
    return marks.trusted(priority, shard, ctx.now_ms() + ahead_ms)


def _put(ctx: Context, space: Space, marks: Marks, priority: int, shard: int, at: int) -> Mark | None:
    """The mark, put with the clock read now (never older than the writes it announces); None if not put."""
    for pause in (*PUT_RETRY_PAUSES, None):
        put_at = ctx.now_ms()
        item = {**space.shard_mark(priority, shard, at), "put_at": put_at}
        try:
            ctx.store.write(writes.mark(item))
        except ConditionFailed:
            pass  # a later put is there (or this one, repeated by the SDK): it stays longer than ours would
        except QueueError as error:
            if isinstance(error, Throttled) and pause is not None:
                time.sleep(pause)
                continue
            logger.warning("shard mark %s of %s not written; the sweep will", item["sk"], space.client, exc_info=error)
            return None
        mark = Mark(priority, shard, at, put_at, str(item["sk"]))
        marks.note_put(mark)
        return mark
    return None


def read(ctx: Context, space: Space) -> list[Mark]:
    """The sub-queue's marks of every priority, strongly consistent: one query at most sizes."""
    items = ctx.store.query_all(
        space.shard_marks_pk(), consistent=True, max_items=MAX_MARKS * (limits.MAX_PRIORITY + 1)
    )
    return [_parsed(item) for item in items]


def _parsed(item: dict[str, Any]) -> Mark:
    return Mark(int(item["priority"]), int(item["shard"]), int(item["at"]), int(item["put_at"]), str(item["sk"]))


def priorities(ctx: Context, space: Space, since: float) -> list[int] | None:
    """The priorities a receive of a sub-queue of several shards visits, highest first: those its marks name (0 always),
    from the list this process read within `LIST_SECONDS`, or read now (and kept for the visits that follow:
    `since`, when the receive began, as for `visit`). A priority with no mark holds nothing visible nor due: every
    write that makes a message visible at some time puts its mark, and the sweep puts those that could not be. None
    when DynamoDB throttles the marks: the caller falls back on its ready markers."""
    marks = _marks(ctx, space)
    known = marks.priorities(since)
    if known is None:
        known = marks.warm_priorities(ctx.now_ms())  # its highest goes to a shard first: the list is read if that fails
    if known is None and _read_again(ctx, space, marks, 0) is not None:
        known = marks.priorities(since)
    return known


def priorities_read_since(ctx: Context, space: Space, since: float) -> list[int]:
    """The priorities of a list read at `since` or later (by the receive that began then), none without one."""
    marks = _marks(ctx, space)
    read_at = marks.read_at()
    return (marks.priorities(since) or []) if read_at is not None and read_at >= since else []


def visit(
    ctx: Context,
    space: Space,
    read_shards: int,
    picker: ShardPicker,
    priority: int,
    want: int,
    receive_shard: ShardReceive,
    look: Look,
    since: float | None = None,
    hides: bool = True,
    conflicts: Callable[[], int] | None = None,
    yields: bool = False,
    returns_in: int = 0,
) -> list[Any]:
    """`shards.visit` over the shards the marks name (a sub-queue of one shard: that shard). `look(priority,
    shard)`: when the shard has an entry next (its first index entry, due or not), None when it has none. A list
    read at `since` (`time.monotonic()` when the receive began) or later counts as read by this receive: when
    the shards it names give nothing, the receive answers without reading the marks again. `hides`: what the
    receive takes stays out of sight for a while (a visibility above 0), so a shard that gave fewer than asked
    was emptied (`shard_looks`) unless claims there were lost to another receive (`conflicts()`: how many this
    sub-queue's receives lost so far). `yields`: when the marks this visit reads name a priority above
    `priority`, `HigherPriority` is raised before any shard is visited. `returns_in`: milliseconds after which
    what it takes comes back unless settled (`shard_looks.ShardLooks.emptied`'s `back_at`)."""
    if read_shards <= 1:
        return visit_every_shard(picker, want, receive_shard)
    marks = _marks(ctx, space)
    read = marks.listed(priority, since)
    fresh = read is not None and since is not None and read[0] >= since
    if read is None and marks.throttled_since(since):
        return visit_every_shard(picker, want, receive_shard)
    began = ctx.now_ms()
    visited = Visits(
        hides=hides, conflicts=conflicts, last_began=marks.began(priority, began), began=began, returns_in=returns_in
    )
    if read is None:
        warm = marks.warm(priority, ctx.now_ms())
        if warm is not None:
            try:
                got = _visit(ctx, space, marks, priority, warm, want, receive_shard, look, visited, 1, drains=False)
            except Throttled:
                marks.note_ended(priority, None, warm=True)  # the next receive reads the list, visits the others
                raise
            if got:
                return _ended(marks, priority, visited, got, warm=True)
            marks.note_ended(priority, None, warm=True)
            visited.quiet = 0  # so that a receive that finds nothing costs two queries at most, as before
        read = _read_again(ctx, space, marks, priority)
        if read is None:
            return visit_every_shard(picker, want, receive_shard)
        fresh = True
        named = marks.priorities(since) or []
        if yields and any(higher > priority for higher in named):
            raise HigherPriority(named)
    guesses = None if fresh else STALE_VISITS
    got = _visit(ctx, space, marks, priority, read[1], want, receive_shard, look, visited, guesses)
    if not got and not fresh:
        if marks.throttled_since(since):
            return visit_every_shard(picker, want, receive_shard)
        read = _read_again(ctx, space, marks, priority)
        if read is None:
            return visit_every_shard(picker, want, receive_shard)
        got = _visit(ctx, space, marks, priority, read[1], want, receive_shard, look, visited)
    return _ended(marks, priority, visited, got, warm=False)


def _ended(marks: Marks, priority: int, visited: Visits, got: list[Any], warm: bool) -> list[Any]:
    """What a receive of `priority` that found `got` tells its process's later receives."""
    if visited.idle:
        marks.looks.idle(priority, visited.idle, found_elsewhere=bool(got))
    marks.looks.ended(priority, bool(got))
    marks.note_quiet(priority, visited.had_quiet, visited.quiet_made > 0, visited.began)
    marks.note_ended(priority, visited.took if got else None, warm)
    return got


def _read_again(ctx: Context, space: Space, marks: Marks, priority: int) -> tuple[float, list[Mark]] | None:
    """Every priority's marks, read now and kept; (when read, those of `priority`). None when DynamoDB throttles
    their one partition (the receive then visits every shard, as before marks: a hot marks key costs queries,
    never a failed receive)."""
    read_at, read_ms = time.monotonic(), ctx.now_ms()
    try:
        listed = read(ctx, space)
    except Throttled:
        marks.note_throttled()
        return None
    marks.note_listed(listed, read_at, read_ms)
    return read_at, [mark for mark in listed if mark.priority == priority]


def _visit(
    ctx: Context,
    space: Space,
    marks: Marks,
    priority: int,
    listed: list[Mark],
    want: int,
    receive_shard: ShardReceive,
    look: Look,
    visited: Visits,
    guesses: int | None = None,
    drains: bool = True,
) -> list[Any]:
    """As `shards.visit`: until `want` are found or a shard gave some but fewer than asked; a shard that
    throttled is asked nothing more, and the throttle is raised with what the others gave (see `partial`). With
    `guesses` (a list this receive did not read), it stops once that many shards gave nothing, so that the marks
    are read again before more of them are visited. Of the shards this process emptied with the same marks, it
    visits at most `visited.quiet` (`shard_looks`). Without `drains` (a warm visit, from a list however old, whose
    marks may have gone since), a shard found with nothing keeps its marks for a receive that reads them."""
    now = ctx.now_ms()
    due: dict[int, list[Mark]] = {}
    for mark in listed:
        if mark.at <= now and mark.shard not in visited.shards:
            due.setdefault(mark.shard, []).append(mark)
    order = list(due)
    random.shuffle(order)  # ties in random order, so that receivers of different processes spread
    signatures = {shard: _signature(due[shard]) for shard in order}
    turn = marks.quiet_turn(priority, visited.began)
    streak, sole = (None, False) if turn else marks.streak(priority)
    quiet, promoted = marks.looks.order(priority, signatures, streak, turn=turn, sole=sole, now=now)
    quiet_set = set(quiet)
    # Visits that do not count as the quiet shards' (`Marks.note_quiet`): those put first by a rule, not by age.
    own = {streak} | promoted
    got: list[Any] = []
    throttle: Throttled | None = None
    news = [shard for shard in marks.way(priority, order) if shard not in quiet_set]
    way = quiet + news if turn else news + quiet
    # From a list it did not read, a receive guesses which quiet shard a message came to since only while such
    # guesses find one at least half the time (`Marks.guessing`); otherwise it reads the marks first.
    guessing = guesses is None or marks.guessing(priority)
    visited.had_quiet = visited.had_quiet or any(shard not in own for shard in quiet)
    passed: list[int] = []  # quiet shards left out; a throttle to be raised visits them too
    while way:
        shard = way.pop(0)
        if len(got) >= want:
            break
        guess = shard in quiet_set and throttle is None
        if guess:
            if visited.quiet <= 0 or (guesses is not None and shard != streak and not guessing):
                passed.append(shard)
                continue
            visited.quiet -= 1
            visited.quiet_made += shard not in own
        visited.shards.add(shard)
        need = want - len(got)
        looked_at, began = ctx.now_ms(), marks.looks.begin()
        of_shard = [mark for mark in listed if mark.shard == shard]
        ripe = drains and shard in quiet_set and all(mark.put_at <= mark.cutoff(looked_at) for mark in due[shard])
        # Emptied here before, and every mark may go: the look at its first entry is the query that drains.
        if ripe and _drain(ctx, space, marks, due[shard], of_shard, looked_at, look):
            marks.looks.emptied(priority, shard, looked_at, signatures[shard], took=False, began=began)
            visited.idle.append((shard, looked_at))
            continue
        marks.visiting(priority, shard, 1)
        lost = visited.lost()
        try:
            found, saw_candidates, throttled = ask(receive_shard, shard, need)
        finally:
            marks.visiting(priority, shard, -1)
        lost = visited.lost() - lost
        got += found
        if guess and guesses is not None and shard != streak and not throttled:
            marks.note_guess(priority, bool(found))
        if throttled:
            throttle = partial.kept(throttle, throttled)
            way, passed = way + passed, []
            continue
        if found:
            marks.note_taken(priority, shard, looked_at)
            visited.took = shard
        drained = len(found) < need or saw_candidates == Seen.TAKEN
        if not saw_candidates or (visited.hides and found and drained and not lost):
            back_at = looked_at + visited.returns_in if found and visited.returns_in else 0
            marks.looks.emptied(
                priority, shard, looked_at, signatures[shard], took=bool(found), began=began, back_at=back_at
            )
            if not found and shard in quiet_set:
                visited.idle.append((shard, looked_at))
        elif found:
            marks.looks.forget(priority, shard, looked_at, looked_at + visited.returns_in if visited.returns_in else 0)
        if not saw_candidates and drains:
            _drain(ctx, space, marks, due[shard], of_shard, looked_at, look)
        if found and shard in quiet_set and behind(found, visited.last_began):
            visited.quiet += 1  # messages the last receive could have taken: the next quiet shard may hold more
            continue
        if found and len(found) < need:
            break
        if guesses is not None and not got and throttle is None:  # a throttle is raised: every shard first
            guesses -= 1
            if guesses <= 0:
                break
    if throttle is not None:
        raise partial.after(throttle, got) from partial.original(throttle)
    return got


def _signature(of_shard: list[Mark]) -> Signature:
    return frozenset((mark.sk, mark.put_at) for mark in of_shard)


def _drain(
    ctx: Context, space: Space, marks: Marks, read_due: list[Mark], of_shard: list[Mark], looked_at: int, look: Look
) -> bool:
    """The shard had nothing due when a query started at `looked_at` (its receive's; or its look at the first entry,
    begun after: an index query of its own): the marks read of it that may go (see `Mark.cutoff`) leave, after an
    at mark for its first entry is in place. Any failure leaves the marks. False when the look was not made, failed,
    or found something due."""
    ripe = [mark for mark in read_due if mark.put_at <= mark.cutoff(looked_at)]
    if not ripe:
        return False
    priority, shard = ripe[0].priority, ripe[0].shard
    try:
        first = look(priority, shard)
    except QueueError:
        return False
    if first is not None and first <= ctx.now_ms():
        return False  # due now (a write since the query): every mark stays
    staying = [mark for mark in of_shard if mark not in ripe]
    added = None
    if first is not None and not any(mark.at <= first for mark in staying):
        added = _put(ctx, space, marks, priority, shard, first)
        if added is None:
            return True
    # At marks later than the shard's first entry serve nothing: the mark for that entry comes first, and its own
    # drain looks again. Dropped here, they never pile up (one per later time a drain saw).
    now = ctx.now_ms()
    surplus = [mark for mark in staying if mark.at > now and (first is None or mark.at > first)]
    cutoffs = [(mark, mark.cutoff(looked_at)) for mark in ripe] + [(mark, now) for mark in surplus]
    dropped: set[tuple[str, int]] = set()
    for mark, cutoff in cutoffs:
        try:
            ctx.store.write(writes.drop({"pk": space.shard_marks_pk(), "sk": mark.sk}, cutoff))
            dropped.add((mark.sk, mark.put_at))
        except ConditionFailed as failed:
            if failed.repeated:
                dropped.add((mark.sk, mark.put_at))  # this drop, applied with its answer lost
        except QueueError:
            logger.debug("shard mark %s of %s stays (not dropped)", mark.sk, space.client, exc_info=True)
    marks.note_drained(priority, dropped, added)
    return True


class Holder(Protocol):
    """What `build` needs of a sub-queue's engine."""

    space: Space

    def priorities(self) -> list[int]: ...

    def first_at(self, priority: int, shard: int) -> int | None: ...


def build(ctx: Context, engine: Holder, read_shards: int) -> int:
    """The marks a sub-queue would have, had every write put its own: for `dq migrate`, on a table written by a
    release before shard marks (one index query per shard and priority). Returns how many were put."""
    firsts = {}
    for priority in engine.priorities():
        for shard in range(read_shards):
            at = engine.first_at(priority, shard)
            if at is not None:
                firsts[(priority, shard)] = at
    return backstop(ctx, engine.space, firsts)


def backstop(ctx: Context, space: Space, firsts: dict[tuple[int, int], int], read_shards: int | None = None) -> int:
    """The sweep's part: for each `(priority, shard)` holding entries (its first entry's time), a mark at or
    before that time unless one is there. One query of the marks when anything is held; returns how many put.
    Nothing on a sub-queue of one shard (`read_shards` 1): its receives read its shard, not the marks, and the
    sweep's first pass once it has several shards puts what is missing, so a message whose mark could not be put
    waits one pass after the growth instead of one before it (a query saved on every small sub-queue's pass)."""
    if not firsts or (read_shards is not None and read_shards <= 1):
        return 0
    now = ctx.now_ms()
    present: dict[tuple[int, int], int] = {}
    for mark in read(ctx, space):
        key = (mark.priority, mark.shard)
        present[key] = min(present.get(key, mark.at), mark.at)
    put = 0
    marks = _marks(ctx, space)
    for (priority, shard), first in sorted(firsts.items()):
        if (priority, shard) in present and present[(priority, shard)] <= max(first, now):
            continue
        if _put(ctx, space, marks, priority, shard, 0 if first <= now else first) is None:
            raise Throttled("shard marks not written; the next sweep puts them")
        put += 1
    return put
