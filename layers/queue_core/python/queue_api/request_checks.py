"""Checks of a request that vouch only for what they are sure of, without loading pydantic.

A check returns the request as the pydantic model would hold it (every field, defaults filled in, in the model's
order) or raises `Unsure`. It accepts a value only when pydantic would accept exactly that value: the exact JSON
type (an `int` that is not a `bool`, a `str`), in range, with only the model's known fields. Anything else (a
quoted number, a float where an integer goes, an unknown field, a value out of range, text that is not
UTF-8) is `Unsure`, and the request goes the pydantic way, which gives the same 400 as ever. So these checks
decide nothing a client can see; they only spare a well-formed request the cost of loading the models.

Each `Fields` table mirrors one model of `queue_api.schemas`; tests/functions/test_fast_routes.py holds each table
against its model (same fields, order and defaults) and feeds both the same generated requests.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from queue_core import limits

from .names import (
    CLIENT_ID_PATTERN,
    CURSOR_PATTERN,
    MAX_EPOCH_MS,
    MAX_MESSAGE_ID,
    MESSAGE_ID_PATTERN,
    QUEUE_NAME_PATTERN,
    REPLAY_ID_PATTERN,
)

Check = Callable[[Any], Any]
REQUIRED: Final = object()


class Unsure(Exception):
    """The fast check cannot vouch for this input: the pydantic path decides."""


def is_text(value: Any) -> bool:
    """An exact `str` that encodes as UTF-8 (no lone surrogate)."""
    if type(value) is not str:
        return False
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def strict_int(low: int, high: int | None = None) -> Check:
    """`Field(strict=True, ge=low, le=high)` on an `int`."""

    def check(value: Any) -> int:
        if type(value) is not int or value < low or (high is not None and value > high):
            raise Unsure
        return value

    return check


def strict_bool(value: Any) -> bool:
    """`Field(strict=True)` on a `bool`: JSON's `true` or `false`, never 0, 1 or text."""
    if type(value) is not bool:
        raise Unsure
    return value


def text(min_length: int = 0, max_length: int | None = None) -> Check:
    """A `str` with `min_length`/`max_length` (counted in characters, as pydantic counts)."""

    def check(value: Any) -> str:
        if not is_text(value) or len(value) < min_length or (max_length is not None and len(value) > max_length):
            raise Unsure
        return value

    return check


def text_map(max_items: int) -> Check:
    """A `dict[str, str]` of at most `max_items` entries."""

    def check(value: Any) -> dict[str, str]:
        if type(value) is not dict or len(value) > max_items:
            raise Unsure
        if not all(is_text(key) and is_text(item) for key, item in value.items()):
            raise Unsure
        return dict(value)

    return check


def choice(*values: str) -> Check:
    """A `Literal` of strings."""

    def check(value: Any) -> str:
        if type(value) is not str or value not in values:
            raise Unsure
        return value

    return check


def seconds(high: float) -> Check:
    """A lax `float` with `ge=0, le=high`: a JSON integer is held as the float it equals (pydantic's conversion),
    a finite float as it is; text, booleans and anything out of range are `Unsure`."""

    def check(value: Any) -> float:
        if type(value) is int:
            if not 0 <= value <= high:  # compared as an int: one past a float's range has no float to convert to
                raise Unsure
            value = float(value)
        if type(value) is not float or not 0 <= value <= high:
            raise Unsure
        return value

    return check


def instant(value: Any) -> Any:
    """A strict `int`, a strict finite `float` or a `str`, tried left to right (a send's `deliver_at`)."""
    if type(value) is int or (type(value) is float and math.isfinite(value)) or is_text(value):
        return value
    raise Unsure


def matching(pattern: str) -> Check:
    """A `str` with `StringConstraints(pattern=...)`: the whole text matches."""
    compiled = re.compile(pattern)

    def check(value: Any) -> str:
        if not is_text(value) or compiled.fullmatch(value) is None:
            raise Unsure
        return value

    return check


