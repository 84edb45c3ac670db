"""Which shards of a sub-queue may hold visible messages: a home shard that every receive reads, and marks.

A queue of many shards costs a receive one query per shard it visits, and an empty receive would visit them all
(64 queries at 64 shards, 512 at the cap). Two things keep a quiet one at two queries:

* **The home shard.** Shard 0 (`keys.HOME_SHARD`) is read first by every receive. A process sends its first
  `HomeLane.RATE` messages a second to a sub-queue there (FIFO: groups that enter the index put their entry in the
  home shard's index partition), so at low load every message is where the first query looks, and needs nothing
  more. Beyond that rate, and for a while after a throttle, sends spread over the shards as before.
* **Shard marks.** A write that makes a message visible (or due later) in another shard's index partition puts
  a mark for that shard, priority and time after it (`#{time}#{priority}#{shard}` in the sub-queue's ready
  partition, no index entry: one write unit). A receive that did not fill up at home reads the due marks (one
  consistent query) and visits only the shards they name. A process puts a mark once per `COVER_SECONDS` a shard:
  a busy sender's marks cost a small fraction of a write unit a message (one a run of `SendRotation.RUN`).

A marked shard that a receive finds without any candidate is *drained*, as a ready marker is (`ready.drain`): the
mark leaves (on the condition that it was not put again since it was read), the shard's first index entry is
looked at and a mark put back for its time (an in-flight message's claim end, a delayed message's delivery). A
mark covers the writes of the process that put it until its `covers` (its put plus `COVER_SECONDS`): a drop of a
mark whose `covers` is within `limits.INDEX_LAG_GRACE_SECONDS` of the look (or whose answer was lost) leaves a
*reminder*, a mark for the grace's end after that `covers`, whose own drain looks once the index shows every write
the dropped mark covered. A message is therefore never left unmarked in a shard other than home: found at once
when its mark stands, at most `covers` plus the grace (and a second) later when a drain raced its write, and by
the sweep's backstop (a mark for every shard with visible messages) when a mark's put failed. A receive that got
messages at home reads the marks at most once a `MARKS_SECONDS`: messages in other shards then wait at most that.
See docs/design.md, "Idle shards cost nothing".
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from . import limits, partial
from .errors import QueueError, Throttled
from .keys import HOME_SHARD, Space, message_index_parts, shard_mark_parts
from .ready import MARKER_RETRY_PAUSES
from .store import ConditionFailed, Item
from .store import marks as writes

if TYPE_CHECKING:
    from .context import Context
    from .settings import QueueSettings
    from .shards import Traffic

logger = logging.getLogger("queue_core")

# How long a mark covers the later sends of the process that put it, to the same shard and priority.
COVER_SECONDS: Final = 1.0
# A receive that got messages at home, but fewer than it wanted, reads the marks at most this often.
MARKS_SECONDS: Final = 2.0
MARKS_READ: Final = 1000  # at most this many due marks a read (shards x priorities, plus due ready-at marks)


class Marked(Protocol):
    ctx: Context
    space: Space
    settings: QueueSettings
    traffic: Traffic

    def shard_next_visible(self, shard: int, priority: int, now: int) -> int | None:
        """When `shard` next has a message of `priority` to give (its first index entry); None: none."""


@dataclass(frozen=True)
class Mark:
    shard: int
    priority: int
    at: int  # 0: ready now
    key: dict[str, str]
    put_at: int


def in_use(settings: QueueSettings) -> bool:
    """Marks matter only where a receive has more than one shard to visit."""
    return settings.read_shards > 1


def announce(engine: Marked, placed: Iterable[tuple[int, int, int]], backstop: bool = False) -> None:
    """Marks for `(priority, visible_at, shard)` of messages just written, put after that write and stamped with
    the clock read now. Home needs none; a mark this process put lately (`COVER_SECONDS`) at the same or an
    earlier time covers it. A ready-at mark's time is rounded down to the second, so that delayed messages leave
    one mark a second, not one each; a mark that comes due before its shard has anything visible is drained, and
    its drain puts the exact time back. A mark that cannot be written is logged, not raised: the message is
    stored, and the sweep marks every shard with visible messages (`backstop`: whatever this process put)."""
    if not in_use(engine.settings):
        return
    now = engine.ctx.now_ms()
    book = engine.traffic.marks
    wanted: dict[str, tuple[dict[str, Any], int, int, int]] = {}
    for priority, visible_at, shard in placed:
        at = 0 if visible_at <= now else visible_at // 1000 * 1000
        if (shard == HOME_SHARD and not priority) or (book.covered(shard, priority, at, now) and not backstop):
            continue
        key = engine.space.shard_mark_key(priority, shard, at, now)
        wanted[key["sk"]] = ({**key, "put_at": now, "covers": now + int(COVER_SECONDS * 1000)}, shard, priority, at)
    for item, shard, priority, at in wanted.values():
        if _put(engine.ctx, item):
            book.cover(shard, priority, at, item["covers"])
            book.note_put(_mark(item))


def _put(ctx: Context, item: dict[str, Any]) -> bool:
    for pause in (*MARKER_RETRY_PAUSES, None):
        try:
            ctx.store.write(writes.mark(item))
            return True
        except QueueError as error:
            if isinstance(error, Throttled) and pause is not None:
                time.sleep(pause)
                continue
            logger.warning("shard mark %s not written; the sweep will", item["sk"], exc_info=error)
            return False
    return False


def read(engine: Marked, now: int) -> list[Mark]:
    """The sub-queue's due marks, read consistently (the marks are table items: no index lag)."""
    marks = [_mark(item) for item in engine.ctx.store.shard_marks(engine.space.ready_pk(), now, MARKS_READ)]
    engine.traffic.marks.note_read(marks)
    return marks


