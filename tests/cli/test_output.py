"""Rendering: sparklines, durations, and the live stats view on a terminal."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from dq.output import Output, duration, queues_table, relative, shards_text, sparkline
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


@pytest.mark.parametrize("width", [80, 60])
def test_peek_never_cuts_a_message_id_in_a_narrow_terminal(width: int) -> None:
    """An id is what `dq get` and `dq cancel` take: the body and the attributes give way, the id does not."""
    from dq.output import messages_table

    ids = ["S0-3.179564924339700005b78ec", "S0.17956492382180000db8090", "Fb3JkZXItNDI.17956492390450000cddc99"]
    messages = [
        {
            "message_id": message_id,
            "state": "visible",
            "body": "a body long enough to need wrapping " * 2,
            "attributes": {"kind": "greeting", "lang": "en"},
            "receive_count": 0,
            "sent_at": 1_000,
        }
        for message_id in ids
    ]
    console = Console(file=io.StringIO(), width=width, no_color=True)
    console.print(messages_table(messages))
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    assert all(message_id in printed for message_id in ids), printed


def test_a_queue_shows_its_shard_count_and_whether_it_follows_the_load() -> None:
    assert shards_text({"shards": 1, "auto_shards": True, "min_shards": 1, "max_shards": 64}) == "1 shard (auto 1-64)"
    assert shards_text({"shards": 8, "auto_shards": False}) == "8 shards"
    console = Console(file=io.StringIO(), width=200)
    console.print(queues_table([{"name": "q", "shards": 4, "auto_shards": True}, {"name": "f", "shards": 2}]))
    rendered = console.file.getvalue()
    assert "4 auto" in rendered and " 2 " in rendered


def test_a_pipe_gets_whole_columns_and_one_line_per_queue(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """Through a pipe (no terminal, no COLUMNS) `dq queues ls` cut "visibility" to "visibili…" and split "max
    receives" and "23 min ago" over two lines at Rich's default 80 columns."""
    monkeypatch.delenv("COLUMNS", raising=False)
    queues = [
        {"name": f"a-queue-with-a-rather-long-name-{n}", "fifo": False, "visibility_timeout": 30, "shards": 1,
         "max_receive_count": 5, "retention_seconds": 345_600, "delay_seconds": 0, "created_at": 1_000}
        for n in range(3)
    ]  # fmt: skip
    Output().show(queues_table(queues))
    lines = capsys.readouterr().out.splitlines()
    assert "…" not in "".join(lines) and len(lines) == 4
    assert lines[0].split() == [
        "queue",
        "type",
        "visibility",
        "max",
        "receives",
        "retention",
        "delay",
        "shards",
        "created",
    ]
    monkeypatch.setenv("COLUMNS", "60")
    assert Output().console.width == 60, "a width that is given is kept"
