"""Browsing a sub-queue: its waiting messages, whatever their state, page by page, without claiming any.

A browse reads the messages' own partitions in key order, never an index and never the whole table: a standard
sub-queue shard by shard (every shard a message may still live under, `QueueSettings.read_shards`), each in send
order; a FIFO sub-queue group by group (the group items of every shard, then each waiting group's messages in the
group's order). Each call reads at most `limits.BROWSE_READ_ITEMS` items in at most `limits.BROWSE_QUERIES`
Queries, strongly consistent, answers at most `limits.BROWSE_ANSWER_BYTES` of JSON (a Lambda answer carries 6 MB;
bodies may be 1 MiB each), and hands back a cursor (where it stopped) while anything is left. Filters (state,
priority, group) are applied to what it read, so a page may come back short or empty with a cursor: the caller
goes on from it. Nothing is written: no receive count, no claim, no marker.

The state is the one `get` tells, from the same attributes: a standard message is in flight while its claim's
`visible_at` is ahead, delayed while its delivery time is; a FIFO message is in flight while its group is held by
the claim that marked it (until the group's `available_at`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import limits, validation
from .errors import MessageBodyMissing, ValidationError
from .keys import MessageRef
from .messages import DELAYED, IN_FLIGHT, VISIBLE, is_expired, looked_at
from .models import BrowsedMessage, BrowsePage
from .store import Item

if TYPE_CHECKING:
    from .fifo import FifoQueue
    from .standard import StandardQueue

STATES = (VISIBLE, IN_FLIGHT, DELAYED)
_MAX_CURSOR = 1_000
# The shape of every cursor `Position.encode` spells (base64url of its JSON), as the API documents it.
CURSOR_PATTERN = r"^[A-Za-z0-9_-]{1,1000}$"


@dataclass(frozen=True)
class Filter:
    """What a browse keeps of what it reads (None: any)."""

    state: str | None = None
    priority: int | None = None
    group: str | None = None

    @classmethod
    def of(cls, state: Any, priority: Any, group: Any, fifo: bool) -> Filter:
        if state is not None and state not in STATES:
            raise ValidationError(f"state must be one of {', '.join(STATES)}")
        if priority is not None:
            if fifo:
                raise ValidationError("priority is only for standard queues: a FIFO queue's messages have none")
            priority = validation.integer("priority", priority, 0, limits.MAX_PRIORITY)
        if group is not None:
            if not fifo:
                raise ValidationError("group is only for FIFO queues: a standard queue's messages have none")
            group = validation.group_id(group, True)
        return cls(state, priority, group)

    @property
    def any(self) -> bool:
        return self.state is not None or self.priority is not None

    def keeps(self, message: BrowsedMessage) -> bool:
        return (self.state is None or message.state == self.state) and (
            self.priority is None or message.priority == self.priority
        )


@dataclass(frozen=True)
class Position:
    """Where a browse goes on: in `shard` (standard: its message partition; FIFO: its group items), inside
    `group` (FIFO), after the sort key `after` (None: from the start)."""

    shard: int = 0
    group: str | None = None
    after: str | None = None

    def encode(self, generation: str) -> str:
        raw = {"g": generation, "s": self.shard, "grp": self.group, "k": self.after}
        return base64.urlsafe_b64encode(json.dumps(raw, separators=(",", ":")).encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, cursor: Any, generation: str) -> Position:
        """A cursor of this queue's generation; one of a queue deleted and created again since is refused."""
        if cursor is None:
            return cls()
        refused = ValidationError("cursor is not a cursor of this sub-queue's browse")
        if not isinstance(cursor, str) or not 1 <= len(cursor) <= _MAX_CURSOR:
            raise refused
        try:
            raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        except (binascii.Error, ValueError, UnicodeDecodeError):
            raise refused from None
        if not isinstance(raw, dict) or raw.get("g") != generation:
            raise refused
        shard, group, after = raw.get("s"), raw.get("grp"), raw.get("k")
        if isinstance(shard, bool) or not isinstance(shard, int) or not 0 <= shard < limits.MAX_SHARDS:
            raise refused
        if group is not None and not (isinstance(group, str) and validation._GROUP.fullmatch(group)):
            raise refused
        if after is not None and not (isinstance(after, str) and after.isalnum()):
            raise refused
        return cls(shard, group, after)


class _Budget:
    """What one call may still read."""

    def __init__(self) -> None:
        self.items = limits.BROWSE_READ_ITEMS
        self.queries = limits.BROWSE_QUERIES
        self.answer_bytes = limits.BROWSE_ANSWER_BYTES

    @property
    def spent(self) -> bool:
        return self.items <= 0 or self.queries <= 0

    def page_size(self, need: int, filtered: bool) -> int:
        """Unfiltered, exactly what the page still needs; filtered, more at once (most may be left out)."""
        return max(1, min(self.items, need if not filtered else max(4 * need, 25)))

    def spend(self, read: int) -> None:
        self.items -= read
        self.queries -= 1