def known(engine: Marked, now: int, since: float | None = None) -> list[Mark]:
    """The due marks as read within `MARKS_SECONDS` (`since` given: as read at `since` or later, monotonic), else
    read now."""
    marks = engine.traffic.marks.recent(MARKS_SECONDS, since)
    return [mark for mark in marks if mark.at <= now] if marks is not None else read(engine, now)


def priorities(engine: Marked, now: int) -> set[int]:
    """The priorities with due marks, 0 always among them: a standard sub-queue of several shards learns its
    priorities from its marks (a message of a priority above 0 is marked at home too), in the query that tells
    where its messages are, at most `MARKS_SECONDS` late (its own sends' at once)."""
    return {0} | {mark.priority for mark in known(engine, now)}


def _mark(item: Item) -> Mark:
    at, priority, shard = shard_mark_parts(str(item["sk"]))
    return Mark(shard, priority, at, {"pk": item["pk"], "sk": item["sk"]}, int(item.get("put_at", 0)))


ShardReceive = Callable[[int, int], tuple[list[Any], bool]]


def visit(engine: Marked, priority: int, want: int, receive_shard: ShardReceive, now: int, since: float) -> list[Any]:
    """Home first; then, if it gave fewer than `want`, the shards the due marks of `priority` name, from a random
    one, until `want` are found or a shard gave some but fewer than asked (the queue is shallow). The marks are
    those read within `MARKS_SECONDS` when home gave some, else those read by this receive (at `since` or later,
    monotonic), else read now. A marked shard without any candidate is drained (home too, for a priority above 0,
    whose messages are marked there). Throttles as in `shards.visit`: a throttled shard is asked nothing more,
    the others are, and the throttle is raised with what was claimed."""
    got: list[Any] = []
    throttle: Throttled | None = None

    def ask(shard: int) -> tuple[list[Any], bool] | None:
        nonlocal throttle
        try:
            return receive_shard(shard, want - len(got))
        except Throttled as error:
            throttle = throttle or error
            got.extend(partial.received(error))
            return None

    home = ask(HOME_SHARD)
    got += home[0] if home else []
    by_shard: dict[int, list[Mark]] = {}
    if len(got) < want or (priority and home and not home[1]):
        try:
            marks = known(engine, now, None if got else since)
        except Throttled as error:
            throttle, marks = throttle or error, []
        for mark in marks:
            if mark.priority == priority:
                by_shard.setdefault(mark.shard, []).append(mark)
    if home and not home[1] and HOME_SHARD in by_shard:
        with contextlib.suppress(QueueError):
            drain(engine, priority, HOME_SHARD, by_shard[HOME_SHARD])
    shards = [shard for shard in by_shard if shard != HOME_SHARD]
    random.shuffle(shards)
    for shard in shards:
        if len(got) >= want:
            break
        need = want - len(got)
        outcome = ask(shard)
        if outcome is None:
            continue
        found, saw = outcome
        got += found
        if not saw:
            with contextlib.suppress(QueueError):
                drain(engine, priority, shard, by_shard[shard])
        if found and len(found) < need:
            break
    if throttle is not None:
        raise partial.after(throttle, got) from partial.original(throttle)
    return got


def drain(engine: Marked, priority: int, shard: int, marks: list[Mark]) -> None:
    """`shard` gave nothing of `priority`: its marks leave and one comes back for its next entry's time, with a
    reminder when a dropped mark covered writes the look may not see yet (see the module's docstring). A mark put
    again since it was read stays, and the shard with it; one another drain removed first is that drain's."""
    ctx = engine.ctx
    cover, unknown, dropped = 0, False, False
    for mark in marks:
        try:
            old = ctx.store.write(writes.drop(mark.key, mark.put_at))
        except ConditionFailed as failed:
            if failed.item is not None:
                return  # put again since it was read: the shard stays marked
            unknown = unknown or failed.repeated  # our own drop, applied, its answer lost: what it covered unknown
            continue
        dropped = True
        if old is not None:
            cover = max(cover, int(old.get("covers", old.get("put_at", 0))))
    engine.traffic.marks.forget_shard(shard, priority)
    if not dropped and not unknown:
        return  # every mark was another drain's to drop: it looks and reminds
    looked_at = ctx.now_ms()
    at = engine.shard_next_visible(shard, priority, looked_at)
    if at is not None:
        key = engine.space.shard_mark_key(priority, shard, at, looked_at)
        item = {**key, "put_at": looked_at, "covers": looked_at}
        if _put(ctx, item):
            engine.traffic.marks.note_put(_mark(item))
    grace = limits.INDEX_LAG_GRACE_SECONDS * 1000
    if not unknown and cover <= looked_at - grace:
        return
    # A whole second, so that the drains of one mark by several consumers at once leave one reminder.
    remind_at = -(-(max(looked_at, cover) + grace) // 1000) * 1000
    if at is not None and at <= remind_at:
        return  # the mark just put comes first; its own drain reminds in turn
    key = engine.space.shard_mark_key(priority, shard, remind_at, looked_at)
    try:
        ctx.store.write(writes.remind(key, looked_at))
        engine.traffic.marks.note_put(_mark({**key, "put_at": looked_at}))
    except QueueError:
        logger.warning("reminder mark of shard %s not written; the sweep will mark it", shard, exc_info=True)


def placed(
    items: Iterable[Item], shard_of: Callable[[Item], int], now: int | None = None
) -> list[tuple[int, int, int]]:
    """`(priority, visible_at, shard)` of message items or index entries (`now`: as due by now)."""
    out = []
    for item in items:
        priority, at, _ = message_index_parts(str(item["gsi1sk"]))
        out.append((priority, int(at) if now is None else now, shard_of(item)))
    return out
