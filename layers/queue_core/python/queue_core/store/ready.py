"""Named writes on ready markers, the set of clients with visible messages (formats in `keys`).

A marker is put without a condition (a drain's reminder excepted): besides its keys it carries only `put_at`,
which the index does not project, so putting one that exists costs one write unit and no index write, and the
SDK's repeat of a put is harmless (it carries the same time). A marker leaves only through `drop`, on the
condition that it is still the one read, and the caller then looks at the client again (see `ready`).
"""

from __future__ import annotations

from typing import Any

from .write import Key, Write, delete, put, put_new


def mark(item: dict[str, Any]) -> Write:
    return put(item)


def drop(key: Key, gsi1sk: str) -> Write:
    """The marker as read leaves the set, answering it as it was; a repeat finds it gone."""
    return delete(key, condition="gsi1sk = :gsk", values={":gsk": gsi1sk})


def remind(item: dict[str, Any]) -> Write:
    """A ready-at marker put only where none is: one already there (a send's, another drain's reminder for the
    same time) serves as well and keeps its `put_at`; a repeat finds it there, which is the same outcome."""
    return put_new(item)
