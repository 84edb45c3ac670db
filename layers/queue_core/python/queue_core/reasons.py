"""Why each delivery attempt ended without an acknowledgement, kept with the message.

An attempt is a receive (the message's `receive_count` numbers them). When one ends without a delete, the write
that ends it records why, in the same call, never in a write of its own: a release (the library's, REST's,
invoke's, a failed push delivery's, a library `Consumer`'s handler that raised) sets one of five slot attributes,
`why0`-`why4`, the slot of the attempt's number modulo 5, with a condition on the claim's token like the rest of
the release. So the slots hold the last five attempts whatever their number, a stale handle writes none, and the
SDK's repeat of the write sets the same value again. An attempt that ended with nobody answering (its claim ran
out, or its visibility was set to 0) writes nothing at all: its slot is empty, or holds an attempt five earlier,
and it reads as "visibility expired" (`history`).

When a message moves (to the DLQ, or back by a redrive) its attempts so far become one list, `why_past` (the last
five, those with no reason written filled in), carried by the move's own put; the live attempts after a redrive
start from slot 1 again and are shown after it. A DLQ copy also says why it moved (`moved_reason`).

Bounded: each reason at most `MAX_REASON_BYTES` of UTF-8, cut visibly; the last `KEPT_ATTEMPTS` attempts. Reasons
are never counted against the body's limit: a message near DynamoDB's item limit whose release cannot take its
reason drops every reason it holds instead (`why_dropped` counts them) and keeps its body.
"""

from __future__ import annotations

import traceback
from typing import Any, Final

from .errors import ValidationError
from .store import Item

KEPT_ATTEMPTS: Final = 5
MAX_REASON_BYTES: Final = 2048
SLOTS: Final = tuple(f"why{number}" for number in range(KEPT_ATTEMPTS))
PAST: Final = "why_past"
DROPPED: Final = "why_dropped"
MOVED: Final = "moved_reason"
# Set at the send on a message whose item leaves no room for reasons: its releases record none (they count it in
# `why_dropped` instead), so that its claims, moves and redrives always fit in DynamoDB's item limit.
NO_ROOM: Final = "why_none"
# The most the reasons of one item may take: five slots and five earlier attempts, each record at most its
# reason and a few short fields.
ROOM_BYTES: Final = 2 * KEPT_ATTEMPTS * (MAX_REASON_BYTES + 64)

RELEASED: Final = "released"
FAILED: Final = "failed"
TIMED_OUT: Final = "timed_out"
EXPIRED: Final = "visibility_expired"
EXPIRED_REASON: Final = "visibility expired"
_CUT_MARK: Final = "… [cut: {} more bytes]"


def slot(attempt: int) -> str:
    """The attribute that holds attempt `attempt`'s reason."""
    return SLOTS[attempt % KEPT_ATTEMPTS]


def bounded(text: str, limit: int = MAX_REASON_BYTES) -> str:
    """`text` as it is when it fits in `limit` bytes of UTF-8, else its head and a mark saying how much was cut."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    mark_room = len(_CUT_MARK.format(len(raw)).encode("utf-8"))
    head = raw[: limit - mark_room].decode("utf-8", errors="ignore")
    return head + _CUT_MARK.format(len(raw) - len(head.encode("utf-8")))


def given(reason: Any) -> str | None:
    """A caller's `reason` (release): None or text; bounded as stored."""
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise ValidationError("reason must be a string")
    return bounded(reason)


def of_exception(error: BaseException) -> str:
    """A handler's exception as a reason: `Type: message` on the first line (what `dq dlq reasons` groups by),
    then the end of its traceback, which names the failing frame, within the bound."""
    headline = bounded(f"{type(error).__name__}: {error}".splitlines()[0] if str(error) else type(error).__name__, 512)
    trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    room = MAX_REASON_BYTES - len(headline.encode("utf-8")) - 1
    raw = trace.encode("utf-8")
    if len(raw) > room:
        mark = "[… traceback cut] "
        trace = mark + raw[len(raw) - room + len(mark.encode("utf-8")) :].decode("utf-8", errors="ignore")
    return f"{headline}\n{trace}".rstrip()


def entry(attempt: int, outcome: str, reason: str | None, now: int) -> dict[str, Any]:
    """One attempt's record as it is stored: its number, when it ended, how, and why (bounded)."""
    return {"n": attempt, "at": now, "outcome": outcome, "reason": bounded(reason or outcome)}


def released(attempt: int, reason: str | None, now: int) -> dict[str, Any]:
    return entry(attempt, RELEASED, reason or RELEASED, now)


