"""Queue settings: validated once, stored in the queue's registry item, cached in each process."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from . import keys, limits, validation
from .errors import ValidationError

# `shards` of a queue whose count follows its load.
AUTO = "auto"


@dataclass(frozen=True)
class QueueSettings:
    name: str
    fifo: bool = False
    visibility_timeout: int = limits.DEFAULT_VISIBILITY_SECONDS
    max_receive_count: int = limits.DEFAULT_MAX_RECEIVE_COUNT
    retention_seconds: int = limits.DEFAULT_RETENTION_SECONDS
    delay_seconds: int = limits.DEFAULT_DELAY_SECONDS
    dedup_window_seconds: int = limits.DEFAULT_DEDUP_WINDOW_SECONDS
    content_based_dedup: bool = False
    # The current shard count. With `auto_shards` it follows the load between `min_shards` and `max_shards`
    # (see `autoshard`); otherwise it is what the queue was given.
    shards: int = 1
    auto_shards: bool = False
    min_shards: int = 1
    max_shards: int = limits.MAX_SHARDS
    # The largest body a send may carry (SQS's MaximumMessageSize); larger ones are refused with MessageTooLarge.
    max_message_bytes: int = limits.MAX_BODY_BYTES
    # How long a receive that names no wait waits (SQS's ReceiveMessageWaitTimeSeconds).
    receive_wait_seconds: int = 0
    # Days an acknowledged message is kept in the archive (see `archive`); 0: no archive, nothing written or read.
    archive_days: int = 0
    # Whether sends put ready markers for queue-wide receives (see `ready`): on from creation when asked for,
    # else from the first queue-wide receive (`marking`). `markers_from`: from when every process's sends put them
    # (ms); `markers_built`: the sweep has put those of what was sent before, so receives may trust them alone.
    queue_wide: bool = field(default=False, compare=False)
    markers_from: int = field(default=0, compare=False)
    markers_built: bool = field(default=False, compare=False)
    created_at: int = 0
    # When the settings last changed (ms); tags label the queue. Neither decides whether a create is a repeat.
    modified_at: int = field(default=0, compare=False)
    tags: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    # The queue's incarnation: part of every key of its messages, so a queue created again under the same name
    # starts empty whatever the old one left behind.
    generation: str = field(default="", compare=False)
    # Counts every change of the stored settings; an update is conditional on it, so none is lost.
    version: int = field(default=1, compare=False)
    # Earlier shard counts, each with the time (ms) until which a standard queue's items may still live under it,
    # and the time from which FIFO groups are placed by the current count (after every process's cached settings
    # have caught up). A FIFO layout stays until the sweep finds no group item left at its places.
    shard_history: tuple[tuple[int, int], ...] = field(default=(), compare=False)
    placement_from: int = field(default=0, compare=False)
    # The counts FIFO groups are placed by before `placement_from`, each with the time (ms) from which it places,
    # oldest first: the one in force when the count last changed and any change not yet in force then. A process
    # holding older settings knows a beginning of this chain and places as the newest do until its end, by when
    # its cache has caught up: however close together changes come, every process places a group alike.
    placed_by: tuple[tuple[int, int], ...] = field(default=(), compare=False)
    # When `shards` last changed (ms), by hand or by itself: automatic changes wait a while after it.
    shards_changed_at: int = field(default=0, compare=False)
    # Until when (ms) items stored under an earlier, longer retention may live: a FIFO group item written now
    # lives at least as long, so a lowered retention never lets it expire under a message sent before.
    items_live_until: int = field(default=0, compare=False)
    # A FIFO queue's raised retention applies to messages sent from `retention_from` (ms) on, once every process's
    # cached settings have it (as for `placement_from`); until then they keep `earlier_retention`. A process whose
    # cache still holds the lower one writes a group item's time from it: a message sent meanwhile for longer by
    # another process would outlive its group item.
    retention_from: int = field(default=0, compare=False)
    earlier_retention: int = field(default=0, compare=False)
    # Where the queue's dead letters are read besides its own DLQ: another queue of the same kind that names this
    # one among its dead-letter sources ("": none). The dead letters stay in this queue's own DLQ partitions (the
    # REST DLQ routes see them as ever); the target's SQS receive reads them there. Kept for the SQS protocol.
    dead_letter_target: str = field(default="", compare=False)
    # Which queues may name this one as their dead-letter target: "" (never set) or "allowAll", "denyAll",
    # "byQueue" with `redrive_sources`, as SQS's RedriveAllowPolicy.
    redrive_permission: str = field(default="", compare=False)
    redrive_sources: tuple[str, ...] = field(default=(), compare=False)
    # When (monotonic) the read or write that gave this process these settings was sent (0: not from the table):
    # a write built from them is sent within `SEND_GRACE_SECONDS` after their time in the cache (`send_deadline`).
    # Not stored.
    read_at: float = field(default=0.0, compare=False, repr=False)
    created: bool = field(default=False, compare=False)

    SETTING_NAMES = (
        "fifo",
        "visibility_timeout",
        "max_receive_count",
        "retention_seconds",
        "delay_seconds",
        "dedup_window_seconds",
        "content_based_dedup",
        "shards",
        "min_shards",
        "max_shards",
        "max_message_bytes",
        "receive_wait_seconds",
        "queue_wide",
        "archive_days",
    )

    @classmethod
    def validated(cls, name: str, created_at: int, **options: Any) -> QueueSettings:
        unknown = set(options) - set(cls.SETTING_NAMES)
        if unknown:
            raise ValidationError(f"unknown queue settings: {', '.join(sorted(unknown))}")
        name = validation.queue_name(name)
        fifo = validation.boolean("fifo", options.get("fifo", False)) or name.endswith(".fifo")
        content_based = validation.boolean("content_based_dedup", options.get("content_based_dedup", False))
        if content_based and not fifo:
            raise ValidationError("content_based_dedup is only for FIFO queues")
        retention = _int(options, "retention_seconds", limits.MIN_RETENTION_SECONDS, limits.MAX_RETENTION_SECONDS)
        if _int(options, "delay_seconds", 0, limits.MAX_DELAY_SECONDS) > validation.latest_delay_seconds(retention):
            raise ValidationError(
                f"delay_seconds must leave a message {limits.MIN_DELIVERY_WINDOW_SECONDS} s of its retention "
                f"({retention} s) in which it can be delivered: at most {validation.latest_delay_seconds(retention)}"
            )
        return cls(
            name=name,
            fifo=fifo,
            visibility_timeout=_int(options, "visibility_timeout", 0, limits.MAX_VISIBILITY_SECONDS),
            max_receive_count=_int(options, "max_receive_count", 0, limits.MAX_RECEIVE_COUNT),
            retention_seconds=_int(
                options, "retention_seconds", limits.MIN_RETENTION_SECONDS, limits.MAX_RETENTION_SECONDS
            ),
            delay_seconds=_int(options, "delay_seconds", 0, limits.MAX_DELAY_SECONDS),
            dedup_window_seconds=_int(options, "dedup_window_seconds", 0, limits.MAX_DEDUP_WINDOW_SECONDS),
            content_based_dedup=content_based,
            **_shard_options(options),
            max_message_bytes=_int(options, "max_message_bytes", limits.MIN_MESSAGE_BYTES, limits.MAX_BODY_BYTES),
            receive_wait_seconds=_int(options, "receive_wait_seconds", 0, limits.MAX_WAIT_SECONDS),
            archive_days=_int(options, "archive_days", 0, limits.MAX_ARCHIVE_DAYS),
            **_marking_from_creation(options, created_at),
            created_at=created_at,
            modified_at=created_at,
            generation=keys.new_generation(),
            created=True,
        )

    UPDATABLE = ("visibility_timeout", "max_receive_count", "retention_seconds", "delay_seconds",
                 "dedup_window_seconds", "shards", "min_shards", "max_shards", "max_message_bytes",
                 "receive_wait_seconds", "queue_wide", "archive_days")  # fmt: skip

    @property
    def read_shards(self) -> int:
        """Receivers, peek, stats and purge visit this many shards: every layout messages may still live under."""
        return max([self.shards, *(shards for shards, _ in self.shard_history)])

    def message_retention(self, now_ms: int) -> int:
        """The retention of a message sent at `now_ms` (see `retention_from`; a standard queue has no group item
        to outlive, and takes a change at once)."""
        return self.earlier_retention if self.fifo and now_ms < self.retention_from else self.retention_seconds

    def placement_shards(self, now_ms: int) -> int:
        """The shard count FIFO groups are placed by: each count from when every process has the settings that
        made it (`placement_from` for the current one, `placed_by` for those before), the previous one until then."""
        if now_ms >= self.placement_from or not self.shard_history:
            return self.shards
        if not self.placed_by:  # settings written before the chain was kept
            return self.shard_history[-1][0]
        placing = self.placed_by[0][0]
        for shards, since in self.placed_by:
            if since <= now_ms:
                placing = shards
        return placing

    def _placements_after_change(self, now_ms: int) -> tuple[tuple[int, int], ...]:
        """`placed_by` for a change of the count made now: the placement in force now and those still to come."""
        earlier = self.placed_by
        if not earlier and self.shard_history:  # settings written before the chain was kept
            earlier = ((self.shard_history[-1][0], 0),)
        chain = (*earlier, (self.shards, self.placement_from))
        in_force = max((index for index, (_, since) in enumerate(chain) if since <= now_ms), default=0)
        return chain[in_force:]

    def old_layouts(self, now_ms: int) -> list[int]:
        """Earlier shard counts under which a FIFO group item may still live: every one in the history (a busy
        group may stay at its old place for longer than any retention), less the count groups are placed by."""
        current = self.placement_shards(now_ms)
        return sorted({shards for shards, _ in self.shard_history if shards != current})

    def _lifetime_ms(self, retention_seconds: int) -> int:
        """How long items stored now may live: a message's retention, once more in the DLQ, and a dedup window."""
        return (2 * retention_seconds + limits.MAX_DEDUP_WINDOW_SECONDS) * 1000

    def live_history(self, now_ms: int) -> tuple[tuple[int, int], ...]:
        """The layouts that may still hold items: a standard layout until its time is up, a FIFO one until the
        sweep has found it empty (see `without_old_layouts`)."""
        if self.fifo:
            return self.shard_history
        return tuple((shards, until) for shards, until in self.shard_history if until > now_ms)

    def updated(self, now_ms: int, spread_ms: int, **changes: Any) -> QueueSettings:
        """These settings with `changes` applied (validated). A new shard count keeps the old one in the history
        for as long as items may live under it; a longer retention lengthens every kept layout's time too. A
        layout is never forgotten while something may live under it: past `MAX_SHARD_LAYOUTS` kept layouts, a
        change of `shards` is refused instead."""
        fixed = set(changes) - set(self.UPDATABLE)
        if fixed:
            raise ValidationError(f"these settings cannot change on a live queue: {', '.join(sorted(fixed))}")
        options = {key: getattr(self, key) for key in self.SETTING_NAMES} | changes
        if self.auto_shards and "shards" not in changes:
            options["shards"] = AUTO
        if options["shards"] != AUTO and not {"min_shards", "max_shards"} & set(changes):
            options.pop("min_shards")
            options.pop("max_shards")
        fresh = QueueSettings.validated(self.name, self.created_at, **options)
        if fresh.auto_shards:
            # Switched to automatic, or its bounds moved: it goes on from the current count, within the bounds.
            fresh = replace(fresh, shards=min(max(self.shards, fresh.min_shards), fresh.max_shards))
        fresh = replace(fresh, **self._marking(fresh.queue_wide, now_ms, spread_ms))
        return self._with_shards(fresh, now_ms, spread_ms)

    def resharded(self, shards: int, now_ms: int, spread_ms: int) -> QueueSettings:
        """These settings with the shard count an automatic decision chose: the same history and fencing as a
        change by hand (`updated`)."""
        return self._with_shards(replace(self, shards=shards), now_ms, spread_ms)

    def _with_shards(self, fresh: QueueSettings, now_ms: int, spread_ms: int) -> QueueSettings:
        history, placement_from, placed_by = self.live_history(now_ms), self.placement_from, self.placed_by
        changed_at = self.shards_changed_at
        lifetime = self._lifetime_ms(max(self.retention_seconds, fresh.retention_seconds))
        lives_until = self.items_live_until
        if fresh.retention_seconds < self.retention_seconds:
            lives_until = max(lives_until, now_ms + lifetime)
        # A raise waits for every cache, from the lowest retention a cache may hold; a wait already running goes
        # on unchanged by other updates, and ends once the retention is no higher than what messages get now.
        retention_from, earlier_retention = self.retention_from, self.earlier_retention
        if fresh.retention_seconds > self.retention_seconds:
            retention_from, earlier_retention = now_ms + spread_ms, self.message_retention(now_ms)
        elif fresh.retention_seconds <= self.message_retention(now_ms):
            retention_from, earlier_retention = 0, 0
        if fresh.retention_seconds > self.retention_seconds:
            history = tuple((shards, max(until, now_ms + lifetime)) for shards, until in history)
        if fresh.shards != self.shards:
            if len(history) >= limits.MAX_SHARD_LAYOUTS:
                raise ValidationError(
                    f"shards changed {len(history)} times within the queue's retention; each earlier layout is kept "
                    "while messages may live under it: try again once the oldest one has expired"
                )
            history = _compacted((*history, (self.shards, now_ms + lifetime)), self.fifo)
            placed_by = self._placements_after_change(now_ms)
            placement_from = now_ms + spread_ms
            changed_at = now_ms
        return replace(
            fresh,
            generation=self.generation,
            version=self.version + 1,
            shard_history=history,
            placement_from=placement_from,
            placed_by=placed_by,
            shards_changed_at=changed_at,
            items_live_until=lives_until,
            retention_from=retention_from,
            earlier_retention=earlier_retention,
            created=False,
            modified_at=now_ms,
            tags=self.tags,
            dead_letter_target=self.dead_letter_target,
            redrive_permission=self.redrive_permission,
            redrive_sources=self.redrive_sources,
        )

    def redirected(self, now_ms: int, **redrive: Any) -> QueueSettings:
        """These settings with the dead-letter fields in `redrive` (`dead_letter_target`, `redrive_permission`,
        `redrive_sources`) changed, as a new version."""
        unknown = set(redrive) - set(REDRIVE_FIELDS)
        if unknown:
            raise ValidationError(f"unknown redrive settings: {', '.join(sorted(unknown))}")
        return replace(self, **redrive, version=self.version + 1, created=False, modified_at=now_ms)

    def permits_dead_letters_from(self, source: str) -> bool:
        """Whether a queue named `source` may name this one as its dead-letter target (its RedriveAllowPolicy)."""
        if self.redrive_permission == "denyAll":
            return False
        return self.redrive_permission != "byQueue" or source in self.redrive_sources

    def tagged(self, tags: dict[str, str], removed: list[str]) -> QueueSettings:
        """These settings with `tags` added (or changed) and the keys in `removed` taken off."""
        kept = {key: value for key, value in self.tags.items() if key not in removed} | validation.tags(tags)
        if len(kept) > limits.MAX_TAGS:
            raise ValidationError(f"a queue has at most {limits.MAX_TAGS} tags")
        return replace(self, tags=kept, version=self.version + 1, created=False)

    @property
    def settled_from(self) -> int:
        """From when every process sends (and places FIFO groups) by the current count, with the index's lag."""
        return self.placement_from + limits.INDEX_LAG_GRACE_SECONDS * 1000

    def without_old_layouts(self, now_ms: int, old_places_empty: bool) -> QueueSettings | None:
        """The settings with the layouts that can hold nothing any more dropped (None when none can be): a
        standard layout once its time is up; every layout once every process sends and places groups by the
        current count and the sweep found nothing left at an old place (`old_places_empty`: no FIFO group item
        at an old layout's place, no standard message or DLQ item in a shard past the current count) in a list
        of the queue's clients read at `now_ms`. That list comes from the index: a client registered just before
        shows in it only after the index's lag, so the layouts wait that long more."""
        history: tuple[tuple[int, int], ...] = ()
        if not self.shard_history:
            return None
        if now_ms < self.settled_from or not old_places_empty:
            if self.fifo:
                return None
            history = self.live_history(now_ms)
            if history == self.shard_history:
                return None
        placed_by = () if now_ms >= self.placement_from else self.placed_by
        return replace(self, shard_history=history, placed_by=placed_by, version=self.version + 1, created=False)

    def _marking(self, queue_wide: bool, now_ms: int, spread_ms: int) -> dict[str, Any]:
        """The ready-marker fields for `queue_wide`: kept as they are, or switched on now. Every process's sends
        put markers once their cached settings show it, with a margin for a slow send (as for `placement_from`);
        until the sweep has built the markers of what was sent before, queue-wide receives visit every client.
        Never switched off: a receiver trusting markers would miss what an unmarked send left."""
        if queue_wide == self.queue_wide:
            return {
                "queue_wide": self.queue_wide,
                "markers_from": self.markers_from,
                "markers_built": self.markers_built,
            }
        if not queue_wide:
            raise ValidationError("queue_wide cannot be switched off once on: queue-wide receives rely on it")
        return {"queue_wide": True, "markers_from": now_ms + spread_ms, "markers_built": False}

    def marking(self, now_ms: int, spread_ms: int) -> QueueSettings:
        """These settings with `queue_wide` switched on (by the first queue-wide receive), as a new version."""
        return replace(self, **self._marking(True, now_ms, spread_ms), version=self.version + 1, created=False)

    def with_markers_built(self) -> QueueSettings:
        """These settings once the sweep has put the markers of every client with messages."""
        return replace(self, markers_built=True, version=self.version + 1, created=False)

    @property
    def markers_trusted(self) -> bool:
        """Whether every message has its client's ready marker: queue-wide receives then read markers only."""
        return self.queue_wide and self.markers_built

    def same_settings(self, other: QueueSettings) -> bool:
        """Whether a create asked for these settings: of an automatic queue, its bounds, not the count it is at."""
        names = [key for key in self.SETTING_NAMES if key != "shards" or not self.auto_shards]
        names.remove("queue_wide")  # what a queue costs, not how it behaves: any queue may be received queue-wide
        return self.auto_shards == other.auto_shards and all(getattr(self, k) == getattr(other, k) for k in names)

    def send_deadline(self) -> float | None:
        """By when (monotonic) a write built from these settings must be sent (`Store.sent_by`): every process
        holds a change of them, and every write built from the older ones has landed, `SETTINGS_SPREAD_SECONDS`
        after it (`limits`)."""
        if not self.read_at:
            return None
        return self.read_at + limits.SETTINGS_CACHE_SECONDS + limits.SEND_GRACE_SECONDS

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("read_at")
        # Internal, or kept for the SQS protocol's attributes and tags (which it reads from the settings).
        internals = ("generation", "version", "created", "shard_history", "placement_from", "modified_at", "tags")
        for internal in (*internals, "placed_by", "shards_changed_at", "items_live_until"):
            data.pop(internal)
        for internal in ("retention_from", "earlier_retention"):
            data.pop(internal)
        for internal in ("markers_from", "markers_built"):
            data.pop(internal)
        for kept_for_sqs in REDRIVE_FIELDS:
            data.pop(kept_for_sqs)
        return data

    def to_item(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("created")
        data.pop("read_at")
        data["shard_history"] = [list(entry) for entry in self.shard_history]
        data["placed_by"] = [list(entry) for entry in self.placed_by]
        data["redrive_sources"] = list(self.redrive_sources)
        return data

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> QueueSettings:
        return cls(
            name=item["name"],
            fifo=bool(item["fifo"]),
            visibility_timeout=int(item["visibility_timeout"]),
            max_receive_count=int(item["max_receive_count"]),
            retention_seconds=int(item["retention_seconds"]),
            delay_seconds=int(item["delay_seconds"]),
            dedup_window_seconds=int(item["dedup_window_seconds"]),
            content_based_dedup=bool(item["content_based_dedup"]),
            shards=int(item["shards"]),
            auto_shards=bool(item.get("auto_shards", False)),
            min_shards=int(item.get("min_shards", 1)),
            max_shards=int(item.get("max_shards", limits.MAX_SHARDS)),
            max_message_bytes=int(item.get("max_message_bytes", limits.MAX_BODY_BYTES)),
            receive_wait_seconds=int(item.get("receive_wait_seconds", 0)),
            archive_days=int(item.get("archive_days", 0)),
            queue_wide=bool(item.get("queue_wide", False)),
            markers_from=int(item.get("markers_from", 0)),
            markers_built=bool(item.get("markers_built", False)),
            created_at=int(item["created_at"]),
            modified_at=int(item.get("modified_at", item["created_at"])),
            tags=dict(item.get("tags", {})),
            generation=str(item["generation"]),
            version=int(item.get("version", 1)),
            shard_history=tuple((int(shards), int(until)) for shards, until in item.get("shard_history", [])),
            placement_from=int(item.get("placement_from", 0)),
            placed_by=tuple((int(shards), int(since)) for shards, since in item.get("placed_by", [])),
            shards_changed_at=int(item.get("shards_changed_at", 0)),
            items_live_until=int(item.get("items_live_until", 0)),
            retention_from=int(item.get("retention_from", 0)),
            earlier_retention=int(item.get("earlier_retention", 0)),
            dead_letter_target=str(item.get("dead_letter_target", "")),
            redrive_permission=str(item.get("redrive_permission", "")),
            redrive_sources=tuple(str(name) for name in item.get("redrive_sources", [])),
        )


def _shard_options(options: dict[str, Any]) -> dict[str, Any]:
    """`shards` left out or "auto": automatic, from `min_shards`; a number: that many, fixed (no bounds)."""
    shards = options.get("shards", AUTO)
    if shards != AUTO:
        bounds = sorted({"min_shards", "max_shards"} & set(options))
        if bounds:
            raise ValidationError(f'{" and ".join(bounds)} bound automatic shards: give shards "auto" or leave it out')
        fixed = validation.integer("shards", shards, 1, limits.MAX_SHARDS) if isinstance(shards, int) else None
        if fixed is None:
            raise ValidationError(f'shards must be "auto" or an integer from 1 to {limits.MAX_SHARDS}')
        return {"shards": fixed}
    low = _int(options, "min_shards", 1, limits.MAX_SHARDS)
    high = _int(options, "max_shards", 1, limits.MAX_SHARDS)
    if low > high:
        raise ValidationError(f"min_shards ({low}) must be at most max_shards ({high})")
    return {"shards": low, "auto_shards": True, "min_shards": low, "max_shards": high}


def _compacted(history: tuple[tuple[int, int], ...], fifo: bool) -> tuple[tuple[int, int], ...]:
    """The layouts worth keeping, oldest first. A standard layout is only how many shards receivers visit and
    until when: one covered by another (as many shards or more, kept as long or longer) adds nothing. A FIFO
    layout is where groups are placed: one entry per count, the latest. Either way a queue whose count goes up
    and down by itself keeps a few layouts, not one per change."""
    kept: list[tuple[int, int]] = []
    for position, (shards, until) in enumerate(history):
        later = history[position + 1 :]
        if fifo and any(other == shards for other, _ in later):
            continue
        if not fifo and any(
            other >= shards and other_until >= until
            for index, (other, other_until) in enumerate(history)
            if index != position and (index > position or (other, other_until) != (shards, until))
        ):
            continue
        kept.append((shards, until))
    return tuple(kept)


REDRIVE_FIELDS = ("dead_letter_target", "redrive_permission", "redrive_sources")


def _marking_from_creation(options: dict[str, Any], created_at: int) -> dict[str, Any]:
    """A queue created `queue_wide` marks from its first send: nothing was sent before to build markers for."""
    on = validation.boolean("queue_wide", options.get("queue_wide", False))
    return {"queue_wide": on, "markers_from": created_at if on else 0, "markers_built": on}


def _int(options: dict[str, Any], name: str, low: int, high: int) -> int:
    default = getattr(QueueSettings, name)
    return validation.integer(name, options.get(name, default), low, high)
