"""Named writes on FIFO group items: the group's sequence fence, its lock, its bookkeeping, its moves.

Every write here is safe when DynamoDB applied it, its answer was lost and the SDK sent it again: counts are kept
as sets of sequences (`acked`, `gone`) or guarded by a condition that the repeat fails, and the caller reads a
failed condition's old item (our token, our sequence in the set, `unlocked_by`) to know the write was done.
"""

from __future__ import annotations

from typing import Any

from .. import keys
from .write import Key, Write, update

# `gone` stays until the group is empty: a late removal counted after a claim or an unlock must still find it.
_UNLOCK_CLEARS = "tok, acked, retry_at"


def append(
    key: Key,
    group: str,
    count: int,
    last_seq: int,
    fence: int | None,
    moving_in: bool,
    first_visible: int,
    now: int,
    expires_at: int,
) -> Write:
    """`count` messages join the group's tail after `last_seq`. With a `fence` (the last sequence as known) the
    group must be at it and not have moved away; moving in, a `moved` item left here earlier is the group's own;
    otherwise the group is new here, or everything of it expired."""
    values: dict[str, Any] = {
        ":new": last_seq + count,
        ":gpk": key["pk"],
        ":gsk": keys.index_sk(first_visible, group),
        ":avail": first_visible,
        ":g": group,
        ":gexp": expires_at,
        ":n": count,
    }
    if fence is not None:
        condition = "last_seq = :expected AND attribute_not_exists(moved)"
        values[":expected"] = fence
    elif moving_in:
        condition = "attribute_not_exists(last_seq) OR attribute_exists(moved)"
    else:
        condition = "attribute_not_exists(last_seq) OR (attribute_exists(moved) AND expires_at <= :nows)"
        values[":nows"] = now // 1000
    expression = (
        "SET last_seq = :new, gsi1pk = :gpk, gsi1sk = if_not_exists(gsi1sk, :gsk), "
        "available_at = if_not_exists(available_at, :avail), group_id = :g, expires_at = :gexp ADD msg_count :n"
    )
    if fence is None:
        expression += " REMOVE moved"
    return update(key, expression, values, condition=condition)


def move_away(key: Key, last_seq: int) -> Write:
    """The group leaves an old place: only while it is empty there and still at the sequence read."""
    condition = "attribute_not_exists(gsi1sk) AND attribute_not_exists(moved) AND last_seq = :ls"
    return update(key, "SET moved = :one", {":one": 1, ":ls": last_seq}, condition=condition)


def lock(key: Key, token: str, until: int, now: int) -> Write:
    """An available group is locked by a claim until `until`."""
    expression = "SET available_at = :until, gsi1sk = :gsk, tok = :tok REMOVE retry_at, acked"
    values = {":until": until, ":gsk": keys.index_sk(until, key["sk"]), ":tok": token, ":now": now}
    return update(
        key, expression, values, condition="available_at <= :now AND attribute_exists(gsi1sk)", returns="ALL_NEW"
    )


def unlock(key: Key, token: str, available_at: int, removed: int) -> Write:
    """The claim ends: available again at `available_at`; `removed` messages leave the count."""
    expression = f"SET available_at = :at, gsi1sk = :gsk, unlocked_by = :tok ADD msg_count :dec REMOVE {_UNLOCK_CLEARS}"
    values = {":at": available_at, ":gsk": keys.index_sk(available_at, key["sk"]), ":tok": token, ":dec": -removed}
    return update(key, expression, values, condition="tok = :tok")


def unlock_empty(key: Key, token: str, last_seq: int) -> Write:
    """The claim ends and the group leaves the index: it is empty, if no send came since `last_seq`."""
    expression = (
        f"REMOVE gsi1pk, gsi1sk, available_at, gone, {_UNLOCK_CLEARS} SET msg_count = :zero, unlocked_by = :tok"
    )
    return update(
        key, expression, {":tok": token, ":ls": last_seq, ":zero": 0}, condition="tok = :tok AND last_seq = :ls"
    )


def ack(key: Key, token: str, sequence: str, removed: int, retry_at: int | None) -> Write:
    """One held message is done; with `retry_at`, only if no other held message was given back for later."""
    values: dict[str, Any] = {":seqs": {sequence}, ":seq": sequence, ":dec": -removed, ":tok": token}
    condition = "tok = :tok AND NOT contains(acked, :seq)"
    expression = "ADD acked :seqs, msg_count :dec"
    if retry_at is not None:
        expression += " SET retry_at = :at"
        condition += " AND (attribute_not_exists(retry_at) OR retry_at <= :at)"
        values[":at"] = retry_at
    return update(key, expression, values, condition=condition, returns="ALL_NEW")


def extend(key: Key, token: str, visible_at: int) -> Write:
    """The holder moves the group's lock."""
    values = {":at": visible_at, ":gsk": keys.index_sk(visible_at, key["sk"]), ":tok": token}
    return update(key, "SET available_at = :at, gsi1sk = :gsk", values, condition="tok = :tok")


def count_removed(key: Key, sequence: str) -> Write:
    """A message left the group outside a claim; counted once however often this is written."""
    values = {":dec": -1, ":seqs": {sequence}, ":seq": sequence}
    condition = "attribute_exists(pk) AND attribute_not_exists(moved) AND NOT contains(gone, :seq)"
    return update(key, "ADD msg_count :dec, gone :seqs", values, condition=condition)


def dead_lettered(key: Key, token: str) -> Write:
    """The holder's head went to the DLQ (in the transaction that moves it)."""
    return update(key, "ADD msg_count :dec", {":dec": -1, ":tok": token}, condition="tok = :tok")


def empty(key: Key, last_seq: int) -> Write:
    """A purged group leaves the index, unless a send landed since its messages were removed."""
    expression = f"REMOVE gsi1pk, gsi1sk, available_at, gone, {_UNLOCK_CLEARS} SET msg_count = :zero"
    return update(key, expression, {":zero": 0, ":ls": last_seq}, condition="last_seq = :ls")
