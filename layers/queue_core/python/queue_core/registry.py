"""The queue registry: what queues exist, their settings, and the clients of each.

Four kinds of item (formats in `keys`): a settings item per queue, which a tenant of the queue may read and which
holds no secret; a listing entry per queue (with a copy of its settings, written with them, so that the list of
queues is one query) and a tombstone per deleted incarnation, for the queue's own functions;
and a registration per client and generation, written by the first send to a sub-queue, which holds that
sub-queue's receipt-signing secret, so that a tenant confined to its sub-queue can sign its own receipt handles
and no other's.

Settings are cached for a few seconds in each process, so that a send or a receive costs no registry read in
steady state. Registrations are remembered per generation for the life of the process: a client is registered
with one write the first time this process sends to it, and again after its queue was deleted and created anew.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from . import keys, leases, limits
from .errors import QueueExists, QueueNotFound, Throttled
from .keys import Space
from .layout import LayoutGuard
from .receipts import new_secret
from .settings import REDRIVE_FIELDS, QueueSettings
from .store import ConditionFailed, Overdue, Store, TransactionCancelled, Write
from .store import registry as writes
from .store.write import delete, put

# DynamoDB's most keys in one BatchGetItem.
_MAX_BATCH_GET = 100


@dataclass(frozen=True)
class Tombstone:
    """A deleted incarnation whose items may still need removing (sends from processes with cached settings can
    land after the delete): the sweep passes over it again, then drops it."""

    settings: QueueSettings
    deleted_at: int


class Registry:
    def __init__(self, store: Store) -> None:
        self._store = store
        # Every path to the items starts with settings (`get`, `list`, `create`): the table's layout is checked
        # there, once per process.
        self.layout = LayoutGuard(store)
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, QueueSettings]] = {}
        self._secrets: dict[Space, str] = {}
        self._sources: dict[str, tuple[float, list[str]]] = {}

    def create(self, settings: QueueSettings) -> QueueSettings:
        """Idempotent for the same settings; other settings for an existing queue raise `QueueExists`."""
        self.layout.ensure()
        asked = time.monotonic()
        try:
            self._store.transact_writes(
                [
                    writes.create_settings(self._settings_item(settings)),
                    writes.list_queue(keys.listing_key(settings.name), settings.to_item()),
                    *_links(None, settings),
                ]
            )
        except TransactionCancelled as cancelled:
            old = cancelled.reasons[0][1]
            if old is None:
                return self.create(settings)
            existing = QueueSettings.from_item(old)
            if not existing.same_settings(settings):
                raise QueueExists(f"queue {settings.name!r} exists with other settings: {existing.to_dict()}") from None
            return self._remember(existing, asked)
        settings = self._remember(settings, asked)
        with self._lock:
            self._sources.pop(settings.dead_letter_target, None)
        return settings

    def update(self, name: str, clock: Callable[[], int], **changes: Any) -> QueueSettings:
        """Applies changes if nobody changed the queue meanwhile (a condition on its version and generation).
        The dead-letter fields (`REDRIVE_FIELDS`) change in the same write, with the target's list of sources.
        `clock` gives the present (ms): the times a change sets count from when it is read, just before the
        write (`_replace_timed`)."""
        current = self.get(name, fresh=True)
        redrive = {field: changes.pop(field) for field in REDRIVE_FIELDS if field in changes}

        def wanted(now_ms: int) -> QueueSettings:
            changed = current.updated(now_ms, _SPREAD_MS, **changes) if changes else current
            if redrive:
                changed = replace(changed.redirected(now_ms, **redrive), version=current.version + 1)
            return changed

        return self._replace_timed(current, wanted, clock)

    def dead_letter_sources(self, target: str, fresh: bool = False) -> list[str]:
        """The queues that name `target` as their dead-letter target, cached as settings are (from when the query
        was sent: `_remember`)."""
        with self._lock:
            cached = self._sources.get(target)
        if cached and not fresh and time.monotonic() - cached[0] < limits.SETTINGS_CACHE_SECONDS:
            return cached[1]
        asked = time.monotonic()
        found = sorted(str(item["source"]) for item in self._listing(keys.dead_letter_links_prefix(target)))
        with self._lock:
            self._sources[target] = (asked, found)
        return found

    def tag(self, name: str, tags: dict[str, str], removed: list[str]) -> QueueSettings:
        """Adds or changes `tags` and removes the `removed` keys, conditional on the queue's version."""
        current = self.get(name, fresh=True)
        return self._replace(current, current.tagged(tags, removed))

    def prune_layouts(self, current: QueueSettings, now_ms: int, old_places_empty: bool) -> bool:
        """Drops the shard layouts nothing can live under any more; False when there was none or the queue
        changed meanwhile (the next sweep tries again)."""
        pruned = current.without_old_layouts(now_ms, old_places_empty)
        if pruned is None:
            return False
        try:
            self._replace(current, pruned)
        except QueueExists:
            return False
        return True

    def reshard(self, current: QueueSettings, shards: int, clock: Callable[[], int]) -> QueueSettings | None:
        """An automatic change of the shard count, fenced as a change by hand is (`update`); None when the queue
        changed meanwhile (the decision is made again on fresh settings next time)."""
        try:
            return self._replace_timed(current, lambda now_ms: current.resharded(shards, now_ms, _SPREAD_MS), clock)
        except QueueExists:
            return None

    def use_queue_wide(self, name: str, clock: Callable[[], int]) -> QueueSettings:
        """The first queue-wide receive switches sends' ready markers on (see `QueueSettings.marking`), fenced like
        a `PATCH`; a change that raced it is read again. Settings writes are transactions (they carry the listing's
        copy), and DynamoDB cancels one of two at once as a conflict, which the store reports as `Throttled`:
        consumers starting together must not answer 429 for it, so that too is read again. Whatever the outcome,
        the settings as they now are (without markers yet, a queue-wide receive visits every client). `clock`
        gives the present, as for `update`."""
        for _ in range(3):
            current = self.get(name, fresh=True)
            if current.queue_wide:
                return current
            try:
                marking = partial(current.marking, spread_ms=_SPREAD_MS)
                return self._replace_timed(current, marking, clock)
            except (QueueExists, Throttled):
                continue
        return self.get(name, fresh=True)

    def markers_built(self, current: QueueSettings) -> bool:
        """Records that the sweep put every missing marker; False when the queue changed meanwhile (the next
        sweep tries again)."""
        try:
            self._replace(current, current.with_markers_built())
        except QueueExists:
            return False
        return True

    def _replace_timed(
        self, current: QueueSettings, wanted: Callable[[int], QueueSettings], clock: Callable[[], int]
    ) -> QueueSettings:
        """`_replace` for a change whose times count from its making (`placement_from`, `markers_from`,
        `retention_from`): made from the clock just before its write, which goes out by `_deadline` or not at all.
        One held back (nothing of it sent: a write throttled while the SDK's retries ran out the time) is made
        again from a new present, a few times, before the throttle is the caller's."""
        for attempt in range(_TIMED_WRITES):
            now_ms, deadline = clock(), _deadline()
            try:
                return self._replace(current, wanted(now_ms), deadline)
            except Overdue:
                if attempt == _TIMED_WRITES - 1:
                    raise
        raise AssertionError("unreachable")

    def _replace(self, current: QueueSettings, wanted: QueueSettings, deadline: float | None = None) -> QueueSettings:
        """The settings and their copy on the listing entry change together, conditional on the settings read;
        sent by `deadline` (monotonic) or not at all (`Overdue`), for a change whose times count from then."""
        replace_write = writes.replace_settings(self._settings_item(wanted), current.version, current.generation)
        listed = writes.list_queue(keys.listing_key(wanted.name), wanted.to_item())
        asked = time.monotonic()
        try:
            try:
                with self._store.sent_by(deadline):
                    self._store.transact_writes([replace_write, listed, *_links(current, wanted)])
            except TransactionCancelled as cancelled:
                raise ConditionFailed(cancelled.reasons[0][1]) from None
        except ConditionFailed as failed:
            stored = QueueSettings.from_item(failed.item) if failed.item else None
            if stored is None or stored.to_item() != wanted.to_item():  # the same: our write, its answer lost
                raise QueueExists(f"queue {current.name!r} changed meanwhile; read it again and retry") from None
        wanted = self._remember(wanted, asked)
        with self._lock:
            for target in {current.dead_letter_target, wanted.dead_letter_target} - {""}:
                self._sources.pop(target, None)
        return wanted

    def get(self, name: str, fresh: bool = False) -> QueueSettings:
        with self._lock:
            cached = self._cache.get(name)
        if cached and not fresh and time.monotonic() - cached[0] < limits.SETTINGS_CACHE_SECONDS:
            return cached[1]
        self.layout.ensure()
        asked = time.monotonic()
        item = self._store.get(keys.settings_key(name))
        if item is None:
            self.forget(name)
            raise QueueNotFound(f"queue {name!r} does not exist")
        return self._remember(QueueSettings.from_item(item), asked)

    def list(self) -> list[QueueSettings]:
        """One query of the listing entries, which carry a copy of each queue's settings; an entry written before
        they carried it (it holds only the name) is completed from the settings item, in batches."""
        self.layout.ensure()
        found: list[dict[str, Any]] = []
        wanted: list[dict[str, str]] = []
        for item in self._listing(keys.listing_prefix(), writes.LISTED_ATTRIBUTES):
            copy = writes.listed_settings(item)
            if copy is not None:
                found.append(copy)
            else:
                wanted.append(keys.settings_key(item["name"]))
        for start in range(0, len(wanted), _MAX_BATCH_GET):
            found += self._store.batch_get(wanted[start : start + _MAX_BATCH_GET])
        return sorted((QueueSettings.from_item(item) for item in found), key=lambda settings: settings.name)

    def listed_with_copies(self) -> list[tuple[QueueSettings, QueueSettings | None]]:
        """Each queue's settings as its settings item holds them (read in batches, as `list` read them before the
        listing entries carried a copy), with the copy its entry carries (None: an entry without one). For the
        sweep, which acts on the settings themselves and refreshes the copies that differ (`refresh_copy`)."""
        self.layout.ensure()
        copies: dict[str, QueueSettings | None] = {}
        for item in self._listing(keys.listing_prefix(), writes.LISTED_ATTRIBUTES):
            copy = writes.listed_settings(item)
            copies[item["name"]] = None if copy is None else QueueSettings.from_item(copy)
        wanted = [keys.settings_key(name) for name in copies]
        found: list[dict[str, Any]] = []
        for start in range(0, len(wanted), _MAX_BATCH_GET):
            found += self._store.batch_get(wanted[start : start + _MAX_BATCH_GET])
        settings = sorted((QueueSettings.from_item(item) for item in found), key=lambda listed: listed.name)
        return [(listed, copies.get(listed.name)) for listed in settings]

    def refresh_copy(self, settings: QueueSettings) -> bool:
        """Writes `settings` as the copy on the queue's listing entry, only while the settings item is still at
        their version and generation (a condition checked in the same transaction): a copy left behind by an
        earlier release's settings write is brought up to date, and never made older than the settings, nor
        written for a queue deleted meanwhile. False when the settings changed meanwhile (their writer wrote the
        copy, or the next sweep looks again). A repeat after a lost answer writes the same copy under the same
        condition (and the transaction's token makes DynamoDB answer the first commit), so it needs no telling."""
        try:
            self._store.transact_writes(
                [
                    writes.settings_unchanged(keys.settings_key(settings.name), settings.version, settings.generation),
                    writes.list_queue(keys.listing_key(settings.name), settings.to_item()),
                ]
            )
        except TransactionCancelled:
            return False
        return True

    def delete(self, name: str, now_ms: int) -> QueueSettings:
        """Removes the queue (its settings and listing entry) and leaves a tombstone of this incarnation, in one
        transaction; its items are removed afterwards, by the caller and again by the sweep."""
        settings = self.get(name, fresh=True)
        tombstone = {
            **self._settings_item(settings),
            **keys.tombstone_key(name, settings.generation),
            "deleted_at": now_ms,
        }
        try:
            self._store.transact_writes(
                [
                    writes.remove_settings(keys.settings_key(name), settings.generation),
                    delete(keys.listing_key(name)),
                    put(tombstone),
                    *_links(settings, None),
                ]
            )
        except TransactionCancelled:
            self.forget(name)
            raise QueueNotFound(f"queue {name!r} does not exist") from None
        self.forget(name)
        return settings

    def tombstones(self) -> list[Tombstone]:
        self.layout.ensure()
        return [
            Tombstone(QueueSettings.from_item(item), int(item["deleted_at"]))
            for item in self._listing(keys.tombstone_prefix())
        ]

    def drop_tombstone(self, settings: QueueSettings) -> None:
        self._store.delete(keys.tombstone_key(settings.name, settings.generation))

    def take_sweep_lease(self, now_ms: int, seconds: float) -> str | None:
        """The lease's holder token when this sweep may run (no other sweep's lease is running), else None."""
        taken = self.take_sweep_lease_resuming(now_ms, seconds)
        return None if taken is None else taken[0]

    def take_sweep_lease_resuming(self, now_ms: int, seconds: float) -> tuple[str, str | None] | None:
        """The lease's holder token and where the last sweep that ran out of time stopped (None: at the start),
        or None while another sweep's lease runs. What is not a position is read as none (the start)."""
        self.layout.ensure()
        taken = leases.take_keeping(self._store, keys.sweep_lease_key(), now_ms, now_ms + int(seconds * 1000))
        if taken is None:
            return None
        holder, item = taken
        resume = item.get("resume")
        return holder, resume if isinstance(resume, str) and "/" in resume else None

    def release_sweep_lease(self, holder: str, resume: str | None = None) -> None:
        """A finished sweep lets the next one run at once (a crashed one's lease runs out by itself); one that ran
        out of time leaves where the next one resumes (`resume`), a complete one removes it with the lease."""
        if resume is None:
            leases.give_back(self._store, keys.sweep_lease_key(), holder)
        else:
            leases.give_back_resuming(self._store, keys.sweep_lease_key(), holder, resume)

    def forget(self, name: str) -> None:
        with self._lock:
            self._cache.pop(name, None)

    # Clients.
    def register_client(self, space: Space, now_ms: int) -> str:
        """Registers the client in this generation (once per process) and returns its receipt secret: the first
        registration draws it, every later one reads it from the failed condition, at no extra call."""
        with self._lock:
            known = self._secrets.get(space)
        if known is not None:
            return known
        item = {
            **space.registration_key(),
            "gsi1pk": keys.clients_index_pk(space.queue, space.generation),
            "gsi1sk": space.client,
            "secret": new_secret(),
            "first_seen_at": now_ms,
        }
        try:
            self._store.write(writes.register(item))
            secret = item["secret"]
        except ConditionFailed as failed:
            if failed.item is None:
                return self.register_client(space, now_ms)
            secret = str(failed.item["secret"])
        return self._remember_secret(space, secret)

    def client_secret(self, space: Space) -> str | None:
        """The sub-queue's receipt secret; None when no message was ever sent to it in this generation."""
        with self._lock:
            known = self._secrets.get(space)
        if known is not None:
            return known
        item = self._store.get(space.registration_key())
        return None if item is None else self._remember_secret(space, str(item["secret"]))

    def clients(self, queue: str, generation: str) -> list[str]:
        entries = self._store.query_all(keys.clients_index_pk(queue, generation), index=True)
        return sorted({entry["gsi1sk"] for entry in entries})

    def registered(self, queues: list[QueueSettings], client: str) -> list[QueueSettings]:
        """Those of `queues` in whose current generation `client` is registered (it was ever sent a message)."""
        wanted = [keys.client_registration_key(s.name, client, s.generation) for s in queues]
        present: set[tuple[str, str]] = set()
        for start in range(0, len(wanted), _MAX_BATCH_GET):
            items = self._store.batch_get(wanted[start : start + _MAX_BATCH_GET])
            present |= {(item["pk"], item["sk"]) for item in items}
        return [s for s, key in zip(queues, wanted, strict=True) if (key["pk"], key["sk"]) in present]

    def delete_registration(self, space: Space) -> None:
        self._store.delete(space.registration_key())
        with self._lock:
            self._secrets.pop(space, None)

    def _remember_secret(self, space: Space, secret: str) -> str:
        with self._lock:
            self._secrets[space] = secret
        return secret

    def _listing(self, prefix: str, attributes: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        return self._store.prefixed(keys.REGISTRY_PK, prefix, attributes)

    @staticmethod
    def _settings_item(settings: QueueSettings) -> dict[str, Any]:
        return {**keys.settings_key(settings.name), **settings.to_item()}

    def _remember(self, settings: QueueSettings, asked: float) -> QueueSettings:
        """Settings as they were when the call that gave them began (`asked`, monotonic): their age in the cache
        counts from then, not from the answer. A consistent read answers with every write made before it was sent,
        so a process never serves settings older than the cache's time, however long the call took (the SDK's
        retries of a throttled read, a stalled connection): what every delay until all processes hold new settings
        (`placement_from`, `markers_from`, `retention_from`) rests on. A call begun before the cached settings' own
        and answered after them with no later version of the same incarnation leaves them: a read sent earlier and
        answered later would otherwise put back settings this process already served changed. Returns the
        settings stamped with `asked` (`QueueSettings.read_at`)."""
        settings = replace(settings, read_at=asked)
        with self._lock:
            cached = self._cache.get(settings.name)
            if (
                cached is not None
                and cached[0] > asked
                and cached[1].generation == settings.generation
                and cached[1].version >= settings.version
            ):
                return settings
            self._cache[settings.name] = (asked, settings)
        return settings


_SPREAD_MS = int(limits.SETTINGS_SPREAD_SECONDS * 1000)
# Times a change of settings held back by its deadline is made again before the caller hears of it.
_TIMED_WRITES = 3


def _deadline() -> float:
    """By when a change of settings made now is sent: its times (`placement_from`, ...) count from now."""
    return time.monotonic() + limits.SETTINGS_WRITE_GRACE_SECONDS


def _links(before: QueueSettings | None, after: QueueSettings | None) -> list[Write]:
    """The registry writes that keep the targets' lists of dead-letter sources in step with a queue's change
    (created: `before` None; deleted: `after` None), in the same transaction as the change."""
    old = before.dead_letter_target if before is not None else ""
    new = after.dead_letter_target if after is not None else ""
    if old == new:
        return []
    name = (after or before).name  # type: ignore[union-attr]
    changes: list[Write] = []
    if old:
        changes.append(writes.unlink_dead_letters(keys.dead_letter_link_key(old, name)))
    if new:
        changes.append(writes.link_dead_letters(keys.dead_letter_link_key(new, name), new, name))
    return changes
