"""Named writes on the claim item of a FIFO DLQ's group (see `queue_core.dead_letter_groups`).

The item names the claim that last took the group (`tok`), until when it holds it (`held_until`) and which of the
group's dead letters it still holds (`held_copies`, their sequences). The group is held while both last: a claim
whose dead letters were all given back or deleted holds nothing, whatever its time. That is the one condition a
receive takes the group on (`claim`); the holder's writes are conditional on its own token.

Each write is safe when DynamoDB applied it and the SDK sent it again after a lost answer: a repeated claim fails
its condition and the caller finds its own token in the old item; a repeated hold sets what it set; a repeated
give-back removes from a set what is no longer there.
"""

from __future__ import annotations

from typing import Any, Final

from .write import Key, Write, update

# The item outlives any hold it can record (at most the longest visibility timeout from the write): after that, a
# claim item is only a group nobody holds, and TTL may remove it.
_KEPT_SECONDS: Final = 24 * 3600


def claim(key: Key, token: str, copies: list[str], until: int, now: int, emptied: str | None = None) -> Write:
    """The group is held by the claim `token` until `until`, for its dead letters `copies` (at least one), only if
    no claim holds it: none ever did, the last one's time ran out, or it holds none of its dead letters any
    more; or it is the claim `emptied`, whose dead letters the caller found all gone from the DLQ (redriven,
    moved, deleted by a look's handle). A claim's set only shrinks, and a dead letter gone from the DLQ never
    comes back under its sequence (a redrive gives it a new one), so that claim holds nothing for good."""
    values: dict[str, Any] = {
        ":tok": token,
        ":until": until,
        ":copies": set(copies),
        ":now": now,
        ":exp": until // 1000 + _KEPT_SECONDS,
    }
    expression = "SET tok = :tok, held_until = :until, held_copies = :copies, expires_at = :exp"
    condition = "attribute_not_exists(held_copies) OR held_until <= :now"
    if emptied is not None:
        condition += " OR tok = :emptied"
        values[":emptied"] = emptied
    return update(key, expression, values, condition=condition)


def hold(key: Key, token: str, copy: str, until: int) -> Write:
    """The claim `token` holds its dead letter `copy` until `until`: the group's time moves there when that is
    later, or when `copy` is the only dead letter the claim still holds (earlier too); else the group stays held
    as long as it was, for the others. A failed condition whose old item is the claim's, still holding `copy`, is
    that case: nothing to write."""
    values: dict[str, Any] = {
        ":tok": token,
        ":copy": copy,
        ":until": until,
        ":one": 1,
        ":exp": until // 1000 + _KEPT_SECONDS,
    }
    condition = "tok = :tok AND contains(held_copies, :copy) AND (held_until < :until OR size(held_copies) = :one)"
    return update(key, "SET held_until = :until, expires_at = :exp", values, condition=condition)


def give_back(key: Key, token: str, copies: list[str]) -> Write:
    """The claim `token` no longer holds `copies` (released, deleted, gone, or never taken): once it holds none,
    the group is free. Never a later claim's. A release writes it in one transaction with the dead letter's own
    (`dead_letter_groups.hold`), so that a handle whose group a later claim took releases nothing: the dead
    letter's stamp may still name the handle's claim, when the later one did not reach it."""
    return update(key, "DELETE held_copies :copies", {":copies": set(copies), ":tok": token}, condition="tok = :tok")


def still_holds(key: Key, token: str, copy: str) -> Write:
    """A check beside a write to the dead letter `copy` alone, made because its claim holds the group: the claim
    `token` still holds the group and `copy` with it. The dead letter's stamp may still name that claim when a later
    receive took the group without reaching it, or after the claim gave it back: the stamp alone fences neither."""
    return Write(
        "ConditionCheck",
        key=key,
        condition="tok = :tok AND contains(held_copies, :copy)",
        values={":tok": token, ":copy": copy},
    )
