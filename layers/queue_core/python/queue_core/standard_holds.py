"""Standard actions by receipt handle: delete, release, give back unseen, change visibility, hold again.

The invariant, written once: a handle acts only while its own message is held by it. Every write is conditional
on the message's claim token (`tok`), so a handle whose message was settled, or received again since, changes
nothing; a release leaves its own id so that the SDK's repeat of it is told from a second release.
"""

from __future__ import annotations

import logging
from typing import Any

from .archive_acks import archive_writes, archived_delete
from .attempt_notes import note_attempt, reasons_write, write_once
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
        """Idempotent: a message already gone counts as deleted; one claimed again since raises. With the
        archive on, the delete and the archive's copy in one transaction (`archive`)."""
        planned = self.delete_writes(receipt, now)
        if len(planned) > 1:
            archived_delete(self.ctx, planned)
            return
        try:
            self.ctx.bodies.discard([self.ctx.store.write(planned[0])])
        except ConditionFailed as failed:
            if failed.item is not None:
                raise ReceiptHandleStale("the message was received again since this receipt handle") from None

    def delete_writes(self, receipt: Receipt, now: int, group_may_be_empty: bool = True) -> list[Write]:
        """The delete, fenced by the claim token; with the archive on, the archive's copy beside it (the
        message read once for it: nothing when it is gone, stale when another claim holds it)."""
        key = MessageRef.parse(receipt.message_id).live_key(self.space)
        delete = writes.fenced_delete(key, receipt.token)
        return [delete, *archive_writes(self.ctx, self.space, self.settings, key, receipt, now)]

    def delete_committed(self, receipt: Receipt, now: int, group_may_be_empty: bool = True) -> None:
        """Nothing is left to do: the delete was the whole of it."""

    def change_visibility(self, receipt: Receipt, visible_at: int, now: int) -> int:
        return self._set_visible_at(receipt, visible_at, now, release=False)

    def release(self, receipt: Receipt, visible_at: int, now: int, why: dict[str, Any] | None = None) -> int:
        return self._set_visible_at(receipt, visible_at, now, release=True, why=why)

    def note(self, receipt: Receipt, why: dict[str, Any]) -> None:
        """Records why the handle's attempt ends, where nothing else is written (see `reasons`)."""
        note_attempt(self.ctx, MessageRef.parse(receipt.message_id).live_key(self.space), receipt, why)

    def hold_again(self, receipts: list[Receipt], visible_at: int, now: int) -> bool:
        """Every receipt's message held by its claim until `visible_at`, all or none in one transaction: False,
        nothing changed, when any of them is no longer held by its handle or its holder changed its visibility
        (SQS answers a repeat only while none of its messages was modified)."""
        refs = [MessageRef.parse(receipt.message_id) for receipt in receipts]
        holds = [
            writes.hold_again(ref.live_key(self.space), visible_at, receipt.token, ref.priority)
            for ref, receipt in zip(refs, receipts, strict=True)
        ]
        try:
            self.ctx.store.transact_writes(holds)
        except TransactionCancelled:
            return False
        self.announce([(ref.priority, visible_at, ref.shard) for ref in refs])
        return True

    def _set_visible_at(
        self, receipt: Receipt, visible_at: int, now: int, release: bool, why: dict[str, Any] | None = None
    ) -> int:
        """Then puts the ready marker for `visible_at`, so that a queue-wide receive finds the message when it
        is visible again, not only when an earlier marker's time comes. `why`: the attempt's reason, written
        with it (dropped with every other reason when the item cannot hold it)."""
        ref = MessageRef.parse(receipt.message_id)
        release_id = new_token() if release else None
        key = ref.live_key(self.space)
        try:
            with_reason = reasons_write(receipt, why)
            write_once(
                self.ctx,
                lambda slot: writes.set_visibility(key, visible_at, receipt.token, release_id, ref.priority, slot),
                with_reason,
                receipt.token,
            )
        except ConditionFailed as failed:
            if failed.item is None:
                raise MessageNotFound("the message no longer exists (deleted or expired)") from None
            if release_id is None or failed.item.get("released_by") != release_id:
                raise ReceiptHandleStale("the message was received again since this receipt handle") from None
            # This very release was applied and its answer lost (the SDK's retry found it done): announced below.
        self.announce([(ref.priority, visible_at, ref.shard)])
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
        self.announce([(ref.priority, now, ref.shard)])


def _check_own_release(old: Item | None, release_id: str) -> None:
    """A give-back's failed condition: its own write repeated by the SDK after a lost answer (done), or not."""
    if old is None:
        raise MessageNotFound("the message no longer exists (deleted or expired)")
    if old.get("released_by") != release_id:
        raise ReceiptHandleStale("the message was received again since this receipt handle")
