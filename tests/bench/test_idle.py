"""The idle-shards scenario runs, measures both designs in one run, and renders its section."""

from __future__ import annotations

from bench.backend import moto_backend
from bench.scenarios import idle


def test_the_idle_scenario_measures_before_and_after_and_the_after_meets_the_bounds() -> None:
    with moto_backend() as backend:
        rows = [idle._case(backend, 8, fifo, before, 3) for fifo in (False, True) for before in (True, False)]
    figures = {"backend": "moto", "pause": idle.PAUSE, "rows": rows}
    for row in rows:
        assert row["delivered"] == 3
        if row["design"] == "after":
            assert row["queries_per_empty_receive"] <= idle.TARGET_EMPTY
            assert row["queries_per_delivered"] <= idle.TARGET_DELIVERED[row["fifo"]]
        else:
            assert row["queries_per_empty_receive"] >= 8  # every shard before an empty answer
    assert [answer for *_, answer in idle.summary_rows(figures)] == ["yes", "yes"]
    assert "| standard | 8 |" in "\n".join(idle.section(figures))
