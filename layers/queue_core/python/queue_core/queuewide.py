"""One queue's every client at once: a fair queue-wide receive, and the settling of the handles it gives.

A receive reads the queue's ready markers (see `ready`): the clients that may have visible messages, per
priority. It serves the highest priority first and, inside one priority, the clients in a rotation that puts
first those holding fewer messages in flight (handed out by this process and not yet settled) and then those
served least lately, taking an even share of the messages wanted from each. A client flooding the queue thus
gets one share like any other, and a quiet client's few messages go out in the first round. Idle clients have no
marker and are never read. The markers are read again when the list is older than `REFRESH_SECONDS` or used up.

Sends put markers only on a queue received queue-wide: the first receive here switches them on (see `ready`).
Until they can be trusted (every sender puts them and the sweep has put those of what was sent before), a
receive serves every registered client instead, each priority it uses, as if each had a marker: slower on a
queue of many idle clients, but it misses nothing meanwhile.

Handles are the clients' own: a queue-wide handle also works on its client's routes, and the other way round.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Final

from . import archive, keys, limits, partial, validation
from .context import Context
from .errors import QueueError, Throttled, ValidationError
from .models import ArchivePage, BatchResult, QueueStats, ReceivedMessage
from .ready import announce, drain
from .store import ConditionFailed
from .store import ready as marker_writes
from .subqueue import SubQueue, delete_each, receipt_owner
from .transactions import TransactAck, commit

# How long a process serves from the marker list it read: a client that became ready meanwhile waits at most this
# long beside busy ones (a list used up is read again at once). Each read costs the ready clients' markers (small
# items, up to `MARKERS_READ`).
REFRESH_SECONDS: Final = 0.1
MARKERS_READ: Final = 1000  # at most this many ready markers per read (a page of the index at a time)
_FIRST_POLL_SECONDS = 0.05
_MAX_POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Marker:
    client: str
    priority: int
    at: int  # 0: ready now; else the time it became due
    key: dict[str, str]
    gsi1sk: str


@dataclass
class Rotation:
    """What this process knows of one queue generation's ready clients, shared by its receivers."""

    markers: list[Marker] = field(default_factory=list)
    read_at_ms: int = 0
    served: dict[str, int] = field(default_factory=dict)
    tick: int = 0
    held: dict[str, list[int]] = field(default_factory=dict)  # client: visibility ends of handles out
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Each process starts its rotation at its own place, so that concurrent consumers do not all claim from the
    # same clients first.
    salt: float = field(default_factory=random.random)

    def stale(self, now: int) -> bool:
        """Used up, or read more than `REFRESH_SECONDS` ago by the queue's clock."""
        return not self.markers or now - self.read_at_ms >= REFRESH_SECONDS * 1000

    def order(self, markers: list[Marker], now: int) -> list[Marker]:
        """Highest priority first; inside one, fewer held first, then least lately served."""
        with self.lock:
            held = {client: sum(1 for end in ends if end > now) for client, ends in self.held.items()}
            served = dict(self.served)
        return sorted(
            markers,
            key=lambda m: (-m.priority, held.get(m.client, 0), served.get(m.client, -1), self._place(m.client)),
        )

    def _place(self, client: str) -> float:
        return (keys.stable_hash(client) / 2**64 + self.salt) % 1.0

    def note_served(self, client: str, count: int, until: int, now: int) -> None:
        with self.lock:
            self.tick += 1
            self.served[client] = self.tick
            ends = [end for end in self.held.get(client, []) if end > now]
            self.held[client] = ends + [until] * count

    def note_settled(self, client: str) -> None:
        with self.lock:
            ends = self.held.get(client)
            if ends:
                ends.pop(0)

    def forget(self, marker: Marker) -> None:
        with self.lock:
            self.markers = [
                m for m in self.markers if (m.client, m.priority, m.key) != (marker.client, marker.priority, marker.key)
            ]


