"""Answers written as their pydantic models would write them, without loading pydantic, when that is certain.

An answer model (`queue_api.schemas`) writes its declared fields in their order (a default for each one left
out), then any other field of the answer as it came. A `Shape` does the same for an answer whose every declared
value already has the exact JSON type the model declares (an `int` that is not a `bool`, a `str`, a
`dict[str, str]`, ...) and whose other fields are plain JSON; anything else raises `Unsure`, and the answer is
validated and written by its model instead. tests/functions/test_fast_routes.py holds each shape against its model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from queue_core import limits

from .request_checks import REQUIRED, Unsure, choice, is_text, nullable, text, text_map

Write = Callable[[Any], Any]


def integer(value: Any) -> int:
    if type(value) is not int:
        raise Unsure
    return value


def flag(value: Any) -> bool:
    if type(value) is not bool:
        raise Unsure
    return value


def plain_json(value: Any) -> Any:
    """A value pydantic writes unchanged: JSON's own types, exactly, with finite numbers and text keys."""
    kind = type(value)
    if value is None or kind in (bool, int) or is_text(value):
        return value
    if kind is float and math.isfinite(value):
        return value
    if kind is list:
        return [plain_json(item) for item in value]
    if kind is dict and all(is_text(key) for key in value):
        return {key: plain_json(item) for key, item in value.items()}
    raise Unsure


@dataclass(frozen=True)
class Shape:
    """An answer model's declared fields in its order: name -> (write, default or `REQUIRED`)."""

    fields: Mapping[str, tuple[Write, Any]]

    def __call__(self, value: Any) -> dict[str, Any]:
        if type(value) is not dict or not all(is_text(key) for key in value):
            raise Unsure
        written = {}
        for name, (write, default) in self.fields.items():
            if name in value:
                written[name] = write(value[name])
            elif default is REQUIRED:
                raise Unsure
            else:
                written[name] = default() if callable(default) else default
        for name, item in value.items():
            if name not in self.fields:
                written[name] = plain_json(item)
        return written


def many(write: Write) -> Write:
    def each(value: Any) -> list[Any]:
        if type(value) is not list:
            raise Unsure
        return [write(item) for item in value]

    return each


TEXT: Final = text()
MAYBE_TEXT: Final = nullable(TEXT)
MAYBE_INT: Final = nullable(integer)
TEXT_MAP: Final = text_map(2**63)

