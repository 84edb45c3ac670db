"""Pydantic models of every request body and every answer, shared by the HTTP routes and the invoke actions.

Requests refuse unknown fields and take numbers and booleans strictly, so that a typo or a quoted number is a
400 instead of a silent default. Answers let extra fields through, so a field the core adds reaches the caller
instead of vanishing. Ranges come from `queue_core.limits`; the core checks them again, so these models are the
documentation and the first line of defence, never the only one.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    model_validator,
)
from pydantic_core import PydanticCustomError
from queue_core import limits

from .names import (
    CLIENT_ID_PATTERN,
    CURSOR_PATTERN,
    MAX_EPOCH_MS,
    MAX_MESSAGE_ID,
    MESSAGE_ID_PATTERN,
    QUEUE_NAME_PATTERN,
    RECEIPT_HANDLE_PATTERN,
    REPLAY_ID_PATTERN,
)

QueueName = Annotated[
    str,
    StringConstraints(pattern=QUEUE_NAME_PATTERN),
    Field(description="1-80 characters of A-Za-z0-9_-; a FIFO queue's name may end in .fifo"),
]
ClientId = Annotated[
    str, StringConstraints(pattern=CLIENT_ID_PATTERN), Field(description="1-80 characters of A-Za-z0-9_-")
]
MessageId = Annotated[
    str,
    StringConstraints(pattern=MESSAGE_ID_PATTERN, max_length=MAX_MESSAGE_ID),
    Field(description="a message id from a send; one of this shape that names no message of the sub-queue: 404"),
]
ReceiptHandle = Annotated[
    str,
    StringConstraints(pattern=RECEIPT_HANDLE_PATTERN),
    Field(
        description="a receipt handle from a receive; one of this shape that the sub-queue did not issue (forged, "
        "altered, of a queue since deleted) is refused (400), one whose claim has passed to another receive is "
        "stale (409)"
    ),
]
ReplayId = Annotated[
    str, StringConstraints(pattern=REPLAY_ID_PATTERN), Field(description="a replay's id, from its start")
]
Cursor = Annotated[
    str,
    StringConstraints(pattern=CURSOR_PATTERN),
    Field(
        description="the previous page's cursor: go on from there; one of this shape that this listing did not give "
        "(of a queue since deleted) is refused (400)"
    ),
]


def _whole_number(value: Any) -> Any:
    """A float with no fraction as the integer it is: JSON Schema's `integer` takes `30.0` (the document says
    `integer`, so a client that writes every number as a float is right), and so does every integer field here."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


def _int(low: int, high: int | None = None, description: str | None = None) -> Any:
    """A strict integer field: JSON `30` and `30.0` are accepted, `"30"`, `30.5` and `true` are not."""
    field = Field(strict=True, ge=low, le=high, description=description)
    field.metadata.append(BeforeValidator(_whole_number))
    return field


VisibilitySeconds = Annotated[int, _int(0, limits.MAX_VISIBILITY_SECONDS)]
DelaySeconds = Annotated[int, _int(0, limits.MAX_DELAY_SECONDS)]
StrictBool = Annotated[bool, Field(strict=True)]
MaxMessageBytes = Annotated[
    int, _int(limits.MIN_MESSAGE_BYTES, limits.MAX_BODY_BYTES, "the largest body a send may carry, in bytes")
]
Shards = Annotated[
    Annotated[int, _int(1, limits.MAX_SHARDS)] | Literal["auto"],
    Field(
        description='"auto" (the default): the count follows the load between min_shards and max_shards; a number: '
        "that many, fixed",
    ),
]
ShardBound = Annotated[int, _int(1, limits.MAX_SHARDS, "a bound of an automatic shard count")]
ReceiveWaitSeconds = Annotated[
    int, _int(0, limits.MAX_WAIT_SECONDS, "how long a receive that names no wait waits (the SQS protocol's default)")
]
AttributeTypes = Annotated[
    dict[str, str] | None,
    Field(
        max_length=limits.MAX_ATTRIBUTES,
        description="SQS data types of some attributes: name -> String, Number or Binary, optionally with a custom "
        "label (Number.float); a Binary attribute's value is base64 text. Left out: plain strings",
    ),
]


