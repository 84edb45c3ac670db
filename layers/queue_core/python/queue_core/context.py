"""What every part of the core shares: the store, the registry, the clock, the bodies' forms and their bucket,
sequences and a claim pool."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .bodies import OFFLOADED, Bodies
from .clock import Clock, SequenceSource, to_ms
from .keys import Space
from .load_meter import LoadMeter
from .registry import Registry
from .shards import Traffic
from .store import Store

T = TypeVar("T")

# Claims of one receive run in parallel, so a receive of 10 costs about one round trip, not ten.
CLAIM_THREADS = 10


@dataclass
class Context:
    store: Store
    registry: Registry
    clock: Clock
    bodies: Bodies = field(default_factory=Bodies)
    sequences: SequenceSource = field(default_factory=SequenceSource)
    pool: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(CLAIM_THREADS, thread_name_prefix="queue-claim")
    )
    # Work started from inside a claim (marking a FIFO group's messages) runs here, never in `pool`, so that a
    # claim never waits for a place in the pool it holds.
    inner_pool: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(CLAIM_THREADS, thread_name_prefix="queue-mark")
    )

    # This process's load per sub-queue, for automatic shard counts (memory only; see `load_meter`).
    load: LoadMeter = field(default_factory=LoadMeter)
    traffic_by_sub_queue: dict[tuple[Space, int, int], Traffic] = field(default_factory=dict)
    traffic_lock: threading.Lock = field(default_factory=threading.Lock)
    shared_state: dict[tuple[Any, ...], Any] = field(default_factory=dict)

    def delete_messages(self, pk: str) -> int:
        """Removes every message item of a partition for good, and the objects of the offloaded bodies of the items
        the deletes removed (not of those read: one may have moved to the DLQ meanwhile, with its object)."""
        return self.store.delete_partition(pk, one_by_one=OFFLOADED, removed=self.bodies.discard)

    def now_ms(self) -> int:
        return to_ms(self.clock())

    def shared(self, key: tuple[Any, ...], make: Callable[[], T]) -> T:
        """One value per key in this process, shared by every object and thread (e.g. a queue's rotation)."""
        with self.traffic_lock:
            if key not in self.shared_state:
                self.shared_state[key] = make()
            return self.shared_state[key]

    def traffic(self, space: Space, read_shards: int, send_shards: int) -> Traffic:
        """One per sub-queue, generation and shard layout in this process, shared by every SubQueue and thread."""
        key = (space, read_shards, send_shards)
        with self.traffic_lock:
            if key not in self.traffic_by_sub_queue:
                self.traffic_by_sub_queue[key] = Traffic(read_shards, send_shards)
            return self.traffic_by_sub_queue[key]
