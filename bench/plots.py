"""The plots of docs/benchmarks.md, drawn with matplotlib's Agg backend (no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

LABELS = {
    "ours": "ours (visibility index)",
    "ours_8_shards": "ours, 8 shards",
    "hidden_until": "hidden_until filter",
    "status_index": "status index",
}
COLOURS = {"ours": "#1b7837", "ours_8_shards": "#5aae61", "hidden_until": "#c51b7d", "status_index": "#2166ac"}
DESIGNS = ("ours", "hidden_until", "status_index")


def _save(figure: Any, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path.name


def backlog(result: dict[str, Any], path: Path) -> str:
    figure, axes = plt.subplots(figsize=(7, 4))
    levels = [f"{in_flight:,} + {delayed:,}" for in_flight, delayed in result["levels"]]
    for design in DESIGNS:
        rows = [row for row in result["rows"] if row["design"] == design]
        axes.plot(levels, [row["items_read"] for row in rows], marker="o", label=LABELS[design], color=COLOURS[design])
    axes.axhline(1.5, color="grey", linestyle="--", linewidth=1, label="target for ours (1.5)")
    axes.set_yscale("log")
    axes.set_xlabel("messages in flight + delayed ahead of 100 visible")
    axes.set_ylabel("items read per message delivered")
    axes.set_title("Receive cost with a backlog")
    axes.legend()
    return _save(figure, path)


def contention(result: dict[str, Any], path: Path) -> str:
    figure, axes = plt.subplots(figsize=(7, 4))
    for shards in sorted({row["shards"] for row in result["rows"]}):
        rows = [row for row in result["rows"] if row["shards"] == shards]
        axes.plot(
            [row["consumers"] for row in rows],
            [row["wasted_per_delivered"] for row in rows],
            marker="o",
            label=f"{shards} shard{'s' if shards > 1 else ''}",
        )
    axes.axhline(0.25, color="grey", linestyle="--", linewidth=1, label="target (0.25)")
    axes.set_xscale("log", base=2)
    axes.set_xticks([1, 4, 16], ["1", "4", "16"])
    axes.set_xlabel("concurrent consumers on one sub-queue")
    axes.set_ylabel("wasted conditional writes per delivered")
    axes.set_title("Claim conflicts")
    axes.legend()
    return _save(figure, path)


def throughput(result: dict[str, Any], path: Path) -> str:
    figure, axes = plt.subplots(figsize=(7, 4))
    designs = list(result["rows"])
    rates = [result["rows"][design]["messages_per_second"] for design in designs]
    bars = axes.bar([LABELS[d] for d in designs], rates, color=[COLOURS[d] for d in designs])
    for bar, design in zip(bars, designs, strict=True):
        ratio = result["rows"]["ours"]["messages_per_second"] / result["rows"][design]["messages_per_second"]
        label = "" if design.startswith("ours") else f"ours is {ratio:.1f}x"
        axes.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom")
    axes.set_ylabel("messages per second (moto, in-process)")
    axes.set_title(f"{result['consumers']} consumers, {result['in_flight']:,} in flight")
    return _save(figure, path)


def sharding(result: dict[str, Any], path: Path) -> str:
    figure, axes = plt.subplots(figsize=(7, 4))
    rows = [row for row in result["rows"] if row["design"] == "ours" and row["body"] == "fitting_body"]
    shards = [row["shards"] for row in rows]
    axes.plot(shards, [row["ceiling"] for row in rows], marker="o", label="busiest key in the trace")
    axes.plot(shards, [row["even_ceiling"] for row in rows], marker="s", linestyle=":", label="even spread")
    axes.axhline(10_000, color="grey", linestyle="--", linewidth=1, label="target (10,000 msg/s)")
    axes.set_xscale("log", base=2)
    axes.set_xticks(shards, [str(count) for count in shards])
    axes.set_xlabel("shards")
    axes.set_ylabel("messages per second")
    axes.set_title("Ceiling under per-partition limits (1 KB items)")
    axes.legend()
    return _save(figure, path)


def load_step(result: dict[str, Any], path: Path, title: str) -> str:
    """Offered and carried messages a second, shard count and throttled requests over simulated time."""
    seconds = result["seconds"]
    loaded = [s for s in seconds if s["phase"] != "idle"]
    figure, (rates, shards) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    at = [s["at"] for s in loaded]
    rates.plot(at, [s["offered"] for s in loaded], color="grey", linestyle="--", label="offered")
    rates.plot(at, [s["stored"] for s in loaded], color=COLOURS["ours"], label="stored (sends that succeeded)")
    rates.plot(at, [s["received"] for s in loaded], color=COLOURS["status_index"], alpha=0.7, label="received")
    rates.set_ylabel("messages per second")
    rates.set_title(title)
    rates.legend(loc="upper left", fontsize=8)
    every = [s for s in seconds if s["shards"]]
    shards.step([s["at"] for s in every], [s["shards"] for s in every], where="post", color=COLOURS["ours"])
    shards.set_ylabel("shards", color=COLOURS["ours"])
    shards.set_xlabel("simulated seconds")
    throttled = shards.twinx()
    throttled.plot(
        at,
        [100 * s["throttled"] / s["requests"] if s["requests"] else 0 for s in loaded],
        color=COLOURS["hidden_until"],
        alpha=0.6,
    )
    throttled.set_ylabel("requests throttled (%)", color=COLOURS["hidden_until"])
    return _save(figure, path)