def either(*checks: Check) -> Check:
    """A union of types that take disjoint values (`int | Literal["auto"]`): the one check that takes it."""

    def check(value: Any) -> Any:
        for each in checks:
            try:
                return each(value)
            except Unsure:
                continue
        raise Unsure

    return check


def nullable(check: Check) -> Check:
    """`X | None`."""
    return lambda value: None if value is None else check(value)


@dataclass(frozen=True)
class Fields:
    """A request model's fields in its order: name -> (check, default or `REQUIRED`); unknown fields refused."""

    fields: Mapping[str, tuple[Check, Any]]

    def __call__(self, value: Any) -> dict[str, Any]:
        if type(value) is not dict or not value.keys() <= self.fields.keys():
            raise Unsure
        checked = {}
        for name, (check, default) in self.fields.items():
            if name in value:
                checked[name] = check(value[name])
            elif default is REQUIRED:
                raise Unsure
            else:
                checked[name] = default
        return checked


def items(check: Check, min_length: int, max_length: int) -> Check:
    """A `list[X]` of `min_length`..`max_length` items."""

    def each(value: Any) -> list[Any]:
        if type(value) is not list or not min_length <= len(value) <= max_length:
            raise Unsure
        return [check(item) for item in value]

    return each


SEND_MESSAGE: Final = Fields(
    {
        "body": (text(1), REQUIRED),
        "attributes": (nullable(text_map(limits.MAX_ATTRIBUTES)), None),
        "attribute_types": (nullable(text_map(limits.MAX_ATTRIBUTES)), None),
        "delay_seconds": (nullable(strict_int(0, limits.MAX_RETENTION_SECONDS)), None),
        "deliver_at": (nullable(instant), None),
        "priority": (nullable(strict_int(0, limits.MAX_PRIORITY)), None),
        "group_id": (nullable(text(1, limits.MAX_GROUP_ID)), None),
        "dedup_id": (nullable(text(1, limits.MAX_DEDUP_ID)), None),
    }
)
SEND_BATCH: Final = Fields({"messages": (items(SEND_MESSAGE, 1, limits.MAX_BATCH), REQUIRED)})
RECEIVE: Final = Fields(
    {
        "max_messages": (strict_int(1, limits.MAX_RECEIVE), 1),
        "visibility_timeout": (nullable(strict_int(0, limits.MAX_VISIBILITY_SECONDS)), None),
        "wait_seconds": (strict_int(0, limits.MAX_WAIT_SECONDS), 0),
        "order": (choice("oldest", "newest"), "oldest"),
    }
)
# The shape of every receipt handle the core issues (`queue_core.receipts.signed`: a base64url payload, a dot, a
# 16-byte MAC in base64url). A check vouches only for handles of that shape, however much more a model takes.
_ISSUED_HANDLE: Final = re.compile(r"[A-Za-z0-9_-]{1,2000}\.[A-Za-z0-9_-]{22}")


def issued_handle(value: Any) -> str:
    """A receipt handle of the shape the core issues."""
    if type(value) is not str or _ISSUED_HANDLE.fullmatch(value) is None:
        raise Unsure
    return value


DELETE: Final = Fields({"receipt_handles": (items(issued_handle, 1, limits.MAX_BATCH), REQUIRED)})
VISIBILITY: Final = Fields(
    {
        "receipt_handle": (issued_handle, REQUIRED),
        "visibility_timeout": (strict_int(0, limits.MAX_VISIBILITY_SECONDS), REQUIRED),
    }
)
RELEASE: Final = Fields(
    {
        "receipt_handle": (issued_handle, REQUIRED),
        "delay_seconds": (nullable(strict_int(0, limits.MAX_VISIBILITY_SECONDS)), None),
        "reason": (nullable(text(0, 64 * 1024)), None),
    }
)
_MESSAGE_ID: Final = re.compile(MESSAGE_ID_PATTERN)


