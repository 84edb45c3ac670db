"""Queue settings: validated once, stored in the queue's registry item, cached in each process."""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass, field
from typing import Any

from . import limits, validation
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
    created_at: int = 0
    # Signs receipt handles so a forged one is told from a stale one; never leaves the core.
    secret: str = field(default="", repr=False, compare=False)
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
            created_at=created_at,
            secret=secrets.token_hex(32),
            created=True,
        )

    def same_settings(self, other: QueueSettings) -> bool:
        return all(getattr(self, key) == getattr(other, key) for key in self.SETTING_NAMES)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("secret")
        data.pop("created")
        return data

    def to_item(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("created")
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
            created_at=int(item["created_at"]),
            secret=str(item["secret"]),
        )


def _int(options: dict[str, Any], name: str, low: int, high: int) -> int:
    default = getattr(QueueSettings, name)
    return validation.integer(name, options.get(name, default), low, high)
