"""What a process's receives found of each marked shard: which of them it emptied, and with which marks then.

A shard mark stays at least `shard_marks.MARK_SECONDS` plus the skew and the index's grace after its last put,
because a sender that trusts its put stores more messages on that shard without putting it again. Until then no
process can tell a shard that went quiet from one that still gets such messages, so every receive used to visit
every marked shard: a queue just drained of messages sent to 30 shards cost 31 queries a poll for 25 s, and a long
poll paid that at each of its rounds. A receive now visits the marked shards it has no news of (a mark put or due
since its process emptied them, a message its process sent there since, or never emptied by it), and of those it
emptied with the same marks in place, at most `QUIET_VISITS`, after the others (in `ShardLooks.order`'s order),
and one more each time such a shard gives a message its previous receive could have taken (`behind`). A message
that came to such a shard is found by a later receive; no mark is dropped because of it, so it changes how soon,
never whether: every few receives (`shard_marks.QUIET_EVERY`) one visits a quiet shard first, so that shards that
keep giving never hold it back for long.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from . import limits

# How many shards a receive visits that its process emptied with the marks as they still are.
QUIET_VISITS: Final = 1

# Looks that found a quiet shard with nothing since it last gave (in receives that found nothing at all) after which
# it goes behind every shard taken from before its last look. More than one, so that one wrong guess does not move
# a sender's shard back; as many as there were quiet shards left FIFO messages to 50 groups over a hundred receives
# late (the idle scenario).
IDLE_LOOKS: Final = 2
# A quiet shard found with nothing goes behind those taken from longer than this before (milliseconds), whatever
# the receive found elsewhere: a receive that always finds messages on another shard spent its one quiet visit on
# the same never-refilled shards while a message waited on one taken from earlier. Senders that refill their shards
# within this time keep their order.
IDLE_AGE_MS: Final = 2_000

Signature = frozenset[tuple[str, int]]


class ShardLooks:
    """Per `(priority, shard)`: the due marks (`(sk, put_at)`) this process knew of the shard when one of its
    receives emptied it (a query found nothing due, or fewer than it asked and it took them); and, for the order in
    which quiet shards are visited, when its receives last took messages there and the looks that found nothing
    since."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._emptied: dict[tuple[int, int], Signature] = {}
        self._took: dict[tuple[int, int], tuple[int, int]] = {}
        self._idle: dict[tuple[int, int], tuple[int, tuple[int, int]]] = {}  # how many since the take, the last
        self._looked: dict[tuple[int, int], tuple[int, int]] = {}  # the last look that found nothing
        self._news: dict[tuple[int, int], int] = {}
        self._sent_after: dict[tuple[int, int], int] = {}  # the number (`begin`) of the last send noted there
        self._sends = 0
        # Sends noted before their write (`shard_marks.ahead`): until when the write may land.
        self._ahead: dict[tuple[int, int], int] = {}
        # Emptied within the index's grace after this process's own send there (when sent, looked at again since).
        self._echo: dict[tuple[int, int], tuple[int, bool]] = {}
        # Emptied by a receive that took what was there: when its claims run out, what it took comes back with no
        # write (no mark put: a message not deleted in time, a FIFO group whose lock ended).
        self._back: dict[tuple[int, int], int] = {}
        self._looks = 0  # orders the looks of one millisecond
        self._empty: dict[int, int] = {}  # per priority, this process's receives in a row that found nothing

    def begin(self) -> int:
        """A number that orders a query about to begin after this process's sends noted so far (`sent`), and before
        those noted later, however close on the clock."""
        with self._lock:
            self._sends += 1
            return self._sends

    def emptied(
        self, priority: int, shard: int, at: int, marks: Signature, took: bool, began: int = 0, back_at: int = 0
    ) -> None:
        """A receive's query begun at `at` (the queue's clock; `began`, from `begin` just before) left the shard with
        nothing due (`took`: it took what there was). Not noted when this process stored a message there while that
        query ran or since (`sent`); one it stored before, within the index's grace, may not have shown in the
        index yet, so the shard is the first quiet one a later receive visits, once (before, such a shard stayed
        one to visit for the whole grace: each receive of a process that sends and receives visited every shard it
        had sent to in the last 10 s). `back_at`: when what it took comes back unless settled (its claims' end):
        from then on the shard is the first quiet one a quiet turn visits, once (a FIFO receive of one message that
        took its shard's last left a group whose lock ran out on a quiet shard, found a round of the quiet shards
        later: 30 s at 64 shards while other groups kept the consumer busy)."""
        key = (priority, shard)
        with self._lock:
            pending = self._back.get(key)
            if pending is not None and at >= pending:
                self._back.pop(key)  # a look once the claims ran out
            if took and back_at > at:
                self._back[key] = min(back_at, self._back.get(key, back_at))
            if self._took.get(key, (-1, 0))[0] > at:
                return  # a receive begun later took from it since (another thread's): this look is out of date
            self._looks += 1
            if took:
                self._took[key] = (at, self._looks)
                self._idle.pop(key, None)
                self._looked.pop(key, None)
            news = self._news.get(key)  # this process's last send there
            if news is not None and self._sent_after.get(key, 0) > began:
                return  # its own message, stored while the query ran: the shard still holds it
            if self._ahead.get(key, -1) >= at:
                return  # its own write, committed by its caller later perhaps: the query may have come before it
            if len(self._emptied) >= 4 * limits.MAX_SHARDS:
                self._emptied.clear()
                self._took.clear()
                self._idle.clear()
                self._looked.clear()
                self._echo.clear()
                self._back.clear()
            if news is not None and at <= news + limits.INDEX_LAG_GRACE_SECONDS * 1000:
                # Stored before the query, perhaps not yet in the index it read: the first quiet shard, once.
                self._echo[key] = (news, key in self._echo and self._echo[key][0] == news)
            else:
                self._echo.pop(key, None)
            self._emptied[key] = marks

    def idle(self, priority: int, shards: list[tuple[int, int]], found_elsewhere: bool) -> None:
        """Quiet shards a receive visited and found with nothing (`(shard, when its query began)`). A receive that
        found messages elsewhere (the marks read again named a shard put since) says little of where the next
        message comes: its looks count towards `IDLE_LOOKS` only in receives that found nothing at all (counted,
        the guesses of receives that found each new sender's first message pushed shards about to be refilled
        behind the others, and a consumer of senders going round their shards stayed rounds late), and towards
        `IDLE_AGE_MS` in any."""
        with self._lock:
            for shard, at in shards:
                self._looks += 1
                key = (priority, shard)
                self._looked[key] = (at, self._looks)
                if not found_elsewhere:
                    self._idle[key] = (self._idle.get(key, (0, (0, 0)))[0] + 1, (at, self._looks))

    def ended(self, priority: int, found: bool) -> None:
        """A receive of `priority` by this process ended, having found messages or not."""
        with self._lock:
            self._empty[priority] = 0 if found else self._empty.get(priority, 0) + 1

    def forget(self, priority: int, shard: int, at: int, back_at: int = 0) -> None:
        """A receive took messages from the shard, in a query begun at `at`, and did not empty it (`back_at`: as
        for `emptied`, kept for when a later look empties it before then)."""
        key = (priority, shard)
        with self._lock:
            if back_at > at:
                self._back[key] = min(back_at, self._back.get(key, back_at))
            self._looks += 1
            self._emptied.pop(key, None)
            self._took[key] = (at, self._looks)
            self._idle.pop(key, None)
            self._looked.pop(key, None)

    def sent(self, priority: int, shard: int, at: int, ahead_ms: int = 0) -> None:
        """This process stored a message on the shard (`at`, the queue's clock, after the write); or, with
        `ahead_ms`, its caller commits it within that time (a query before the commit finds nothing, and the shard
        is not taken for emptied until then: the message comes at once once committed)."""
        with self._lock:
            if ahead_ms:
                if len(self._ahead) >= 4 * limits.MAX_SHARDS:
                    self._ahead = {key: until for key, until in self._ahead.items() if until >= at}
                self._ahead[(priority, shard)] = max(at + ahead_ms, self._ahead.get((priority, shard), 0))
            self._emptied.pop((priority, shard), None)
            if len(self._news) >= 4 * limits.MAX_SHARDS:
                horizon = at - 2 * limits.INDEX_LAG_GRACE_SECONDS * 1000
                self._news = {key: when for key, when in self._news.items() if when > horizon}
                self._sent_after = {key: seq for key, seq in self._sent_after.items() if key in self._news}
            self._news[(priority, shard)] = max(at, self._news.get((priority, shard), at))
            self._sends += 1
            self._sent_after[(priority, shard)] = self._sends

    def order(
        self,
        priority: int,
        due: dict[int, Signature],
        streak: int | None = None,
        turn: bool = False,
        sole: bool = False,
        now: int | None = None,
    ) -> tuple[list[int], set[int]]:
        """The shards of `due` this process emptied with no due mark put or come since, in the order a receive
        visits them: the one it last took messages from longest ago first, as senders that go round their
        shards refill them in that order. A shard a look found with nothing counts from `IDLE_AGE_MS` before that
        look at least, and from the look itself once `IDLE_LOOKS` looks of receives that found nothing at all found
        it so since it last gave: one that never gives (its marks kept young by others' changes of visibility, say)
        goes round behind the others instead of taking every receive's one visit.

        A steady sender's shard goes first instead: `streak`, the shard the last two receives that found messages
        both took from last, as long as no look found it with nothing since it last gave (the caller gives none at
        the other quiet shards' turns: `shard_marks.Marks.quiet_turn`); and after an odd number of receives in a row
        that found nothing, that shard when the last few such receives all took from it (`sole`), or else the one
        taken from last (a steady sender slower than its consumer, or one that moved to another shard, or two
        senders going round that share one). Taken longest ago first, a steady sender's every message waited a
        round of the shards a burst had left quiet.

        A shard emptied within the index's grace after this process's own send there goes before all, once: the
        index may not have shown that message yet; but not at a quiet turn (`turn`), whose one visit is for the
        shards held back longest (a process that sent now and then to a shard it took from at once spent every
        turn on its own shard, and a message on another quiet shard waited for good). Nor does the shard taken
        from last go first at a turn: a turn comes after receives that visited no quiet shard, often after an odd
        number that found nothing, and a worker whose receives came round in fours spent every turn there.

        Before all at a turn, at `now`, a shard whose claims ran out since a receive emptied it taking them
        (`emptied`'s `back_at`): what they took may be back. Only at a turn: most claims are settled before they
        run out, and going first at every receive, such shards cost FIFO over 50 groups 0.7 queries a message more
        in the idle scenario (receives a second or more apart).

        Also returned: the shards put first by these rules rather than by age. A visit of one is no visit of the
        shards held back (`shard_marks.Marks.note_quiet`): counted as one, an own send's echo and the shard taken
        from last after an empty receive kept a worker that sends follow-ups from every quiet turn for good."""
        with self._lock:
            quiet = [
                shard
                for shard, marks in due.items()
                if (emptied := self._emptied.get((priority, shard))) is not None and marks <= emptied
            ]
            order = {shard: self._order((priority, shard)) for shard in quiet}
            empty = self._empty.get(priority, 0)
            steady = empty % 2 == 1
            taken = [shard for shard in quiet if (priority, shard) in self._took]
            latest = max(taken, key=lambda shard: self._took[(priority, shard)], default=None)
            echoes = {
                shard: echo[0]
                for shard in quiet
                if not turn and (echo := self._echo.get((priority, shard))) and not echo[1]
            }
            keeps = streak in quiet and (priority, streak) not in self._looked
            back = {
                shard: at
                for shard in quiet
                if turn and now is not None and (at := self._back.get((priority, shard))) is not None and at <= now
            }
        way = sorted(quiet, key=lambda shard: order[shard])
        promoted = set(echoes)
        if streak in quiet and (keeps or (steady and sole)):
            way.remove(streak)
            way.insert(0, streak)
            promoted.add(streak)
        elif steady and latest is not None and not turn:
            way.remove(latest)
            way.insert(0, latest)
            promoted.add(latest)
        promoted |= set(back)
        first = sorted(back, key=lambda shard: back[shard])
        first += [shard for shard in sorted(echoes, key=lambda shard: -echoes[shard]) if shard not in back]
        return first + [shard for shard in way if shard not in first], promoted

    def _order(self, key: tuple[int, int]) -> tuple[int, int]:
        took = self._took.get(key, (-1, 0))
        idle, last = self._idle.get(key, (0, (0, 0)))
        looked_at, look = self._looked.get(key, (-1, 0))
        aged = (looked_at - IDLE_AGE_MS, look) if looked_at >= 0 else took
        return max(took, aged, last) if idle >= IDLE_LOOKS else max(took, aged)