class Request(BaseModel):
    """Base of every request: unknown fields are refused, so a misspelt option never falls back to a default."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class Answer(BaseModel):
    """Base of every answer: fields beyond the documented ones pass through unchanged."""

    model_config = ConfigDict(extra="allow", defer_build=True)


# Queues.


ArchiveDays = Annotated[
    int, _int(0, limits.MAX_ARCHIVE_DAYS, "days an acknowledged message is kept in the archive; 0: no archive")
]


# `min_shards` and `max_shards` bound automatic shards: a request that fixes `shards` to a number gives neither.
FIXED_SHARDS_HAVE_NO_BOUNDS: Final = {
    "if": {"properties": {"shards": {"type": "integer"}}, "required": ["shards"]},
    "then": {"not": {"anyOf": [{"required": ["min_shards"]}, {"required": ["max_shards"]}]}},
}


class CreateQueueRequest(Request):
    """Settings of a new queue; every field is optional. Creating an existing queue with the same settings is
    idempotent, with other settings a 409. Rules between fields: `min_shards` at most `max_shards`, and neither
    with a number of `shards`; `content_based_dedup` only for a FIFO queue; `delay_seconds` at most
    `retention_seconds` less 60."""

    model_config = ConfigDict(json_schema_extra={"allOf": [FIXED_SHARDS_HAVE_NO_BOUNDS]})

    fifo: StrictBool = False
    visibility_timeout: VisibilitySeconds = limits.DEFAULT_VISIBILITY_SECONDS
    max_receive_count: Annotated[int, _int(0, limits.MAX_RECEIVE_COUNT, "receives before the DLQ; 0: never")] = (
        limits.DEFAULT_MAX_RECEIVE_COUNT
    )
    retention_seconds: Annotated[int, _int(limits.MIN_RETENTION_SECONDS, limits.MAX_RETENTION_SECONDS)] = (
        limits.DEFAULT_RETENTION_SECONDS
    )
    delay_seconds: DelaySeconds = limits.DEFAULT_DELAY_SECONDS
    dedup_window_seconds: Annotated[int, _int(0, limits.MAX_DEDUP_WINDOW_SECONDS)] = limits.DEFAULT_DEDUP_WINDOW_SECONDS
    content_based_dedup: StrictBool = False
    shards: Shards = "auto"
    min_shards: ShardBound = 1
    max_shards: ShardBound = limits.MAX_SHARDS
    max_message_bytes: MaxMessageBytes = limits.MAX_BODY_BYTES
    receive_wait_seconds: ReceiveWaitSeconds = 0
    queue_wide: StrictBool = Field(
        False,
        description="sends put ready markers (one write unit each) at once, not from the first queue-wide receive",
    )
    archive_days: ArchiveDays = 0


# The settings a queue is created with and keeps for life: they decide its key layout and its dedup.
FIXED_SETTINGS: Final = ("fifo", "content_based_dedup")


class UpdateQueueRequest(Request):
    """Changes to a live queue's settings; a field left out (or null) keeps its value. A new `shards` loses no
    message and keeps FIFO order. `fifo` and `content_based_dedup` are fixed when the queue is created. Rules with
    the queue's other settings: `min_shards` at most `max_shards`, and neither for a queue of fixed shards (nor
    with a number of `shards`); `delay_seconds` at most `retention_seconds` less 60."""

    model_config = ConfigDict(json_schema_extra={"allOf": [FIXED_SHARDS_HAVE_NO_BOUNDS]})

    visibility_timeout: Annotated[int | None, _int(0, limits.MAX_VISIBILITY_SECONDS)] = None
    max_receive_count: Annotated[int | None, _int(0, limits.MAX_RECEIVE_COUNT, "receives before the DLQ; 0: never")] = (
        None
    )
    retention_seconds: Annotated[int | None, _int(limits.MIN_RETENTION_SECONDS, limits.MAX_RETENTION_SECONDS)] = None
    delay_seconds: Annotated[int | None, _int(0, limits.MAX_DELAY_SECONDS)] = None
    dedup_window_seconds: Annotated[int | None, _int(0, limits.MAX_DEDUP_WINDOW_SECONDS)] = None
    shards: Shards | None = None
    min_shards: ShardBound | None = None
    max_shards: ShardBound | None = None
    max_message_bytes: Annotated[
        int | None, _int(limits.MIN_MESSAGE_BYTES, limits.MAX_BODY_BYTES, "the largest body a send may carry")
    ] = None
    receive_wait_seconds: Annotated[int | None, _int(0, limits.MAX_WAIT_SECONDS)] = None
    queue_wide: StrictBool | None = Field(None, description="true switches ready markers on; never off once on")
    archive_days: ArchiveDays | None = None

    @model_validator(mode="before")
    @classmethod
    def _refuse_fixed_settings(cls, data: Any) -> Any:
        """Names the fixed settings in words, rather than as unknown fields."""
        fixed = [name for name in FIXED_SETTINGS if isinstance(data, dict) and name in data]
        if fixed:
            raise PydanticCustomError(
                "fixed_setting",
                "{names} cannot change on a live queue; create a new queue with the settings wanted",
                {"names": " and ".join(fixed)},
            )
        return data


class QueueStatsAnswer(Answer):
    """Also `by_priority` ({"9": {"visible", "in_flight", "delayed"}, ...}) when any message has a priority."""

    visible: int
    in_flight: int
    delayed: int
    dlq: int
    oldest_age_seconds: int | None = Field(description="age of the oldest waiting message; null when empty")
    approximate: bool = Field(False, description="a figure reached the scan limit and is a lower bound")


class QueueSettingsAnswer(Answer):
    name: str
    fifo: bool
    visibility_timeout: int
    max_receive_count: int
    retention_seconds: int
    delay_seconds: int
    dedup_window_seconds: int
    content_based_dedup: bool
    shards: int = Field(description="the current count (of an automatic queue: where its load has taken it)")
    auto_shards: bool = False
    min_shards: int = 1
    max_shards: int = limits.MAX_SHARDS
    max_message_bytes: int = limits.MAX_BODY_BYTES
    receive_wait_seconds: int = 0
    queue_wide: bool = Field(False, description="whether sends put ready markers for queue-wide receives")
    archive_days: int = Field(0, description="days acknowledged messages are kept in the archive; 0: no archive")
    created_at: int = Field(description="epoch milliseconds")


class QueueDescription(QueueSettingsAnswer):
    stats: QueueStatsAnswer = Field(description="summed over the queue's clients")
    client_count: int = Field(description="how many clients have sent to the queue")


class QueueList(Answer):
    queues: list[QueueSettingsAnswer]


class ClientList(Answer):
    clients: list[str] = Field(description="the ids of the clients that have sent to the queue")


class Deleted(Answer):
    deleted: bool


# Sending.


class SendMessageRequest(Request):
    body: Annotated[str, Field(min_length=1, description="at most the queue's max_message_bytes of UTF-8")]
    attributes: Annotated[dict[str, str] | None, Field(max_length=limits.MAX_ATTRIBUTES)] = None
    attribute_types: AttributeTypes = None
    delay_seconds: Annotated[
        int | None,
        _int(
            0,
            limits.MAX_RETENTION_SECONDS,
            "null: the queue's delay; at most the queue's retention_seconds less "
            f"{limits.MIN_DELIVERY_WINDOW_SECONDS} (the message stays deliverable that long)",
        ),
    ] = None
    deliver_at: Annotated[
        Annotated[int, Field(strict=True)] | Annotated[float, Field(strict=True)] | str | None,
        Field(
            union_mode="left_to_right",
            description="instead of delay_seconds: epoch seconds, or an ISO-8601 time with a zone; at most the "
            f"queue's retention less {limits.MIN_DELIVERY_WINDOW_SECONDS} s ahead",
        ),
    ] = None
    priority: Annotated[int | None, _int(0, limits.MAX_PRIORITY, "0-9, 9 first; standard queues only")] = None
    group_id: Annotated[
        str | None, Field(min_length=1, max_length=limits.MAX_GROUP_ID, description="required on FIFO queues")
    ] = None
    dedup_id: Annotated[str | None, Field(min_length=1, max_length=limits.MAX_DEDUP_ID)] = None


class SendBatchRequest(Request):
    messages: Annotated[list[SendMessageRequest], Field(min_length=1, max_length=limits.MAX_BATCH)]


def _send_kind(value: Any) -> str:
    """A body with `messages` is a batch; anything else is one message (and fails as one when malformed)."""
    if isinstance(value, dict):
        return "batch" if "messages" in value else "single"
    return "batch" if isinstance(value, SendBatchRequest) else "single"


SendRequest = Annotated[
    Annotated[SendMessageRequest, Tag("single")] | Annotated[SendBatchRequest, Tag("batch")],
    Discriminator(_send_kind),
]


class SendEntryResult(Answer):
    index: int
    message_id: str
    sequence: str
    duplicate: bool = Field(False, description="a dedup id seen inside the window: nothing was written")


class EntryFailure(Answer):
    index: int
    code: str
    message: str


class SendBatchAnswer(Answer):
    successful: list[SendEntryResult]
    failed: list[EntryFailure]


class SendMessageAnswer(SendBatchAnswer):
    """A single message's answer: the batch shape of one entry, with its id also at the top level."""

    message_id: str
    sequence: str
    duplicate: bool = False


