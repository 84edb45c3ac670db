"""Load reports of a fleet: what the same load costs in report writes, and how well the reports measure it, whether
one process carries it or thousands do (each its own core client: its own caches and load meter).

One standard sub-queue with an automatic shard count carries `SHARE` of one partition key's write limit for
`SECONDS` simulated seconds, sent one message at a time in turn by `senders` processes, or by processes that each
live `LIFETIME` seconds and are replaced by new ones. The core's per-key limit is scaled down by `SCALE`, with the
load (units per key grow with the load while the reports' quantum is a share of the limit: the reports a second
and their sampling error are those of the full load). Counted: the writes of load reports (every write to a load
partition, from a botocore hook), the load the reports show at the end (`autoshard.recent_load`, as a share of a
key's limit) and the count a sweep then chooses. Reproduce with `.venv/bin/python -m bench.run --only fleet`.
"""

from __future__ import annotations

import json
import time
from typing import Any, Final

from queue_core import QueueClient, autoshard

from ..backend import moto_backend
from .load_step import core_limits_scaled

NAME: Final = "fleet"
COMMAND: Final = ".venv/bin/python -m bench.run --only fleet"
TABLE: Final = "fleet"
SCALE: Final = 50
SHARE: Final = 0.96
SECONDS: Final = 60
PER_MESSAGE: Final = 4  # write units of a message's life on its shard's key (bodies under 1 KB)
BODY: Final = "x" * 600
SENDERS: Final = (1, 2, 20, 200, 2_000)
QUICK_SENDERS: Final = (1, 20)
LIFETIME: Final = 2
SHORT_LIVED: Final = 20


class ReportWrites:
    """Counts the writes to load partitions (`L#` keys) on a client."""

    def __init__(self) -> None:
        self.count = 0

    def before_call(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in ("PutItem", "UpdateItem") and '"pk": {"S": "L#' in json.dumps(json.loads(params["body"])):
            self.count += 1


def _one(senders: int, lifetime: int | None) -> dict[str, Any]:
    with moto_backend() as backend, core_limits_scaled() as core_scale:
        core_scale(SCALE)
        now = [1_800_000_000.0]
        clock = lambda: now[0]  # noqa: E731
        admin = QueueClient(TABLE, dynamodb=backend.client, clock=clock)
        admin.create_table()
        admin.create_queue("fleet")
        writes = ReportWrites()
        backend.client.meta.events.register("before-call.dynamodb", writes.before_call)

        def fleet() -> list[Any]:
            made = [QueueClient(TABLE, dynamodb=backend.client, clock=clock) for _ in range(senders)]
            return [process.queue("fleet", "c") for process in made]

        processes = fleet()
        per_second = SHARE * autoshard.KEY_WRITE_UNITS / PER_MESSAGE
        owed, sent, started = 0.0, 0, time.perf_counter()
        for second in range(SECONDS):
            if lifetime and second and second % lifetime == 0:
                processes = fleet()
            owed += per_second
            while owed >= 1:
                owed -= 1
                processes[sent % len(processes)].send(f"{sent}:{BODY}")
                sent += 1
            now[0] += 1
        settings = admin.get_queue("fleet")
        reports = autoshard.read_reports(admin._ctx, settings, ["c"])
        load = autoshard.recent_load(reports[0], int(now[0] * 1000))
        shards = admin.sweep().shards[0]["shards"]
        backend.client.meta.events.unregister("before-call.dynamodb", writes.before_call)
        return {
            "senders": senders,
            "lifetime": lifetime,
            "messages": sent,
            "report_writes": writes.count,
            "writes_per_second": writes.count / SECONDS,
            "measured_share": load.units / autoshard.KEY_WRITE_UNITS,
            "shards": shards,
            "wall_seconds": time.perf_counter() - started,
        }


def run(quick: bool = False) -> dict[str, Any]:
    rows = []
    for senders in QUICK_SENDERS if quick else SENDERS:
        rows.append(_one(senders, None))
        print(f"  {_line(rows[-1])}", flush=True)
    rows.append(_one(SHORT_LIVED, LIFETIME))
    print(f"  {_line(rows[-1])}", flush=True)
    return {"rows": rows, "share": SHARE, "seconds": SECONDS, "scale": SCALE}


def _who(row: dict[str, Any]) -> str:
    who = f"{row['senders']:,} process{'es' if row['senders'] > 1 else ''}"
    return who + (f", each replaced every {row['lifetime']} s" if row["lifetime"] else "")


def _line(row: dict[str, Any]) -> str:
    return (
        f"{_who(row)}: {row['report_writes']} report writes ({row['writes_per_second']:.2f}/s) for "
        f"{row['messages']} messages; measured {row['measured_share']:.0%} of a key; {row['shards']} shards"
    )


def section(figures: dict[str, Any]) -> list[str]:
    """The scenario's part of docs/benchmarks.md."""
    rows = [
        f"| {_who(row)} | {row['messages']:,} | {row['report_writes']} | {row['writes_per_second']:.2f} | "
        f"{row['measured_share']:.0%} | {row['shards']} |"
        for row in figures["rows"]
    ]
    full_rate = figures["share"] * 1_000 / PER_MESSAGE
    writes = sum(row["writes_per_second"] for row in figures["rows"]) / len(figures["rows"])
    return [
        "## Load reports of a fleet\n",
        f"The same load, {figures['share']:.0%} of one partition key's write limit for {figures['seconds']} "
        "simulated seconds on a standard queue with an automatic count, sent by one process or spread over "
        f"thousands (each its own core client), at 1/{figures['scale']} scale (the reports a second and their "
        "sampling error are those of the full load). A process reports once per quantum of load it carries "
        "(5 % of a key's limit over 5 s per shard), from a random point, so the number of report writes follows "
        "the load, not the number of processes, and one that carries less reports with that probability. "
        f"At full scale the same load is {full_rate:.0f} messages a second: a report write per "
        f"{full_rate / writes:.0f} messages. The load measured is what the reports show beyond their sampling error "
        "(thin senders' reports err more, so it reads lower); a quarter of a key per shard needs 4 shards. "
        f"Reproduce with `{COMMAND}`.\n",
        "| senders | messages | report writes | a second | load measured at the end | shards chosen |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]
