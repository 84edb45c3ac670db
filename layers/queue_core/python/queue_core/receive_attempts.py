"""FIFO receive attempts (SQS's `ReceiveRequestAttemptId`): a receive repeated after a lost answer gets the same
messages with the same handles, instead of finding their groups held until the visibility ends.

The first receive under an attempt id keeps its answer (message ids and receipt handles, no bodies) in an item of
the sub-queue for `ATTEMPT_SECONDS`, with a TTL. A repeat within that time resets each message's visibility with
its handle, which is also the check that nothing changed meanwhile: if one of them was deleted, or received again
by someone else after its visibility ran out, the attempt is spent (SQS: a retry works only while none of its
messages was modified), and the repeat is a new receive whose answer replaces the kept one.
"""

from __future__ import annotations

import contextlib
import secrets
from typing import TYPE_CHECKING, Final

from .context import Context
from .errors import QueueError, ValidationError
from .models import ReceivedMessage
from .store import ConditionFailed, Item
from .store import messages as writes

if TYPE_CHECKING:
    from .subqueue import SubQueue

ATTEMPT_SECONDS: Final = 300


def receive_once(
    ctx: Context, sub: SubQueue, attempt_id: str, want: int, visibility_timeout: int | None, wait_seconds: int | None
) -> list[ReceivedMessage]:
    """`sub.receive(...)` under an attempt id: the kept answer while it holds, else a new receive kept."""
    if not isinstance(attempt_id, str) or not 1 <= len(attempt_id) <= 128:
        raise ValidationError("an attempt id is 1-128 characters")
    key = sub.space.attempt_key(attempt_id)
    kept = ctx.store.get(key)
    now = ctx.now_ms()
    spent = None
    if kept is not None and int(kept["kept_until"]) > now:
        again = _replayed(sub, kept, visibility_timeout)
        if again is not None:
            return again
        spent = str(kept["tok"])
    got = sub.receive(want, visibility_timeout=visibility_timeout, wait_seconds=wait_seconds)
    if not got:
        # A repeat sent while the first receive still ran (a gateway's timeout, retried at once) finds the groups
        # held by that receive's claims: once the first kept its answer, that answer is this one's too.
        kept = ctx.store.get(key)
        if kept is not None and int(kept["kept_until"]) > ctx.now_ms() and str(kept["tok"]) != spent:
            return _replayed(sub, kept, visibility_timeout) or []
        return got
    token = secrets.token_hex(8)
    item = {
        **key,
        "tok": token,
        "ids": [message.message_id for message in got],
        "handles": [message.receipt_handle for message in got],
        "kept_until": now + ATTEMPT_SECONDS * 1000,
        "expires_at": now // 1000 + ATTEMPT_SECONDS + 1,
    }
    try:
        ctx.store.write(writes.keep_attempt(item, now, spent))
    except ConditionFailed as failed:
        if failed.item is not None and failed.item.get("tok") != token:
            # Another receive under the same id kept its answer first: ours goes back unseen, theirs is the answer.
            for message in got:
                with contextlib.suppress(QueueError):
                    sub.return_unseen(message.receipt_handle)
            return _replayed(sub, failed.item, visibility_timeout) or []
    return got


def _replayed(sub: SubQueue, kept: Item, visibility_timeout: int | None) -> list[ReceivedMessage] | None:
    """The kept messages, each made invisible again for the visibility timeout with its handle; None when one of
    them is no longer held by its handle (the attempt is spent)."""
    seconds = sub.settings.visibility_timeout if visibility_timeout is None else visibility_timeout
    answer = []
    try:
        for message_id, handle in zip(kept["ids"], kept["handles"], strict=True):
            sub.change_visibility(str(handle), seconds)
            message = sub.get(str(message_id))
            answer.append(
                ReceivedMessage(
                    message_id=message.message_id,
                    receipt_handle=str(handle),
                    body=message.body,
                    attributes=message.attributes,
                    group_id=message.group_id,
                    sequence=message.sequence,
                    receive_count=message.receive_count,
                    sent_at=message.sent_at,
                    first_received_at=message.first_received_at,
                    attribute_types=message.attribute_types,
                    client=sub.client,
                    priority=message.priority,
                    dedup_id=message.dedup_id,
                )
            )
    except QueueError:
        return None
    return answer