SendAnswer = SendMessageAnswer | SendBatchAnswer


# Receiving and settling.


class ReceiveRequest(Request):
    max_messages: Annotated[int, _int(1, limits.MAX_RECEIVE)] = 1
    visibility_timeout: Annotated[
        int | None, _int(0, limits.MAX_VISIBILITY_SECONDS, "null: the queue's visibility timeout")
    ] = None
    wait_seconds: Annotated[int, _int(0, limits.MAX_WAIT_SECONDS, "long poll: wait this long for a message")] = 0
    order: Literal["oldest", "newest"] = "oldest"


_DEDUP_ID = "the dedup id it was sent with (a FIFO queue's content hash with content-based dedup); null: none"


class ReceivedMessageAnswer(Answer):
    message_id: str
    receipt_handle: str
    body: str
    attributes: dict[str, str]
    group_id: str | None
    sequence: str
    receive_count: int
    sent_at: int
    first_received_at: int | None
    attribute_types: dict[str, str] = Field(
        default_factory=dict, description="name -> SQS data type of each attribute whose type is not plain String"
    )
    client: str = Field("", description="the client (sub-queue) the message belongs to")
    priority: int = 0
    dedup_id: str | None = Field(None, description=_DEDUP_ID)


class ReceiveAnswer(Answer):
    messages: list[ReceivedMessageAnswer]


