"""Cost per million messages at on-demand prices, and on a provisioned table at a steady load, from the units the
other scenarios measured.

Write units per message come from the message life (1 KB body; batched where the design has batches, which changes
calls, not units). Read units per message are the send's reads (a baseline reads before it writes) plus what
receiving and deleting read in the backlog scenario, with nothing and with 10,000 messages in flight ahead.
SQS is priced at three requests per message (send, receive, delete), one at a time and in batches of 10.

Provisioned (`capacity="provisioned"`): the same units per message, paid by the unit-hour for what auto scaling
keeps provisioned. At a steady load it holds the consumed units at its target utilization (70 % by default), so a
unit consumed costs 1/0.7 of a provisioned unit-second; at 100 % (no headroom, throttles at any rise) the price
is the floor. Floors left idle, bursts and the minutes auto scaling takes to follow a rise are not in this figure.
"""

from __future__ import annotations

from typing import Any, Final

from .. import pricing
from . import backlog, life_cost

NAME: Final = "cost"


def _consume_reads(rows: list[dict[str, Any]], design: str, in_flight: int) -> float | None:
    for row in rows:
        if row["design"] == design and row["in_flight"] == in_flight and row["delayed"] == 0:
            return float(row["read_units"])
    return None


def run(quick: bool = False, life: dict[str, Any] | None = None, backlogs: dict[str, Any] | None = None) -> dict:
    life = life or life_cost.run(quick=True)
    backlogs = backlogs or backlog.run(quick=True)
    levels = sorted({row["in_flight"] for row in backlogs["rows"] if row["delayed"] == 0})
    deep = levels[-1]
    rows = []
    for design, variant in (("standard", "kb_body_batched"), ("hidden_until", "kb_body"), ("status_index", "kb_body")):
        steps = life[design][variant]
        writes = steps["total"]["write_units"]
        send_reads = steps["send"]["read_units"]
        consumer = "ours" if design == "standard" else design
        for in_flight in (0, deep):
            reads = send_reads + (_consume_reads(backlogs["rows"], consumer, in_flight) or 0.0)
            rows.append(
                {
                    "design": consumer,
                    "in_flight": in_flight,
                    "write_units": writes,
                    "read_units": reads,
                    "dollars_per_million": pricing.dynamodb_dollars_per_million(writes, reads),
                }
            )
    fifo = life["fifo"]["kb_body_batched"]["total"]
    rows.append(
        {
            "design": "ours FIFO",
            "in_flight": 0,
            "write_units": fifo["write_units"],
            "read_units": fifo["read_units"],
            "dollars_per_million": pricing.dynamodb_dollars_per_million(fifo["write_units"], fifo["read_units"]),
        }
    )
    requests = pricing.SQS_REQUESTS_PER_MESSAGE * 1_000_000
    sqs = {
        "standard": requests * pricing.SQS_STANDARD_REQUEST,
        "standard_batched": requests * pricing.SQS_STANDARD_REQUEST / pricing.SQS_BATCH,
        "fifo": requests * pricing.SQS_FIFO_REQUEST,
        "fifo_batched": requests * pricing.SQS_FIFO_REQUEST / pricing.SQS_BATCH,
    }
    for row in rows:
        print(
            f"  cost {row['design']:<13} at {row['in_flight']:>6} in flight: ${row['dollars_per_million']:8.2f} "
            f"per million ({row['write_units']:.1f} WU, {row['read_units']:.2f} RU per message)"
        )
    print(
        f"  cost SQS standard ${sqs['standard']:.2f} (batched ${sqs['standard_batched']:.2f}), FIFO ${sqs['fifo']:.2f}"
    )
    provisioned = _capacity_modes(life)
    for row in provisioned:
        print(
            f"  cost {row['message']:<28} ({row['write_units']:.2f} WU, {row['read_units']:.2f} RU): on demand "
            f"${row['on_demand']:.2f}, provisioned at 70 % "
            f"${row['provisioned_target']:.2f} (100 %: ${row['provisioned_full']:.2f}) per million"
        )
    return {
        "prices": pricing.SOURCE,
        "provisioned_prices": pricing.PROVISIONED_SOURCE,
        "deep_in_flight": deep,
        "rows": rows,
        "sqs": sqs,
        "capacity_modes": provisioned,
    }


# The message lives priced in both capacity modes: (what, life scenario's design, its variant).
CAPACITY_MODE_LIVES: Final = (
    ("standard, 1 KB item (JSON 1 KB)", "json_kb", "batched"),
    ("standard, 1 KB body of random bytes", "standard", "kb_body_batched"),
    ("FIFO, 1 KB body of random bytes", "fifo", "kb_body_batched"),
)


def _capacity_modes(life: dict[str, Any]) -> list[dict[str, Any]]:
    """Each message life's dollars per million on demand and provisioned (at the target and at 100 %)."""
    rows = []
    for message, design, variant in CAPACITY_MODE_LIVES:
        total = life.get(design, {}).get(variant, {}).get("total")
        if total is None:
            continue
        writes, reads = total["write_units"], total["read_units"]
        rows.append(
            {
                "message": message,
                "write_units": writes,
                "read_units": reads,
                "on_demand": pricing.dynamodb_dollars_per_million(writes, reads),
                "provisioned_target": pricing.provisioned_dollars_per_million(
                    writes, reads, pricing.TARGET_UTILIZATION
                ),
                "provisioned_full": pricing.provisioned_dollars_per_million(writes, reads, 1.0),
            }
        )
    return rows
