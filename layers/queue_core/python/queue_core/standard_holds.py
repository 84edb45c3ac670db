"""Standard actions by receipt handle: delete, release, give back unseen, change visibility, hold again.

The invariant, written once: a handle acts only while its own message is held by it. Every write is conditional
on the message's claim token (`tok`), so a handle whose message was settled, or received again since, changes
nothing; a release leaves its own id so that the SDK's repeat of it is told from a second release.
"""

from __future__ import annotations

import logging

from . import ready
from .errors import MessageNotFound, ReceiptHandleStale
from .keys import MessageRef
from .receipts import Receipt, new_token
from .standard_space import StandardSpace
from .store import ConditionFailed, Item, TransactionCancelled, Write
from .store import messages as writes

logger = logging.getLogger("queue_core")


class StandardHolds(StandardSpace):
    """The holder's actions on a standard sub-queue's claimed messages."""

    def delete(self, receipt: Receipt, now: int) -> None:
        """Idempotent: a message already gone counts as deleted; one claimed again since raises."""
        (write,) = self.delete_writes(receipt, now)
        try:
            self.ctx.bodies.discard([self.ctx.store.write(write)])
        except ConditionFailed as failed:
            if failed.item is not None:
                raise ReceiptHandleStale("the message was received again since this receipt handle") from None

    def delete_writes(self, receipt: Receipt, now: int, group_may_be_empty: bool = True) -> list[Write]:
        """One write: the delete, fenced by the claim token."""
        key = MessageRef.parse(receipt.message_id).live_key(self.space)
        return [writes.fenced_delete(key, receipt.token)]

    def delete_committed(self, receipt: Receipt, now: int, group_may_be_empty: bool = True) -> None:
        """Nothing is left to do: the delete was the whole of it."""

    def change_visibility(self, receipt: Receipt, visible_at: int, now: int) -> int:
        return self._set_visible_at(receipt, visible_at, now, release=False)

    def release(self, receipt: Receipt, visible_at: int, now: int) -> int:
        return self._set_visible_at(receipt, visible_at, now, release=True)

    def hold_again(self, receipts: list[Receipt], visible_at: int, now: int) -> bool:
        """Every receipt's message held by its claim until `visible_at`, all or none in one transaction: False,
        nothing changed, when any of them is no longer held by its handle."""
        refs = [MessageRef.parse(receipt.message_id) for receipt in receipts]
        holds = [
            writes.set_visibility(ref.live_key(self.space), visible_at, receipt.token, None, ref.priority)
            for ref, receipt in zip(refs, receipts, strict=True)
        ]
        try:
            self.ctx.store.transact_writes(holds)
        except TransactionCancelled:
            return False
        ready.announce(self.ctx, self.space, [(ref.priority, visible_at) for ref in refs])
        return True

    def _set_visible_at(self, receipt: Receipt, visible_at: int, now: int, release: bool) -> int:
        """Then puts the ready marker for `visible_at`, so that a queue-wide receive finds the message when it
        is visible again, not only when an earlier marker's time comes."""
        ref = MessageRef.parse(receipt.message_id)
        try:
            release_id = new_token() if release else None
            write = writes.set_visibility(ref.live_key(self.space), visible_at, receipt.token, release_id, ref.priority)
            self.ctx.store.write(write)
        except ConditionFailed as failed:
            if failed.item is None:
                raise MessageNotFound("the message no longer exists (deleted or expired)") from None
            if release_id is None or failed.item.get("released_by") != release_id:
                raise ReceiptHandleStale("the message was received again since this receipt handle") from None
            # This very release was applied and its answer lost (the SDK's retry found it done): announced below.
        ready.announce(self.ctx, self.space, [(ref.priority, visible_at)])
        return visible_at

    def return_unseen(self, receipt: Receipt, now: int) -> None:
        """Visible now, with the receive count and first receive time it had before this claim; then its ready
        marker, as after a release."""
        ref = MessageRef.parse(receipt.message_id)
        release_id = new_token()
        write = writes.unseen(
            ref.live_key(self.space), receipt.token, receipt.receive_count, release_id, now, ref.priority
        )
        try:
            self.ctx.store.write(write)
        except ConditionFailed as failed:
            _check_own_release(failed.item, release_id)
        ready.announce(self.ctx, self.space, [(ref.priority, now)])


def _check_own_release(old: Item | None, release_id: str) -> None:
    """A give-back's failed condition: its own write repeated by the SDK after a lost answer (done), or not."""
    if old is None:
        raise MessageNotFound("the message no longer exists (deleted or expired)")
    if old.get("released_by") != release_id:
        raise ReceiptHandleStale("the message was received again since this receipt handle")
