"""Argument checks. Every check runs before anything is written and names the argument and its allowed range."""

from __future__ import annotations

import binascii
import json
import re
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from . import limits
from .errors import MessageTooLarge, ValidationError

_NAME = re.compile(r"[A-Za-z0-9_-]{1,80}")
_FIFO_NAME = re.compile(r"[A-Za-z0-9_-]{1,75}\.fifo")
_GROUP = re.compile(r"[!-~]{1,128}")  # printable ASCII, as SQS allows for group and dedup ids
# SQS's data types: a base type and an optional custom label after a dot (`Number.float`, `Binary.gif`).
_DATA_TYPE = re.compile(r"(String|Number|Binary)(\.[!-~]+)?")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
PLAIN_TYPE = "String"


def queue_name(name: Any) -> str:
    if not isinstance(name, str) or not (_NAME.fullmatch(name) or _FIFO_NAME.fullmatch(name)):
        raise ValidationError(
            "queue name must be 1-80 characters of A-Za-z0-9_- (a FIFO queue's name may end in .fifo)"
        )
    return name


def client_id(client: Any) -> str:
    if not isinstance(client, str) or not _NAME.fullmatch(client):
        raise ValidationError("client id must be 1-80 characters of A-Za-z0-9_-")
    return client


def integer(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValidationError(f"{name} must be an integer from {low} to {high}")
    if not low <= value <= high:
        raise ValidationError(f"{name} must be from {low} to {high}, got {value}")
    return value


def boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be true or false")
    return value


def body(value: Any, max_bytes: int = limits.MAX_BODY_BYTES) -> str:
    """`max_bytes` is the queue's `max_message_bytes`: the one check of a message's size on every send path."""
    if not isinstance(value, str):
        raise ValidationError("body must be a string")
    if not value:
        raise ValidationError("body must not be empty")
    size = len(value.encode("utf-8", errors="strict")) if value.isascii() else _utf8_size(value)
    if size > max_bytes:
        raise MessageTooLarge(f"body is {size} bytes; the queue's max_message_bytes allows at most {max_bytes}")
    if size * _WORST_ESCAPE + _QUOTES > limits.MAX_ANSWERED_BODY_BYTES:
        answered = len(json.dumps(json.dumps(value)))
        if answered > limits.MAX_ANSWERED_BODY_BYTES:
            raise MessageTooLarge(
                f"body escapes to {answered} bytes of JSON in an answer through API Gateway, more than "
                f"{limits.MAX_ANSWERED_BODY_BYTES} (Lambda answers at most 6 MB): it is mostly control characters; "
                "send it encoded (base64), or shorter"
            )
    return value


# The most bytes one character of a body takes in twice-escaped JSON (a control character, written \\u0001 in the
# answer), and the two levels of quotes around the body.
_WORST_ESCAPE = 7
_QUOTES = 6


def _utf8_size(value: str) -> int:
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError as error:
        raise ValidationError("body must be valid Unicode text (no lone surrogates)") from error


def attributes(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError("attributes must be an object of string values")
    if len(value) > limits.MAX_ATTRIBUTES:
        raise ValidationError(f"attributes: at most {limits.MAX_ATTRIBUTES} allowed, got {len(value)}")
    size = 0
    for key, item in value.items():
        if not isinstance(key, str) or not 1 <= len(key) <= limits.MAX_ATTRIBUTE_NAME:
            raise ValidationError(f"attribute names must be 1-{limits.MAX_ATTRIBUTE_NAME} characters")
        if not isinstance(item, str):
            raise ValidationError(f"attribute {key[:50]!r} must be a string")
        size += _utf8_size(key + item)
    if size > limits.MAX_ATTRIBUTES_BYTES:
        raise MessageTooLarge(
            f"attributes are {size} bytes (names and values); at most {limits.MAX_ATTRIBUTES_BYTES} bytes allowed"
        )
    return dict(value)


def attribute_types(value: Any, attributes: dict[str, str]) -> dict[str, str]:
    """The data types of typed attributes, by SQS's rules: `String`, `Number` or `Binary` with an optional custom
    label; a Number value is a decimal number SQS accepts, a Binary value is base64 text. Plain `String` types are
    dropped, so that the stored map (and every answer) lists only the attributes whose type is not plain."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError("attribute_types must be an object of data type names")
    types: dict[str, str] = {}
    size = 0
    for key, data_type in value.items():
        if key not in attributes:
            raise ValidationError(f"attribute_types names {str(key)[:50]!r}, which is not among the attributes")
        if (
            not isinstance(data_type, str)
            or len(data_type) > limits.MAX_ATTRIBUTE_TYPE
            or not _DATA_TYPE.fullmatch(data_type)
        ):
            raise ValidationError(
                f"attribute {key[:50]!r}: the data type must be String, Number or Binary, optionally followed by "
                f"a custom label (Number.float), at most {limits.MAX_ATTRIBUTE_TYPE} characters"
            )
        _typed_value(key, data_type, attributes[key])
        size += len(data_type)
        if data_type != PLAIN_TYPE:
            types[key] = data_type
    attribute_size = sum(_utf8_size(key + item) for key, item in attributes.items())
    if attribute_size + size > limits.MAX_ATTRIBUTES_BYTES:
        raise MessageTooLarge(
            f"attributes are {attribute_size + size} bytes (names, types and values); at most "
            f"{limits.MAX_ATTRIBUTES_BYTES} bytes allowed"
        )
    return types


def _typed_value(key: str, data_type: str, value: str) -> None:
    if data_type.startswith("Number"):
        if not _NUMBER.fullmatch(value) or not _sqs_number(value):
            raise ValidationError(
                f"attribute {key[:50]!r}: a Number must be a decimal number of at most "
                f"{limits.MAX_NUMBER_DIGITS} digits, from 10^{limits.MIN_NUMBER_EXPONENT} to "
                f"10^{limits.MAX_NUMBER_EXPONENT}"
            )
    elif data_type.startswith("Binary"):
        try:
            binascii.a2b_base64(value.encode("ascii"), strict_mode=True)
        except (UnicodeEncodeError, binascii.Error) as error:
            raise ValidationError(f"attribute {key[:50]!r}: a Binary value must be base64 text") from error


def _sqs_number(text: str) -> bool:
    try:
        number = Decimal(text)
    except InvalidOperation:
        return False
    if number.is_zero():
        return True
    # Significant digits, counted exactly (normalize() would round to the context's precision first).
    digits = "".join(map(str, number.as_tuple().digits)).strip("0")
    magnitude = number.copy_abs().adjusted()
    return len(digits) <= limits.MAX_NUMBER_DIGITS and (
        limits.MIN_NUMBER_EXPONENT <= magnitude <= limits.MAX_NUMBER_EXPONENT
    )


def stored_size(
    attributes: dict[str, str],
    group_id: str | None,
    dedup_id: str | None,
    attribute_types: dict[str, str] | None = None,
) -> int:
    """What a message adds to its item besides its body, counted as DynamoDB counts item size (UTF-8 names and
    values); refused unless the item keeps room for a body's pointer and everything the queue writes into it later
    (a claim, a DLQ move). The body itself is stored compressed or offloaded as its size needs (`bodies`)."""
    size = sum(_utf8_size(key + item) for key, item in attributes.items())
    size += sum(_utf8_size(key + data_type) for key, data_type in (attribute_types or {}).items())
    size += len(group_id or "") + len(dedup_id or "")
    if size > limits.MAX_ITEM_BYTES - limits.ITEM_HEADROOM_BYTES:
        raise MessageTooLarge(
            f"the message's attributes and ids take {size} bytes; at most "
            f"{limits.MAX_ITEM_BYTES - limits.ITEM_HEADROOM_BYTES} bytes can be stored"
        )
    return size


def tags(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > limits.MAX_TAGS:
        raise ValidationError(f"tags must be an object of at most {limits.MAX_TAGS} string values")
    for key, item in value.items():
        if not isinstance(key, str) or not 1 <= len(key) <= limits.MAX_TAG_KEY or key.lower().startswith("aws:"):
            raise ValidationError(f"tag keys must be 1-{limits.MAX_TAG_KEY} characters, not starting with aws:")
        if not isinstance(item, str) or len(item) > limits.MAX_TAG_VALUE:
            raise ValidationError(f"tag {key[:50]!r}: the value must be a string of at most {limits.MAX_TAG_VALUE}")
    return dict(value)


def group_id(value: Any, fifo: bool) -> str | None:
    if not fifo:
        if value is not None:
            raise ValidationError("group_id is only for FIFO queues")
        return None
    if value is None:
        raise ValidationError("group_id is required on a FIFO queue")
    if not isinstance(value, str) or not _GROUP.fullmatch(value):
        raise ValidationError("group_id must be 1-128 printable ASCII characters")
    return value


def dedup_id(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _GROUP.fullmatch(value):
        raise ValidationError("dedup_id must be 1-128 printable ASCII characters")
    return value


def order(value: Any) -> str:
    if value not in ("oldest", "newest"):
        raise ValidationError("order must be 'oldest' or 'newest'")
    return value


def batch(name: str, entries: Any, high: int = limits.MAX_BATCH) -> list[Any]:
    if not isinstance(entries, list | tuple) or not 1 <= len(entries) <= high:
        size = len(entries) if isinstance(entries, list | tuple) else "no list"
        raise ValidationError(f"{name} must hold 1 to {high} entries, got {size}")
    return list(entries)


def priority(value: Any, fifo: bool) -> int:
    if value is None:
        return 0
    if fifo:
        raise ValidationError("priority is only for standard queues: a FIFO group's order is its order")
    return integer("priority", value, 0, limits.MAX_PRIORITY)


def latest_delay_seconds(retention_seconds: int) -> int:
    """A message is kept `retention_seconds` from its send and must stay deliverable for
    `limits.MIN_DELIVERY_WINDOW_SECONDS` of them: the longest delay that allows."""
    return max(0, retention_seconds - limits.MIN_DELIVERY_WINDOW_SECONDS)


def delay(value: Any, retention_seconds: int) -> int:
    """A send's delay: up to the queue's retention less the window in which the message stays deliverable."""
    latest = latest_delay_seconds(retention_seconds)
    try:
        return integer("delay_seconds", value, 0, latest)
    except ValidationError:
        raise ValidationError(
            f"delay_seconds must be an integer from 0 to {latest}: the queue's retention ({retention_seconds} s) "
            f"less the {limits.MIN_DELIVERY_WINDOW_SECONDS} s in which a message stays deliverable"
        ) from None


def deliver_at(value: Any, now_ms: int, retention_seconds: int) -> int:
    """Epoch seconds (a number) or an ISO-8601 time with a zone; the past means now; later than the longest delay
    (`latest_delay_seconds`) from now refused. Returns epoch milliseconds."""
    if isinstance(value, bool):
        raise ValidationError("deliver_at must be epoch seconds or an ISO-8601 time with a zone")
    if isinstance(value, int | float):
        if value != value or value in (float("inf"), float("-inf")) or not 0 <= value < 1e11:
            raise ValidationError("deliver_at must be epoch seconds or an ISO-8601 time with a zone")
        at_ms = int(value * 1000)
    elif isinstance(value, str) and len(value) <= 64:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError as error:
            raise ValidationError(f"deliver_at {value!r} is not an ISO-8601 time") from error
        if parsed.tzinfo is None:
            raise ValidationError("deliver_at must name its zone (e.g. 2030-01-01T00:00:00Z or +02:00)")
        at_ms = int(parsed.timestamp() * 1000)
    else:
        raise ValidationError("deliver_at must be epoch seconds or an ISO-8601 time with a zone")
    latest = latest_delay_seconds(retention_seconds)
    if at_ms > now_ms + latest * 1000:
        raise ValidationError(
            f"deliver_at is more than {latest} s from now: the queue's retention ({retention_seconds} s) less the "
            f"{limits.MIN_DELIVERY_WINDOW_SECONDS} s in which a message stays deliverable; later, the message would "
            "expire before it could be delivered"
        )
    return at_ms
