"""Named writes on message items, standard and FIFO, live and dead-lettered.

Each returns a `Write`; the engines run them alone or in transactions and read a failed condition's old item to
tell a lost race from their own write repeated by the SDK.
"""

from __future__ import annotations

from typing import Any

from .. import keys
from .write import Key, Write, delete, put, put_new, update

_CLAIM = (
    "SET visible_at = :vis, gsi1sk = :gsk, tok = :tok, in_flight = :one, "
    "first_received_at = if_not_exists(first_received_at, :now) ADD receive_count :one"
)
_MARK = (
    "SET tok = :tok, locked_at = :now, first_received_at = if_not_exists(first_received_at, :now) "
    "ADD receive_count :one, marks :one"
)


def claim(key: Key, token: str, until: int, now: int, max_receive_count: int, priority: int = 0) -> Write:
    """A visible, unexpired standard message under its receive limit becomes held until `until`."""
    values: dict[str, Any] = {
        ":vis": until,
        ":gsk": keys.message_index_sk(until, key["sk"], priority),
        ":tok": token,
        ":one": 1,
        ":now": now,
        ":nows": now // 1000,
    }
    # Never twice with one token: with a visibility of 0 the message is visible again at once, and a repeat of
    # this very claim by the SDK would otherwise count a second receive.
    condition = "visible_at <= :now AND expires_at > :nows AND (attribute_not_exists(tok) OR tok <> :tok)"
    if max_receive_count:
        condition += " AND receive_count < :max"
        values[":max"] = max_receive_count
    return update(key, _CLAIM, values, condition=condition, returns="ALL_NEW")


def mark(key: Key, token: str, now: int, seen: int, marks: int | None) -> Write:
    """A FIFO message taken by the claim of its group that locked it at `now`, only if nobody took it since the
    claim read it (`seen` receives, `marks` taken so far: None when never) and no later lock of the group took it
    (`locked_at`): a claimer that stalled past its lock, before or after reading the head, neither takes the
    message from the group's next holder nor counts a receive twice, and the SDK's repeat of this mark fails (the
    caller finds its own token in the old item). Another claim's lock that took the group from a stalled one is
    always later: it waited for the stalled lock's end, at least a second after its start, by its own clock (a
    lock at the very same time follows only the holder's own release). The receive count alone is no fence: a
    message given back unseen gets its count back (`unseen`), and `marks` only grows."""
    values: dict[str, Any] = {":tok": token, ":now": now, ":one": 1, ":seen": seen}
    not_locked_since = "(attribute_not_exists(locked_at) OR locked_at <= :now)"
    condition = f"receive_count = :seen AND attribute_not_exists(marks) AND {not_locked_since}"
    if marks is not None:
        condition = f"receive_count = :seen AND marks = :marks AND {not_locked_since}"
        values[":marks"] = marks
    return update(key, _MARK, values, condition=condition, returns="ALL_NEW")


def fenced_delete(key: Key, token: str) -> Write:
    """Only the holder of the claim `token` deletes."""
    return delete(key, condition="tok = :tok", values={":tok": token})


def held_by(key: Key, token: str, untouched: bool = False) -> Write:
    """The message is held by the claim `token` (a check in the transaction of an action by its handle): not
    deleted, given back or taken by a later claim since. `untouched`: nor parked by its holder (`park`), for a
    repeated receive, which answers only messages nobody modified."""
    condition = "tok = :tok AND (attribute_not_exists(parked) OR parked <> :tok)" if untouched else "tok = :tok"
    return Write("ConditionCheck", key=key, condition=condition, values={":tok": token})


PARK = "SET parked = :tok"


def park(key: Key, token: str) -> Write:
    """One of several FIFO messages held by one claim is given back by its holder while the others are still out
    (SQS: visibility 0): it stays the claim's, so the handle still deletes it until another receive takes it, and
    the group is acked for it in the same transaction (`groups.ack`). Setting it twice is the same item."""
    return update(key, PARK, {":tok": token}, condition="tok = :tok")