class DeleteRequest(Request):
    """A malformed or stale handle fails on its own, in `failed`; the others are still deleted."""

    receipt_handles: Annotated[list[str], Field(min_length=1, max_length=limits.MAX_BATCH)]


class DeleteEntryResult(Answer):
    index: int


class DeleteAnswer(Answer):
    successful: list[DeleteEntryResult]
    failed: list[EntryFailure]


class VisibilityRequest(Request):
    receipt_handle: ReceiptHandle
    visibility_timeout: VisibilitySeconds


class ReleaseRequest(Request):
    receipt_handle: ReceiptHandle
    delay_seconds: Annotated[
        int | None, _int(0, limits.MAX_VISIBILITY_SECONDS, "null: randomized exponential backoff by receive count")
    ] = None
    reason: str | None = Field(
        None,
        max_length=64 * 1024,
        description="why this attempt failed, kept with the message (its first line is what groupings show; at most "
        "2 KB kept, cut visibly)",
    )


class VisibleAt(Answer):
    visible_at: int = Field(description="epoch milliseconds")


# Looking at messages.


class ListRequest(Request):
    """The `limit` of a peek or a DLQ listing, for invoke events (HTTP takes it from the query string)."""

    limit: Annotated[int, _int(1, limits.MAX_PEEK)] = 10


