"""Queue settings: validated once, stored in the queue's registry item, cached in each process."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from . import keys, limits, validation
from .errors import ValidationError


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
    shards: int = 1
    # The largest body a send may carry (SQS's MaximumMessageSize); larger ones are refused with MessageTooLarge.
    max_message_bytes: int = limits.MAX_BODY_BYTES
    # How long a receive that names no wait waits (SQS's ReceiveMessageWaitTimeSeconds).
    receive_wait_seconds: int = 0
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
        "max_message_bytes",
        "receive_wait_seconds",
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
            shards=_int(options, "shards", 1, limits.MAX_SHARDS),
            max_message_bytes=_int(options, "max_message_bytes", limits.MIN_MESSAGE_BYTES, limits.MAX_BODY_BYTES),
            receive_wait_seconds=_int(options, "receive_wait_seconds", 0, limits.MAX_WAIT_SECONDS),
            created_at=created_at,
            modified_at=created_at,
            generation=keys.new_generation(),
            created=True,
        )

    UPDATABLE = ("visibility_timeout", "max_receive_count", "retention_seconds", "delay_seconds",
                 "dedup_window_seconds", "shards", "max_message_bytes", "receive_wait_seconds")  # fmt: skip

    @property
    def read_shards(self) -> int:
        """Receivers, peek, stats and purge visit this many shards: every layout messages may still live under."""
        return max([self.shards, *(shards for shards, _ in self.shard_history)])

    def placement_shards(self, now_ms: int) -> int:
        """The shard count FIFO groups are placed by: the previous one until every process has the new one."""
        if self.shard_history and now_ms < self.placement_from:
            return self.shard_history[-1][0]
        return self.shards

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

    def updated(self, now_ms: int, cache_ms: int, **changes: Any) -> QueueSettings:
        """These settings with `changes` applied (validated). A new shard count keeps the old one in the history
        for as long as items may live under it; a longer retention lengthens every kept layout's time too. A
        layout is never forgotten while something may live under it: past `MAX_SHARD_LAYOUTS` kept layouts, a
        change of `shards` is refused instead."""
        fixed = set(changes) - set(self.UPDATABLE)
        if fixed:
            raise ValidationError(f"these settings cannot change on a live queue: {', '.join(sorted(fixed))}")
        options = {key: getattr(self, key) for key in self.SETTING_NAMES} | changes
        fresh = QueueSettings.validated(self.name, self.created_at, **options)
        history, placement_from = self.live_history(now_ms), self.placement_from
        lifetime = self._lifetime_ms(max(self.retention_seconds, fresh.retention_seconds))
        if fresh.retention_seconds > self.retention_seconds:
            history = tuple((shards, max(until, now_ms + lifetime)) for shards, until in history)
        if fresh.shards != self.shards:
            if len(history) >= limits.MAX_SHARD_LAYOUTS:
                raise ValidationError(
                    f"shards changed {len(history)} times within the queue's retention; each earlier layout is kept "
                    "while messages may live under it: try again once the oldest one has expired"
                )
            history = (*history, (self.shards, now_ms + lifetime))
            placement_from = now_ms + 2 * cache_ms + 20_000
        return replace(
            fresh,
            generation=self.generation,
            version=self.version + 1,
            shard_history=history,
            placement_from=placement_from,
            created=False,
            modified_at=now_ms,
            tags=self.tags,
        )

    def tagged(self, tags: dict[str, str], removed: list[str]) -> QueueSettings:
        """These settings with `tags` added (or changed) and the keys in `removed` taken off."""
        kept = {key: value for key, value in self.tags.items() if key not in removed} | validation.tags(tags)
        if len(kept) > limits.MAX_TAGS:
            raise ValidationError(f"a queue has at most {limits.MAX_TAGS} tags")
        return replace(self, tags=kept, version=self.version + 1, created=False)

    def without_old_layouts(self, now_ms: int, fifo_groups_moved: bool) -> QueueSettings | None:
        """The settings with the layouts that can hold nothing any more dropped (None when none can be): a
        standard layout once its time is up; FIFO layouts once groups are placed by the current count and the
        sweep found no group item left at an old place (`fifo_groups_moved`) in a list of the queue's clients read
        at `now_ms`. That list comes from the index: a client registered just before groups left the old places
        shows in it only after the index's lag, so FIFO layouts wait that long more."""
        if self.fifo:
            settled_from = self.placement_from + limits.INDEX_LAG_GRACE_SECONDS * 1000
            if not self.shard_history or now_ms < settled_from or not fifo_groups_moved:
                return None
            history: tuple[tuple[int, int], ...] = ()
        else:
            history = self.live_history(now_ms)
            if history == self.shard_history:
                return None
        return replace(self, shard_history=history, version=self.version + 1, created=False)

    def same_settings(self, other: QueueSettings) -> bool:
        return all(getattr(self, key) == getattr(other, key) for key in self.SETTING_NAMES)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        # Internal, or kept for the SQS protocol's attributes and tags (which it reads from the settings).
        for internal in ("generation", "version", "created", "shard_history", "placement_from", "modified_at", "tags"):
            data.pop(internal)
        return data

    def to_item(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("created")
        data["shard_history"] = [list(entry) for entry in self.shard_history]
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
            max_message_bytes=int(item.get("max_message_bytes", limits.MAX_BODY_BYTES)),
            receive_wait_seconds=int(item.get("receive_wait_seconds", 0)),
            created_at=int(item["created_at"]),
            modified_at=int(item.get("modified_at", item["created_at"])),
            tags=dict(item.get("tags", {})),
            generation=str(item["generation"]),
            version=int(item.get("version", 1)),
            shard_history=tuple((int(shards), int(until)) for shards, until in item.get("shard_history", [])),
            placement_from=int(item.get("placement_from", 0)),
        )


def _int(options: dict[str, Any], name: str, low: int, high: int) -> int:
    default = getattr(QueueSettings, name)
    return validation.integer(name, options.get(name, default), low, high)
