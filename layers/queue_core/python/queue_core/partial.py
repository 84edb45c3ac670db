"""A receive that met a throttle partway: what it had claimed before is its answer, not a loss.

Claims run in parallel and a receive visits shards, priorities and clients in turn. A claim that was applied is
a message held by this receive: if a throttle met elsewhere in the same receive threw it away, it would stay in
flight unreturned until its visibility ended (with its receive count raised, so under sustained throttling it
could reach the DLQ without ever being delivered). So a throttle travels up as `Interrupted`, carrying what was
claimed below it; each level adds it to what it has, stops asking the throttled shard or key (a throttle is per
partition: asking again would only feed it) and may go on elsewhere; the receive's entry point returns what it
holds and raises only when it holds nothing.

A FIFO claim whose lock was taken and could not be given back after a throttle (nothing marked, its unlock refused
too) leaves its group held by nobody until the lock ends: an answer of the other claims would hide that. Such a
throttle says so (`left_locked`), wins over the others met in the same receive (`kept`), and the receive fails
instead of answering (see `FifoClaims.receive`), as a failed receive may leave a claim in flight.
"""

from __future__ import annotations

from typing import Any

from .errors import Throttled


class Interrupted(Throttled):
    """A throttle (`cause`) met after `received` were claimed by the same receive."""

    def __init__(self, cause: Throttled, received: list[Any], left_locked: bool = False) -> None:
        super().__init__(cause.message)
        self.cause = original(cause)
        self.received = received
        self.left_locked = left_locked


def left_locked(error: Throttled) -> bool:
    """Whether a claim of the receive was left locked for nobody before or at this throttle."""
    return isinstance(error, Interrupted) and error.left_locked


def kept(first: Throttled | None, met: Throttled) -> Throttled:
    """The throttle a level carries on after meeting `met`: the first it met, unless `met` left a claim locked."""
    if first is None or (left_locked(met) and not left_locked(first)):
        return met
    return first


def original(error: Throttled) -> Throttled:
    """The throttle itself, as DynamoDB's answer made it (an `OutcomeUnknown` stays one)."""
    return error.cause if isinstance(error, Interrupted) else error


def received(error: Throttled) -> list[Any]:
    """What was claimed before the throttle (nothing for a plain one)."""
    return error.received if isinstance(error, Interrupted) else []


def after(error: Throttled, got: list[Any]) -> Interrupted:
    """`error` carrying `got`, to raise from a level whose caller may go on elsewhere."""
    return Interrupted(original(error), got, left_locked(error))


def answer(error: Throttled | None, got: list[Any]) -> list[Any]:
    """The entry point's answer: what it holds; the throttle only when it holds nothing."""
    if error is not None and not got:
        raise original(error)
    return got
