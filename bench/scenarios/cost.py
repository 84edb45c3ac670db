"""Cost per million messages at on-demand prices, from the units the other scenarios measured.

Write units per message come from the message life (1 KB body; batched where the design has batches, which changes
calls, not units). Read units per message are the send's reads (a baseline reads before it writes) plus what
receiving and deleting read in the backlog scenario, with nothing and with 10,000 messages in flight ahead.
SQS is priced at three requests per message (send, receive, delete), one at a time and in batches of 10.
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
    return {"prices": pricing.SOURCE, "deep_in_flight": deep, "rows": rows, "sqs": sqs}
