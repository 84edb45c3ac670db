"""DynamoDB's published size and capacity rules, applied to items in the wire format (`{"S": "..."}`).

moto reports consumed capacity wrongly, so every unit in the benchmarks is computed here from item sizes:
a write unit per 1 KB of the item written (rounded up per item), a read unit per 4 KB read (strongly consistent;
eventually consistent reads cost half), transactions double.
"""

from __future__ import annotations

import base64
import math
from typing import Any, Final

WRITE_UNIT_BYTES: Final = 1024
READ_UNIT_BYTES: Final = 4096
TRANSACTION_FACTOR: Final = 2

Item = dict[str, dict[str, Any]]


def number_size(text: str) -> int:
    """A number takes about one byte per two significant digits, plus one."""
    mantissa = text.lstrip("-+").lower().split("e", 1)[0]
    digits = mantissa.replace(".", "").lstrip("0")
    if "." in mantissa:
        digits = digits.rstrip("0")
    return (max(len(digits), 1) + 1) // 2 + 1


def _binary_size(data: Any) -> int:
    if isinstance(data, str):
        return len(base64.b64decode(data))
    return len(data)


def value_size(value: dict[str, Any]) -> int:
    """The bytes one attribute value takes, by DynamoDB's item size rules."""
    ((kind, data),) = value.items()
    if kind == "S":
        return len(data.encode())
    if kind == "N":
        return number_size(data)
    if kind == "B":
        return _binary_size(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(text.encode()) for text in data)
    if kind == "NS":
        return sum(number_size(text) for text in data)
    if kind == "BS":
        return sum(_binary_size(blob) for blob in data)
    if kind == "L":
        return 3 + sum(1 + value_size(element) for element in data)
    if kind == "M":
        return 3 + sum(1 + len(name.encode()) + value_size(element) for name, element in data.items())
    raise ValueError(f"unknown attribute type {kind!r}")


def item_size(item: Item | None) -> int:
    """Attribute names count as much as values: short names are cheaper items."""
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def write_units(size: int) -> int:
    """One write unit per started KB; writing (or deleting) nothing still costs one."""
    return max(1, math.ceil(size / WRITE_UNIT_BYTES))


def read_units(size: int, consistent: bool) -> float:
    """One read unit per started 4 KB (at least one); eventually consistent reads cost half."""
    units = max(1, math.ceil(size / READ_UNIT_BYTES))
    return float(units) if consistent else units / 2
