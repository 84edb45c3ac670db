"""Named writes on the registry: a queue's settings, listing entry and tombstone, a client's registration."""

from __future__ import annotations

import json
from typing import Any

from .write import Key, Write, delete, put, put_new, update


def create_settings(item: dict[str, Any]) -> Write:
    """A queue's settings item, only if the queue does not exist (the old item tells which settings it has)."""
    return put_new(item)


def list_queue(key: Key, settings: dict[str, Any]) -> Write:
    """The queue's listing entry, with a copy of its settings: the list of queues is one query of the entries.
    Written in the same transaction as every settings write, so the copy is never older than what it copies,
    except after a write by an earlier release, which knew no copy: the sweep refreshes those (`settings_unchanged`).
    The copy is one JSON string: a thousand entries are read and decoded far faster than as nested attributes."""
    return put({**key, "name": settings["name"], "settings": json.dumps(settings, separators=(",", ":"))})


# What a list of queues reads of each listing entry: the name (all an entry from before the copy holds) and the
# copy, not the keys; half the attributes to answer and decode.
LISTED_ATTRIBUTES = ("name", "settings")


def listed_settings(item: dict[str, Any]) -> dict[str, Any] | None:
    """The settings copied on a listing entry; None for an entry written before entries carried them."""
    copy = item.get("settings")
    return None if copy is None else json.loads(copy)


def settings_unchanged(key: Key, version: int, generation: str) -> Write:
    """Holds only while the settings are still at `version` in `generation`: what a copy of them (on the listing
    entry) is written beside, so that it never replaces a copy of newer settings, nor revives a deleted queue's."""
    return Write(
        "ConditionCheck",
        key=key,
        condition="version = :v AND generation = :g",
        values={":v": version, ":g": generation},
    )


def replace_settings(item: dict[str, Any], version: int, generation: str) -> Write:
    """New settings, only over the version and generation they were derived from: no edit is lost, and a queue
    deleted and created again meanwhile is never overwritten."""
    return put(item, condition="version = :v AND generation = :g", values={":v": version, ":g": generation})


def remove_settings(key: Key, generation: str) -> Write:
    """The queue goes, only in the generation it was read in."""
    return delete(key, condition="generation = :g", values={":g": generation})


def take_lease(key: Key, holder: str, now: int, until: int) -> Write:
    """A lease until `until`, only if nobody holds an unexpired one (one write, no read); `expires_at` lets TTL
    remove it."""
    item = {**key, "holder": holder, "lease_until": until, "expires_at": until // 1000 + 3600}
    return put(item, condition="attribute_not_exists(pk) OR lease_until <= :now", values={":now": now})


def take_lease_keeping(key: Key, holder: str, now: int, until: int) -> Write:
    """`take_lease` as an update, which keeps what else the item holds (the sweep's resume point) and answers
    the item after it; the same condition."""
    return update(
        key,
        "SET holder = :h, lease_until = :u, expires_at = :e",
        {":h": holder, ":u": until, ":e": until // 1000 + 3600, ":now": now},
        condition="attribute_not_exists(pk) OR lease_until <= :now",
        returns="ALL_NEW",
    )


def release_lease_resuming(key: Key, holder: str, resume: str) -> Write:
    """The holder's lease ends early and leaves where the next holder resumes, only if it is still the holder's
    (a repeat after a lost answer writes the same again)."""
    return update(
        key, "SET lease_until = :zero, resume = :r", {":zero": 0, ":r": resume, ":h": holder}, condition="holder = :h"
    )


def release_lease(key: Key, holder: str) -> Write:
    """The holder's lease ends early, only if it is still the holder's."""
    return delete(key, condition="holder = :h", values={":h": holder})


def register(item: dict[str, Any]) -> Write:
    """A client's registration in a generation, once: a repeat tells the secret the first one drew."""
    return put_new(item)


def link_dead_letters(key: Key, target: str, source: str) -> Write:
    """The registry entry that lists `source` among `target`'s dead-letter sources; a repeat writes the same."""
    return put({**key, "target": target, "source": source})


def unlink_dead_letters(key: Key) -> Write:
    """Removes a source from a target's list; removing one already gone is no error (a repeat)."""
    return delete(key)
