"""SQS message attributes (`{"name": {"DataType": ..., "StringValue" | "BinaryValue": ...}}`) and the core's
typed attributes (`attributes` name -> text, `attribute_types` name -> data type, Binary as base64 text)."""

from __future__ import annotations

import base64
import re
from typing import Any, Final

from queue_core import limits

from .errors import invalid
from .shapes import decoded_blob

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,256}")
_RESERVED = ("aws.", "amazon.")
PLAIN: Final = "String"
# Characters SQS allows in a body and in a String attribute (XML 1.0's).
_NOT_ALLOWED = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def allowed_text(text: str) -> bool:
    return _NOT_ALLOWED.search(text) is None


def from_sqs(raw: dict[str, Any] | None) -> tuple[dict[str, str], dict[str, str], int]:
    """The core's attributes and types, and their size as SQS counts it (name, type and value bytes)."""
    attributes: dict[str, str] = {}
    types: dict[str, str] = {}
    size = 0
    for name, value in (raw or {}).items():
        _check_name(name)
        data_type = value.get("DataType")
        if not data_type:
            raise invalid(f"The message attribute '{name}' must contain a DataType.")
        if value.get("StringListValues") or value.get("BinaryListValues"):
            raise invalid(f"The message attribute '{name}': list values are not supported (nor by SQS).")
        if data_type.startswith("Binary"):
            if value.get("StringValue") is not None or not value.get("BinaryValue"):
                raise invalid(f"The message attribute '{name}' with type 'Binary' must use field 'Binary'.")
            raw_bytes = decoded_blob(value["BinaryValue"], name)
            text, length = base64.b64encode(raw_bytes).decode("ascii"), len(raw_bytes)
        else:
            text = value.get("StringValue")
            if value.get("BinaryValue") is not None or not text:
                raise invalid(f"The message attribute '{name}' must contain a non-empty value of type 'String'.")
            if not allowed_text(text):
                raise invalid(f"The message attribute '{name}' contains characters outside the allowed set.")
            length = len(text.encode("utf-8"))
        attributes[name] = text
        types[name] = data_type
        size += len(name.encode("utf-8")) + len(data_type.encode("utf-8")) + length
    if len(attributes) > limits.MAX_ATTRIBUTES:
        raise invalid(f"Number of message attributes [{len(attributes)}] exceeds the allowed maximum [10].")
    return attributes, types, size


def _check_name(name: str) -> None:
    lowered = name.lower()
    if (
        not _NAME.fullmatch(name)
        or lowered.startswith(_RESERVED)
        or ".." in name
        or name.startswith(".")
        or name.endswith(".")
    ):
        raise invalid(
            f"The message attribute name '{name[:256]}' is invalid. Attribute name can contain A-Z, a-z, 0-9, "
            "underscore (_), hyphen (-), and period (.) characters."
        )


def to_sqs(attributes: dict[str, str], types: dict[str, str]) -> dict[str, dict[str, str]]:
    answer = {}
    for name, text in attributes.items():
        data_type = types.get(name, PLAIN)
        member = "BinaryValue" if data_type.startswith("Binary") else "StringValue"
        answer[name] = {"DataType": data_type, member: text}
    return answer


def chosen(attributes: dict[str, str], names: list[str] | None) -> dict[str, str]:
    """The attributes a receive asked for: `All` or `.*` for every one, `prefix.*` for a prefix, or names."""
    wanted = names or []
    if "All" in wanted or ".*" in wanted:
        return dict(attributes)
    prefixes = tuple(name[:-1] for name in wanted if name.endswith(".*"))
    exact = set(wanted)
    return {
        name: value for name, value in attributes.items() if name in exact or (prefixes and name.startswith(prefixes))
    }