def message_id(value: Any) -> str:
    """A message id of the shape the core issues, at most `MAX_MESSAGE_ID` characters (`schemas.MessageId`)."""
    if not is_text(value) or len(value) > MAX_MESSAGE_ID or _MESSAGE_ID.fullmatch(value) is None:
        raise Unsure
    return value


REDRIVE: Final = Fields(
    {
        "max_messages": (nullable(strict_int(1, limits.MAX_REDRIVE)), None),
        "message_ids": (nullable(items(message_id, 1, limits.MAX_PEEK)), None),
        "reason": (nullable(text(1, 2048)), None),
    }
)
_REPLAY_ID: Final = matching(REPLAY_ID_PATTERN)
_TIME: Final = nullable(strict_int(0, MAX_EPOCH_MS))
REPLAY: Final = Fields(
    {
        "since": (_TIME, None),
        "until": (_TIME, None),
        "message_ids": (nullable(items(message_id, 1, limits.MAX_REPLAY_IDS)), None),
        "attributes": (nullable(text_map(limits.MAX_ATTRIBUTES)), None),
        "rate": (nullable(strict_int(1, limits.MAX_REPLAY_RATE)), None),
        "source": (nullable(choice("archive", "dlq")), None),
        "reason": (nullable(text(1, 2048)), None),
        "run_seconds": (seconds(limits.MAX_REPLAY_RUN_SECONDS), 0),
    }
)
REPLAY_RUN: Final = Fields(
    {"replay_id": (_REPLAY_ID, REQUIRED), "seconds": (seconds(limits.MAX_REPLAY_RUN_SECONDS), 10)}
)
REPLAY_ID: Final = Fields({"replay_id": (_REPLAY_ID, REQUIRED)})
# A queue's settings, by field: the check of a given value and the default of one left out at creation.
_SHARDS: Final = either(strict_int(1, limits.MAX_SHARDS), choice("auto"))
_SETTINGS: Final = {
    "fifo": (strict_bool, False),
    "visibility_timeout": (strict_int(0, limits.MAX_VISIBILITY_SECONDS), limits.DEFAULT_VISIBILITY_SECONDS),
    "max_receive_count": (strict_int(0, limits.MAX_RECEIVE_COUNT), limits.DEFAULT_MAX_RECEIVE_COUNT),
    "retention_seconds": (
        strict_int(limits.MIN_RETENTION_SECONDS, limits.MAX_RETENTION_SECONDS),
        limits.DEFAULT_RETENTION_SECONDS,
    ),
    "delay_seconds": (strict_int(0, limits.MAX_DELAY_SECONDS), limits.DEFAULT_DELAY_SECONDS),
    "dedup_window_seconds": (strict_int(0, limits.MAX_DEDUP_WINDOW_SECONDS), limits.DEFAULT_DEDUP_WINDOW_SECONDS),
    "content_based_dedup": (strict_bool, False),
    "shards": (_SHARDS, "auto"),
    "min_shards": (strict_int(1, limits.MAX_SHARDS), 1),
    "max_shards": (strict_int(1, limits.MAX_SHARDS), limits.MAX_SHARDS),
    "max_message_bytes": (strict_int(limits.MIN_MESSAGE_BYTES, limits.MAX_BODY_BYTES), limits.MAX_BODY_BYTES),
    "receive_wait_seconds": (strict_int(0, limits.MAX_WAIT_SECONDS), 0),
    "queue_wide": (strict_bool, False),
    "archive_days": (strict_int(0, limits.MAX_ARCHIVE_DAYS), 0),
}
CREATE_QUEUE: Final = Fields(_SETTINGS)
# A change names only what changes (null or left out: kept); the settings fixed at creation are not fields.
UPDATE_QUEUE: Final = Fields(
    {
        name: (nullable(check), None)
        for name, (check, _default) in _SETTINGS.items()
        if name not in ("fifo", "content_based_dedup")
    }
)
# Requests of the routes that take a query string (HTTP) and of their invoke actions.
LIST: Final = Fields({"limit": (strict_int(1, limits.MAX_PEEK), 10)})
_CURSOR: Final = nullable(matching(CURSOR_PATTERN))
BROWSE: Final = Fields(
    {
        **LIST.fields,
        "state": (nullable(choice("visible", "in_flight", "delayed")), None),
        "priority": (nullable(strict_int(0, limits.MAX_PRIORITY)), None),
        "group": (nullable(text(1, limits.MAX_GROUP_ID)), None),
        "cursor": (_CURSOR, None),
    }
)
ARCHIVE: Final = Fields(
    {
        "since": (_TIME, None),
        "until": (_TIME, None),
        "order": (choice("newest", "oldest"), "newest"),
        **LIST.fields,
        "cursor": (_CURSOR, None),
    }
)
REPLAY_LIST: Final = Fields({"replay_id": (nullable(_REPLAY_ID), None), **LIST.fields})
# Each table by the name of the model it mirrors in `queue_api.schemas`.
MODELS: Final = {
    "SendMessageRequest": SEND_MESSAGE,
    "SendBatchRequest": SEND_BATCH,
    "ReceiveRequest": RECEIVE,
    "DeleteRequest": DELETE,
    "VisibilityRequest": VISIBILITY,
    "ReleaseRequest": RELEASE,
    "CreateQueueRequest": CREATE_QUEUE,
    "UpdateQueueRequest": UPDATE_QUEUE,
    "ListRequest": LIST,
    "BrowseRequest": BROWSE,
    "ArchiveRequest": ARCHIVE,
    "RedriveRequest": REDRIVE,
    "ReplayRequest": REPLAY,
    "ReplayRunRequest": REPLAY_RUN,
    "ReplayIdRequest": REPLAY_ID,
    "ReplayListRequest": REPLAY_LIST,
}

