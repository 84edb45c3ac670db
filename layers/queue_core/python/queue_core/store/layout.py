"""Named writes on the table's layout record, one item (`keys.layout_key`) that says which layout of items the
table holds, and the state of a `dq migrate` that is upgrading it.

Every write is conditional on the state it moves from, and each is safe under the SDK's repeat after a lost
answer: a repeat of `begin` or `progress` finds its own values and its condition still holds; a repeat of
`record_new` or `finish` fails its condition, and the caller reads the old item to see that it holds what the
write meant to leave.
"""

from __future__ import annotations

from typing import Any

from .write import Key, Write, put_new, update


def record_new(item: dict[str, Any]) -> Write:
    """The record of a table just created, only where none is."""
    return put_new(item)


def begin(key: Key, target: int, source: int | None, version: str, now: int) -> Write:
    """A migration from `source` (None: a table with no record) to `target` starts, or resumes: only while the
    table is still at `source` and no migration to another layout is under way."""
    values: dict[str, Any] = {":to": target, ":by": version, ":now": now}
    at_source = "attribute_not_exists(layout)"
    if source is not None:
        at_source = "layout = :from"
        values[":from"] = source
    return update(
        key,
        "SET migrating_to = :to, migrating_by = :by, migration_started_at = if_not_exists(migration_started_at, :now)",
        values,
        condition=f"{at_source} AND (attribute_not_exists(migrating_to) OR migrating_to = :to)",
        returns="ALL_NEW",
    )


def progress(key: Key, target: int, cursor: str) -> Write:
    """Where a resumed migration goes on from: the last sub-queue it finished (`queue/client`)."""
    return update(key, "SET migration_cursor = :c", {":c": cursor, ":to": target}, condition="migrating_to = :to")


def finish(key: Key, target: int, version: str, now: int) -> Write:
    """The table is at `target` from now on: the migration's state goes."""
    return update(
        key,
        "SET layout = :to, written_by = :by, updated_at = :now "
        "REMOVE migrating_to, migrating_by, migration_started_at, migration_cursor",
        {":to": target, ":by": version, ":now": now},
        condition="migrating_to = :to",
    )