SEND_ENTRY_RESULT: Final = Shape(
    {
        "index": (integer, REQUIRED),
        "message_id": (TEXT, REQUIRED),
        "sequence": (TEXT, REQUIRED),
        "duplicate": (flag, False),
    }
)
ENTRY_FAILURE: Final = Shape({"index": (integer, REQUIRED), "code": (TEXT, REQUIRED), "message": (TEXT, REQUIRED)})
_BATCH_FIELDS: Final = {
    "successful": (many(SEND_ENTRY_RESULT), REQUIRED),
    "failed": (many(ENTRY_FAILURE), REQUIRED),
}
SEND_BATCH_ANSWER: Final = Shape(_BATCH_FIELDS)
SEND_MESSAGE_ANSWER: Final = Shape(
    {**_BATCH_FIELDS, "message_id": (TEXT, REQUIRED), "sequence": (TEXT, REQUIRED), "duplicate": (flag, False)}
)
RECEIVED_MESSAGE_ANSWER: Final = Shape(
    {
        "message_id": (TEXT, REQUIRED),
        "receipt_handle": (TEXT, REQUIRED),
        "body": (TEXT, REQUIRED),
        "attributes": (TEXT_MAP, REQUIRED),
        "group_id": (MAYBE_TEXT, REQUIRED),
        "sequence": (TEXT, REQUIRED),
        "receive_count": (integer, REQUIRED),
        "sent_at": (integer, REQUIRED),
        "first_received_at": (MAYBE_INT, REQUIRED),
        "attribute_types": (TEXT_MAP, dict),
        "client": (TEXT, ""),
        "priority": (integer, 0),
        "dedup_id": (MAYBE_TEXT, None),
    }
)
RECEIVE_ANSWER: Final = Shape({"messages": (many(RECEIVED_MESSAGE_ANSWER), REQUIRED)})
ATTEMPT: Final = Shape(
    {
        "attempt": (integer, REQUIRED),
        "at": (MAYBE_INT, REQUIRED),
        "outcome": (choice("released", "failed", "timed_out", "visibility_expired"), REQUIRED),
        "reason": (TEXT, REQUIRED),
        "detail": (MAYBE_TEXT, None),
    }
)
MESSAGE_ANSWER: Final = Shape(
    {
        "message_id": (TEXT, REQUIRED),
        "body": (TEXT, REQUIRED),
        "attributes": (TEXT_MAP, REQUIRED),
        "group_id": (MAYBE_TEXT, REQUIRED),
        "sequence": (TEXT, REQUIRED),
        "receive_count": (integer, REQUIRED),
        "sent_at": (integer, REQUIRED),
        "first_received_at": (MAYBE_INT, REQUIRED),
        "state": (choice("visible", "in_flight", "delayed", "dlq"), REQUIRED),
        "visible_at": (MAYBE_INT, REQUIRED),
        "expires_at": (integer, REQUIRED),
        "attribute_types": (TEXT_MAP, dict),
        "priority": (integer, 0),
        "dedup_id": (MAYBE_TEXT, None),
        "body_stored": (choice("item", "compressed", "s3"), "item"),
        "moved_at": (MAYBE_INT, None),
        "attempts": (many(ATTEMPT), list),
        "last_reason": (MAYBE_TEXT, None),
        "moved_reason": (MAYBE_TEXT, None),
        "reasons_dropped": (integer, 0),
    }
)
MESSAGE_LIST: Final = Shape({"messages": (many(MESSAGE_ANSWER), REQUIRED)})
BROWSED_MESSAGE_ANSWER: Final = Shape(
    {
        **MESSAGE_ANSWER.fields,
        "state": (choice("visible", "in_flight", "delayed"), REQUIRED),
        "until": (MAYBE_INT, None),
    }
)
BROWSE_PAGE_ANSWER: Final = Shape(
    {"messages": (many(BROWSED_MESSAGE_ANSWER), REQUIRED), "cursor": (MAYBE_TEXT, REQUIRED)}
)
ARCHIVED_MESSAGE_ANSWER: Final = Shape(
    {
        "message_id": (TEXT, REQUIRED),
        "client": (TEXT, REQUIRED),
        "body": (TEXT, REQUIRED),
        "attributes": (TEXT_MAP, REQUIRED),
        "attribute_types": (TEXT_MAP, dict),
        "group_id": (MAYBE_TEXT, REQUIRED),
        "dedup_id": (MAYBE_TEXT, None),
        "priority": (integer, 0),
        "sent_at": (integer, REQUIRED),
        "first_received_at": (MAYBE_INT, REQUIRED),
        "acked_at": (integer, REQUIRED),
        "receive_count": (integer, REQUIRED),
        "expires_at": (integer, REQUIRED),
        "attempts": (many(ATTEMPT), list),
        "last_reason": (MAYBE_TEXT, None),
    }
)
ARCHIVE_PAGE_ANSWER: Final = Shape(
    {"messages": (many(ARCHIVED_MESSAGE_ANSWER), REQUIRED), "cursor": (MAYBE_TEXT, REQUIRED)}
)
ARCHIVED_COPIES: Final = Shape({"messages": (many(ARCHIVED_MESSAGE_ANSWER), REQUIRED)})
QUEUE_STATS_ANSWER: Final = Shape(
    {
        "visible": (integer, REQUIRED),
        "in_flight": (integer, REQUIRED),
        "delayed": (integer, REQUIRED),
        "dlq": (integer, REQUIRED),
        "oldest_age_seconds": (MAYBE_INT, REQUIRED),
        "approximate": (flag, False),
    }
)
_QUEUE_SETTINGS_FIELDS: Final = {
    "name": (TEXT, REQUIRED),
    "fifo": (flag, REQUIRED),
    "visibility_timeout": (integer, REQUIRED),
    "max_receive_count": (integer, REQUIRED),
    "retention_seconds": (integer, REQUIRED),
    "delay_seconds": (integer, REQUIRED),
    "dedup_window_seconds": (integer, REQUIRED),
    "content_based_dedup": (flag, REQUIRED),
    "shards": (integer, REQUIRED),
    "auto_shards": (flag, False),
    "min_shards": (integer, 1),
    "max_shards": (integer, limits.MAX_SHARDS),
    "max_message_bytes": (integer, limits.MAX_BODY_BYTES),
    "receive_wait_seconds": (integer, 0),
    "queue_wide": (flag, False),
    "archive_days": (integer, 0),
    "created_at": (integer, REQUIRED),
}
QUEUE_SETTINGS_ANSWER: Final = Shape(_QUEUE_SETTINGS_FIELDS)
QUEUE_DESCRIPTION: Final = Shape(
    {**_QUEUE_SETTINGS_FIELDS, "stats": (QUEUE_STATS_ANSWER, REQUIRED), "client_count": (integer, REQUIRED)}
)
QUEUE_LIST: Final = Shape({"queues": (many(QUEUE_SETTINGS_ANSWER), REQUIRED)})
DELETE_ENTRY_RESULT: Final = Shape({"index": (integer, REQUIRED)})
DELETE_ANSWER: Final = Shape(
    {"successful": (many(DELETE_ENTRY_RESULT), REQUIRED), "failed": (many(ENTRY_FAILURE), REQUIRED)}
)
VISIBLE_AT: Final = Shape({"visible_at": (integer, REQUIRED)})
PURGED: Final = Shape({"purged": (integer, REQUIRED)})
DELETED: Final = Shape({"deleted": (flag, REQUIRED)})
CLIENT_LIST: Final = Shape({"clients": (many(TEXT), REQUIRED)})
MOVED: Final = Shape({"moved": (flag, REQUIRED)})
REDRIVEN: Final = Shape({"redriven": (integer, REQUIRED)})
REASON_GROUP: Final = Shape(
    {
        "reason": (TEXT, REQUIRED),
        "count": (integer, REQUIRED),
        "first_seen": (MAYBE_INT, REQUIRED),
        "last_seen": (MAYBE_INT, REQUIRED),
    }
)
DLQ_REASONS: Final = Shape({"reasons": (many(REASON_GROUP), REQUIRED), "approximate": (flag, REQUIRED)})
REPLAY_ANSWER: Final = Shape(
    {
        "replay_id": (TEXT, REQUIRED),
        "queue": (TEXT, REQUIRED),
        "client": (TEXT, REQUIRED),
        "state": (choice("running", "done", "cancelled"), REQUIRED),
        "since": (MAYBE_INT, REQUIRED),
        "until": (MAYBE_INT, REQUIRED),
        "message_ids": (nullable(many(TEXT)), REQUIRED),
        "attributes": (TEXT_MAP, REQUIRED),
        "rate": (integer, REQUIRED),
        "replayed": (integer, REQUIRED),
        "skipped": (integer, REQUIRED),
        "failed": (integer, REQUIRED),
        "total": (MAYBE_INT, REQUIRED),
        "reached_at": (MAYBE_INT, REQUIRED),
        "last_error": (MAYBE_TEXT, REQUIRED),
        "created_at": (integer, REQUIRED),
        "updated_at": (integer, REQUIRED),
        "finished_at": (MAYBE_INT, REQUIRED),
        "source": (choice("archive", "dlq"), "archive"),
        "reason": (MAYBE_TEXT, None),
    }
)
REPLAY_LIST: Final = Shape({"replays": (many(REPLAY_ANSWER), REQUIRED)})
QUEUE_DEPTH: Final = Shape(
    {
        "queue": (TEXT, REQUIRED),
        "client": (TEXT, REQUIRED),
        "visible": (integer, REQUIRED),
        "in_flight": (integer, REQUIRED),
        "delayed": (integer, REQUIRED),
        "dlq": (integer, REQUIRED),
        "oldest_age_seconds": (MAYBE_INT, REQUIRED),
    }
)
QUEUE_SHARDS: Final = Shape({"queue": (TEXT, REQUIRED), "shards": (integer, REQUIRED), "auto": (flag, REQUIRED)})
SHARD_GROWTH_HELD: Final = Shape(
    {
        "queue": (TEXT, REQUIRED),
        "shards": (integer, REQUIRED),
        "reason": (TEXT, REQUIRED),
        "throttles_per_minute": (integer, REQUIRED),
    }
)
SWEEP_ANSWER: Final = Shape(
    {
        "sub_queues": (integer, REQUIRED),
        "moved_to_dlq": (integer, REQUIRED),
        "expired_deleted": (integer, REQUIRED),
        "groups_freed": (integer, REQUIRED),
        "items_read": (integer, REQUIRED),
        "complete": (flag, REQUIRED),
        "cursor": (MAYBE_TEXT, REQUIRED),
        "skipped": (flag, False),
        "depths": (many(QUEUE_DEPTH), REQUIRED),
        "shards": (many(QUEUE_SHARDS), list),
        "held": (many(SHARD_GROWTH_HELD), list),
        "failures": (integer, 0),
        "replays_resumed": (integer, 0),
        "replayed": (integer, 0),
    }
)
# Each shape by the name of the model it mirrors in `queue_api.schemas`.
MODELS: Final = {
    "SendEntryResult": SEND_ENTRY_RESULT,
    "EntryFailure": ENTRY_FAILURE,
    "SendBatchAnswer": SEND_BATCH_ANSWER,
    "SendMessageAnswer": SEND_MESSAGE_ANSWER,
    "ReceivedMessageAnswer": RECEIVED_MESSAGE_ANSWER,
    "ReceiveAnswer": RECEIVE_ANSWER,
    "MessageAnswer": MESSAGE_ANSWER,
    "MessageList": MESSAGE_LIST,
    "AttemptAnswer": ATTEMPT,
    "BrowsedMessageAnswer": BROWSED_MESSAGE_ANSWER,
    "BrowsePageAnswer": BROWSE_PAGE_ANSWER,
    "ArchivedMessageAnswer": ARCHIVED_MESSAGE_ANSWER,
    "ArchivePageAnswer": ARCHIVE_PAGE_ANSWER,
    "ArchivedCopies": ARCHIVED_COPIES,
    "QueueStatsAnswer": QUEUE_STATS_ANSWER,
    "QueueSettingsAnswer": QUEUE_SETTINGS_ANSWER,
    "QueueDescription": QUEUE_DESCRIPTION,
    "QueueList": QUEUE_LIST,
    "DeleteEntryResult": DELETE_ENTRY_RESULT,
    "DeleteAnswer": DELETE_ANSWER,
    "VisibleAt": VISIBLE_AT,
    "Purged": PURGED,
    "Deleted": DELETED,
    "ClientList": CLIENT_LIST,
    "Moved": MOVED,
    "Redriven": REDRIVEN,
    "ReplayAnswer": REPLAY_ANSWER,
    "ReplayList": REPLAY_LIST,
    "ReasonGroup": REASON_GROUP,
    "DlqReasons": DLQ_REASONS,
    "QueueDepth": QUEUE_DEPTH,
    "QueueShards": QUEUE_SHARDS,
    "ShardGrowthHeld": SHARD_GROWTH_HELD,
    "SweepAnswer": SWEEP_ANSWER,
}
