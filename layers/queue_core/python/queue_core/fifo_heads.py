"""FIFO heads that cannot be delivered: expired, past the receive limit, or with their body gone.

Such a head leaves for the DLQ in one transaction with the group's count, and the group moves on; one that can be
neither delivered nor moved is never dropped nor overtaken: it holds its group (and only it) and is reported.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import Final

from . import keys, limits
from .errors import MessageBodyMissing, MessageNotFound, QueueError, Throttled, ValidationError
from .fifo_groups import FifoGroups, unlocked_by
from .keys import MessageRef
from .messages import MOVE_TRIES, dead_letter, is_expired, leaving_for_dlq, read_again
from .receipts import new_token
from .store import ConditionFailed, Item, Overdue, TransactionCancelled
from .store import groups as group_writes
from .store import messages as writes

logger = logging.getLogger("queue_core")
# How long a group waits behind a head that can be neither delivered nor moved to the DLQ before a claim tries again.
STUCK_RETRY_SECONDS: Final = limits.STUCK_RETRY_SECONDS


class FifoHeads(FifoGroups):
    """What a claim does with a head it cannot deliver, and the messages it marked but does not deliver."""

    def _take_heads(
        self, group_key: dict[str, str], token: str, heads: list[Item], budget: int, now: int
    ) -> tuple[list[Item], Item | None, Item | None]:
        """The messages to deliver, the first one left behind (None when none is), and that one again when it is
        stuck: past its receive limit and not movable to the DLQ (nothing after it may go before it)."""
        taken: list[Item] = []
        limit = self.settings.max_receive_count
        for item in heads:
            if is_expired(item, now):
                # Behind a message this claim took (a retention lowered since it was sent: it expires later), the
                # count keeps the sequence: the taken one may yet leave by a count of its own.
                self._remove_expired(item, group_key, now, in_order=not taken)
            elif limit and int(item["receive_count"]) >= limit:
                try:
                    moved = self._dead_letter(item, group_key, token, now)
                except Throttled:
                    return taken, item, None  # a throttle passes: the next claim moves it, nothing is stuck
                if not moved:
                    return taken, item, item
            elif int(item["visible_at"]) > now or len(taken) >= budget:
                return taken, item, None
            else:
                taken.append(item)
        return taken, None, None

    def _with_bodies(
        self, marked: list[Item], group_key: dict[str, str], token: str, now: int
    ) -> tuple[list[Item], Item | None]:
        """The marked messages with their bodies as sent (offloaded ones fetched in parallel), up to the first
        that is stuck. One whose body is gone cannot be processed by anyone: it goes to the DLQ, as a message past
        its receive limit does, and the group moves on; if it cannot go there either, the group stops at it."""

        def resolve(item: Item) -> Item | Stuck | None:
            try:
                return self.ctx.bodies.resolved(item)
            except MessageBodyMissing:
                logger.warning(
                    "message %s of group %s: its offloaded body is gone; moved to the DLQ", item["sk"], group_key["sk"]
                )
                return None if self._dead_letter(item, group_key, token, now) else Stuck(item)

        def resolve_or_stop(item: Item) -> Item | Stuck | Throttled | None:
            try:
                return resolve(item)
            except Throttled as error:  # the body store throttled: deliver those before it, give back the rest
                return error

        resolved: list[Item] = []
        for outcome in self.ctx.inner_pool.map(resolve_or_stop, marked):
            if isinstance(outcome, Throttled):
                return resolved, None
            if isinstance(outcome, Stuck):
                return resolved, outcome.item
            if outcome is not None:
                resolved.append(outcome)
        return resolved, None

    def _give_back_unseen(self, marked: list[Item], delivered: list[Item], now: int) -> None:
        """Messages this claim marked but does not deliver (after a head it stopped at) get back the receive
        count they had: nobody saw them. Best effort: a later claim takes them either way, in order."""
        kept = {item["sk"] for item in delivered}
        for item in marked:
            if item["sk"] in kept:
                continue
            write = writes.unseen(
                {"pk": item["pk"], "sk": item["sk"]}, item["tok"], int(item["receive_count"]), new_token()
            )
            with contextlib.suppress(ConditionFailed, QueueError):
                self.ctx.store.write(write)

    def _dead_letter(self, item: Item, group_key: dict[str, str], token: str, now: int) -> bool:
        """`_to_dlq`, False also when DynamoDB refuses the DLQ copy (too large for the backend's item limit): the
        message then stays where it is, stuck. A throttle or a lost answer (`Throttled`) is raised, not taken for
        a refusal: it passes, and the group's next claim moves the message (the move is one transaction, applied
        or not; the next claim reads which). Held as stuck, the group would wait `STUCK_RETRY_SECONDS` and its
        operator be told to cancel a message nothing was wrong with."""
        try:
            return self._to_dlq(item, group_key, token, now)
        except Throttled:
            logger.warning("message %s of group %s: its move to the DLQ was throttled", item["sk"], group_key["sk"])
            raise
        except QueueError:
            logger.warning("message %s of group %s could not be moved to the DLQ", item["sk"], group_key["sk"])
            return False

    def _hold_stuck(self, key: dict[str, str], token: str, item: Item, now: int) -> None:
        """A head that can be neither delivered nor moved to the DLQ is never dropped nor overtaken: it stays,
        holds its group (and only it) until `STUCK_RETRY_SECONDS` later, when a claim tries again, and is
        reported (this log line, `stuck` in stats, the sweeper's metric) until an operator cancels it."""
        logger.error(
            "message %s of group %s of %s/%s can be neither delivered nor moved to the DLQ: it stays and holds its "
            "group; cancel it to let the group go on",
            MessageRef(shard=0, sequence=item["sk"], group=key["sk"]).message_id,
            key["sk"],
            self.queue,
            self.client,
        )
        retry_at = now + STUCK_RETRY_SECONDS * 1000
        try:
            self.ctx.store.write(group_writes.hold_stuck(key, token, item["sk"], retry_at))
        except ConditionFailed as failed:
            if not unlocked_by(failed.item, token):
                return  # the lock passed to another claim
        self.announce([(0, retry_at, keys.shard_of(key["pk"]))])

    def _to_dlq(self, item: Item, group_key: dict[str, str], token: str, now: int) -> bool:
        """Atomically out of the group and into the DLQ; the group then moves on to its next message. The copy is
        made from `item` as read; when the holder of its last attempt, whose claim ran out, released it or noted
        why meanwhile (its reason in the message now, and answered with success), the move is made again from the
        message as it is (`read_again`), so the copy carries that reason."""
        ref = MessageRef(shard=0, sequence=item["sk"], group=group_key["sk"])
        key = {"pk": item["pk"], "sk": item["sk"]}
        receive_count = int(item["receive_count"])
        current: Item | None = item
        settings = self.settings
        for _ in range(MOVE_TRIES):
            if current is None or int(current["receive_count"]) != receive_count:
                return False
            dlq = dead_letter(
                current, ref.dlq_key(self.space), now, settings.message_retention(now), settings.max_receive_count
            )
            try:
                # The group item's time comes from these settings' retention: sent late, after another process
                # raised it and sent a message for longer (`retention_from`), it would expire under that message.
                # A receive holds its settings for its whole wait, so the move goes by their deadline too.
                with self.sending():
                    self.ctx.store.transact_writes(
                        [
                            leaving_for_dlq(key, current),
                            writes.store_new(dlq),
                            group_writes.dead_lettered(group_key, token, item["sk"], self._group_expires_at(now)),
                        ]
                    )
            except Overdue:
                settings = self.settings = self.ctx.registry.get(self.queue, fresh=True)
                continue
            except TransactionCancelled as cancelled:
                current = read_again(cancelled)
                continue
            return True
        return False

    def move_to_dlq(self, ref: MessageRef, now: int) -> bool:
        item = self.ctx.store.get(ref.live_key(self.space))
        if item is None or is_expired(item, now):
            raise MessageNotFound(f"message {ref.message_id!r} not found")
        raise ValidationError("a FIFO message is moved to the DLQ by its receive limit only")


@dataclass(frozen=True)
class Stuck:
    """A head that can be neither marked nor moved to the DLQ."""

    item: Item
