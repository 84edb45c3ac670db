"""Writes as releases before the listing entries carried a copy of the settings made them: the settings item
alone, fenced on its version and generation, the listing entry untouched (holding a copy of the settings before)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from queue_core import keys
from queue_core.settings import QueueSettings
from queue_core.store.write import serialize


def change_settings(dynamodb: Any, table: str, current: QueueSettings, **changes: Any) -> QueueSettings:
    """`current` changed by `changes` as a new version, written as an earlier release wrote a change without a
    dead-letter link to make (one conditional put of the settings item); the settings written."""
    changed = replace(current, **changes, version=current.version + 1, created=False)
    dynamodb.put_item(
        TableName=table,
        Item=serialize({**keys.settings_key(current.name), **changed.to_item()}),
        ConditionExpression="version = :v AND generation = :g",
        ExpressionAttributeValues=serialize({":v": current.version, ":g": current.generation}),
    )
    return changed
