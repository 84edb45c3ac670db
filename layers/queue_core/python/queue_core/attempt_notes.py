"""The writes that end an attempt, with its reason (see `reasons`): both engines' releases and notes use these.

A reason rides on the write the release makes anyway. Only when the item cannot take it (a body near DynamoDB's
item limit) is the same write made again dropping every reason the item holds: the body is kept, the reasons go,
and `why_dropped` says so. A refused write is never applied, so the second one is the only one.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from . import reasons
from .context import Context
from .errors import MessageTooLarge
from .receipts import Receipt
from .store import ConditionFailed, Item, Write
from .store import messages as writes

logger = logging.getLogger("queue_core")


def reasons_write(receipt: Receipt, why: dict[str, Any] | None) -> writes.Why | None:
    """The slot and record of the handle's attempt, or None when there is no reason to write."""
    if why is None:
        return None
    return reasons.slot(receipt.receive_count), why


def dropped(why: writes.Why | None) -> writes.Why | None:
    return None if why is None else (why[0], writes.DROP)


def no_room(old: Item | None, token: str) -> bool:
    """A holder's write that failed only because the item keeps no reasons (`reasons.NO_ROOM`)."""
    return old is not None and old.get("tok") == token and bool(old.get(reasons.NO_ROOM))


def write_once(
    ctx: Context, build: Callable[[writes.Why | None], Write], why: writes.Why | None, token: str
) -> Item | None:
    """`build(why)` written; when the item has no room for the reason (marked at its send, or past the size
    limit with it), `build` dropping every reason instead (`ConditionFailed` and other errors go to the caller, as
    the plain write's would)."""
    try:
        return ctx.store.write(build(why))
    except MessageTooLarge:
        if why is None:
            raise
        logger.warning("a reason does not fit in its message's item: its reasons are dropped, the body kept")
    except ConditionFailed as failed:
        if why is None or not no_room(failed.item, token):
            raise
    return ctx.store.write(build(dropped(why)))


def note_attempt(ctx: Context, key: dict[str, str], receipt: Receipt, why: dict[str, Any]) -> None:
    """Records why the handle's attempt ends where no other write ends it; nothing once the claim is gone."""
    with contextlib.suppress(ConditionFailed):
        write_once(ctx, lambda slot: writes.note(key, receipt.token, slot), reasons_write(receipt, why), receipt.token)