Why = tuple[str, dict[str, Any]]
# A reason record that says: drop every reason the item holds instead (see `reasons`).
DROP: dict[str, Any] = {}
# Every attribute that holds an attempt's reason: dropped all at once when a reason no longer fits in the item.
_REASONS = ("why0", "why1", "why2", "why3", "why4", "why_past")


def _expression(sets: list[str], removes: list[str], values: dict[str, Any], why: Why | None) -> str:
    """An update of `sets` and `removes` that also records the attempt's reason `why` = (slot attribute, record),
    or, for the record `DROP`, removes every reason the item holds and counts it in `why_dropped`. The REMOVE
    clause comes first: the item is never larger while the update runs than before or after it (the embedded
    DynamoDB checks the size action by action)."""
    adds = []
    if why is not None and why[1] is DROP:
        removes = [*removes, *_REASONS]
        adds.append("why_dropped :dropped")
        values[":dropped"] = 1
    elif why is not None:
        sets = [*sets, f"{why[0]} = :why"]
        values[":why"] = why[1]
    clauses: list[str] = []
    if removes:
        clauses.append(f"REMOVE {', '.join(removes)}")
    clauses.append(f"SET {', '.join(sets)}")
    if adds:
        clauses.append(f"ADD {', '.join(adds)}")
    return " ".join(clauses)


def _held(why: Why | None) -> str:
    """The condition of a holder's write; one that records a reason only where the item has room for it
    (`reasons.NO_ROOM`): the caller finds the mark in the old item and writes again dropping the reason."""
    return "tok = :tok AND attribute_not_exists(why_none)" if why is not None and why[1] is not DROP else "tok = :tok"


def set_visibility(
    key: Key,
    visible_at: int,
    token: str,
    release_id: str | None = None,
    priority: int = 0,
    why: Why | None = None,
) -> Write:
    """The holder moves a standard message's visibility, and marks it `changed` by its claim: a repeat of the
    receive that made the claim no longer answers it (`hold_again`; SQS: an attempt is spent once any of its
    messages was modified). A release (`release_id`, fresh for each call) also gives up the claim and leaves its
    id, so that the SDK's repeat of this very call is told from a second release. `why`: the attempt's reason, in
    the same write."""
    values: dict[str, Any] = {
        ":vis": visible_at,
        ":gsk": keys.message_index_sk(visible_at, key["sk"], priority),
        ":tok": token,
    }
    sets, removes = ["visible_at = :vis", "gsi1sk = :gsk", "changed = :tok"], []
    if release_id is not None:
        sets.append("released_by = :rel")
        values[":rel"] = release_id
        removes = ["tok", "in_flight"]
    else:  # in flight again, also when a hold (`hold_stuck`, `in_flight` 0) came after its claim ran out
        sets.append("in_flight = :one")
        values[":one"] = 1
    return update(key, _expression(sets, removes, values, why), values, condition=_held(why))


def hold_again(key: Key, visible_at: int, token: str, priority: int = 0) -> Write:
    """A repeated receive holds a standard message again until `visible_at`, only while its claim holds it and its
    holder never changed its visibility (`set_visibility`)."""
    values: dict[str, Any] = {
        ":vis": visible_at,
        ":gsk": keys.message_index_sk(visible_at, key["sk"], priority),
        ":tok": token,
    }
    values[":one"] = 1  # in flight again, also when a hold (`hold_stuck`) came after the claim ran out
    condition = "tok = :tok AND (attribute_not_exists(changed) OR changed <> :tok)"
    return update(key, "SET visible_at = :vis, gsi1sk = :gsk, in_flight = :one", values, condition=condition)