_PATH_PATTERNS: Final = {"q": re.compile(QUEUE_NAME_PATTERN), "c": re.compile(CLIENT_ID_PATTERN)}
# A number in a query string as the fast checks take it: plain decimal digits, no sign, space or leading zero.
_DECIMAL: Final = re.compile(r"0|[1-9][0-9]{0,15}")
# The query parameters that are numbers (`queue_api.http.QUERY_PARAMETERS` gives each name one type).
QUERY_NUMBERS: Final = frozenset({"since", "until", "limit", "priority"})


def path_names(parameters: Mapping[str, str]) -> dict[str, str]:
    """The queue, client and message id of a route's path parameters (`q`, `c`, `id`); any other is `Unsure`."""
    for name, value in parameters.items():
        if name == "id":
            message_id(value)
            continue
        pattern = _PATH_PATTERNS.get(name)
        if pattern is None or not is_text(value) or pattern.fullmatch(value) is None:
            raise Unsure
    return dict(parameters)


def query(event: Mapping[str, Any], table: Fields) -> dict[str, Any]:
    """The query string as `table`'s model holds it: each parameter given once as text, a number in plain decimal
    digits; any other query string (an unknown or repeated parameter, a sign, a space, a leading zero, a value out
    of range) is `Unsure`."""
    single = event.get("queryStringParameters") or {}
    multiple = event.get("multiValueQueryStringParameters") or {}
    if type(single) is not dict or type(multiple) is not dict:
        raise Unsure
    if multiple and multiple != {name: [value] for name, value in single.items()}:
        raise Unsure
    given = {}
    for name, value in single.items():
        if not is_text(name) or not is_text(value):
            raise Unsure
        if name in QUERY_NUMBERS:
            if _DECIMAL.fullmatch(value) is None:
                raise Unsure
            value = int(value)
        given[name] = value
    return table(given)
