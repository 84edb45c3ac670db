"""An acknowledgement with the archive on (see `archive`): the engines' deletes call these.

The message is read once (strongly consistent) for its copy; the delete, fenced by the claim's token as ever, and
the copy's put go in one transaction. A message gone before the read is deleted already and archives nothing; one
that another claim holds is stale before anything is written.
"""

from __future__ import annotations

from typing import Any

from . import archive, limits
from .context import Context
from .errors import ReceiptHandleStale
from .receipts import Receipt
from .settings import QueueSettings
from .store import Item, TransactionCancelled, Write

_STALE = "the message was received again since this receipt handle"


def archive_writes(
    ctx: Context, space: Any, settings: QueueSettings, key: dict[str, str], receipt: Receipt, now: int
) -> list[Write]:
    """The archive's put for the handle's message, or nothing (archive off, or the message gone)."""
    return [write for write, _ in _read_for_archive(ctx, space, settings, key, receipt, now)]


def read_and_archive(
    ctx: Context, space: Any, settings: QueueSettings, key: dict[str, str], receipt: Receipt, now: int
) -> tuple[Write, Item] | None:
    """The archive's put and the message as read, or None when the message is gone."""
    found = _read_for_archive(ctx, space, settings, key, receipt, now)
    return found[0] if found else None


def _read_for_archive(
    ctx: Context, space: Any, settings: QueueSettings, key: dict[str, str], receipt: Receipt, now: int
) -> list[tuple[Write, Item]]:
    if not archive.is_on(settings):
        return []
    item = ctx.store.get(key)
    if item is None:
        return []
    if item.get("tok") != receipt.token:
        raise ReceiptHandleStale(_STALE)
    # An offloaded body must outlive its archived copy, which names the same object.
    ctx.bodies.outlive([item], now, settings.archive_days * limits.DAY_SECONDS)
    return [(archive.keep_write(space, settings, item, receipt.message_id, now), item)]


def archived_delete(ctx: Context, writes: list[Write]) -> bool:
    """The delete and the archive's put in one transaction: True when it committed, False when the message was
    gone meanwhile (deleted by a repeat of this call or another holder's delete: nothing written)."""
    try:
        ctx.store.transact_writes(writes)
    except TransactionCancelled as cancelled:
        code, old = cancelled.reasons[0]
        if code == "ConditionalCheckFailed" and old is not None:
            raise ReceiptHandleStale(_STALE) from None
        if code not in ("ConditionalCheckFailed", "None", ""):
            raise
        return False
    return True
