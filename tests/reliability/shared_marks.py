"""The runs' processes share their shard marks as fast senders do (`queue_core.shard_marks.BUSY_PUTS`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from queue_core import shard_marks


@contextmanager
def every_putter_reads_the_marks() -> Iterator[None]:
    """Every process reads the marks before it puts one (at most once a second) and trusts those others put, the
    path of fast senders: the runs' processes put far fewer marks a second than `BUSY_PUTS`, and would take it
    seldom (a fleet's short run never did, and with a threshold of one mark 3 times)."""
    saved = shard_marks.BUSY_PUTS
    shard_marks.BUSY_PUTS = 0  # type: ignore[misc]
    try:
        yield
    finally:
        shard_marks.BUSY_PUTS = saved  # type: ignore[misc]