class _Walk:
    """One browse call: what it found so far, and the position after the last item it read."""

    def __init__(
        self, engine: StandardQueue | FifoQueue, limit: int, wanted: Filter, position: Position, now: int
    ) -> None:
        self.engine = engine
        self.limit = limit
        self.wanted = wanted
        self.position = position
        self.now = now
        self.found: list[BrowsedMessage] = []
        self.budget = _Budget()

    @property
    def store(self) -> Any:
        return self.engine.ctx.store

    @property
    def stopped(self) -> bool:
        return len(self.found) >= self.limit or self.budget.spent

    def read(self, pk: str, after: str | None) -> tuple[list[Item], bool]:
        items, more = self.store.after(pk, after, self.budget.page_size(self.limit - len(self.found), self.wanted.any))
        self.budget.spend(len(items))
        return items, more

    def keep(self, item: Item, ref: MessageRef, state: str, until: int | None) -> bool:
        """Adds the message when the filter keeps it; False when the page is full without it: its answer would
        pass `limits.BROWSE_ANSWER_BYTES` (the page then ends before it; a first message always fits)."""
        with contextlib.suppress(MessageBodyMissing):  # `get` answers it, saying its body is gone
            message = looked_at(item, ref, state, self.engine.ctx.bodies)
            browsed = BrowsedMessage(**{**message.__dict__, "until": until})
            if self.wanted.keeps(browsed):
                size = _answered_size(browsed)
                if self.found and size > self.budget.answer_bytes:
                    return False
                self.budget.answer_bytes -= size
                self.found.append(browsed)
        return True

    def page(self, position: Position | None) -> BrowsePage:
        cursor = None if position is None else position.encode(self.engine.settings.generation)
        return BrowsePage(messages=self.found, cursor=cursor)


def browse(engine: StandardQueue | FifoQueue, limit: int, wanted: Filter, cursor: Any, now: int) -> BrowsePage:
    """One page of the sub-queue's waiting messages (see the module's docstring)."""
    position = Position.decode(cursor, engine.settings.generation)
    walk = _Walk(engine, limit, wanted, position, now)
    if not engine.settings.fifo:
        return _standard(walk)
    if wanted.group is not None:
        return _one_group(walk, wanted.group)
    return _fifo(walk)


def _standard(walk: _Walk) -> BrowsePage:
    engine, now = walk.engine, walk.now
    shard, after = walk.position.shard, walk.position.after
    while shard < engine.settings.read_shards:
        if walk.stopped:
            return walk.page(Position(shard, None, after))
        items, more = walk.read(engine.space.message_pk(shard), after)
        for index, item in enumerate(items):
            before, after = after, str(item["sk"])
            if not is_expired(item, now):
                state = engine.state(item, now)
                until = None if state == VISIBLE else int(item["visible_at"])
                if not walk.keep(item, MessageRef.of_live(item), state, until):
                    return walk.page(Position(shard, None, before))
            if walk.stopped and (more or index < len(items) - 1):
                return walk.page(Position(shard, None, after))
        if not more:
            shard, after = shard + 1, None
    return walk.page(None)


def _fifo(walk: _Walk) -> BrowsePage:
    """Group items shard by shard in group order; each waiting group's messages in the group's order. A cursor
    names the group it stopped in and the last sequence read there: the next call goes on in that group (its group
    item read again, for the states), then with the groups after it."""
    engine = walk.engine
    shard, group, after = walk.position.shard, walk.position.group, walk.position.after
    if group is not None and shard < engine.settings.read_shards:
        group_item = walk.store.get(engine.space.group_key(group, shard))
        walk.budget.spend(1)
        if group_item is not None and _waiting(group_item):
            after, inside = _group(walk, group, [group_item], after)
            if inside:
                return walk.page(Position(shard, group, after))
    while shard < engine.settings.read_shards:
        if walk.stopped:
            return walk.page(Position(shard, group, after))
        group_items, more = walk.read(engine.space.group_item_pk(shard), group)
        for group_item in group_items:
            group, after = str(group_item["sk"]), None
            if walk.stopped:
                return walk.page(Position(shard, group, None))
            if _waiting(group_item):
                after, inside = _group(walk, group, [group_item], None)
                if inside:
                    return walk.page(Position(shard, group, after))
        if not more:
            shard, group, after = shard + 1, None, None
    return walk.page(None)


def _one_group(walk: _Walk, group: str) -> BrowsePage:
    """One group's messages: its partition read directly, and every place its group item may be (one read, for the
    states). A cursor of another group's walk starts from the group's first message."""
    engine = walk.engine
    after = walk.position.after if walk.position.group == group else None
    places = engine.get_keys(MessageRef(0, "0", group))[1:]
    group_items = walk.store.batch_get(places)
    walk.budget.spend(len(group_items))
    after, inside = _group(walk, group, group_items, after)
    return walk.page(Position(0, group, after) if inside else None)


def _answered_size(message: BrowsedMessage) -> int:
    """The message's bytes in an answer through API Gateway and Lambda: its JSON inside the proxy answer's JSON."""
    return len(json.dumps(json.dumps(message.to_dict()))) + 1


def _waiting(group_item: Item) -> bool:
    """Whether the group has messages (an emptied group item keeps no index key; a moved one has none)."""
    return "gsi1sk" in group_item and not group_item.get("moved")


def _group(walk: _Walk, group: str, group_items: list[Item], after: str | None) -> tuple[str | None, bool]:
    """Reads a group's messages after the sequence `after`: (the last sequence read, whether the walk stopped
    with more of the group unread)."""
    engine, now = walk.engine, walk.now
    pk = engine.space.group_messages_pk(group)
    while True:
        if walk.stopped:
            return after, True
        items, more = walk.read(pk, after)
        for index, item in enumerate(items):
            before, after = after, str(item["sk"])
            if not is_expired(item, now):
                holder = next((g for g in group_items if g.get("tok") and g.get("tok") == item.get("tok")), None)
                state = engine.state(item, now, holder)
                until = {VISIBLE: None, DELAYED: int(item["visible_at"])}.get(state)
                if state == IN_FLIGHT and holder is not None:
                    until = int(holder["available_at"])
                if not walk.keep(item, MessageRef(0, after, group), state, until):
                    return before, True
            if walk.stopped and (more or index < len(items) - 1):
                return after, True
        if not more:
            return after, False
