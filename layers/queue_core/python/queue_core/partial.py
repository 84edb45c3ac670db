"""A receive that met a throttle partway: what it had claimed before is its answer, not a loss.

Claims run in parallel and a receive visits shards, priorities and clients in turn. A claim that was applied is
a message held by this receive: if a throttle met elsewhere in the same receive threw it away, it would stay in
flight unreturned until its visibility ended (with its receive count raised, so under sustained throttling it
could reach the DLQ without ever being delivered). So a throttle travels up as `Interrupted`, carrying what was
claimed below it; each level adds it to what it has, stops asking the throttled shard or key (a throttle is per
partition: asking again would only feed it) and may go on elsewhere; the receive's entry point returns what it
holds and raises only when it holds nothing.
"""

from __future__ import annotations

from typing import Any

from .errors import Throttled


class Interrupted(Throttled):
    """A throttle (`cause`) met after `received` were claimed by the same receive."""

    def __init__(self, cause: Throttled, received: list[Any]) -> None:
        super().__init__(cause.message)
        self.cause = original(cause)
        self.received = received


def original(error: Throttled) -> Throttled:
    """The throttle itself, as DynamoDB's answer made it (an `OutcomeUnknown` stays one)."""
    return error.cause if isinstance(error, Interrupted) else error


def received(error: Throttled) -> list[Any]:
    """What was claimed before the throttle (nothing for a plain one)."""
    return error.received if isinstance(error, Interrupted) else []


def after(error: Throttled, got: list[Any]) -> Interrupted:
    """`error` carrying `got`, to raise from a level whose caller may go on elsewhere."""
    return Interrupted(original(error), got)


def answer(error: Throttled | None, got: list[Any]) -> list[Any]:
    """The entry point's answer: what it holds; the throttle only when it holds nothing."""
    if error is not None and not got:
        raise original(error)
    return got
