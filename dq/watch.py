"""`dq stats`: a queue's figures per client, once or as a live view with a depth sparkline per row.

Both targets list a queue's clients (over HTTP `GET /queues/{q}/clients`), so each client gets its own row and
the total is their sum; `--client` shows one client's row.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rich.live import Live
from rich.table import Table

from .output import Output, stats_table
from .targets import Json, Target

TREND_POINTS: Final = 40
TOTAL: Final = "total"


def summed(figures: Iterable[Mapping[str, Any]]) -> Json:
    """Figures added up as the core adds them: counts summed, the oldest age the largest, approximate if any is."""
    total: Json = {"visible": 0, "in_flight": 0, "delayed": 0, "dlq": 0, "oldest_age_seconds": None}
    approximate = False
    by_priority: dict[str, dict[str, int]] = {}
    for stats in figures:
        for key in ("visible", "in_flight", "delayed", "dlq"):
            total[key] += int(stats.get(key) or 0)
        for priority, counts in (stats.get("by_priority") or {}).items():
            band = by_priority.setdefault(priority, {"visible": 0, "in_flight": 0, "delayed": 0})
            for key, value in counts.items():
                band[key] = band.get(key, 0) + int(value)
        ages = [age for age in (total["oldest_age_seconds"], stats.get("oldest_age_seconds")) if age is not None]
        total["oldest_age_seconds"] = max(ages) if ages else None
        approximate = approximate or bool(stats.get("approximate"))
    total["approximate"] = approximate
    if by_priority:
        total["by_priority"] = dict(sorted(by_priority.items(), reverse=True))
    return total


@dataclass(frozen=True)
class Snapshot:
    """A queue's figures at one moment: per client, and their total."""

    queue: str
    at: int
    total: Json
    clients: dict[str, Json]

    def rows(self) -> list[tuple[str, Json]]:
        rows = list(self.clients.items())
        return rows if len(rows) == 1 else [*rows, (TOTAL, self.total)]

    def to_dict(self) -> Json:
        return {"queue": self.queue, "at": self.at, "total": self.total, "clients": self.clients}


def take(target: Target, queue: str, client: str | None = None) -> Snapshot:
    """One client's figures, or each of the queue's clients' and their sum: one call for the client list, then
    one per client."""
    now = int(time.time() * 1000)
    if client is not None:
        stats = target.stats(queue, client)
        return Snapshot(queue, now, stats, {client: stats})
    per_client = {name: target.stats(queue, name) for name in target.clients(queue)}
    return Snapshot(queue, now, summed(per_client.values()), per_client)


@dataclass
class Trends:
    """The last depths of each row, oldest first."""

    points: dict[str, deque[int]] = field(default_factory=dict)

    def add(self, snapshot: Snapshot) -> None:
        for name, stats in snapshot.rows():
            self.points.setdefault(name, deque(maxlen=TREND_POINTS)).append(int(stats.get("visible") or 0))

    def as_lists(self) -> dict[str, list[int]]:
        return {name: list(points) for name, points in self.points.items()}


def watch(
    target: Target,
    queue: str,
    client: str | None,
    output: Output,
    interval: float,
    count: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Refreshes every `interval` seconds, `count` times or until Ctrl-C (which the caller handles). JSON
    output is one snapshot per line; a terminal gets a table redrawn in place."""
    trends = Trends()
    refreshes = 0

    def next_snapshot() -> Snapshot | None:
        nonlocal refreshes
        if count is not None and refreshes >= count:
            return None
        if refreshes:
            sleep(interval)
        refreshes += 1
        return take(target, queue, client)

    def table(snapshot: Snapshot) -> Table:
        trends.add(snapshot)
        title = f"{queue} · every {interval:g} s · {time.strftime('%H:%M:%S')} · Ctrl-C stops"
        return stats_table(snapshot.rows(), trends.as_lists(), title)

    if output.as_json:
        while (snapshot := next_snapshot()) is not None:
            output.line(snapshot.to_dict())
    elif output.console.is_terminal:
        with Live(console=output.console, auto_refresh=False) as live:
            while (snapshot := next_snapshot()) is not None:
                live.update(table(snapshot), refresh=True)
    else:
        # A file or a pipe cannot be redrawn: each refresh is appended, a log of the queue over time.
        while (snapshot := next_snapshot()) is not None:
            output.show(table(snapshot))
