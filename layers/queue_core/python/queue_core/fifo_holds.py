"""FIFO actions by receipt handle: delete, release, give back unseen, change visibility, hold again.

The invariant, written once per action: a handle acts only while its own message is held by it. Every write
names the message and the claim's token (`tok`) together: a delete is fenced on the message, a give-back too, and a
change of visibility checks the message in the same transaction that moves the group's lock. So a handle of a
message already settled, or taken by a later claim, changes nothing even while its claim still holds the group,
and the group stays locked while any message of the claim is out (`acked` is a set: a repeat counts once).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from . import archive, keys
from .archive_acks import archive_writes, archived_delete, read_and_archive
from .attempt_notes import dropped, no_room, note_attempt, reasons_write, write_once
from .errors import MessageNotFound, MessageTooLarge, QueueError, ReceiptHandleStale, Throttled
from .fifo_groups import FifoGroups, holds_group, unlocked_by
from .keys import MessageRef
from .receipts import Receipt, new_token
from .store import ConditionFailed, Item, TransactionCancelled, Write
from .store import groups as group_writes
from .store import messages as writes

logger = logging.getLogger("queue_core")
_PASSED: Final = ("None", "")
# Reads and tries of a settle whose group keeps changing under it (the claim's other messages settled meanwhile).
_SETTLE_TRIES: Final = 5


class FifoHolds(FifoGroups):
    """The holder's actions on a FIFO sub-queue's claimed messages."""

    def delete(self, receipt: Receipt, now: int) -> None:
        """Idempotent: a message already gone counts as deleted (perhaps by this very call, its answer lost), and
        the group's bookkeeping is done again, which is safe to repeat; one claimed again since raises."""
        ref = MessageRef.parse(receipt.message_id)
        gone_before = maybe_own = False
        key = ref.live_key(self.space)
        try:
            archived = read_and_archive(self.ctx, self.space, self.settings, key, receipt, now)
            if archived is not None:
                write, old = archived
                if not archived_delete(self.ctx, [writes.fenced_delete(key, receipt.token), write]):
                    raise ConditionFailed(None)
            elif archive.is_on(self.settings):
                raise ConditionFailed(None)
            else:
                old = self.ctx.store.write(writes.fenced_delete(key, receipt.token))
                self.ctx.bodies.discard([old])
        except ConditionFailed as failed:
            if failed.item is not None:
                raise ReceiptHandleStale("the message was received again since this receipt handle") from None
            gone_before, maybe_own = True, failed.repeated
        else:
            if old is not None and old.get("parked") == receipt.token:
                # Given back by its holder while the claim's others were out: acked then, counted now, once.
                self._count_removed(self._group_key(ref.group or "", receipt.group_shard), ref.sequence)
                return
        self._ack(receipt, ref, now, removed=1, late_count=not gone_before, maybe_own=maybe_own)

    def delete_writes(self, receipt: Receipt, now: int, group_may_be_empty: bool = True) -> list[Write]:
        """The fenced delete and the group's part, conditional on the claim's lock: the last held message
        unlocks the group (out of the index when the claim saw nothing after it and no send came since, as
        `finish_group` does), one of several held is added to the done set, and the one that completes it
        unlocks the group as well (`last_ack`; else see `delete_committed`)."""
        ref = MessageRef.parse(receipt.message_id)
        key = self._group_key(ref.group or "", receipt.group_shard)
        again = receipt.receive_count > 1  # received before this claim: an earlier handle of it may be out
        if receipt.held > 1:
            group = self._last_ack(key, receipt, ref.sequence, now) or group_writes.ack(
                key, receipt.token, ref.sequence, 1, None, not_last_of=receipt.held, redelivered=again
            )
        elif receipt.last_seq and group_may_be_empty:
            group = group_writes.unlock_empty(key, receipt.token, int(receipt.last_seq))
        else:
            group = group_writes.unlock(key, receipt.token, now, 1, removed_seq=ref.sequence, redelivered=again)
        live = ref.live_key(self.space)
        kept = archive_writes(self.ctx, self.space, self.settings, live, receipt, now)
        return [writes.fenced_delete(live, receipt.token), group, *kept]

    def _last_ack(self, key: dict[str, str], receipt: Receipt, sequence: str, now: int) -> Write | None:
        """The ack and the unlock in one write when this delete completes the claim's done set, as the group reads
        now (one read; the transaction is built again if another ack or give-back changes it before the commit). A
        message its holder parked is acked already: its delete counts it instead (`count_parked`)."""
        group = self.ctx.store.get(key)
        if not holds_group(group, receipt.token):
            return None
        assert group is not None
        if sequence in group.get("parked", set()):
            return group_writes.count_parked(key, receipt.token, sequence)
        acked = set(group.get("acked", set()))
        if sequence in acked or len(acked) < receipt.held - 1:
            return None
        at = max(now, int(group.get("retry_at", 0)))
        return group_writes.ack_last(
            key, receipt.token, sequence, receipt.held - 1, at, redelivered=receipt.receive_count > 1
        )

    def delete_committed(self, receipt: Receipt, now: int, group_may_be_empty: bool = True) -> None:
        """With several messages held, the ack that completes the done set unlocked the group in its transaction
        when the group read before said it would (`last_ack`); else the one whose ack completed it unlocks it here
        (one read; an ack cannot read the set inside a transaction), or the group waits for its lock to run out.
        The last held message's ack unlocked the group in the transaction: when messages are left in it, its
        marker says so to queue-wide receives, as `finish_group` does after a plain delete."""
        if receipt.held <= 1:
            if not (receipt.last_seq and group_may_be_empty):  # else `delete_writes` took the group out, empty
                self.announce([(0, now, receipt.group_shard)])
            return
        ref = MessageRef.parse(receipt.message_id)
        key = self._group_key(ref.group or "", receipt.group_shard)
        group = self.ctx.store.get(key)
        if unlocked_by(group, receipt.token):  # by this ack's transaction (`last_ack`), or by another of the claim
            assert group is not None
            self.announce([(0, max(now, int(group.get("available_at", now))), receipt.group_shard)])
        elif group and group.get("tok") == receipt.token and len(group.get("acked", set())) >= receipt.held:
            self.finish_group(key, receipt.token, max(now, int(group.get("retry_at", 0))))

    def release(self, receipt: Receipt, available_at: int, now: int, why: dict[str, Any] | None = None) -> int:
        """`why`: the attempt's reason, in the give-back's own write (see `reasons`)."""
        ref = MessageRef.parse(receipt.message_id)
        release_id = new_token()
        key = ref.live_key(self.space)
        slot = reasons_write(receipt, why)
        if receipt.held > 1:
            try:
                parked = self._settle_one_of_several(
                    receipt, ref, writes.give_back(key, receipt.token, release_id, slot), available_at
                )
            except MessageTooLarge:
                if slot is None:
                    raise
                give_back = writes.give_back(key, receipt.token, release_id, dropped(slot))
                parked = self._settle_one_of_several(receipt, ref, give_back, available_at)
            if parked and slot is not None:
                self._note_parked(key, receipt.token, slot)
            return available_at
        try:
            self._release_alone(receipt, ref, writes.give_back(key, receipt.token, release_id, slot), available_at)
        except MessageTooLarge:
            if slot is None:
                raise
            give_back = writes.give_back(key, receipt.token, release_id, dropped(slot))
            self._release_alone(receipt, ref, give_back, available_at)
        return available_at

    def note(self, receipt: Receipt, why: dict[str, Any]) -> None:
        """Records why the handle's attempt ends, where nothing else is written (see `reasons`)."""
        note_attempt(self.ctx, MessageRef.parse(receipt.message_id).live_key(self.space), receipt, why)

    def return_unseen(self, receipt: Receipt, now: int) -> None:
        """The message gets back the receive count and first receive time it had before this claim; the group is
        given back as by a release with no delay (the last held message given back unlocks it). An error means
        the message is not given back: once it is, a failure of the group's part after it is logged, not raised
        (the group's lock running out makes up for it), so a caller that answers what it could not give back
        never answers a handle that no longer holds its message."""
        ref = MessageRef.parse(receipt.message_id)
        release_id = new_token()
        write = writes.unseen(ref.live_key(self.space), receipt.token, receipt.receive_count, release_id)
        if receipt.held > 1:
            self._settle_one_of_several(receipt, ref, write, now, unlock_raises=False)
            return
        self._give_back(lambda _: write, None, release_id, receipt.token)
        try:
            self._ack(receipt, ref, now, removed=0)
        except QueueError as error:
            logger.warning("group of %s stays locked until its lock ends: %s", receipt.message_id, error.message)

    def _note_parked(self, key: dict[str, str], token: str, why: writes.Why) -> None:
        """A release of a message its holder parked gives nothing back again (the park did; its handle still
        deletes it until another receive takes it): it records the attempt's reason alone, as a note does, so a
        release answered with success always keeps its reason."""
        try:
            write_once(self.ctx, lambda slot: writes.note(key, token, slot or why), why, token)
        except ConditionFailed as failed:
            if failed.item is None:
                raise MessageNotFound("the message no longer exists (deleted or expired)") from None
            raise ReceiptHandleStale("the message was received again since this receipt handle") from None

    def _settle_one_of_several(
        self, receipt: Receipt, ref: MessageRef, message: Write, available_at: int, unlock_raises: bool = True
    ) -> bool:
        """One of several messages held by one claim is done without leaving the group (given back, returned
        unseen, parked): the message's write and the group's ack in one transaction, so a throttle or a crash
        between them never leaves the group waiting for an ack that was not written; the last one done unlocks the
        group in that same transaction (`ack_last`, chosen by a read of the group first; an ack that would
        complete the set unawares is refused, and the group read again). The group waits for the latest time any
        of them was given back for (`retry_at`). A repeat finds the ack done: the unlock is then made up for if
        it is missing; a handle whose claim no longer holds the group is spent. True when the message was parked
        by its holder before (acked then, still held): nothing was written."""
        key = self._group_key(ref.group or "", receipt.group_shard)
        for _ in range(_SETTLE_TRIES):
            group = self.ctx.store.get(key) or {}
            acked = set(group.get("acked", set()))
            if holds_group(group, receipt.token) and ref.sequence not in acked and len(acked) >= receipt.held - 1:
                at = max(available_at, int(group.get("retry_at", 0)))
                ack = group_writes.ack_last(key, receipt.token, ref.sequence, receipt.held - 1, at, removed=0)
                unlocks_at: int | None = at
            else:
                later = int(group.get("retry_at", 0)) > available_at
                retry_at = None if later else available_at
                ack = group_writes.ack(
                    key,
                    receipt.token,
                    ref.sequence,
                    0,
                    retry_at,
                    not_last_of=receipt.held,
                    parked=message.update == writes.PARK,
                )
                unlocks_at = None
            try:
                self.ctx.store.transact_writes([message, ack])
            except TransactionCancelled as cancelled:
                if self._repeated(cancelled, receipt, ref, message):
                    return self._made_up(key, receipt, available_at, unlock_raises, message.update != writes.PARK)
                continue  # the group changed since it was read (another of the claim's acks, a later give-back)
            if unlocks_at is not None:
                self.announce([(0, unlocks_at, keys.shard_of(key["pk"]))])
            return False
        raise Throttled("the claim's other messages kept changing: try again")

    def _release_alone(self, receipt: Receipt, ref: MessageRef, give_back: Write, available_at: int) -> None:
        """The only message a claim holds is given back: the message's write and the group's unlock in one
        transaction. Written one after the other, a handle whose claim no longer holds the group (its lock ran out
        and the sweep or a later claim took the group, while nobody received the message again) gave its message
        back and answered success, though the unlock found nothing to do: the group, freed, hands the message
        out at once instead of after the delay the caller was told. A repeat (the SDK's, after a lost answer:
        the transaction is sent again with its token) finds the message given back by this very call
        (`released_by`): the transaction committed, both writes."""
        key = self._group_key(ref.group or "", receipt.group_shard)
        unlock = group_writes.unlock(key, receipt.token, available_at, 0)
        try:
            self.ctx.store.transact_writes([give_back, unlock])
        except TransactionCancelled as cancelled:
            (message_code, old_message), _ = cancelled.reasons
            if message_code != "None" and no_room(old_message, receipt.token):
                raise MessageTooLarge("the message and its reason are too large to store") from None
            if message_code not in _PASSED and old_message is None:
                raise MessageNotFound("the message no longer exists (deleted or expired)") from None
            if old_message is None or old_message.get("released_by") != give_back.values[":rel"]:
                raise ReceiptHandleStale(
                    "the receipt handle's claim ended: its visibility ran out, or the message was received again"
                ) from None
        self.announce([(0, available_at, keys.shard_of(key["pk"]))])

    def _repeated(self, cancelled: TransactionCancelled, receipt: Receipt, ref: MessageRef, message: Write) -> bool:
        """Why a settle's transaction was refused: its message's own state, or a claim that no longer holds the
        group (raised); the ack done before (True: a repeat, or a message parked before, or a park repeated once
        the claim had ended); or else the group changed since it was read (False: read it again)."""
        (message_code, old_message), (_, group) = cancelled.reasons
        if message_code != "None" and no_room(old_message, receipt.token):
            raise MessageTooLarge("the message and its reason are too large to store") from None
        if message_code not in _PASSED:
            if old_message is None:
                raise MessageNotFound("the message no longer exists (deleted or expired)") from None
            raise ReceiptHandleStale("the message was received again since this receipt handle") from None
        if not holds_group(group, receipt.token):
            if unlocked_by(group, receipt.token) and message.update == writes.PARK:
                return True  # parked before, and every message of the claim settled since: nothing left
            raise ReceiptHandleStale("the group was received again since this receipt handle") from None
        assert group is not None
        # Acked while the message is still held: a repeat of this very settle, or parked before (a give-back ends
        # the claim's hold of the message).
        return ref.sequence in group.get("acked", set())

    def _made_up(self, key: dict[str, str], receipt: Receipt, available_at: int, raises: bool, parked: bool) -> bool:
        """After a repeat: the unlock the first settle's transaction may have left to a read that failed."""
        try:
            group = self.ctx.store.get(key) or {}
            if holds_group(group, receipt.token) and len(group.get("acked", set())) >= receipt.held:
                self.finish_group(key, receipt.token, max(available_at, int(group.get("retry_at", 0))))
        except QueueError as error:
            if raises:
                raise
            logger.warning("group of %s stays locked until its lock ends: %s", receipt.message_id, error.message)
        return parked

    def _give_back(
        self, build: Callable[[writes.Why | None], Write], why: writes.Why | None, release_id: str, token: str
    ) -> None:
        """The holder's give-back of a message (`build` with the attempt's reason `why`). A failed condition that
        finds this very call's `release_id` was this write, applied and its answer lost (the SDK's retry found it
        done): the group's part that follows is safe to repeat."""
        try:
            write_once(self.ctx, build, why, token)
        except ConditionFailed as failed:
            if failed.item is None:
                raise MessageNotFound("the message no longer exists (deleted or expired)") from None
            if failed.item.get("released_by") != release_id:
                raise ReceiptHandleStale("the message was received again since this receipt handle") from None

    def _ack(
        self,
        receipt: Receipt,
        ref: MessageRef,
        available_at: int,
        removed: int,
        late_count: bool = True,
        maybe_own: bool = False,
    ) -> None:
        """One held message is done; the last one done unlocks the group. Done messages are a set (`acked`), so
        an ack applied twice counts once and never unlocks the group while another held message is out. A
        message deleted after the group's lock passed to another claim (the holder's lock ran out, the message
        was not taken again) still leaves the group's count, by `gone`. A delete that found its message gone
        already (`late_count` False) did not remove it: the call that did counts it, or this one does, through
        `gone` (`counted_once`), never both; after the lock passed on, it counts nothing, unless the SDK sent the
        delete more than once (`maybe_own`): its first attempt, whose answer was lost, is then most likely what
        removed the message, and nobody else counted it. It counts through `gone`, so once with any removal
        counted there (another late delete, an expiry), and not when a holder's record names this message (a later
        claim received it and counted it, or this handle's own delete did: see `group_writes.count_removed`)."""
        key = self._group_key(ref.group or "", receipt.group_shard)
        counted_once = ref.sequence if removed and not late_count else None
        if receipt.held <= 1:
            finished = self.finish_group(
                key,
                receipt.token,
                available_at,
                receipt.last_seq if removed else "",
                removed,
                counted_once,
                ref.sequence if removed else None,
                receipt.receive_count > 1,
            )
            if not finished and removed and (late_count or maybe_own):
                self._count_removed(key, ref.sequence, unless_a_holder_did=not late_count)
            return
        # `retry_at` keeps the latest time any held message was given back for, so the group waits for it: the
        # ack sets it unless a later one is there, then acks without it.
        group: Item | None = None
        attempts = [(available_at, removed), (None, removed)]
        while attempts:
            retry_at, counting = attempts.pop(0)
            once = counting > 0 and counted_once is not None
            try:
                write = group_writes.ack(
                    key,
                    receipt.token,
                    ref.sequence,
                    counting,
                    retry_at,
                    counted_once=once,
                    redelivered=receipt.receive_count > 1,
                )
                group = self.ctx.store.write(write)
                break
            except ConditionFailed as failed:
                old = failed.item
                if not holds_group(old, receipt.token):
                    if removed and (late_count or maybe_own):
                        self._count_removed(key, ref.sequence, unless_a_holder_did=not late_count)
                    return
                assert old is not None
                if ref.sequence in old.get("acked", set()):
                    # Applied before, its answer lost (counted then); or acked by its holder's park (`parked`),
                    # which counted nothing: a delete that may have removed the message itself counts it then,
                    # through `gone`, so once with the delete that removed it. Not by the removal records: the
                    # claim's later deletes write over them (a slot is the sequence modulo a few).
                    if removed and maybe_own and ref.sequence in old.get("parked", set()):
                        self._count_removed(key, ref.sequence)
                    group = old
                    break
                if once and ref.sequence in old.get("gone", set()):
                    attempts = [(retry_at, 0), (None, 0)]  # counted by the call that removed it
        if group and len(group.get("acked", set())) >= receipt.held:
            self.finish_group(key, receipt.token, max(available_at, int(group.get("retry_at", 0))))

    def change_visibility(self, receipt: Receipt, visible_at: int, now: int) -> int:
        """Only while the handle's own message is held by it (SQS: `MessageNotInflight` otherwise): a handle of a
        message deleted, given back or taken by a later claim moves nothing, even while its claim holds the group.
        The group stays locked while any message of the claim is out: one of several given back now is parked (the
        group waits for the others, then offers it first; its handle still deletes it until it is received again;
        a repeat is done already), one of several held longer makes the lock longer, never shorter, until it is the
        last one out. One transaction: the message's check and the group's lock."""
        ref = MessageRef.parse(receipt.message_id)
        if receipt.held > 1 and visible_at <= now:
            self._settle_one_of_several(receipt, ref, writes.park(ref.live_key(self.space), receipt.token), now)
            return visible_at
        key = self._group_key(ref.group or "", receipt.group_shard)
        extend = group_writes.extend(key, receipt.token, visible_at, receipt.held)
        try:
            self.ctx.store.transact_writes([writes.held_by(ref.live_key(self.space), receipt.token), extend])
        except TransactionCancelled as cancelled:
            (message_code, _), (_, group) = cancelled.reasons
            # Refused only because the lock is ours and later already (other messages of the claim are out): done.
            if message_code not in _PASSED or not _later(group, {receipt.token}, visible_at):
                raise ReceiptHandleStale(
                    "the message is no longer held by this receipt handle (settled or received again)"
                ) from None
            return visible_at
        # The group is available at the new time: queue-wide receives must know, whatever marker the client has.
        self.announce([(0, visible_at, keys.shard_of(key["pk"]))])
        return visible_at

    def hold_again(self, receipts: list[Receipt], visible_at: int, now: int) -> bool:
        """A repeated receive's messages held again by their claims until `visible_at`, all or none in one
        transaction (at most 10 messages and their groups): False, nothing changed, when any of them is no longer
        held by its handle or was modified by its holder since (parked, or its group's lock changed: SQS answers
        a repeat only while none of its messages was modified)."""
        checks, groups = [], {}
        for receipt in receipts:
            ref = MessageRef.parse(receipt.message_id)
            checks.append(writes.held_by(ref.live_key(self.space), receipt.token, untouched=True))
            key = self._group_key(ref.group or "", receipt.group_shard)
            groups[(key["pk"], key["sk"])] = group_writes.hold_again(key, receipt.token, visible_at)
        try:
            self.ctx.store.transact_writes([*checks, *groups.values()])
        except TransactionCancelled:
            return False
        # The groups' locks may end sooner than before (a repeat asking a shorter visibility).
        self.announce([(0, visible_at, keys.shard_of(pk)) for pk, _ in groups])
        return True


def _later(group_item: Item | None, tokens: set[str], visible_at: int) -> bool:
    """A group lock held by one of `tokens` until `visible_at` or later."""
    return group_item is not None and group_item.get("tok") in tokens and int(group_item["available_at"]) >= visible_at
