"""Rendering: sparklines, durations, and the live stats view on a terminal."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from dq.output import Output, duration, relative, sparkline
from dq.watch import summed, watch


def test_sparkline_scales_from_zero_to_the_largest_value() -> None:
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█"
    assert sparkline([0, 0, 0]) == "▁▁▁"
    assert sparkline([5, 10]) == "▅█"
    assert sparkline([]) == ""


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "-"), (0, "0 s"), (45, "45 s"), (90, "90 s"), (600, "10 min"), (7200, "2 h"), (345_600, "4 d")],
)
def test_durations_use_the_largest_whole_unit(seconds: int | None, text: str) -> None:
    assert duration(seconds) == text


def test_times_read_relative_to_now() -> None:
    assert relative(1_000_000, now_ms=1_000_000) == "now"
    assert relative(1_000_000 - 3_000, now_ms=1_000_000) == "3 s ago"
    assert relative(1_000_000 + 125_000, now_ms=1_000_000) == "in 2 min"
    assert relative(None) == "-"


def test_summed_figures_add_counts_and_keep_the_oldest_age() -> None:
    total = summed(
        [
            {"visible": 2, "in_flight": 1, "delayed": 0, "dlq": 0, "oldest_age_seconds": 5, "approximate": False},
            {"visible": 1, "in_flight": 0, "delayed": 3, "dlq": 4, "oldest_age_seconds": None, "approximate": True},
        ]
    )
    assert total == {
        "visible": 3,
        "in_flight": 1,
        "delayed": 3,
        "dlq": 4,
        "oldest_age_seconds": 5,
        "approximate": True,
    }


class Draining:
    """A target whose two clients lose a message per look, as a queue being consumed does."""

    def __init__(self) -> None:
        self.depth = {"a": 4, "b": 2}

    def clients(self, queue: str) -> list[str]:
        return list(self.depth)

    def stats(self, queue: str, client: str) -> dict[str, Any]:
        visible = self.depth[client]
        self.depth[client] = max(0, visible - 1)
        return {"visible": visible, "in_flight": 1, "delayed": 0, "dlq": 0, "oldest_age_seconds": 7}


def test_the_watch_redraws_one_table_in_place_on_a_terminal() -> None:
    screen = io.StringIO()
    output = Output()
    output.console = Console(file=screen, force_terminal=True, width=100, color_system=None)
    pauses: list[float] = []
    watch(Draining(), "orders", None, output, interval=0.5, count=3, sleep=pauses.append)

    assert pauses == [0.5, 0.5], "it sleeps between refreshes, not after the last"
    drawn = screen.getvalue()
    assert "\x1b[" in drawn, "cursor movements: redrawn in place, not appended"
    last = drawn.split("orders · every 0.5 s")[-1]
    rows = {line.split()[0]: line.split() for line in last.splitlines() if line.strip()[:1] in ("a", "b", "t")}
    assert rows["a"][1:2] == ["2"] and rows["a"][-1] == "█▆▅"
    assert rows["b"][1:2] == ["0"] and rows["b"][-1] == "█▅▁"
    assert rows["total"][1:3] == ["2", "2"]