class AttemptAnswer(Answer):
    """One delivery attempt that ended without an acknowledgement, and why."""

    attempt: int = Field(description="its receive number since the message was sent or redriven")
    at: int | None = Field(description="when it ended (epoch ms); null when its claim ran out with nobody answering")
    outcome: Literal["released", "failed", "timed_out", "visibility_expired"]
    reason: str = Field(description="why: its first line (at most 2 KB in all with detail, cut visibly)")
    detail: str | None = Field(None, description="the reason's further lines (a traceback)")


class MessageAnswer(Answer):
    message_id: str
    body: str
    attributes: dict[str, str]
    group_id: str | None
    sequence: str
    receive_count: int
    sent_at: int
    first_received_at: int | None
    state: Literal["visible", "in_flight", "delayed", "dlq"]
    visible_at: int | None
    expires_at: int
    attribute_types: dict[str, str] = Field(
        default_factory=dict, description="name -> SQS data type of each attribute whose type is not plain String"
    )
    priority: int = 0
    dedup_id: str | None = Field(None, description=_DEDUP_ID)
    body_stored: Literal["item", "compressed", "s3"] = Field(
        "item", description="where the body lives: in the item as sent, zlib-compressed in it, or in S3"
    )
    moved_at: int | None = Field(None, description="when it was moved to the DLQ (a DLQ message only)")
    attempts: list[AttemptAnswer] = Field(
        default_factory=list, description="its last attempts that ended without an acknowledgement, oldest first"
    )
    last_reason: str | None = Field(None, description="the last attempt's reason (its first line)")
    moved_reason: str | None = Field(None, description="why it was moved to the DLQ (a DLQ message only)")
    reasons_dropped: int = Field(0, description="times its reasons were dropped to keep its body in the item")


class MessageList(Answer):
    messages: list[MessageAnswer]


class BrowseRequest(Request):
    """A page of a sub-queue's waiting messages, for invoke events (HTTP takes it from the query string)."""

    limit: Annotated[int, _int(1, limits.MAX_PEEK)] = 10
    state: Literal["visible", "in_flight", "delayed"] | None = Field(None, description="only messages in this state")
    priority: Annotated[int | None, _int(0, limits.MAX_PRIORITY, "only this priority (standard queues)")] = None
    group: Annotated[
        str | None, Field(min_length=1, max_length=limits.MAX_GROUP_ID, description="only this group (FIFO queues)")
    ] = None
    cursor: Cursor | None = None


class BrowsedMessageAnswer(MessageAnswer):
    state: Literal["visible", "in_flight", "delayed"]
    until: int | None = Field(
        None, description="in flight: when the claim ends; delayed: when it is delivered; visible: null"
    )


class BrowsePageAnswer(Answer):
    messages: list[BrowsedMessageAnswer]
    cursor: str | None = Field(description="go on from here with the next request; null: read to the end")


class ArchiveRequest(Request):
    """A page of the archive of acknowledged messages, for invoke events (HTTP takes it from the query string)."""

    since: Annotated[int | None, _int(0, MAX_EPOCH_MS, "acknowledged at or after (epoch ms)")] = None
    until: Annotated[int | None, _int(0, MAX_EPOCH_MS, "acknowledged at or before (epoch ms)")] = None
    order: Literal["newest", "oldest"] = "newest"
    limit: Annotated[int, _int(1, limits.MAX_PEEK)] = 10
    cursor: Cursor | None = None


