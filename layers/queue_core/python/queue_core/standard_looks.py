"""Standard looks and housekeeping: find, peek, count, cancel, purge and sweep.

Counts come from the index entries of each shard (bounded); the sweep deletes expired messages, moves visible ones
past the receive limit to the DLQ, and puts back the ready markers of what is visible (the backstop of
queue-wide receives).
"""

from __future__ import annotations

import contextlib
import logging

from . import keys, limits, ready, shard_marks
from .clock import sequence_ms
from .errors import MessageBodyMissing
from .keys import MessageRef
from .messages import DELAYED, DLQ, IN_FLIGHT, VISIBLE, is_expired, looked_at
from .models import Message, QueueStats, SweepReport, Swept
from .standard_space import StandardSpace, due_pairs
from .store import Item

logger = logging.getLogger("queue_core")


class StandardLooks(StandardSpace):
    """Looks without claiming, and the sweep's part, of a standard sub-queue."""

    def state(self, item: Item, now: int) -> str:
        if int(item["visible_at"]) <= now:
            return VISIBLE
        return IN_FLIGHT if item.get("in_flight") else DELAYED

    def peek(self, limit: int, now: int) -> list[Message]:
        found: list[Message] = []
        for priority, shard in [
            (p, s) for p in self.traffic.bands(self._read_bands) for s in range(self.settings.read_shards)
        ]:
            entries = self.ctx.store.due_all(self.partition_key(shard), now, max_items=limit * 2, priority=priority)
            pk = self.partition_key(shard)
            live = [{"pk": e["pk"], "sk": e["sk"]} for e in entries if e["pk"] == pk and not is_expired(e, now)]
            live = live[:limit]
            for start in range(0, len(live), 100):
                for item in self.ctx.store.batch_get(live[start : start + 100]):
                    if int(item["visible_at"]) <= now and not is_expired(item, now):
                        with contextlib.suppress(MessageBodyMissing):  # the next receive moves it to the DLQ
                            found.append(looked_at(item, self.ref_of(item), VISIBLE, self.ctx.bodies))
        found.sort(key=lambda message: (-message.priority, message.visible_at or 0, message.sequence))
        return found[:limit]

    def ref_of(self, item: Item) -> MessageRef:
        return MessageRef.of_live(item)

    def locate(self, ref: MessageRef, now: int) -> Message | None:
        live_key, dlq_key = ref.live_key(self.space), ref.dlq_key(self.space)
        found = {(item["pk"], item["sk"]): item for item in self.ctx.store.batch_get([live_key, dlq_key])}
        live, dead = found.get((live_key["pk"], live_key["sk"])), found.get((dlq_key["pk"], dlq_key["sk"]))
        if live and not is_expired(live, now):
            return looked_at(live, ref, self.state(live, now), self.ctx.bodies)
        if dead and not is_expired(dead, now):
            return looked_at(dead, ref, DLQ, self.ctx.bodies)
        return None

    def cancel(self, ref: MessageRef, now: int) -> bool:
        old = self.ctx.store.delete(ref.live_key(self.space))
        self.ctx.bodies.discard([old])
        return old is not None and not is_expired(old, now)

    def purge(self) -> int:
        return sum(self.ctx.delete_messages(self.partition_key(shard)) for shard in range(self.settings.read_shards))

    def stats(self, now: int) -> QueueStats:
        """Reads the shard's index entries (small: keys, expiry, flag), at most `STATS_SCAN_LIMIT` per shard."""
        total = QueueStats()
        for shard in range(self.settings.read_shards):
            entries = self.ctx.store.query_all(self.partition_key(shard), index=True, max_items=limits.STATS_SCAN_LIMIT)
            total = total + self._shard_stats(shard, list(entries), now)
        return total

    def _shard_stats(
        self, shard: int, entries: list[Item], now: int, gone: frozenset[tuple[str, str]] = frozenset()
    ) -> QueueStats:
        """The figures of one shard's index entries as read, but for those the sweep just moved (`gone`)."""
        counts = {VISIBLE: 0, IN_FLIGHT: 0, DELAYED: 0}
        by_priority: dict[str, dict[str, int]] = {}
        oldest: int | None = None
        stuck = 0
        for entry in entries:
            if is_expired(entry, now) or (entry["pk"], entry["sk"]) in gone:
                continue
            priority, visible_at_text, sequence = keys.message_index_parts(entry["gsi1sk"])
            state = VISIBLE if int(visible_at_text) <= now else IN_FLIGHT if entry.get("in_flight") else DELAYED
            counts[state] += 1
            # Held out of sight because its DLQ copy is too large (`StandardClaims._hold_stuck`): delayed, and stuck.
            stuck += state == DELAYED and entry.get("in_flight") == 0
            band = by_priority.setdefault(str(priority), {VISIBLE: 0, IN_FLIGHT: 0, DELAYED: 0})
            band[state] += 1
            sent = sequence_ms(sequence)
            oldest = sent if oldest is None else min(oldest, sent)
        truncated = len(entries) >= limits.STATS_SCAN_LIMIT
        if truncated:
            oldest = self._oldest_sent(shard, now)
        age = None if oldest is None else max(0, (now - oldest) // 1000)
        return QueueStats(
            counts[VISIBLE], counts[IN_FLIGHT], counts[DELAYED], 0, age, truncated, by_priority, stuck=stuck
        )

    def sweep(self, now: int, report: SweepReport) -> Swept:
        """Deletes expired messages and moves visible ones past the receive limit to the DLQ, from the index
        entries (bounded per shard), and counts what it leaves from the same entries (what `stats` reads). Whether
        shards past the current count still hold items is the sweep's to check (`sweep.old_shards_in_use`), against
        the very settings it prunes."""
        limit = self.settings.max_receive_count
        visible: list[Item] = []
        firsts: dict[tuple[int, int], int] = {}
        # What the sweep read counts as what it left, unless a read was full (what it removed makes room for entries
        # it did not read) or a move found the message changed meanwhile (held or moved by another process).
        live: QueueStats | None = QueueStats()
        for shard in range(self.settings.read_shards):
            partition = self.partition_key(shard)
            entries = list(self.ctx.store.query_all(partition, index=True, max_items=limits.STATS_SCAN_LIMIT))
            report.items_read += len(entries)
            if len(entries) >= limits.STATS_SCAN_LIMIT:
                live = None
            gone: set[tuple[str, str]] = set()
            for entry in entries:
                if entry["pk"] != partition:
                    continue
                key = {"pk": entry["pk"], "sk": entry["sk"]}
                if is_expired(entry, now):
                    report.expired_deleted += self.delete_expired(key, now)
                    continue
                priority, at, _ = keys.message_index_parts(str(entry["gsi1sk"]))
                firsts[(priority, shard)] = min(firsts.get((priority, shard), int(at)), int(at))
                if keys.index_time(entry["gsi1sk"]) <= now and limit and int(entry.get("receive_count", 0)) >= limit:
                    moved = self._to_dlq(key, int(entry["receive_count"]), now)
                    report.moved_to_dlq += moved
                    if moved:
                        gone.add((entry["pk"], entry["sk"]))
                    else:
                        live = None
                elif keys.index_time(entry["gsi1sk"]) <= now:
                    visible.append(entry)
            if live is not None:
                live = live + self._shard_stats(shard, entries, now, frozenset(gone))
        # The backstop of the ready set: a marker for every priority with visible messages (one write unit each).
        ready.announce(self.ctx, self.space, due_pairs(visible, now))
        shard_marks.backstop(self.ctx, self.space, firsts, self.settings.read_shards)
        return Swept(False, live)

    def _oldest_sent(self, shard: int, now: int) -> int | None:
        items, _, _ = self.ctx.store.query(self.partition_key(shard), limit=25, projection="sk, expires_at")
        live = [item for item in items if not is_expired(item, now)]
        return sequence_ms(live[0]["sk"]) if live else None
