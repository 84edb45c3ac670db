"""Replays from the DLQ: a sub-queue's dead letters sent into it again as new messages carrying `replayed_from`, by
the same durable job as a replay of the archive (`replays`), chosen by their last reason.

The selection is the dead letters that reached the DLQ in [`since`, `until`] (`until` fixed at the replay's start,
so a message the replay brings back and that dies again is never selected by it), whose last reason contains
`reason` and whose attributes include the given ones, in the DLQ's own order (shard, then key: a FIFO DLQ is one
partition in each group's order). The job's place is `d{shard}|{key}` of the last dead letter it handled.

Each new message is sent in one transaction with the removal of the very DLQ copy it was read from (conditional on
that copy, as a move task's removal is) and with the job's move: a dead letter is replayed at most once, by this
replay or by any other path (a redrive, a move task, a second replay), and one whose copy left meanwhile cancels
the transaction, after which the job is read again and its selection read afresh from where it stands, without
that copy. A redrive by reason puts the very messages back; a replay sends new ones that say where they came from,
and it runs as a job: at a rate, resumable after a crash, run on by the sweep, cancellable.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from . import keys, reasons
from .context import Context
from .errors import MessageBodyMissing
from .keys import MessageRef, Space
from .messages import DLQ, is_expired, looked_at
from .models import Message
from .settings import QueueSettings
from .store import Item, Write
from .store import messages as writes

SOURCE: Final = "dlq"
_PLACE: Final = "d"


@dataclass(frozen=True)
class DeadLetterPick:
    """One dead letter of the selection: its place, the message (None: nothing to replay, expired or its body
    gone), the copy's identity (for the new message's dedup id) and the removal of that copy."""

    place: str
    message: Message | None
    copy: str
    removal: Write
    item: Item


def page_after(
    ctx: Context, space: Space, settings: QueueSettings, after: str | None, since: int | None, until: int | None,
    reason: str | None, limit: int, now: int,
) -> list[DeadLetterPick]:  # fmt: skip
    """Up to `limit` dead letters after the place `after` (None: from the start) that died in [`since`, `until`]
    and whose last reason contains `reason`; the attribute filter is the job's (`Selection.matches`). Dead letters
    outside the time range or of another reason are passed over here, never counted: they are not selected."""
    found: list[DeadLetterPick] = []
    for shard, item in _dead_letters_after(ctx, space, settings, after):
        if len(found) >= limit:
            break
        moved_at = int(item.get("moved_at", 0))
        if (since is not None and moved_at < since) or (until is not None and moved_at > until):
            continue
        if reason is not None and not reasons.matches(item, reason):
            continue
        found.append(_pick(ctx, settings, shard, item, now))
    return found


def _dead_letters_after(
    ctx: Context, space: Space, settings: QueueSettings, after: str | None
) -> Iterator[tuple[int, Item]]:
    shards = 1 if settings.fifo else settings.read_shards
    first, last_key = 0, None
    if after is not None:
        shard_text, last_key = after[len(_PLACE) :].split("|", 1)
        first = int(shard_text)
    for shard in range(first, shards):
        after_key = last_key if shard == first else None
        for item in ctx.store.query_all(
            space.dlq_pk(shard),
            sk_condition="sk > :after" if after_key is not None else "",
            values={":after": after_key} if after_key is not None else None,
            consistent=True,
        ):
            yield shard, item


def _pick(ctx: Context, settings: QueueSettings, shard: int, item: Item, now: int) -> DeadLetterPick:
    ref = MessageRef.from_dlq_sk(item["sk"], keys.shard_of(item["pk"]), settings.fifo, int(item.get("priority", 0)))
    moved_at, copy_id = int(item.get("moved_at", 0)), str(item.get("dlq_id", ""))
    message = None
    if not is_expired(item, now):
        try:
            message = looked_at(item, ref, DLQ, ctx.bodies)
        except MessageBodyMissing:
            message = None
    return DeadLetterPick(
        place=f"{_PLACE}{shard:04d}|{item['sk']}",
        message=message,
        copy=f"{ref.message_id}|{moved_at}|{copy_id}",
        removal=writes.delete_dead_letter({"pk": item["pk"], "sk": item["sk"]}, moved_at, copy_id),
        item=item,
    )
