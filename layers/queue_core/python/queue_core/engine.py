"""What a sub-queue's engine does: the one interface the standard and the FIFO engines share.

`SubQueue` validates every argument, then hands the work to the engine its queue's settings name; the sweep calls
`Engine.sweep`. Neither looks at which engine it holds. Times are epoch milliseconds; `secret` signs the receipt
handles a receive hands out.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from . import ready, shard_marks
from .context import Context
from .errors import QueueError
from .keys import MessageRef, Space
from .messages import Entry
from .models import Message, QueueStats, ReceivedMessage, SendResult, SweepReport, Swept
from .receipts import Receipt
from .settings import QueueSettings
from .store import Item, Overdue, Write


@dataclass(frozen=True)
class SendWrites:
    """The writes that store one message, together in one transaction; `dedup` and `fence` are the places of the
    dedup item's write and of the FIFO group's sequence fence among them (None when there is none). `ready` is
    the `(priority, visible_at, shard)` of the marks to put once they are applied (`Engine.send_committed`), not
    among them: two sends of one client in one transaction would name the same marker, which DynamoDB refuses."""

    ref: MessageRef
    writes: list[Write]
    dedup: int | None = None
    fence: int | None = None
    ready: tuple[tuple[int, int, int], ...] = ()
    # The message's SQS id (`sqs_ids`).
    sqs_id: str = ""


class Engine(Protocol):
    settings: QueueSettings
    space: Space
    claim_conflicts: int

    def secret(self) -> str | None:
        """The sub-queue's receipt secret; None when nothing was ever sent to it in this generation."""

    def check_order(self, order: str) -> None:
        """Refuses a receive order the engine cannot keep (`ValidationError`)."""

    def send(self, entries: list[Entry], now: int) -> list[SendResult | QueueError]:
        """Each entry succeeds or fails on its own; the results are in the entries' order."""

    def send_writes(self, entry: Entry, now: int, last_seq: int | None = None) -> SendWrites:
        """The writes a send of `entry` makes in one transaction, built by the code a normal send runs, so that a
        transactional send stores what a normal one stores. `last_seq` is a FIFO group's last sequence as a
        cancelled transaction's old group item told it (None: as known or read now)."""

    def send_committed(self, planned: SendWrites, now: int) -> None:
        """After the writes of `send_writes` were applied: puts the message's ready marker, as a normal send does
        after its write, so that queue-wide receives find it."""

    def mark_ahead(self, due: Iterable[tuple[int, int, int]]) -> None:
        """Before writes of `send_writes` that the caller commits itself: their shards' marks."""

    def first_at(self, priority: int, shard: int) -> int | None:
        """When the shard's first entry of `priority` is due (visible, in flight, delayed, locked); None: none."""

    def delete_writes(self, receipt: Receipt, now: int, group_may_be_empty: bool = True) -> list[Write]:
        """The writes of a delete in one transaction, each conditional on the claim token, so that a message
        received again since the handle cancels the transaction. `group_may_be_empty` False: a FIFO group is
        unlocked, never taken out of the index (a send came since the claim)."""

    def delete_committed(self, receipt: Receipt, now: int, group_may_be_empty: bool = True) -> None:
        """Bookkeeping after a transaction of `delete_writes` (built with the same `group_may_be_empty`)
        committed: a FIFO group whose held messages are now all done is unlocked at once instead of when its lock
        runs out, and a group unlocked with messages left is announced to queue-wide receives."""

    def receive(self, want: int, visibility: int, order: str, now: int, secret: str) -> list[ReceivedMessage]:
        """Claims up to `want` visible messages until `now + visibility`."""

    def receive_priority(
        self, priority: int, want: int, visibility: int, order: str, now: int, secret: str
    ) -> tuple[list[ReceivedMessage], bool]:
        """Claims from one priority only; also says whether anything visible was seen (False: nothing was)."""

    def next_visible(self, priority: int, now: int) -> int | None:
        """When the sub-queue next has a message of `priority` to give (its first index entry); None: none."""

    def priorities(self) -> list[int]:
        """The priorities the sub-queue may hold messages of, highest first (0 always among them)."""

    def delete(self, receipt: Receipt, now: int) -> None:
        """Idempotent for its own handle; `ReceiptHandleStale` once the message was received again."""

    def change_visibility(self, receipt: Receipt, visible_at: int, now: int) -> int:
        """The held message becomes visible at `visible_at`, which is returned."""

    def hold_again(self, receipts: list[Receipt], visible_at: int, now: int) -> bool:
        """All of `receipts`' messages held by their claims until `visible_at`, or none (False: one is spent)."""

    def release(self, receipt: Receipt, visible_at: int, now: int, why: dict[str, Any] | None = None) -> int:
        """Gives the held message back, visible at `visible_at`, which is returned."""

    def note(self, receipt: Receipt, why: dict[str, Any]) -> None:
        """Records why the handle's attempt ends where no other write ends it (`reasons`)."""

    def return_unseen(self, receipt: Receipt, now: int) -> None:
        """Gives back a held message nobody saw: visible now, its receive count and first receive time as before
        the claim."""

    def peek(self, limit: int, now: int) -> list[Message]:
        """Visible messages, oldest first, not claimed."""

    def locate(self, ref: MessageRef, now: int) -> Message | None:
        """The message wherever it is (waiting, in flight, in the DLQ) with its state, in one read."""

    def cancel(self, ref: MessageRef, now: int) -> bool:
        """Removes the live message (not the DLQ's); False when there was none."""

    def purge(self) -> int:
        """Removes every waiting and in-flight message; returns how many."""

    def stats(self, now: int) -> QueueStats:
        """Visible, in-flight and delayed counts and the oldest age (the DLQ is counted by the caller)."""

    def redrive(self, dlq_items: list[Item], now: int) -> int:
        """Moves DLQ items back, receive count reset; returns how many moved."""

    def move_to_dlq(self, ref: MessageRef, now: int) -> bool:
        """An operator's move of a waiting message to the DLQ; `MessageNotFound`, `ValidationError` otherwise."""

    def sweep(self, now: int, report: SweepReport) -> Swept:
        """Housekeeping of the live messages; says whether an item lives at an earlier shard layout's place."""


