"""Named writes on ready markers, the set of clients with visible messages (formats in `keys`).

A marker is put without a condition: it carries only its keys, so putting one that exists changes nothing (one
write unit, no index write) and the SDK's repeat of a put is harmless. A marker leaves only through `drop`, on
the condition that it is still the one read, and the caller then looks at the client again (see `ready`).
"""

from __future__ import annotations

from typing import Any

from .write import Key, Write, delete, put


def mark(item: dict[str, Any]) -> Write:
    return put(item)


def drop(key: Key, gsi1sk: str) -> Write:
    """The marker as read leaves the set; a repeat finds it gone, which is the same outcome."""
    return delete(key, condition="gsi1sk = :gsk", values={":gsk": gsi1sk})
