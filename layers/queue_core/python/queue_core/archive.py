"""An archive of acknowledged messages: per queue, off unless `archive_days` (1-90) is set.

When it is on, every acknowledgement (a delete by handle, a batch delete, a transactional ack, a push delivery's
success, an SQS DeleteMessage: all of them `Engine.delete` or `Engine.delete_writes`) reads the message once and
writes, in one transaction with the delete, a copy under the archive's own keys: the body (in the form it was
stored; an offloaded body's object is kept), attributes, attempts, sent and acknowledged times, the client. The put
is conditional on a new key and shares the delete's transaction, so the archive holds each acknowledgement exactly
once: a repeat of the transaction (the SDK's after a lost answer, ours with its client request token) or a delete
that finds its message gone writes nothing. TTL removes a copy `archive_days` after its acknowledgement.

Off means off: no read, no write, nothing in the table. On, an acknowledgement costs one strongly consistent read
and the transaction's doubled units (docs/benchmarks.md).

Keys: `V#{queue}#{client}#{generation}#{bucket}` / `{acked_at}#{message_id}`, the bucket a stable hash of the
message id (`BUCKETS`, so one client's archive takes `BUCKETS` partitions' write rate), and in the index
`V#{queue}#{client}#{generation}#i{bucket}` / `{message_id}` to find a message by id. A time range is read newest or
oldest first, a page at a time, from each bucket with one bounded Query (never a Scan); a queue-wide page reads
each client's buckets.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any, Final

from . import limits, reasons
from .bodies import FORMS, Bodies
from .clock import fixed_ms
from .context import Context
from .errors import MessageBodyMissing, ValidationError
from .keys import Space, stable_hash
from .models import ArchivedMessage, ArchivePage
from .settings import QueueSettings
from .store import Item
from .store import archive as archive_store
from .store.write import Write

BUCKETS: Final = 8
ID_BUCKETS: Final = 16
MAX_DAYS: Final = 90
_DAY_SECONDS: Final = 86_400
_KEPT: Final = (*FORMS, "attrs", "attr_types", "group_id", "dedup_id", "sent_at", "priority", "first_received_at")
_FAR: Final = "9" * 13


def is_on(settings: QueueSettings) -> bool:
    return settings.archive_days > 0


def copy_of(space: Space, settings: QueueSettings, item: Item, message_id: str, now: int) -> Item:
    """The archive's copy of the live message `item`, acknowledged at `now`: the attempts that ended without an
    acknowledgement come along, not the acknowledged one."""
    copy: Item = {k: item[k] for k in _KEPT if k in item}
    copy.update(
        {
            "pk": space.archive_pk(stable_hash(message_id) % BUCKETS),
            "sk": f"{fixed_ms(now)}#{message_id}",
            "gsi1pk": space.archive_index_pk(stable_hash(message_id) % ID_BUCKETS),
            "gsi1sk": message_id,
            "message_id": message_id,
            "client": space.client,
            "acked_at": now,
            "receive_count": int(item.get("receive_count", 0)),
            "expires_at": now // 1000 + settings.archive_days * _DAY_SECONDS,
            **reasons.acknowledged(item),
        }
    )
    return copy


def keep_write(space: Space, settings: QueueSettings, item: Item, message_id: str, now: int) -> Write:
    return archive_store.keep(copy_of(space, settings, item, message_id, now))


def shown(item: Item, bodies: Bodies) -> ArchivedMessage:
    """`MessageBodyMissing` when the body was offloaded and its object is gone."""
    attempts = reasons.history(item, dead=True)
    resolved = bodies.resolved(item)
    return ArchivedMessage(
        message_id=str(item["message_id"]),
        client=str(item["client"]),
        body=resolved["body"],
        attributes=dict(item.get("attrs", {})),
        attribute_types=dict(item.get("attr_types", {})),
        group_id=item.get("group_id"),
        dedup_id=item.get("dedup_id"),
        priority=int(item.get("priority", 0)),
        sent_at=int(item["sent_at"]),
        first_received_at=item.get("first_received_at"),
        acked_at=int(item["acked_at"]),
        receive_count=int(item.get("receive_count", 0)),
        expires_at=int(item["expires_at"]) * 1000,
        attempts=attempts,
        last_reason=attempts[-1]["reason"] if attempts else None,
    )


def find(ctx: Context, space: Space, message_id: str, now: int) -> list[ArchivedMessage]:
    """Every archived copy of one message, oldest acknowledgement first (a message redriven and acknowledged again
    has one a time); expired ones left out."""
    items = archive_store.by_id(ctx.store, space.archive_index_pk(stable_hash(message_id) % ID_BUCKETS), message_id)
    found = []
    for item in sorted(items, key=lambda item: item["sk"]):
        if int(item.get("expires_at", 0)) > now // 1000:
            try:
                found.append(shown(item, ctx.bodies))
            except MessageBodyMissing:
                continue
    return found


def page(
    ctx: Context,
    spaces: Sequence[Space],
    since: int | None,
    until: int | None,
    order: str,
    limit: int,
    cursor: str | None,
    now: int,
) -> ArchivePage:
    """Up to `limit` archived messages of `spaces` (one client's, or every client's of a queue) acknowledged in
    [`since`, `until`] (epoch ms, either open), newest first or oldest first, from `cursor` on. Each page reads at
    most `limit` + 1 items from each of the `BUCKETS` partitions of each space, one Query each."""
    limit = _checked(limit, order)
    newest = order == "newest"
    low = fixed_ms(since) if since is not None else "0" * 13
    high = (fixed_ms(until) + "#~") if until is not None else _FAR + "#~"
    after = _decoded(cursor)
    if after is not None:
        if newest:
            high = min(high, after[0] + "~")
        else:
            low = max(low, after[0])
    found: list[tuple[tuple[str, str], Item]] = []
    full = False
    for space in spaces:
        for bucket in range(BUCKETS):
            items = archive_store.page(ctx.store, space.archive_pk(bucket), low, high, not newest, limit + 1)
            full = full or len(items) > limit
            found += [((str(item["sk"]), space.client), item) for item in items]
    found.sort(key=lambda pair: pair[0], reverse=newest)
    if after is not None:
        found = [pair for pair in found if (pair[0] < after if newest else pair[0] > after)]
    chosen = [(place, item) for place, item in found if int(item.get("expires_at", 0)) > now // 1000]
    more = full or len(chosen) > limit
    chosen = chosen[:limit]
    messages = []
    for _, item in chosen:
        try:
            messages.append(shown(item, ctx.bodies))
        except MessageBodyMissing:
            continue
    next_cursor = _encoded(chosen[-1][0]) if more and chosen else None
    return ArchivePage(messages=messages, cursor=next_cursor)


def oldest_after(
    ctx: Context, space: Space, after: str | None, since: int | None, until: int | None, limit: int
) -> list[Item]:
    """Up to `limit` archived items of one sub-queue acknowledged in [`since`, `until`], oldest first, whose sort key
    (`{acked_at}#{message_id}`, one order for all buckets) comes after `after` (None: from the start); expired ones
    included. One Query of at most `limit` + 1 items for each of the `BUCKETS` partitions."""
    low = fixed_ms(since) if since is not None else "0" * 13
    high = (fixed_ms(until) + "#~") if until is not None else _FAR + "#~"
    if after is not None:
        low = max(low, after)
    found: list[Item] = []
    for bucket in range(BUCKETS):
        found += archive_store.page(ctx.store, space.archive_pk(bucket), low, high, True, limit + 1)
    found = [item for item in found if after is None or str(item["sk"]) > after]
    return sorted(found, key=lambda item: str(item["sk"]))[:limit]


def is_expired(item: Item, now: int) -> bool:
    return int(item.get("expires_at", 0)) <= now // 1000


def _checked(limit: Any, order: Any) -> int:
    if order not in ("newest", "oldest"):
        raise ValidationError('order must be "newest" or "oldest"')
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= limits.MAX_PEEK:
        raise ValidationError(f"limit must be an integer from 1 to {limits.MAX_PEEK}")
    return limit


def _encoded(place: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(place)).encode()).decode().rstrip("=")


def _decoded(cursor: Any) -> tuple[str, str] | None:
    if cursor is None:
        return None
    try:
        if not isinstance(cursor, str):
            raise ValueError
        place = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not (isinstance(place, list) and len(place) == 2 and all(isinstance(part, str) for part in place)):
            raise ValueError
    except ValueError:
        raise ValidationError("cursor is not a cursor of an archive page") from None
    return place[0], place[1]


def time_bound(name: str, value: Any) -> int | None:
    """`since` / `until`: epoch milliseconds, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 10**13:
        raise ValidationError(f"{name} must be epoch milliseconds")
    return value