def _shown(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored record as answers show it: `reason` is its first line, `detail` the rest (a traceback)."""
    text = str(stored.get("reason", ""))
    headline, _, detail = text.partition("\n")
    shown: dict[str, Any] = {
        "attempt": int(stored.get("n", 0)),
        "at": None if stored.get("at") is None else int(stored["at"]),
        "outcome": str(stored.get("outcome", "")),
        "reason": headline,
    }
    if detail:
        shown["detail"] = detail
    return shown


def _expired(attempt: int) -> dict[str, Any]:
    return {"n": attempt, "at": None, "outcome": EXPIRED, "reason": EXPIRED_REASON}


def _this_life(item: Item, in_flight: bool) -> list[dict[str, Any]]:
    """The stored records of the attempts since the message was last put (sent or redriven), the last five; an
    attempt with none ended with nobody answering, except the current one of a message in flight."""
    count = int(item.get("receive_count", 0))
    records = []
    for attempt in range(max(1, count - KEPT_ATTEMPTS + 1), count + 1):
        stored = item.get(slot(attempt))
        if isinstance(stored, dict) and int(stored.get("n", -1)) == attempt:
            records.append(stored)
        elif not (in_flight and attempt == count):
            records.append(_expired(attempt))
    return records


def history(item: Item, in_flight: bool = False, dead: bool = False) -> list[dict[str, Any]]:
    """Every attempt the message keeps, oldest first, as answers show them (`attempt`, `at`, `outcome`, `reason`,
    and `detail` when the reason had more lines). A DLQ copy (`dead`) holds its attempts in one list already."""
    past = [record for record in item.get(PAST, []) if isinstance(record, dict)]
    live = [] if dead else _this_life(item, in_flight)
    return [_shown(record) for record in (past + live)[-KEPT_ATTEMPTS:]]


def kept(item: Item) -> dict[str, Any]:
    """What a message put back from the DLQ (a redrive) takes of its copy's attempts: the list as it is."""
    return {name: item[name] for name in (PAST, DROPPED, NO_ROOM) if item.get(name)}


def acknowledged(item: Item) -> dict[str, Any]:
    """What an archived copy keeps of a message acknowledged now: its attempts that ended without an
    acknowledgement (not the acknowledged one), as one list."""
    past = [record for record in item.get(PAST, []) if isinstance(record, dict)]
    kept: dict[str, Any] = {}
    combined = (past + _this_life(item, in_flight=True))[-KEPT_ATTEMPTS:]
    if combined:
        kept[PAST] = combined
    if item.get(DROPPED):
        kept[DROPPED] = int(item[DROPPED])
    return kept


def room_mark(item_bytes: int, limit: int) -> dict[str, Any]:
    """The mark of a new message item of `item_bytes` that leaves no room for reasons under `limit`."""
    return {NO_ROOM: 1} if item_bytes + ROOM_BYTES > limit else {}


def carried(item: Item, ended: dict[str, Any] | None = None) -> dict[str, Any]:
    """The attributes a move's new item takes from `item` (DLQ copy, redriven message): its attempts so far as one
    list, every attempt of its life ended (`ended` records the last one's end when the mover knows it), and the
    count of reasons dropped for the item's size."""
    records = _this_life(item, in_flight=False)
    if ended is not None:
        records = [record for record in records if int(record.get("n", -1)) != int(ended["n"])] + [ended]
    past = [record for record in item.get(PAST, []) if isinstance(record, dict)]
    kept: dict[str, Any] = {}
    combined = (past + records)[-KEPT_ATTEMPTS:]
    if combined:
        kept[PAST] = combined
    if item.get(DROPPED):
        kept[DROPPED] = int(item[DROPPED])
    if item.get(NO_ROOM):
        kept[NO_ROOM] = 1
    return kept


def moved_reason(attempts: dict[str, Any], max_receive_count: int, why: str | None = None) -> str:
    """Why a message went to the DLQ: its receive limit (with its last attempt's reason, from the attempts the
    copy carries, `carried`), or `why`."""
    if why is not None:
        return bounded(why)
    last = history(attempts, dead=True)
    tail = f" (last: {last[-1]['reason']})" if last else ""
    return bounded(f"max receives {max_receive_count} reached{tail}")


def last_reason(item: Item, in_flight: bool = False) -> str | None:
    shown = history(item, in_flight)
    return shown[-1]["reason"] if shown else None


def grouped(items: list[Item]) -> list[dict[str, Any]]:
    """The distinct last reasons of dead letters (DLQ items), each with how many carry it and when it was first
    and last seen (the attempt's end, or the move when it has none), the most frequent first."""
    groups: dict[str, dict[str, Any]] = {}
    for item in items:
        shown = history(item, dead=True)
        reason = _label(item, shown)
        seen = (shown[-1]["at"] if shown else None) or int(item.get("moved_at", 0)) or None
        group = groups.setdefault(reason, {"reason": reason, "count": 0, "first_seen": seen, "last_seen": seen})
        group["count"] += 1
        if seen is not None:
            group["first_seen"] = seen if group["first_seen"] is None else min(group["first_seen"], seen)
            group["last_seen"] = seen if group["last_seen"] is None else max(group["last_seen"], seen)
    return sorted(groups.values(), key=lambda group: (-group["count"], group["reason"]))


def matches(item: Item, text: str) -> bool:
    """A dead letter whose last reason contains `text` (a redrive or replay by reason), by the label `grouped`
    shows it under: every group the grouping lists can be chosen by its own text."""
    return text in _label(item, history(item, dead=True))


def _label(item: Item, shown: list[dict[str, Any]]) -> str:
    """A dead letter's last reason; one without attempts (moved by an operator, or whose claims all ran out
    before attempts were recorded) by why it moved."""
    return shown[-1]["reason"] if shown else str(item.get(MOVED) or EXPIRED_REASON)
