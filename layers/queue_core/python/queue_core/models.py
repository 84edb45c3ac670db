"""Result values. Field names are the HTTP JSON keys; `to_dict()` gives exactly that JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Final

# The id an SQS client sees (`sqs_ids`): carried by results for the SQS protocol and push events, never part of
# the library's and the REST API's JSON, whose message ids are the queue's own.
SQS_ID: Final = "sqs_message_id"


class _Json:
    def to_dict(self) -> dict[str, Any]:
        return asdict(self, dict_factory=_without_sqs_id)  # type: ignore[call-overload]


def _without_sqs_id(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {name: value for name, value in pairs if name != SQS_ID}


def _sqs_id() -> Any:
    return field(default="", repr=False, compare=False)


@dataclass(frozen=True)
class SendResult(_Json):
    message_id: str
    sequence: str
    duplicate: bool = False
    sqs_message_id: str = _sqs_id()


@dataclass(frozen=True)
class BatchResult(_Json):
    """Per-entry outcome of a batch: `successful` and `failed` carry the entry's `index`."""

    successful: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    # A send batch's SQS id of each entry stored (by `index`); not in `to_dict()`.
    sqs_message_ids: dict[int, str] = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"successful": self.successful, "failed": self.failed}


@dataclass(frozen=True)
class ReceivedMessage(_Json):
    message_id: str
    receipt_handle: str
    body: str
    attributes: dict[str, str]
    group_id: str | None
    sequence: str
    receive_count: int
    sent_at: int
    first_received_at: int | None
    # Name -> SQS data type of each attribute whose type is not plain `String`; Binary values are base64 text.
    attribute_types: dict[str, str] = field(default_factory=dict)
    # The sub-queue it came from: a queue-wide receive returns messages of every client.
    client: str = ""
    priority: int = 0
    # The producer's dedup id (or a FIFO queue's content hash of the body), None when it was sent without one.
    dedup_id: str | None = None
    sqs_message_id: str = _sqs_id()


@dataclass(frozen=True)
class Message(_Json):
    """A message looked at without claiming it (peek, get, the DLQ listing)."""

    message_id: str
    body: str
    attributes: dict[str, str]
    group_id: str | None
    sequence: str
    receive_count: int
    sent_at: int
    first_received_at: int | None
    state: str
    visible_at: int | None
    expires_at: int
    attribute_types: dict[str, str] = field(default_factory=dict)
    priority: int = 0
    dedup_id: str | None = None
    # Where the body lives: in the item as sent ("item"), zlib-compressed in it ("compressed"), or in S3 ("s3").
    body_stored: str = "item"
    # When it was moved to the DLQ (a DLQ message only).
    moved_at: int | None = None
    sqs_message_id: str = _sqs_id()
    # Its last attempts without an acknowledgement, oldest first: {"attempt", "at", "outcome", "reason"[, "detail"]}
    # (see `reasons`); `last_reason` is the last one's reason, `moved_reason` why it went to the DLQ (a DLQ
    # message only), `reasons_dropped` how many times its reasons were dropped to keep its body in the item.
    attempts: list[dict[str, Any]] = field(default_factory=list)
    last_reason: str | None = None
    moved_reason: str | None = None
    reasons_dropped: int = 0


@dataclass(frozen=True)
class BrowsedMessage(Message):
    """A waiting message as a browse lists it: `get`'s fields, and until when its state lasts (in flight: the
    claim's end; delayed: its delivery time; visible: None)."""

    until: int | None = None


@dataclass(frozen=True)
class BrowsePage(_Json):
    """One page of a browse; `cursor` goes on from where it stopped, None once the sub-queue was read to its end."""

    messages: list[BrowsedMessage] = field(default_factory=list)
    cursor: str | None = None


