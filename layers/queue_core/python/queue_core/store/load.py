"""Named writes on a sub-queue's load reports (see `autoshard`)."""

from __future__ import annotations

from typing import Any

from .write import Key, Write, put


def report_load(key: Key, report: dict[str, Any], expires_at: int) -> Write:
    """This process's latest report, over its previous one: a plain put of its own item, so a repeat after a
    lost answer writes the same thing again; TTL removes it once it can no longer matter."""
    return put({**key, **report, "expires_at": expires_at})