class EngineBase:
    """What both engines hold for one `(queue, client)`: its settings as of this engine, its keys' space, and
    this process's traffic of the sub-queue (shard picker, contention gauge), shared by every engine and thread."""

    def __init__(self, ctx: Context, settings: QueueSettings, client: str) -> None:
        self.ctx = ctx
        self.settings = settings
        self.queue = settings.name
        self.client = client
        self.space = Space(settings.name, client, settings.generation)
        self.claim_conflicts = 0
        self.traffic = ctx.traffic(self.space, settings.read_shards, settings.shards)
        self.picker = self.traffic.picker
        self.gauge = self.traffic.gauge

    def sending(self) -> AbstractContextManager[None]:
        """Within it, writes are sent while these settings are young enough (`QueueSettings.send_deadline`), or
        refused with `Overdue`: a send lands before another process acts on a change it was not built for."""
        return self.ctx.store.sent_by(self.settings.send_deadline())

    def read_afresh(self) -> None:
        """The settings read afresh, for a write held back (`Overdue`) to be built again by, with this process's
        traffic of their layout: a standard send's shard comes from its rotation, and the older layout's could place
        it at a shard the new count no longer has, which the sweep drops once the change settled and nothing was
        found there (a message landing after that is never received). Settings of another generation (the queue
        deleted and created again meanwhile) leave the write unsent (`Overdue`): the engine's keys are the old
        generation's, which no receive visits; sent again, it is built for the new one."""
        settings = self.ctx.registry.get(self.queue, fresh=True)
        if settings.generation != self.space.generation:
            raise Overdue()
        self.settings = settings
        self.traffic = self.ctx.traffic(self.space, settings.read_shards, settings.shards)
        self.picker = self.traffic.picker
        self.gauge = self.traffic.gauge

    def announce(self, due: Iterable[tuple[int, int, int]]) -> None:
        """After a write that made messages visible at some time, `(priority, visible_at, shard)` of each: the
        ready markers for queue-wide receives (`ready`), the shard marks for this sub-queue's (`shard_marks`)."""
        due = list(due)
        ready.announce(self.ctx, self.space, [(priority, at) for priority, at, _ in due])
        shard_marks.announce(self.ctx, self.space, [(priority, shard) for priority, _, shard in due])

    def mark_ahead(self, due: Iterable[tuple[int, int, int]]) -> None:
        """Before writes the caller commits in its own transaction: their shards' marks (`shard_marks.ahead`)."""
        shard_marks.ahead(self.ctx, self.space, [(priority, shard) for priority, _, shard in due])

    def secret(self) -> str | None:
        """The sub-queue's receipt secret (None until something was sent in this generation)."""
        return self.ctx.registry.client_secret(self.space)
