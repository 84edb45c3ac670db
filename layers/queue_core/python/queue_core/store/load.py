"""Named writes and reads of a sub-queue's load reports (see `load_meter` and `autoshard`)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from . import Item, Store
from .write import Key, Write, put


def report_load(key: Key, report: dict[str, Any], expires_at: int) -> Write:
    """One report under its own key (the process and a number of its own): a plain put, so a repeat after a lost
    answer writes the same item again and counts once; TTL removes it once it can no longer matter. Fractions are
    kept to the thousandth."""
    return put({**key, **_numbers(report), "expires_at": expires_at})


def reports_since(store: Store, pk: str, low_sk: str, max_items: int) -> Iterator[Item]:
    """The reports of a partition from sort key `low_sk` on, newest first, at most `max_items` (one page or a few):
    a busy sub-queue's older reports are what a reader cut off can do without."""
    return store.query_all(pk, sk_condition="sk >= :low", values={":low": low_sk}, forward=False, max_items=max_items)


def _numbers(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(round(value, 3)))
    if isinstance(value, dict):
        return {name: _numbers(part) for name, part in value.items()}
    return value
