"""The queue registry: one item per queue (its settings) and one per known client of a queue.

Settings are cached for a few seconds in each process, so that a send or a receive costs no registry read in
steady state; known clients are remembered for the life of the process, so that a client is registered with one
write, the first time this process sends to it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from . import keys, limits
from .errors import QueueExists, QueueNotFound
from .settings import QueueSettings
from .store import ConditionFailed, Store


class Registry:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, QueueSettings]] = {}
        self._known_clients: set[tuple[str, str]] = set()

    def create(self, settings: QueueSettings) -> QueueSettings:
        """Idempotent for the same settings; other settings for an existing queue raise `QueueExists`."""
        item = {**keys.registry_key(settings.name), **settings.to_item()}
        try:
            self._store.put(item, condition="attribute_not_exists(pk)")
        except ConditionFailed as failed:
            existing = QueueSettings.from_item(failed.item) if failed.item else None
            if existing is None:
                return self.create(settings)
            if not existing.same_settings(settings):
                raise QueueExists(f"queue {settings.name!r} exists with other settings: {existing.to_dict()}") from None
            self._remember(existing)
            return existing
        self._remember(settings)
        return settings

    def update(self, name: str, now_ms: int, **changes: Any) -> QueueSettings:
        """Applies changes if nobody changed the queue meanwhile (a condition on the stored settings)."""
        current = self.get(name, fresh=True)
        wanted = current.updated(now_ms, int(limits.SETTINGS_CACHE_SECONDS * 1000), **changes)
        item = {**keys.registry_key(name), **wanted.to_item()}
        try:
            self._store.put(item, condition="attribute_exists(pk) AND shards = :shards AND retention_seconds = :r",
                            values={":shards": current.shards, ":r": current.retention_seconds})  # fmt: skip
        except ConditionFailed:
            raise QueueExists(f"queue {name!r} changed meanwhile; read it again and retry") from None
        self._remember(wanted)
        return wanted

    def get(self, name: str, fresh: bool = False) -> QueueSettings:
        with self._lock:
            cached = self._cache.get(name)
        if cached and not fresh and time.monotonic() - cached[0] < limits.SETTINGS_CACHE_SECONDS:
            return cached[1]
        item = self._store.get(keys.registry_key(name))
        if item is None:
            self.forget(name)
            raise QueueNotFound(f"queue {name!r} does not exist")
        settings = QueueSettings.from_item(item)
        self._remember(settings)
        return settings

    def list(self) -> list[QueueSettings]:
        items = self._store.query_all(keys.REGISTRY_PK, sk_condition="begins_with(sk, :q)", values={":q": "Q#"})
        return [QueueSettings.from_item(item) for item in items]

    def delete(self, name: str) -> QueueSettings:
        old = self._store.delete(keys.registry_key(name))
        self.forget(name)
        if old is None:
            raise QueueNotFound(f"queue {name!r} does not exist")
        return QueueSettings.from_item(old)

    def forget(self, name: str) -> None:
        with self._lock:
            self._cache.pop(name, None)
            self._known_clients = {known for known in self._known_clients if known[0] != name}

    def register_client(self, queue: str, client: str, now_ms: int) -> None:
        if (queue, client) in self._known_clients:
            return
        self._store.put({"pk": keys.client_pk(queue), "sk": client, "first_seen_at": now_ms})
        with self._lock:
            self._known_clients.add((queue, client))

    def clients(self, queue: str) -> list[str]:
        return [item["sk"] for item in self._store.query_all(keys.client_pk(queue), projection="sk")]

    def delete_clients(self, queue: str) -> None:
        self._store.delete_partition(keys.client_pk(queue))

    def _remember(self, settings: QueueSettings) -> None:
        with self._lock:
            self._cache[settings.name] = (time.monotonic(), settings)
