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
# `stuck` goes with any unlock but `hold_stuck`'s: a claim got past it, or the group was emptied.
_UNLOCK_CLEARS = "tok, acked, parked, retry_at, stuck"
# Where a holder records the message it took out of the count (deleted, or moved to the DLQ), for a late delete
# that may have removed its message itself (`count_removed`): one that had been received before the holder's claim
# (so an earlier claim's handle of it may still be out) in attribute `rr{n}`, the last such sequence's number that
# is n modulo `_REDELIVERED_SLOTS`; one received once in `rl{n}`, modulo `_ONCE_SLOTS` (its own holder's delete,
# sent again by a caller, comes soon after). The slots are few, numbers and written over, so the record stays small
# (a group item past 1 KB would double the write units of every send, receive and delete of its group).
_REDELIVERED_SLOTS = 16
_ONCE_SLOTS = 4


def _removal_slot(sequence: str, redelivered: bool) -> str:
    number = int(sequence)
    return f"rr{number % _REDELIVERED_SLOTS}" if redelivered else f"rl{number % _ONCE_SLOTS}"


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


def move_away(key: Key, last_seq: int, expires_at: int) -> Write:
    """The group leaves an old place: only while it is empty there and still at the sequence read. The mark lives
    as long as a group item written now (`expires_at`), never less: the item's own time may be up already (a group
    idle there for longer than its retention), and a moved item whose time is up is a place free for a new group
    (`append`), where a process whose settings are from before the move would start the group again."""
    condition = "attribute_not_exists(gsi1sk) AND attribute_not_exists(moved) AND last_seq = :ls"
    values = {":one": 1, ":ls": last_seq, ":exp": expires_at}
    return update(key, "SET moved = :one, expires_at = :exp", values, condition=condition)


def lock(key: Key, token: str, until: int, now: int) -> Write:
    """An available group is locked by a claim until `until`."""
    expression = "SET available_at = :until, gsi1sk = :gsk, tok = :tok REMOVE retry_at, acked, parked, changed"
    values = {":until": until, ":gsk": keys.index_sk(until, key["sk"]), ":tok": token, ":now": now}
    return update(
        key, expression, values, condition="available_at <= :now AND attribute_exists(gsi1sk)", returns="ALL_NEW"
    )


def unlock(
    key: Key,
    token: str,
    available_at: int,
    removed: int,
    counted_once: str | None = None,
    removed_seq: str | None = None,
    redelivered: bool = False,
) -> Write:
    """The claim ends: available again at `available_at`; `removed` messages leave the count (`removed_seq`: the
    one removed, recorded in its slot, see `_REDELIVERED_SLOTS`; `redelivered`: received before this claim).
    With `counted_once` (the sequence removed), the removal also joins `gone` and the write fails if it is there
    already (see `ack`)."""
    sets = "available_at = :at, gsi1sk = :gsk, unlocked_by = :tok"
    values = {":at": available_at, ":gsk": keys.index_sk(available_at, key["sk"]), ":tok": token, ":dec": -removed}
    if removed and removed_seq is not None:
        sets += f", {_removal_slot(removed_seq, redelivered)} = :rr"
        values[":rr"] = int(removed_seq)
    expression = f"SET {sets} ADD msg_count :dec REMOVE {_UNLOCK_CLEARS}"
    expression, values, condition = _once(expression, values, "tok = :tok", counted_once)
    return update(key, expression, values, condition=condition)


def unlock_empty(key: Key, token: str, last_seq: int) -> Write:
    """The claim ends and the group leaves the index: it is empty, if no send came since `last_seq`. The count
    is set, not added to: every message up to `last_seq` is accounted for (`counted_to`, see `count_removed`)."""
    expression = (
        f"REMOVE gsi1pk, gsi1sk, available_at, gone, {_UNLOCK_CLEARS} "
        "SET msg_count = :zero, unlocked_by = :tok, counted_to = :to"
    )
    values = {":tok": token, ":ls": last_seq, ":zero": 0, ":to": keys.group_seq(last_seq)}
    return update(key, expression, values, condition="tok = :tok AND last_seq = :ls")