class ArchivedMessageAnswer(Answer):
    message_id: str
    client: str
    body: str
    attributes: dict[str, str]
    attribute_types: dict[str, str] = Field(default_factory=dict)
    group_id: str | None
    dedup_id: str | None = None
    priority: int = 0
    sent_at: int
    first_received_at: int | None
    acked_at: int = Field(description="when it was acknowledged (epoch ms)")
    receive_count: int
    expires_at: int = Field(description="when the archive lets it go (epoch ms)")
    attempts: list[AttemptAnswer] = Field(default_factory=list)
    last_reason: str | None = None


class ArchivePageAnswer(Answer):
    messages: list[ArchivedMessageAnswer]
    cursor: str | None = Field(description="go on from here with the next request; null: the end of the range")


class ArchivedCopies(Answer):
    messages: list[ArchivedMessageAnswer] = Field(description="one per acknowledgement of the message, oldest first")


class ReplayRequest(Request):
    """A replay of the sub-queue's archive back into it (`queue_core.replays`), of a queue that keeps an archive
    (`archive_days`): a time range (since at most until), or message ids (not both), either narrowed by attributes;
    or of its dead letters (`source` "dlq", by `reason`); the call runs it for up to `run_seconds` before it
    answers."""

    since: Annotated[int | None, _int(0, MAX_EPOCH_MS, "acknowledged at or after (epoch ms)")] = None
    until: Annotated[int | None, _int(0, MAX_EPOCH_MS, "acknowledged at or before (epoch ms); null or later: now")] = (
        None
    )
    message_ids: Annotated[
        list[MessageId] | None,
        Field(min_length=1, max_length=limits.MAX_REPLAY_IDS, description="instead of a time range"),
    ] = None
    attributes: dict[str, str] | None = Field(
        None, max_length=limits.MAX_ATTRIBUTES, description="only messages with these attribute values"
    )
    rate: Annotated[int | None, _int(1, limits.MAX_REPLAY_RATE, "new messages a second; null: 100")] = None
    source: Literal["archive", "dlq"] | None = Field(
        None, description='"dlq": the dead letters (since/until: when they died), each removed as it is sent again'
    )
    reason: str | None = Field(
        None, min_length=1, max_length=2048, description='source "dlq": dead letters whose last reason contains this'
    )
    run_seconds: Annotated[
        float, Field(ge=0, le=limits.MAX_REPLAY_RUN_SECONDS, description="run it this long before answering")
    ] = 0


class ReplayRunRequest(Request):
    replay_id: ReplayId
    seconds: Annotated[
        float, Field(ge=0, le=limits.MAX_REPLAY_RUN_SECONDS, description="go on this long (at least one batch)")
    ] = 10


class ReplayIdRequest(Request):
    replay_id: ReplayId


class ReplayListRequest(Request):
    """The sub-queue's replays, newest first, or one by id (invoke events; HTTP takes it from the query string)."""

    replay_id: ReplayId | None = None
    limit: Annotated[int, _int(1, limits.MAX_PEEK)] = 10


class ReplayAnswer(Answer):
    replay_id: str
    queue: str
    client: str
    state: Literal["running", "done", "cancelled"]
    since: int | None
    until: int | None
    message_ids: list[str] | None
    attributes: dict[str, str]
    rate: int = Field(description="new messages a second, at most")
    replayed: int = Field(description="new messages sent")
    skipped: int = Field(description="selected places with nothing to replay: filtered out, expired or gone")
    failed: int = Field(description="messages that could not be sent again (last_error says why)")
    total: int | None = Field(description="a replay by id: how many ids")
    reached_at: int | None = Field(description="a replay by time range: the acknowledgement time reached (epoch ms)")
    last_error: str | None
    created_at: int
    updated_at: int
    finished_at: int | None
    source: Literal["archive", "dlq"] = "archive"
    reason: str | None = Field(None, description='source "dlq": the text of the last reasons it selects')


class ReplayList(Answer):
    replays: list[ReplayAnswer] = Field(description="newest first")


class Purged(Answer):
    purged: int


