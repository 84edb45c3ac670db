"""The consumers' side of the truth: who held which message when, on the fake clock, and in what order FIFO
messages were first claimed.

A holder's claim is valid from the moment the core read the clock for it (somewhere between the clock readings
taken just before and just after the receive call) until the message's visibility ran out or the holder gave it
back. Each bound is kept on the side that can only hide a violation, never invent one: a claim's start is known to
lie in `[claimed_lo, claimed_hi]`, and `ends_lo` is never later than the true end (a release or a delete lowers it
before the call is made; an extension raises it only after it succeeded). Two holds *certainly* overlapped when
each one's claim came before the other's end: `a.claimed_hi < b.ends_lo and b.claimed_hi < a.ends_lo`.

FIFO order is judged the same way, by claims, not by the order receives returned: a message first delivered
after a later one of its group is a violation when its claim certainly came after the later one's. A receive may
return after its own claim ran out (it stalled on faults and retries while the clock moved on); meanwhile the next
claim of the group may rightly have moved the message to the DLQ (its receive limit reached) and delivered the
one behind it. That consumer then holds an expired claim, as one that took longer than its visibility timeout to
process does, and no queue can keep that from overlapping with the next message. A message is known there by its
group, sequence and body, not by the id it was delivered with: the library and the SQS protocol show one message
under two ids, and a message claimed together with a later one, given back and received again over the other path
is claimed again, not for the first time.
"""

from __future__ import annotations

import base64
import math
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from queue_core import ReceivedMessage


def receipt_token(handle: str) -> str:
    """The claim token inside a receipt handle (the payload is base64url before the signature)."""
    payload = handle.split(".", 1)[0]
    return base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode().split("|")[4]


@dataclass
class Lock:
    """One claim: a standard message's, or a FIFO group's (shared by the messages it took)."""

    token: str
    group: str | None
    claimed_lo: int
    claimed_hi: int
    ends_lo: int
    ends_hi: int
    holds: list[Hold] = field(default_factory=list)

    def group_ends_lo(self) -> float:
        """The group is free once the lock ran out or every message taken was given back or deleted."""
        settled = [hold.settled_lo for hold in self.holds]
        given_back = max(settled) if settled and all(s is not None for s in settled) else math.inf
        return min(self.ends_lo, given_back)  # type: ignore[type-var]


@dataclass
class Hold:
    sub_queue: str
    message_id: str
    body: str
    receive_count: int
    handle: str
    lock: Lock
    settled_lo: int | None = None
    # Given up, then held again by a change of visibility that succeeded with its handle (the give-back failed,
    # or a standard message's visibility 0 left its claim's token on it): possibly held until then, by nobody.
    held_again_hi: float = 0

    @property
    def claimed_lo(self) -> int:
        return self.lock.claimed_lo

    @property
    def claimed_hi(self) -> int:
        return self.lock.claimed_hi

    @property
    def ends_lo(self) -> float:
        return min(self.lock.ends_lo, math.inf if self.settled_lo is None else self.settled_lo)


def certainly_overlap(a_start_hi: int, a_end_lo: float, b_start_hi: int, b_end_lo: float) -> bool:
    return a_start_hi < b_end_lo and b_start_hi < a_end_lo