def give_back(key: Key, token: str, release_id: str, why: Why | None = None) -> Write:
    """The holder gives up its claim of a FIFO message (the group's lock says when it is visible), leaving the
    call's `release_id` so that the SDK's repeat of this very call is told from a second release. `why`: the
    attempt's reason, in the same write."""
    values: dict[str, Any] = {":tok": token, ":rel": release_id}
    expression = _expression(["released_by = :rel"], ["tok"], values, why)
    return update(key, expression, values, condition=_held(why))


def note(key: Key, token: str, why: Why) -> Write:
    """The holder records why its attempt ends where no other write ends it (a push delivery that timed out: its
    claim runs out by itself). Only while the claim holds the message; the same value set twice is the same item."""
    values: dict[str, Any] = {":tok": token}
    return update(key, _expression(["noted = :tok"], [], values, why), values, condition=_held(why))


def unseen(
    key: Key, token: str, receive_count: int, release_id: str, visible_at: int | None = None, priority: int = 0
) -> Write:
    """The holder gives back a message it never handed to anyone: its claim's receive is taken back (and its first
    receive time, when this was its first), and the claim ends (a standard message is visible at `visible_at`; a
    FIFO message's group lock says when). Conditional on the claim and its count, so neither a later claim nor
    the SDK's repeat is undone; the repeat finds `release_id`."""
    expression = "SET released_by = :rel"
    values: dict[str, Any] = {":tok": token, ":rel": release_id, ":rc": receive_count, ":dec": -1}
    removed = ["tok"]
    if visible_at is not None:
        expression += ", visible_at = :vis, gsi1sk = :gsk"
        values[":vis"] = visible_at
        values[":gsk"] = keys.message_index_sk(visible_at, key["sk"], priority)
        removed.append("in_flight")
    if receive_count <= 1:
        removed.append("first_received_at")
    expression += f" ADD receive_count :dec REMOVE {', '.join(removed)}"
    return update(key, expression, values, condition="tok = :tok AND receive_count = :rc")


def hold_stuck(key: Key, receive_count: int, now: int, retry_at: int, priority: int = 0) -> Write:
    """A visible standard message past its receive limit, whose DLQ copy DynamoDB refused for its size, goes out of
    sight until `retry_at`; `in_flight` 0 says so in the index (no claim holds it: `stuck` in stats). Only while
    its count is as read and it is visible: a receive, a move or this very hold since (repeated by the SDK after a
    lost answer) leaves it as it is."""
    values: dict[str, Any] = {
        ":vis": retry_at,
        ":gsk": keys.message_index_sk(retry_at, key["sk"], priority),
        ":rc": receive_count,
        ":now": now,
        ":zero": 0,
    }
    condition = "receive_count = :rc AND visible_at <= :now"
    return update(key, "SET visible_at = :vis, gsi1sk = :gsk, in_flight = :zero", values, condition=condition)