class RedriveRequest(Request):
    max_messages: Annotated[int | None, _int(1, limits.MAX_REDRIVE, "null: all of them")] = None
    message_ids: Annotated[
        list[MessageId] | None, Field(min_length=1, max_length=limits.MAX_PEEK, description="null: oldest first")
    ] = None
    reason: str | None = Field(
        None, min_length=1, max_length=2048, description="only the dead letters whose last reason contains this text"
    )


class Redriven(Answer):
    redriven: int


class ReasonGroup(Answer):
    reason: str = Field(description="a last reason of dead letters (its first line)")
    count: int = Field(description="how many dead letters it was the last reason of")
    first_seen: int | None = Field(description="the earliest of their attempts' ends (epoch ms)")
    last_seen: int | None = Field(description="the latest of their attempts' ends (epoch ms)")


class DlqReasons(Answer):
    reasons: list[ReasonGroup] = Field(description="the distinct last reasons, the most frequent first")
    approximate: bool = Field(description="the DLQ was longer than the bounded read: the counts are lower bounds")


class Moved(Answer):
    moved: bool


# The sweeper.


class SweepRequest(Request):
    budget_seconds: Annotated[
        float | None, Field(gt=0, description="stop after this long; capped by the function's remaining time")
    ] = None


class QueueDepth(Answer):
    queue: str
    client: str
    visible: int
    in_flight: int
    delayed: int
    dlq: int
    oldest_age_seconds: int | None


class QueueShards(Answer):
    queue: str
    shards: int = Field(description="the count after this pass's decision")
    auto: bool = Field(description="true when the count follows the load")


class ShardGrowthHeld(Answer):
    queue: str
    shards: int = Field(description="the count it keeps")
    reason: str = Field(
        description=(
            "why it does not grow: unexplained, one_group, settling, cooldown, max_shards, layouts_full or unwritten"
        )
    )
    throttles_per_minute: int = Field(description="the throttles a minute its load reports show")


class SweepAnswer(Answer):
    sub_queues: int
    moved_to_dlq: int
    expired_deleted: int
    groups_freed: int
    items_read: int
    complete: bool = Field(description="false when the budget ran out with work left")
    cursor: str | None
    skipped: bool = Field(default=False, description="true when another sweep was running, so this one did nothing")
    depths: list[QueueDepth]
    shards: list[QueueShards] = Field(default_factory=list, description="each queue swept whole")
    held: list[ShardGrowthHeld] = Field(
        default_factory=list, description="each automatic queue throttled that this pass did not grow, and why"
    )
    failures: int = Field(
        default=0, description="sub-queues and queue steps DynamoDB throttled: passed over, done by the next pass"
    )
    replays_resumed: int = Field(
        default=0, description="running replays no runner had moved for a minute that this pass ran on"
    )
    replayed: int = Field(default=0, description="the new messages those replays sent in this pass")


# The API's own description.

OpenApiDocument = dict[str, Any]


# Errors.


class ErrorDetail(BaseModel):
    code: str = Field(description="ValidationError, QueueNotFound, MessageNotFound, QueueExists, ...")
    message: str


class ErrorAnswer(BaseModel):
    error: ErrorDetail


# Addresses of invoke events: the path parameters of the matching HTTP route.


class NoAddress(Request):
    pass


class QueueAddress(Request):
    queue: QueueName


class SubQueueAddress(QueueAddress):
    client: ClientId


class MessageAddress(SubQueueAddress):
    message_id: MessageId


# Each address by the path parameters of its routes: `{q}` names the queue, `{c}` the client, `{id}` the message.
ADDRESSES: Final[dict[tuple[str, ...], type[Request]]] = {
    (): NoAddress,
    ("q",): QueueAddress,
    ("q", "c"): SubQueueAddress,
    ("q", "c", "id"): MessageAddress,
}


def may_be_left_out(request: Any) -> bool:
    """Whether a request body may be absent: a model each of whose fields has a default (a union never is)."""
    return (
        isinstance(request, type)
        and issubclass(request, BaseModel)
        and not any(field.is_required() for field in request.model_fields.values())
    )
