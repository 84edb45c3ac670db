"""Time, as the core sees it: an injectable clock in epoch seconds, and ordered sequences built from it."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable

Clock = Callable[[], float]

# A sequence is 13 digits of milliseconds, 4 digits of a per-process counter and 6 random hex digits: it sorts in
# send order within a process, also inside one millisecond, and is unique across processes.
SEQUENCE_COUNTER_LIMIT = 10_000


def to_ms(seconds: float) -> int:
    return int(seconds * 1000)


def fixed_ms(ms: int) -> str:
    """Fixed-width milliseconds, so that strings sort as the times do (good until the year 2286)."""
    return f"{max(ms, 0):013d}"


class SequenceSource:
    """Hands out sequences that never go backwards in this process, even if the clock does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = 0
        self._counter = 0

    def next(self, now_ms: int) -> str:
        with self._lock:
            if now_ms > self._last_ms:
                self._last_ms, self._counter = now_ms, 0
            else:
                self._counter += 1
                if self._counter >= SEQUENCE_COUNTER_LIMIT:
                    self._last_ms, self._counter = self._last_ms + 1, 0
            return f"{self._last_ms:013d}{self._counter:04d}{secrets.randbits(24):06x}"


def sequence_ms(sequence: str) -> int:
    """The send time a standard sequence carries."""
    return int(sequence[:13])