def delete_expired(key: Key, now: int) -> Write:
    """Only while it is still past retention: a fresh item may have been put under the key since it was read."""
    return delete(key, condition="expires_at <= :nows", values={":nows": now // 1000})


def leave_for_dlq(
    key: Key, receive_count: int, visible_before: int | None = None, released_by: str = "", noted: str = ""
) -> Write:
    """The message leaves the queue for the DLQ (in the same transaction as `put_new` of its DLQ item), only if
    nobody received it since it was read (and, for a standard message, it is not held), and its last holder, whose
    claim ran out, neither released it nor noted why its attempt ended since (`released_by` and `noted` as read,
    "" when absent): such a write is applied and answered with success while nobody else holds the message, and
    the DLQ item, made from the read, would not carry its reason. The mover reads the message again and moves it
    as it is."""
    values: dict[str, Any] = {":rc": receive_count}
    condition = "receive_count = :rc"
    if released_by:
        condition += " AND released_by = :rel"
        values[":rel"] = released_by
    else:
        condition += " AND attribute_not_exists(released_by)"
    if noted:
        condition += " AND noted = :noted"
        values[":noted"] = noted
    else:
        condition += " AND attribute_not_exists(noted)"
    if visible_before is not None:
        condition += " AND visible_at <= :now"
        values[":now"] = visible_before
    return delete(key, condition=condition, values=values)


def _the_copy(moved_at: int, copy: str, values: dict[str, Any]) -> str:
    """The condition that the DLQ copy a handle names still holds its key: not a later copy of the same message
    (redriven, then dead-lettered again). A copy written before copies were stamped with an id is named by its
    time alone."""
    values[":at"] = moved_at
    if copy:
        values[":copy"] = copy
        return "moved_at = :at AND dlq_id = :copy"
    return "moved_at = :at AND attribute_not_exists(dlq_id)"


def delete_dead_letter(key: Key, moved_at: int, copy: str, token: str = "") -> Write:
    """The DLQ copy a dead letter's handle was read from, only if that copy still holds the key, and nothing once
    it is gone. A handle of a claim (`token`) deletes only while that claim is the copy's latest: a handle whose
    claim ran out and was taken by another receive is spent, as a live handle is."""
    values: dict[str, Any] = {}
    condition = _the_copy(moved_at, copy, values)
    if token:
        condition += " AND dlq_tok = :tok"
        values[":tok"] = token
    return delete(key, condition=condition, values=values)


def claim_dead_letter(key: Key, moved_at: int, copy: str, token: str, until: int, now: int) -> Write:
    """A DLQ copy is held by the claim `token` until `until`, only if no other claim holds it now. The SDK's
    repeat of an applied claim may fail (the claim is live): the caller finds its own token in the old item."""
    values: dict[str, Any] = {":tok": token, ":until": until, ":now": now}
    condition = _the_copy(moved_at, copy, values) + " AND (attribute_not_exists(dlq_until) OR dlq_until <= :now)"
    return update(key, "SET dlq_tok = :tok, dlq_until = :until", values, condition=condition)


def hold_dead_letter(key: Key, moved_at: int, copy: str, token: str, until: int, again: bool = False) -> Write:
    """The holder of the claim `token` on a DLQ copy moves the claim's end (to now: releases it), and marks the
    copy changed by that claim; `again`: a repeated receive holds it again instead, only while its holder never
    changed it (SQS spends an attempt once a message is modified). The same value set twice is the same item, so
    the SDK's repeat is harmless."""
    values: dict[str, Any] = {":tok": token, ":until": until}
    condition = _the_copy(moved_at, copy, values) + " AND dlq_tok = :tok"
    if again:
        condition += " AND (attribute_not_exists(dlq_changed) OR dlq_changed <> :tok)"
        return update(key, "SET dlq_until = :until", values, condition=condition)
    return update(key, "SET dlq_until = :until, dlq_changed = :tok", values, condition=condition)


def take_existing(key: Key) -> Write:
    """A DLQ item leaves for a redrive, only if it is still there."""
    return delete(key, condition="attribute_exists(pk)")


def store_new(item: dict[str, Any]) -> Write:
    return put_new(item)


def dedup(item: dict[str, Any], now: int) -> Write:
    """A dedup item, written only if no live one exists: a duplicate cancels the send's transaction."""
    return Write("Put", item=item, condition="attribute_not_exists(pk) OR dedup_until <= :now", values={":now": now})


def keep_attempt(item: dict[str, Any], now: int, spent_token: str | None = None, own_token: str | None = None) -> Write:
    """A receive's answer under its attempt id: only where none is kept, the kept one has run out, or it is the
    spent one (`spent_token`) this receive replaces, or an earlier keep of this same receive (`own_token`) whose
    answer was lost and which this answer of fewer messages replaces. A repeat of our own put finds our token in
    the item."""
    condition = "attribute_not_exists(pk) OR kept_until <= :now"
    values: dict[str, Any] = {":now": now}
    if spent_token is not None:
        condition += " OR tok = :spent"
        values[":spent"] = spent_token
    if own_token is not None:
        condition += " OR tok = :own"
        values[":own"] = own_token
    return put(item, condition=condition, values=values)