class Ledger:
    """Thread-safe record of deliveries; violations are collected (and checked again at the end)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.holds: dict[tuple[str, str], list[Hold]] = defaultdict(list)
        self.group_locks: dict[tuple[str, str], list[Lock]] = defaultdict(list)
        # Per FIFO group: (sequence, body, latest time its claim was made) of each message's first delivery.
        self.first_deliveries: dict[tuple[str, str], list[tuple[str, str, int]]] = defaultdict(list)
        # The FIFO messages delivered at least once, by sub-queue, group, sequence and body: one message is
        # recorded under its SQS id or the queue's own, by the way it was received, and must not count as claimed
        # for the first time again when the other path receives it.
        self.first_claimed: set[tuple[str, str, str, str]] = set()
        self.violations: list[str] = []
        self.deliveries = 0

    def deliver(
        self,
        sub_queue: str,
        messages: list[ReceivedMessage],
        claimed_lo: int,
        claimed_hi: int,
        visibility: int,
        lock_of: Callable[[ReceivedMessage], str] | None = None,
    ) -> list[Hold]:
        """Records what one receive returned and checks it against every earlier holder. The messages of one
        claim share a lock: by default the claim token their handles carry; `lock_of` names it otherwise (a DLQ
        receive claims each dead letter with a token of its own, and holds a FIFO group's dead letters together)."""
        made: list[Hold] = []
        locks: dict[str, Lock] = {}
        with self._lock:
            for message in messages:
                token = lock_of(message) if lock_of is not None else receipt_token(message.receipt_handle)
                lock = locks.get(token)
                if lock is None:
                    seconds = max(visibility, 1) if message.group_id is not None else visibility
                    lock = Lock(
                        token,
                        message.group_id,
                        claimed_lo,
                        claimed_hi,
                        ends_lo=claimed_lo + seconds * 1000,
                        ends_hi=claimed_hi + seconds * 1000,
                    )
                    locks[token] = lock
                    if message.group_id is not None:
                        self._check_group(sub_queue, lock)
                hold = Hold(
                    sub_queue, message.message_id, message.body, message.receive_count, message.receipt_handle, lock
                )
                lock.holds.append(hold)
                self._check_message(hold)
                if message.group_id is not None:
                    self._check_first_delivery(sub_queue, message, lock)
                self.holds[(sub_queue, message.message_id)].append(hold)
                made.append(hold)
            self.deliveries += len(made)
        return made

    def settling(self, hold: Hold, now_ms: int) -> None:
        """Called just before a delete or a release: the holder gives the message up no later than now (a hold
        held again gives it up again: a failure of this call leaves it to `FleetRun.phantoms`)."""
        with self._lock:
            hold.settled_lo = now_ms if hold.settled_lo is None else min(hold.settled_lo, now_ms)
            hold.held_again_hi = 0

    def extending(self, hold: Hold, now_ms: int, seconds: int) -> None:
        """Called just before a change of visibility: a shorter one counts at once."""
        with self._lock:
            hold.lock.ends_lo = min(hold.lock.ends_lo, now_ms + seconds * 1000)

    def held_through(self, holds: list[Hold], now_ms: int, given_up: bool = True) -> None:
        """A holder that promised to keep its claims until it was done (a push dispatcher: its claims must cover
        the invocation, whatever the visibility it claimed with) is done now: each claim counts as held until now
        at least, and given up from now on. A second holder claiming one of the messages before now is then a
        violation, found by `recheck`. Not `given_up` (an invocation that timed out may still run, so the
        dispatcher leaves its messages alone): each claim goes on until its visibility runs out."""
        with self._lock:
            for hold in holds:
                hold.lock.ends_lo = max(hold.lock.ends_lo, now_ms)
                hold.lock.ends_hi = max(hold.lock.ends_hi, now_ms)
                if given_up:
                    hold.settled_lo = now_ms if hold.settled_lo is None else min(hold.settled_lo, now_ms)

    def not_before(self, hold: Hold, earliest_ms: int, what: str) -> None:
        """A message must not be claimed before `earliest_ms` (its delivery time or the end of its delay): a
        violation when its claim certainly came earlier."""
        if hold.claimed_hi < earliest_ms:
            with self._lock:
                self.violations.append(
                    f"{hold.sub_queue} {hold.body[:60]} claimed by {hold.claimed_hi}, before its {what} {earliest_ms}"
                )

    def violation(self, text: str) -> None:
        """A broken invariant seen by a holder itself (a message twice in one batch, a body changed)."""
        with self._lock:
            self.violations.append(text)

    def extended(self, hold: Hold, before_ms: int, after_ms: int, seconds: int) -> None:
        """Called after a change of visibility succeeded, with the clock readings taken around the call. One that
        succeeded after its holder gave the message up holds it again (see `Hold.held_again_hi`)."""
        with self._lock:
            hold.lock.ends_lo = before_ms + seconds * 1000
            hold.lock.ends_hi = after_ms + seconds * 1000
            if hold.settled_lo is not None:
                hold.held_again_hi = max(hold.held_again_hi, hold.lock.ends_hi)

    # Checks, made under the lock.
    def _check_message(self, hold: Hold) -> None:
        for earlier in self.holds[(hold.sub_queue, hold.message_id)]:
            if certainly_overlap(earlier.claimed_hi, earlier.ends_lo, hold.claimed_hi, hold.ends_lo):
                self.violations.append(
                    f"two holders of {hold.sub_queue} {hold.message_id}: receive counts {earlier.receive_count} "
                    f"(claimed by {earlier.claimed_hi}, held until at least {earlier.ends_lo}) and "
                    f"{hold.receive_count} (claimed by {hold.claimed_hi})"
                )

    def _check_group(self, sub_queue: str, lock: Lock) -> None:
        assert lock.group is not None
        for earlier in self.group_locks[(sub_queue, lock.group)]:
            if certainly_overlap(earlier.claimed_hi, earlier.group_ends_lo(), lock.claimed_hi, lock.ends_lo):
                self.violations.append(
                    f"two claims of FIFO group {sub_queue} {lock.group!r} at once: one claimed by "
                    f"{earlier.claimed_hi} and held until at least {earlier.group_ends_lo()}, another claimed by "
                    f"{lock.claimed_hi}"
                )
        self.group_locks[(sub_queue, lock.group)].append(lock)

    def _check_first_delivery(self, sub_queue: str, message: ReceivedMessage, lock: Lock) -> None:
        assert message.group_id is not None
        key = (sub_queue, message.group_id, message.sequence, message.body)
        if key in self.first_claimed:
            return
        self.first_claimed.add(key)
        order = self.first_deliveries[(sub_queue, message.group_id)]
        for sequence, body, claimed_hi in order:
            if sequence > message.sequence and claimed_hi < lock.claimed_lo:
                self.violations.append(
                    f"FIFO order broken in {sub_queue} group {message.group_id!r}: {message.body} (sequence "
                    f"{message.sequence}) first claimed after {body} (sequence {sequence}) was"
                )
                break
        order.append((message.sequence, message.body, lock.claimed_hi))

    def recheck(self) -> list[str]:
        """The overlap checks again, with every hold's final bounds (settles recorded late count now)."""
        found: list[str] = []
        with self._lock:
            for (sub_queue, message_id), holds in self.holds.items():
                for i, first in enumerate(holds):
                    for second in holds[i + 1 :]:
                        if certainly_overlap(first.claimed_hi, first.ends_lo, second.claimed_hi, second.ends_lo):
                            found.append(
                                f"two holders of {sub_queue} {message_id} (receive counts "
                                f"{first.receive_count} and {second.receive_count})"
                            )
            for (sub_queue, group), locks in self.group_locks.items():
                for i, first in enumerate(locks):
                    for second in locks[i + 1 :]:
                        first_end, second_end = first.group_ends_lo(), second.group_ends_lo()
                        if certainly_overlap(first.claimed_hi, first_end, second.claimed_hi, second_end):
                            found.append(f"two claims of FIFO group {sub_queue} {group!r} at once")
        return found

    def superseded(self, hold: Hold, at_ms: int, message_only: bool = False) -> bool:
        """Whether another claim of the hold's message (of its group, for FIFO) was certainly made after the
        hold's own and before `at_ms`: the hold's handle is stale from then on, whatever became of that claim.
        `message_only`: for FIFO, only a later claim of the group that took this very message counts (known by its
        body: one message is recorded under its SQS id or the queue's own, by the way it was received)."""
        mine = hold.lock
        with self._lock:
            if mine.group is not None:
                later = [lock for lock in self.group_locks[(hold.sub_queue, mine.group)] if lock is not mine]
                if message_only:
                    later = [lock for lock in later if any(other.body == hold.body for other in lock.holds)]
            else:
                later = [other.lock for other in self.holds[(hold.sub_queue, hold.message_id)] if other is not hold]
        return any(
            lock.token != mine.token and lock.claimed_lo > mine.claimed_hi and lock.claimed_hi < at_ms for lock in later
        )

    def held_at(self, sub_queue: str, now_ms: int, skew_ms: int = 0) -> tuple[int, int]:
        """How many messages of a standard sub-queue are certainly / possibly still held at `now_ms`, when no
        call is under way: a holder holds its message until its visibility ends, unless it gave it back. Every
        holder that did not give it back counts, not the one with the highest receive count: a redrive puts the
        message back with its count at 0, so the current holder may show a lower count than those before the DLQ.
        An earlier holder's claim ended before a later one's began (else `_check_message` saw two holders), so it
        can only loosen the upper bound, by the time its receive took. A message given back within `skew_ms` may
        still show in flight: its new visibility was set by its holder's clock, which may run that far ahead."""
        certain = possible = 0
        with self._lock:
            for (queue, _), holds in self.holds.items():
                if queue == sub_queue:
                    out = [hold for hold in holds if hold.settled_lo is None]
                    certain += any(hold.lock.ends_lo > now_ms for hold in out)
                    ending = any(hold.lock.ends_hi > now_ms for hold in out)
                    possible += ending or _settled_within(holds, now_ms, skew_ms) or _held_again(holds, now_ms)
        return certain, possible

    def groups_held_at(self, sub_queue: str, now_ms: int, skew_ms: int = 0) -> tuple[int, int]:
        """How many FIFO groups are certainly / possibly locked at `now_ms`, when no call is under way. Every
        claim of a group counts, not the last one recorded: locks are recorded in the order receives returned,
        and a receive stalled past its own claim returns after the next claim's (its lock long run out). A group
        whose claim was settled within `skew_ms` may still show locked (unlocked as of its holder's clock)."""
        certain = possible = 0
        with self._lock:
            for (queue, _), locks in self.group_locks.items():
                if queue == sub_queue:
                    out = [lock for lock in locks if not all(hold.settled_lo is not None for hold in lock.holds)]
                    certain += any(lock.ends_lo > now_ms for lock in out)
                    possible += any(lock.ends_hi > now_ms for lock in out) or any(
                        _settled_within(lock.holds, now_ms, skew_ms) or _held_again(lock.holds, now_ms)
                        for lock in locks
                    )
        return certain, possible


def _settled_within(holds: list[Hold], now_ms: int, skew_ms: int) -> bool:
    return any(hold.settled_lo is not None and hold.settled_lo + skew_ms > now_ms for hold in holds)


def _held_again(holds: list[Hold], now_ms: int) -> bool:
    return any(hold.held_again_hi > now_ms for hold in holds)