def ack(
    key: Key,
    token: str,
    sequence: str,
    removed: int,
    retry_at: int | None,
    counted_once: bool = False,
    not_last_of: int | None = None,
    redelivered: bool = False,
    parked: bool = False,
) -> Write:
    """One held message is done; with `retry_at`, only if no other held message was given back for later.
    A removed message is recorded (`redelivered`: received before this claim; see `_REDELIVERED_SLOTS`). A
    `parked` one (given back by its holder, still deletable by its handle) joins `parked` too, which the claim's
    end clears with `acked`: its delete, which the ack no longer counts, knows it from the claim's own removals.
    `not_last_of` (the claim's held count): only if it does not complete the done set, which `ack_last` does
    (an ack in a transaction, that cannot see the set it completes).

    `counted_once` is for a delete that found its message gone already: the call that removed it (another
    delete of the same handle racing this one, or this very call before its answer was lost) may count it after
    the lock has passed on, by `gone` (`count_removed`), which this ack's `acked` set cannot tell. Such an ack
    counts through `gone` as well and fails if the message is there (then acked again with nothing removed). A
    rare path: a delete that removed its message itself counts by `acked` alone, so `gone` does not grow with a
    busy group's every message."""
    values: dict[str, Any] = {":seqs": {sequence}, ":seq": sequence, ":dec": -removed, ":tok": token}
    condition = "tok = :tok AND NOT contains(acked, :seq)"
    sets = []
    if removed:
        sets.append(f"{_removal_slot(sequence, redelivered)} = :rr")
        values[":rr"] = int(sequence)
    if retry_at is not None:
        sets.append("retry_at = :at")
        condition += " AND (attribute_not_exists(retry_at) OR retry_at <= :at)"
        values[":at"] = retry_at
    adds = "ADD acked :seqs, parked :seqs, msg_count :dec" if parked else "ADD acked :seqs, msg_count :dec"
    expression = adds + (f" SET {', '.join(sets)}" if sets else "")
    if not_last_of is not None:
        condition += " AND (attribute_not_exists(acked) OR size(acked) < :others)"
        values[":others"] = not_last_of - 1
    expression, values, condition = _once(expression, values, condition, sequence if counted_once else None)
    return update(key, expression, values, condition=condition, returns="ALL_NEW")


def ack_last(
    key: Key, token: str, sequence: str, others: int, available_at: int, removed: int = 1, redelivered: bool = False
) -> Write:
    """The last of a claim's held messages is done (`removed` 1: deleted; 0: given back): acked and the group
    unlocked in the same write (and so in the transaction of the message's own write), only if exactly the
    claim's `others` are done already and none of them was given back for later than `available_at`. An ack that
    cannot read the done set (in a transaction) otherwise leaves the unlock to a read after the commit, and a
    group whose unlock then fails waits for its lock to run out with nothing held. `acked` exists once one of the
    others is done (its size is checked only then)."""
    values = {
        ":at": available_at,
        ":gsk": keys.index_sk(available_at, key["sk"]),
        ":tok": token,
        ":dec": -removed,
        ":seq": sequence,
        ":others": others,
    }
    condition = (
        "tok = :tok AND attribute_exists(acked) AND size(acked) = :others AND NOT contains(acked, :seq) "
        "AND (attribute_not_exists(retry_at) OR retry_at <= :at)"
    )
    sets = "available_at = :at, gsi1sk = :gsk, unlocked_by = :tok"
    if removed:
        sets += f", {_removal_slot(sequence, redelivered)} = :rr"
        values[":rr"] = int(sequence)
    expression = f"SET {sets} ADD msg_count :dec REMOVE {_UNLOCK_CLEARS}"
    return update(key, expression, values, condition=condition)


def count_parked(key: Key, token: str, sequence: str) -> Write:
    """A message its holder parked (acked then, counting nothing) is deleted by its handle in a transaction, while
    the claim still holds the group: counted now, through `gone`, as a plain delete of it counts it."""
    values = {":dec": -1, ":seqs": {sequence}, ":seq": sequence, ":tok": token}
    condition = "tok = :tok AND contains(parked, :seq) AND NOT contains(gone, :seq)"
    return update(key, "ADD msg_count :dec, gone :seqs", values, condition=condition)


def _once(
    expression: str, values: dict[str, Any], condition: str, sequence: str | None
) -> tuple[str, dict[str, Any], str]:
    """The removal of `sequence` joins `gone` in the same write, on the condition that it is not there yet."""
    if sequence is None:
        return expression, values, condition
    expression = expression.replace("ADD ", "ADD gone :gone, ", 1)
    values = {**values, ":gone": {sequence}, ":goneseq": sequence}
    return expression, values, f"{condition} AND NOT contains(gone, :goneseq)"


def hold_stuck(key: Key, token: str, sequence: str, retry_at: int) -> Write:
    """The claim ends at a head that can be neither delivered nor moved to the DLQ: the group stays behind it,
    available again at `retry_at` (for another try), and says which message holds it (`stuck`)."""
    expression = (
        "SET available_at = :at, gsi1sk = :gsk, unlocked_by = :tok, stuck = :seq REMOVE tok, acked, parked, retry_at"
    )
    values = {":at": retry_at, ":gsk": keys.index_sk(retry_at, key["sk"]), ":tok": token, ":seq": sequence}
    return update(key, expression, values, condition="tok = :tok")