@dataclass(frozen=True)
class QueueStats(_Json):
    visible: int = 0
    in_flight: int = 0
    delayed: int = 0
    dlq: int = 0
    oldest_age_seconds: int | None = None
    # True when a figure reached the scan limit and is a lower bound.
    approximate: bool = False
    # Visible, in-flight and delayed counts of each priority that has messages ("0"-"9"); in `to_dict()` only
    # when a priority above 0 is among them, so a queue that uses none answers as it always did.
    by_priority: dict[str, dict[str, int]] = field(default_factory=dict)
    # Messages that can be neither delivered nor moved to the DLQ (their copy too large), out of sight and tried
    # again now and then until cancelled or expired (a FIFO one holds its group; counted in `delayed` too); in
    # `to_dict()` only when there are any.
    stuck: int = 0

    def to_dict(self) -> dict[str, Any]:
        figures = asdict(self)
        if not any(priority != "0" for priority in self.by_priority):
            figures.pop("by_priority")
        if not self.stuck:
            figures.pop("stuck")
        return figures

    def __add__(self, other: QueueStats) -> QueueStats:
        ages = [age for age in (self.oldest_age_seconds, other.oldest_age_seconds) if age is not None]
        by_priority = {key: dict(counts) for key, counts in self.by_priority.items()}
        for key, counts in other.by_priority.items():
            mine = by_priority.setdefault(key, {"visible": 0, "in_flight": 0, "delayed": 0})
            for name, value in counts.items():
                mine[name] = mine.get(name, 0) + value
        return QueueStats(
            visible=self.visible + other.visible,
            in_flight=self.in_flight + other.in_flight,
            delayed=self.delayed + other.delayed,
            dlq=self.dlq + other.dlq,
            oldest_age_seconds=max(ages) if ages else None,
            approximate=self.approximate or other.approximate,
            by_priority=by_priority,
            stuck=self.stuck + other.stuck,
        )


@dataclass(frozen=True)
class Swept:
    """An engine's sweep of one sub-queue, for the pass: whether an item still lives at an earlier shard layout's
    place, and the live figures as the sweep left them, counted from what it read (None: what it read cannot tell
    them, and the pass reads them itself)."""

    old_place_in_use: bool
    live: QueueStats | None = None


@dataclass
class SweepReport(_Json):
    """What one `sweep()` call did; `complete` is False when its budget ran out with work left."""

    sub_queues: int = 0
    moved_to_dlq: int = 0
    expired_deleted: int = 0
    groups_freed: int = 0
    items_read: int = 0
    complete: bool = True
    cursor: str | None = None
    # True when another sweep held the lease, so this one did nothing.
    skipped: bool = False
    depths: list[dict[str, Any]] = field(default_factory=list)
    # Each queue swept whole: {"queue", "shards", "auto"}, its shard count after this pass's decision.
    shards: list[dict[str, Any]] = field(default_factory=list)
    # Each automatic queue throttled past `autoshard.THROTTLES_PER_MINUTE` that this pass did not grow:
    # {"queue", "shards", "reason", "throttles_per_minute"} (reasons: see `autoshard`).
    held: list[dict[str, Any]] = field(default_factory=list)
    # Sub-queues and queue-wide steps DynamoDB throttled (or whose answer was lost): passed over, done next pass.
    failures: int = 0
    # Running replays no runner had moved for a while (`replays.orphaned`) that this pass ran on, and the new
    # messages they sent.
    replays_resumed: int = 0
    replayed: int = 0


@dataclass(frozen=True)
class ArchivedMessage(_Json):
    """An acknowledged message as the archive keeps it (see `archive`): its fields as sent, when it was
    acknowledged, and its attempts that ended without an acknowledgement."""

    message_id: str
    client: str
    body: str
    attributes: dict[str, str]
    attribute_types: dict[str, str]
    group_id: str | None
    dedup_id: str | None
    priority: int
    sent_at: int
    first_received_at: int | None
    acked_at: int
    receive_count: int
    expires_at: int
    attempts: list[dict[str, Any]] = field(default_factory=list)
    last_reason: str | None = None


@dataclass(frozen=True)
class ReplayStatus(_Json):
    """A replay of the archive, or of the DLQ (`source` "dlq", dead letters whose last reason contains `reason`; see
    `replays`): what it selects, where it stands and what it did. `state` is
    `running`, `done` or `cancelled`; `replayed` new messages sent, `skipped` selected places with nothing to
    replay (not matching the attributes, expired, gone), `failed` messages that could not be sent again
    (`last_error` says why); `total` the number of ids of a replay by id, `reached_at` the acknowledgement time a
    replay by time range has reached."""

    replay_id: str
    queue: str
    client: str
    state: str
    since: int | None
    until: int | None
    message_ids: list[str] | None
    attributes: dict[str, str]
    rate: int
    replayed: int
    skipped: int
    failed: int
    total: int | None
    reached_at: int | None
    last_error: str | None
    created_at: int
    updated_at: int
    finished_at: int | None
    source: str = "archive"
    reason: str | None = None


@dataclass(frozen=True)
class ArchivePage(_Json):
    """One page of archived messages; `cursor` goes on from where it stopped, None at the end of the range."""

    messages: list[ArchivedMessage] = field(default_factory=list)
    cursor: str | None = None