class QueueWide:
    """Every client of one queue: `receive` across them, fairly and by priority, and the settling of any of its
    clients' handles. Cheap to create; what it learns is kept per process."""

    def __init__(self, ctx: Context, queue: str) -> None:
        self._ctx = ctx
        self.queue = validation.queue_name(queue)
        self.claim_conflicts = 0
        self._subs: dict[str, SubQueue] = {}

    def __repr__(self) -> str:
        return f"QueueWide({self.queue!r})"

    @property
    def settings(self) -> Any:
        return self._ctx.registry.get(self.queue)

    def sub_queue(self, client: str) -> SubQueue:
        if client not in self._subs:
            self._subs[client] = SubQueue(self._ctx, self.queue, client)
        return self._subs[client]

    def _rotation(self) -> Rotation:
        settings = self.settings
        return self._ctx.shared(("rotation", settings.name, settings.generation), Rotation)

    # Receive.
    def receive(
        self,
        max_messages: int = 1,
        visibility_timeout: int | None = None,
        wait_seconds: int = 0,
        order: str = "oldest",
    ) -> list[ReceivedMessage]:
        """Messages of any client, each with its `client`; long-polls up to `wait_seconds`."""
        want = validation.integer("max_messages", max_messages, 1, limits.MAX_RECEIVE)
        wait = validation.integer("wait_seconds", wait_seconds, 0, limits.MAX_WAIT_SECONDS)
        order = validation.order(order)
        settings = self.settings
        if settings.fifo and order != "oldest":
            raise ValidationError("order 'newest' is only for standard queues: a FIFO queue keeps its groups' order")
        visibility = (
            settings.visibility_timeout
            if visibility_timeout is None
            else validation.integer("visibility_timeout", visibility_timeout, 0, limits.MAX_VISIBILITY_SECONDS)
        )
        if not settings.queue_wide:
            self._ctx.registry.use_queue_wide(self.queue, self._ctx.now_ms)
        deadline = time.monotonic() + wait
        pause = _FIRST_POLL_SECONDS
        while True:
            got = self._receive_once(want, visibility, order)
            left = deadline - time.monotonic()
            if got or left <= 0:
                return got
            time.sleep(min(pause, left))
            pause = min(pause * 2, _MAX_POLL_SECONDS)

    def _receive_once(self, want: int, visibility: int, order: str) -> list[ReceivedMessage]:
        rotation = self._rotation()
        now = self._ctx.now_ms()
        fresh = rotation.stale(now)
        if fresh:
            self._read_markers(rotation, now)
        got = self._serve(rotation, want, visibility, order, now)
        # A claim for no time leaves its messages visible: a client is served once per receive, or this receive
        # would hand them out twice.
        if len(got) < want and not fresh and visibility:
            # The list was read earlier: clients that became ready since are on the next read.
            self._read_markers(rotation, now)
            got += self._serve(rotation, want - len(got), visibility, order, now)
        return got

    def _read_markers(self, rotation: Rotation, now: int) -> None:
        """Due markers: ready-now ones first (by priority, then client), then those whose time has come."""
        settings = self.settings
        found: list[Marker] = []
        if not settings.markers_trusted:
            found = self._every_client(settings.name, settings.generation)
            with rotation.lock:
                rotation.markers = found
                rotation.read_at_ms = now
            return
        pk = keys.ready_index_pk(settings.name, settings.generation)
        start = None
        while len(found) < MARKERS_READ:
            items, start, _ = self._ctx.store.ready_markers(pk, keys.index_upper(now), MARKERS_READ - len(found), start)
            for item in items:
                at, priority, client = keys.ready_marker_parts(item["gsi1sk"])
                if item["pk"] == f"R#{settings.name}#{client}#{settings.generation}":
                    found.append(Marker(client, priority, at, {"pk": item["pk"], "sk": item["sk"]}, item["gsi1sk"]))
            if not start:
                break
        with rotation.lock:
            rotation.markers = found
            rotation.read_at_ms = now

    def _every_client(self, queue: str, generation: str) -> list[Marker]:
        """Until markers can be trusted: a stand-in marker (no key: nothing to drop) per registered client and
        priority it uses, read from the clients' index as a marker would be from its own."""
        found: list[Marker] = []
        for client in self._ctx.registry.clients(queue, generation):
            try:
                priorities = self.sub_queue(client).engine().priorities()
            except QueueError:
                continue
            found += [Marker(client, priority, 0, {}, "") for priority in priorities]
        return found

    def _serve(self, rotation: Rotation, want: int, visibility: int, order: str, now: int) -> list[ReceivedMessage]:
        """Priority by priority, an even share from each ready client of it, again until nothing more comes. A
        client ready by several markers of one priority (ready now, and a delayed message's time that came) is
        one client of the band: served once for each, it split its share between receives of its own, and with a
        claim for no time the second took again what the first had just claimed (one answer carried a message
        twice)."""
        got: list[ReceivedMessage] = []
        with rotation.lock:
            markers = list(rotation.markers)
        for priority in sorted({m.priority for m in markers}, reverse=True):
            band = _by_client(rotation.order([m for m in markers if m.priority == priority], now))
            while band and len(got) < want:
                share = -(-(want - len(got)) // len(band))
                more: list[list[Marker]] = []
                for ready in band:
                    asked = min(share, want - len(got))
                    if asked <= 0:
                        break
                    taken = self._serve_client(rotation, ready, asked, visibility, order, now)
                    got += taken
                    if len(taken) == asked and visibility:
                        more.append(ready)  # it may have more; a client that gave less is out of them
                band = more
        return got

    def _serve_client(
        self, rotation: Rotation, ready: list[Marker], want: int, visibility: int, order: str, now: int
    ) -> list[ReceivedMessage]:
        """One receive of the client the markers `ready` name (one client, one priority), then each marker
        dealt with as that receive found the client."""
        marker = ready[0]
        sub = self.sub_queue(marker.client)
        try:
            engine = sub.engine()
            secret = engine.secret()
            conflicts = engine.claim_conflicts
            with sub.metered(engine):  # its throttles count for the client's shard count, as its own receive's
                found, saw = (
                    engine.receive_priority(marker.priority, want, visibility, order, now, secret)
                    if secret
                    else ([], False)
                )
            self.claim_conflicts += engine.claim_conflicts - conflicts
        except Throttled as error:
            # Throttled in this client's partitions only: what it claimed first is served, not lost (see
            # `partial`), and the other clients are still asked.
            found, saw = partial.received(error), True
        except QueueError:
            return []
        if found:
            rotation.note_served(marker.client, len(found), now + visibility * 1000, now)
        for each in ready:
            if found and each.at:
                # Its time came and it has messages: it joins the clients that are ready now.
                self._promote(engine, each, now)
            elif not found and not saw:
                rotation.forget(each)
                if each.key:
                    drain(self._ctx, engine, each.priority, each.key, each.gsi1sk, now)
        return found

    def _promote(self, engine: Any, marker: Marker, now: int) -> None:
        announce(self._ctx, engine.space, [(marker.priority, now)])
        with contextlib.suppress(ConditionFailed):
            self._ctx.store.write(marker_writes.drop(marker.key, marker.gsi1sk))

    # Settling handles of any client.
    def _owner(self, handle: Any) -> SubQueue:
        self._ctx.registry.get(self.queue)  # a queue that does not exist is QueueNotFound, whatever the handle
        queue, client = receipt_owner(handle)
        if queue != self.queue:
            raise ValidationError("receipt_handle belongs to another queue")
        return self.sub_queue(validation.client_id(client))

    def delete(self, receipt_handle: str) -> None:
        sub = self._owner(receipt_handle)
        sub.delete(receipt_handle)
        self._rotation().note_settled(sub.client)

    def delete_batch(self, receipt_handles: list[str]) -> BatchResult:
        return delete_each(self._ctx, self.delete, receipt_handles)

    def delete_transact_items(self, receipt_handle: str) -> TransactAck:
        """The ack of any client's handle for the caller's own transaction (see `SubQueue.delete_transact_items`);
        once committed, the client counts one fewer message in flight here, as after `delete`."""
        sub = self._owner(receipt_handle)
        ack = sub.delete_transact_items(receipt_handle)
        ack.on_commit(lambda: self._rotation().note_settled(sub.client))
        return ack

    def transact(self, items: list[Any], token: str | None = None) -> None:
        """`QueueClient.transact` on this queue's table: acks and sends of any of its clients among the caller's
        own items, so that a queue-wide `Consumer` may be transactional."""
        commit(self._ctx.store, items, token)

    def change_visibility(self, receipt_handle: str, visibility_timeout: int) -> int:
        return self._owner(receipt_handle).change_visibility(receipt_handle, visibility_timeout)

    def release(self, receipt_handle: str, delay_seconds: int | None = None, reason: str | None = None) -> int:
        sub = self._owner(receipt_handle)
        visible_at = sub.release(receipt_handle, delay_seconds, reason)
        self._rotation().note_settled(sub.client)
        return visible_at

    def return_unseen(self, receipt_handle: str) -> None:
        """`SubQueue.return_unseen` for any client's handle: the message is back as it was before the claim."""
        sub = self._owner(receipt_handle)
        sub.return_unseen(receipt_handle)
        self._rotation().note_settled(sub.client)

    def archive_list(
        self,
        since: int | None = None,
        until: int | None = None,
        order: str = "newest",
        limit: int = 10,
        cursor: str | None = None,
    ) -> ArchivePage:
        """`SubQueue.archive_list` over every client of the queue, merged in acknowledgement order (each page reads
        every client's archive partitions: an operator's call)."""
        settings = self.settings
        clients = self._ctx.registry.clients(settings.name, settings.generation)
        spaces = [self.sub_queue(client).space for client in clients]
        since, until = archive.time_bound("since", since), archive.time_bound("until", until)
        return archive.page(self._ctx, spaces, since, until, order, limit, cursor, self._ctx.now_ms())

    def stats(self) -> QueueStats:
        """Summed over the queue's clients (reads each client's index entries: an operator's call)."""
        total = QueueStats()
        settings = self.settings
        for client in self._ctx.registry.clients(settings.name, settings.generation):
            total = total + self.sub_queue(client).stats()
        return total


def _by_client(markers: list[Marker]) -> list[list[Marker]]:
    """Markers of one priority grouped by client, in the order of each client's first."""
    grouped: dict[str, list[Marker]] = {}
    for marker in markers:
        grouped.setdefault(marker.client, []).append(marker)
    return list(grouped.values())