def extend(key: Key, token: str, visible_at: int, held: int = 1) -> Write:
    """The holder moves the group's lock (in a transaction with `messages.held_by` of the handle's own message,
    so a spent handle of a claim that still holds the group moves nothing), and marks it `changed`: a repeat of
    the receive that made the claim no longer answers it (`hold_again`). While other messages of the claim are out
    (`held` > 1, fewer than `held - 1` done) the lock only ever grows: a failed condition whose old item is ours and
    later already is that, nothing to do. `acked` is absent until the claim's first ack, and the size of an absent
    attribute is no number (moto, and so `dq local`, refuses the whole request): its existence is checked first."""
    values: dict[str, Any] = {
        ":at": visible_at,
        ":gsk": keys.index_sk(visible_at, key["sk"]),
        ":tok": token,
        ":one": 1,
    }
    condition = "tok = :tok"
    if held > 1:
        condition += " AND (available_at < :at OR (attribute_exists(acked) AND size(acked) >= :others))"
        values[":others"] = held - 1
    return update(key, "SET available_at = :at, gsi1sk = :gsk, changed = :one", values, condition=condition)


def hold_again(key: Key, token: str, visible_at: int) -> Write:
    """A repeated receive holds its claim's group again, only while the claim holds it and its holder never
    changed its lock (SQS: an attempt is spent once any of its messages was modified)."""
    values = {":at": visible_at, ":gsk": keys.index_sk(visible_at, key["sk"]), ":tok": token}
    return update(
        key, "SET available_at = :at, gsi1sk = :gsk", values, condition="tok = :tok AND attribute_not_exists(changed)"
    )


def count_removed(key: Key, sequence: str, unless_a_holder_did: bool = False, in_order: bool = False) -> Write:
    """A message left the group outside a claim; counted once however often this is written, and not at all
    when the group was found empty since (its count set to 0 with every sequence up to `counted_to` in it).

    `in_order`: an expired head, removed by the claim that reads the group's heads in order. `counted_to` moves up
    to it instead of its sequence joining `gone`: a group whose backlog outlives its retention never empties, and
    `gone` grew by one sequence a message (past 1 KB every write of the group pays twice; at 400 KB none can be
    made). A removal of an earlier sequence said after it (a late delete by the handle of a message the claim
    took, its answer lost) is then taken as counted: the count, which only the stats read, stays one high until
    the group is found empty (`unlock_empty`), and is never counted twice.

    `unless_a_holder_did`: for a delete that found its message gone and may have removed it itself (its first
    attempt's answer lost) after its claim ended. Not when a holder recorded this very message in its slot (see
    `_REDELIVERED_SLOTS`): a later claim received it and counted it, deleting it or moving it to the DLQ, or its
    own holder's delete did, sent again by its caller once the group moved on. A holder's removal since of another
    message whose number falls in the same slot hides that (the count is then one short until the group empties);
    the rule never refuses a removal this call made: nobody removes a message after it is gone."""
    values: dict[str, Any] = {":dec": -1, ":seq": sequence}
    condition = (
        "attribute_exists(pk) AND attribute_not_exists(moved) AND NOT contains(gone, :seq) "
        "AND (attribute_not_exists(counted_to) OR counted_to < :seq)"
    )
    if unless_a_holder_did:
        for slot in (_removal_slot(sequence, True), _removal_slot(sequence, False)):
            condition += f" AND (attribute_not_exists({slot}) OR {slot} <> :rr)"
        values[":rr"] = int(sequence)
    if in_order:
        return update(key, "SET counted_to = :seq ADD msg_count :dec", values, condition=condition)
    values[":seqs"] = {sequence}
    return update(key, "ADD msg_count :dec, gone :seqs", values, condition=condition)


def counted(group_item: dict[str, Any] | None, sequence: str) -> bool:
    """Whether the removal of `sequence` is in the group's count already (what `count_removed` refused)."""
    if group_item is None:
        return False
    return sequence in group_item.get("gone", set()) or str(group_item.get("counted_to", "")) >= sequence


def dead_lettered(key: Key, token: str, sequence: str, expires_at: int) -> Write:
    """The holder's head went to the DLQ (in the transaction that moves it). The group item lives at least as
    long as the copy (`expires_at`, as a send writes it): the copy's key is the group's and the sequence's, and a
    group started again once its item expired would hand out that sequence again."""
    values = {":dec": -1, ":tok": token, ":rr": int(sequence), ":gexp": expires_at}
    expression = f"SET {_removal_slot(sequence, True)} = :rr, expires_at = :gexp ADD msg_count :dec"
    return update(key, expression, values, condition="tok = :tok")


def empty(key: Key, last_seq: int) -> Write:
    """A purged group leaves the index, unless a send landed since its messages were removed."""
    expression = f"REMOVE gsi1pk, gsi1sk, available_at, gone, {_UNLOCK_CLEARS} SET msg_count = :zero, counted_to = :to"
    values = {":zero": 0, ":ls": last_seq, ":to": keys.group_seq(last_seq)}
    return update(key, expression, values, condition="last_seq = :ls")