@dataclass
class Visits:
    """What one receive visited: the shards, and how many more it may visit that its process emptied with the
    marks as they are (`shard_looks`)."""

    shards: set[int] = field(default_factory=set)
    quiet: int = QUIET_VISITS
    hides: bool = True
    conflicts: Callable[[], int] | None = None
    idle: list[tuple[int, int]] = field(default_factory=list)  # quiet shards found with nothing, when
    last_began: int | None = None  # when this process's receive before this one began
    took: int | None = None  # the shard it took messages from last
    began: int = 0  # when it began (the queue's clock)
    had_quiet: bool = False  # it met quiet shards besides those put first by a rule (`shard_marks.Marks.quiet_turn`)
    quiet_made: int = 0  # and visited this many of them
    returns_in: int = 0  # milliseconds after which what it takes comes back unless settled (its visibility)

    def lost(self) -> int:
        """Claims this sub-queue's receives lost so far (0 when not counted)."""
        return self.conflicts() if self.conflicts is not None else 0


def behind(found: list[Any], last_began: int | None) -> bool:
    """Whether a quiet shard gave a message sent before this process's last receive began: that receive visited
    another quiet shard instead (its guess of where the next one came was wrong), and the others it guessed after
    may hold messages as old. Without this, a consumer of senders going round their shards that once fell a round
    behind them stayed behind for good, each receive finding the message of the round before."""
    return last_began is not None and any(getattr(item, "sent_at", last_began) < last_began for item in found)
