"""docs/benchmarks.md from the scenarios' figures: the summary against the targets first, then the details."""

from __future__ import annotations

import math
import os
import platform
from typing import Any

from . import pricing
from .meter import __doc__ as METER_NOTES
from .scenarios import (
    archive_cost,
    ceilings,
    first_answer,
    fleet,
    idle,
    large_bodies,
    load_step,
    marks_key,
    migration,
    replay,
)
from .scenarios.sharding import AUTO_RATE

Row = tuple[str, str, str, str]
_BODIES = {"fitting_body": "1 KB item", "kb_body": "1 KB body"}


def _n(value: float, digits: int = 2) -> str:
    if math.isinf(value):
        return "unbounded"
    return f"{value:,.{digits}f}"


def _met(ok: bool | None) -> str:
    return "reported" if ok is None else ("yes" if ok else "**no**")


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _steps(steps: dict[str, dict[str, float]]) -> str:
    return " + ".join(_n(steps[step]["write_units"], 1) for step in ("send", "receive", "delete")) + (
        f" = {_n(steps['total']['write_units'], 1)}"
    )


def capacity_modes_section(cost: dict[str, Any]) -> str:
    """The cost table of both capacity modes at a steady load."""
    header = ["message (send, receive, delete)", "WU / message", "RU / message", "on demand", "provisioned, 70 %"]
    header.append("provisioned, 100 %")
    rows = [
        [
            row["message"],
            _n(row["write_units"]),
            _n(row["read_units"]),
            f"${_n(row['on_demand'])}",
            f"${_n(row['provisioned_target'])}",
            f"${_n(row['provisioned_full'])}",
        ]
        for row in cost["capacity_modes"]
    ]
    return (
        "\n### Both capacity modes at a steady load ($ per million messages)\n\n"
        f"Prices: {cost['provisioned_prices']}. Reproduce with `.venv/bin/python -m bench.run --only cost`.\n\n"
        + _table(header, rows)
        + "\n"
    )


def summary(results: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    backlog = results["backlog"]
    deepest = backlog["levels"][-1]
    deep = {row["design"]: row for row in backlog["rows"] if [row["in_flight"], row["delayed"]] == deepest}
    rows.append(
        (
            f"items read per message delivered, {deepest[0]:,} in flight + {deepest[1]:,} delayed ahead of "
            f"{backlog['visible']} visible",
            "≤ 1.5",
            f"{_n(deep['ours']['items_read'])} (hidden_until {_n(deep['hidden_until']['items_read'], 0)}, "
            f"status index {_n(deep['status_index']['items_read'], 0)})",
            _met(deep["ours"]["items_read"] <= 1.5),
        )
    )
    contention = results["contention"]["rows"]
    sixteen = [row for row in contention if row["consumers"] == max(r["consumers"] for r in contention)]
    best = min(sixteen, key=lambda row: row["wasted_per_delivered"])
    one = next(row for row in sixteen if row["shards"] == 1)
    rows.append(
        (
            f"wasted conditional writes per delivered message, {best['consumers']} consumers, best shard count",
            "≤ 0.25",
            f"{_n(best['wasted_per_delivered'])} at {best['shards']} shards",
            _met(best["wasted_per_delivered"] <= 0.25),
        )
    )
    rows.append(
        (
            f"the same with 1 shard ({one['consumers']} consumers)",
            "reported",
            _n(one["wasted_per_delivered"]),
            _met(None),
        )
    )
    duplicates = sum(row["duplicates_held"] for row in contention)
    false_empty = sum(row["false_empty_receives"] for row in contention)
    rows.append(("duplicates held at once, all contention runs", "0", str(duplicates), _met(duplicates == 0)))
    rows.append(
        (
            "receives that came back empty while messages were visible, all contention runs",
            "reported",
            str(false_empty),
            _met(None),
        )
    )
    life = results["life_cost"]
    for design, label, target in (("standard", "standard", 7), ("fifo", "FIFO", 12)):
        fit = life[design]["fitting_body_bytes"]
        for variant, what in (("fitting_body", f"item ≤ 1 KB (body {fit} B)"), ("kb_body", "1 KB body (1,024 B)")):
            steps = life[design][variant]
            rows.append(
                (
                    f"write units per message life, {label}, {what}: send + receive + delete",
                    f"≤ {target}",
                    _steps(steps),
                    _met(steps["total"]["write_units"] <= target),
                )
            )
    for design, label in (("standard_queue_wide", "standard"), ("fifo_queue_wide", "FIFO")):
        if design in life:
            rows.append(
                (
                    f"the same, {label}, item ≤ 1 KB, on a queue received queue-wide (ready markers)",
                    "reported",
                    _steps(life[design]["fitting_body"]),
                    _met(None),
                )
            )
    if "json_kb" in life:
        json_total = life["json_kb"]["unbatched"]["total"]
        rows.append(
            (
                "$ per million 1 KB JSON messages, standard, one at a time (the life's write and read units)",
                "≤ $5",
                f"${_n(json_total['dollars_per_million'])} ({_n(json_total['write_units'])} WU, "
                f"{_n(json_total['read_units'])} RU)",
                _met(json_total["dollars_per_million"] <= 5),
            )
        )
    calls = life["standard"]["kb_body_batched"]["total"]["api_calls"]
    rows.append(
        (
            "API calls per message with batches (send 25, receive 10, delete 10), standard",
            "≤ 2.2",
            _n(calls),
            _met(calls <= 2.2),
        )
    )
    fifo_calls = life["fifo"]["kb_body_batched"]["total"]["api_calls"]
    rows.append(("the same, FIFO (10 groups)", "reported", _n(fifo_calls), _met(None)))
    sharding = results["sharding"]
    for body, what in (("fitting_body", "1 KB items"), ("kb_body", "1 KB bodies")):
        ours = [row for row in sharding["rows"] if row["design"] == "ours" and row["body"] == body]
        top = max(ours, key=lambda row: row["shards"])
        rows.append(
            (
                f"ceiling of one queue under per-partition limits, {top['shards']} shards, {what}: the trace's "
                f"units per message on each shard key (busiest key of the {top['messages']:,}-message trace)",
                "≥ 10,000 msg/s",
                f"{_n(top['even_ceiling'], 0)} ({_n(top['ceiling'], 0)})",
                _met(top["even_ceiling"] >= 10_000),
            )
        )
    throughput = results["throughput"]
    ratios = throughput["ratios"]
    rows.append(
        (
            f"end-to-end messages per second, {throughput['consumers']} consumers, {throughput['in_flight']:,} in "
            "flight: ours ÷ hidden_until filter",
            "≥ 2x",
            f"{_n(ratios['hidden_until'], 1)}x",
            _met(ratios["hidden_until"] >= 2),
        )
    )
    rows.append(("the same, ours ÷ status index", "reported", f"{_n(ratios['status_index'], 1)}x", _met(None)))
    rows.append(
        (
            "the same, ours with 8 shards ÷ hidden_until filter",
            "reported",
            f"{_n(ratios['ours_8_shards_over_hidden_until'], 1)}x",
            _met(None),
        )
    )
    fifo = results["fifo_blocked"]["rows"]
    rows.append(
        (
            f"FIFO items read per delivered, {fifo[-1]['blocked']:,} blocked behind a head in flight + "
            f"{fifo[-1]['active_groups']} active groups (0 blocked)",
            "reported",
            f"{_n(fifo[-1]['items_read'])} ({_n(fifo[0]['items_read'])})",
            _met(None),
        )
    )
    low = sharding["low_load"]
    rows.append(
        (
            f"empty-shard queries per delivered message at low load, {low['shards']} shards",
            "reported",
            _n(low["empty_queries_per_delivered"], 1),
            _met(None),
        )
    )
    for auto in sharding.get("low_load_auto", []):
        kind, most = ("FIFO", 3.0) if auto["fifo"] else ("standard", 1.5)
        rows.append(
            (
                f"queries (items read) per delivered message at {AUTO_RATE} msg/s, {kind} automatic queue that grew to "
                f"{auto['peak_shards']} shards and went quiet",
                f"≤ {most:g}" + ("" if auto["fifo"] else " (≤ 1.5)"),
                f"{_n(auto['queries_per_delivered'], 2)} ({_n(auto['items_read_per_delivered'], 2)})",
                _met(
                    auto["queries_per_delivered"] <= most and (auto["fifo"] or auto["items_read_per_delivered"] <= 1.5)
                ),
            )
        )
    if "load_step" in results:
        rows += load_step.summary(results["load_step"])
    cost = {(row["design"], row["in_flight"]): row for row in results["cost"]["rows"]}
    deep_level = results["cost"]["deep_in_flight"]
    rows.append(
        (
            f"dollars per million messages (1 KB), standard, 0 / {deep_level:,} in flight; SQS standard",
            "reported",
            f"{_n(cost[('ours', 0)]['dollars_per_million'])} / {_n(cost[('ours', deep_level)]['dollars_per_million'])};"
            f" SQS {_n(results['cost']['sqs']['standard'])}",
            _met(None),
        )
    )
    imports = {row["what"]: row["seconds"] for row in results["cold_import"]["rows"]}
    handlers = {what: seconds for what, seconds in imports.items() if what.startswith("functions.")}
    if handlers:
        slowest = max(handlers, key=handlers.__getitem__)
        rows.append(
            (
                "handler cold import (slowest handler; boto3 + Powertools resolver alone)",
                "reported; small",
                f"{slowest}: {handlers[slowest] * 1000:.0f} ms; "
                f"{imports['boto3 + APIGatewayRestResolver'] * 1000:.0f} ms",
                _met(None),
            )
        )
    if "first_answer" in results:
        rows += first_answer.summary_rows(results["first_answer"])
    return rows


def _details(results: dict[str, Any], images: dict[str, str]) -> list[str]:
    parts: list[str] = []
    life = results["life_cost"]
    parts.append("## Message life cost\n")
    parts.append(f"Backend: {life['backend']}. " + _first_paragraph("life_cost"))
    header = ["design", "variant", "send WU", "receive WU", "delete WU", "total WU", "RU", "calls", "items read"]
    table_rows = []
    for design in ("standard", "fifo", "hidden_until", "status_index", "standard_queue_wide", "fifo_queue_wide"):
        for variant in ("fitting_body", "kb_body", "fitting_body_batched", "kb_body_batched"):
            if design not in life or variant not in life[design]:
                continue
            steps = life[design][variant]
            total = steps["total"]
            name = variant.replace("fitting_body", f"item ≤ 1 KB ({life[design]['fitting_body_bytes']} B body)")
            name = name.replace("kb_body", "1 KB body").replace("_batched", ", batched")
            table_rows.append(
                [
                    design.replace("_", " "),
                    name,
                    _n(steps["send"]["write_units"]),
                    _n(steps["receive"]["write_units"]),
                    _n(steps["delete"]["write_units"]),
                    _n(total["write_units"]),
                    _n(total["read_units"]),
                    _n(total["api_calls"]),
                    _n(total["items_read"]),
                ]
            )
    parts.append(_table(header, table_rows))
    parts.append(
        "\nWU: write units (table and index entries), RU: read units, per message. Batched: send_batch of 25, "
        "receive(10), delete_batch of what came. The baselines have no batch calls.\n"
    )
    backlog = results["backlog"]
    parts.append("## Receive with a backlog\n")
    parts.append(f"Backend: {backlog['backend']}. " + _first_paragraph("backlog"))
    header = [
        "in flight",
        "delayed",
        "design",
        "items read / delivered",
        "RU / delivered",
        "calls / delivered",
        "delivered",
        "seconds",
    ]
    parts.append(
        _table(
            header,
            [
                [
                    f"{row['in_flight']:,}",
                    f"{row['delayed']:,}",
                    row["design"],
                    _n(row["items_read"]),
                    _n(row["read_units"]),
                    _n(row["api_calls"]),
                    row["delivered"],
                    _n(row["seconds"], 1),
                ]
                for row in backlog["rows"]
            ],
        )
    )
    parts.append(f"\n![items read per delivered message against the backlog](img/{images['backlog']})\n")
    contention = results["contention"]
    parts.append("## Concurrent consumers\n")
    parts.append(f"Backend: {contention['backend']}. " + _first_paragraph("contention"))
    header = [
        "shards",
        "consumers",
        "wasted writes / delivered",
        "duplicates held",
        "false empty receives",
        "calls / delivered",
        "items read / delivered",
        "seconds",
    ]
    parts.append(
        _table(
            header,
            [
                [
                    row["shards"],
                    row["consumers"],
                    _n(row["wasted_per_delivered"], 3),
                    row["duplicates_held"],
                    row["false_empty_receives"],
                    _n(row["api_calls_per_delivered"]),
                    _n(row["items_read_per_delivered"]),
                    _n(row["seconds"], 1),
                ]
                for row in contention["rows"]
            ],
        )
    )
    parts.append(f"\n![wasted conditional writes against consumers](img/{images['contention']})\n")
    fifo = results["fifo_blocked"]
    parts.append("## FIFO with a blocked group\n")
    parts.append(f"Backend: {fifo['backend']}. " + _first_paragraph("fifo_blocked"))
    header = [
        "blocked",
        "active groups",
        "delivered",
        "items read / delivered",
        "RU / delivered",
        "WU / delivered",
        "calls / delivered",
    ]
    parts.append(
        _table(
            header,
            [
                [
                    f"{row['blocked']:,}",
                    row["active_groups"],
                    row["delivered"],
                    _n(row["items_read"]),
                    _n(row["read_units"]),
                    _n(row["write_units"]),
                    _n(row["api_calls"]),
                ]
                for row in fifo["rows"]
            ],
        )
    )
    throughput = results["throughput"]
    parts.append("\n## End-to-end throughput\n")
    parts.append(f"Backend: {throughput['backend']}. " + _first_paragraph("throughput"))
    header = [
        "design",
        "messages",
        "seconds",
        "messages / s (moto)",
        "items read / message",
        "calls / message",
        "wasted writes / message",
    ]
    parts.append(
        _table(
            header,
            [
                [
                    name,
                    row["messages"],
                    _n(row["seconds"], 1),
                    _n(row["messages_per_second"], 1),
                    _n(row["items_read_per_message"], 1),
                    _n(row["api_calls_per_message"]),
                    _n(row["wasted_per_message"]),
                ]
                for name, row in throughput["rows"].items()
            ],
        )
    )
    parts.append(f"\n![messages per second by design](img/{images['throughput']})\n")
    sharding = results["sharding"]
    parts.append("## Write sharding\n")
    parts.append(
        f"Backend: {sharding['backend']} (units from the meter, limits from DynamoDB's documentation). "
        + _first_paragraph("sharding")
    )
    header = ["design", "shards", "messages", "ceiling (msg/s, busiest key)", "even spread (msg/s)", "busiest key"]
    parts.append(
        _table(
            header,
            [
                [
                    f"{row['design']} ({_BODIES[row['body']]})",
                    row["shards"],
                    row["messages"],
                    _n(row["ceiling"], 0),
                    _n(row.get("even_ceiling", row["ceiling"]), 0),
                    f"`{row['busiest_key']}`",
                ]
                for row in sharding["rows"]
            ],
        )
    )
    low = sharding["low_load"]
    parts.append(
        f"\nLow load, {low['shards']} shards, one message at a time received with receive(10): "
        f"{_n(low['queries_per_delivered'], 1)} queries and {_n(low['empty_queries_per_delivered'], 1)} empty-shard "
        f"queries per delivered message ({_n(low['read_units_per_delivered'], 1)} read units).\n"
    )
    for auto in sharding.get("low_load_auto", []):
        parts.append(
            f"Low load after a peak, {'FIFO' if auto['fifo'] else 'standard'} automatic queue (the default): grown to "
            f"{auto['peak_shards']} shards, its shards filled and drained, then quiet for its quiet period; now "
            f"{auto['shards']} shard, receivers visit {auto['read_shards']}; {AUTO_RATE} messages a second, each "
            f"received with receive(10): {_n(auto['queries_per_delivered'], 2)} queries, "
            f"{_n(auto['items_read_per_delivered'], 2)} items read per delivered message.\n"
        )
    parts.append(f"![ceiling against shards](img/{images['sharding']})\n")
    cost = results["cost"]
    parts.append("## Cost per million messages\n")
    parts.append(f"Prices: {cost['prices']}. " + _first_paragraph("cost"))
    header = ["design", "in flight", "WU / message", "RU / message", "$ per million"]
    parts.append(
        _table(
            header,
            [
                [
                    row["design"],
                    f"{row['in_flight']:,}",
                    _n(row["write_units"]),
                    _n(row["read_units"]),
                    _n(row["dollars_per_million"]),
                ]
                for row in cost["rows"]
            ]
            + [
                ["SQS standard", "any", "", "", _n(cost["sqs"]["standard"])],
                ["SQS standard, batches of 10", "any", "", "", _n(cost["sqs"]["standard_batched"])],
                ["SQS FIFO", "any", "", "", _n(cost["sqs"]["fifo"])],
                ["SQS FIFO, batches of 10", "any", "", "", _n(cost["sqs"]["fifo_batched"])],
            ],
        )
    )
    if cost.get("capacity_modes"):
        parts.append(capacity_modes_section(cost))
    imports = results["cold_import"]
    parts.append("\n## Handler cold import\n")
    parts.append(
        f"Backend: none (this machine, Python {imports['python']}, median of {imports['repeats']}). "
        + _first_paragraph("cold_import")
    )
    parts.append(_table(["import", "ms"], [[row["what"], f"{row['seconds'] * 1000:.0f}"] for row in imports["rows"]]))
    if imports["heaviest_poller_imports"]:
        heaviest = ", ".join(f"`{name}` {ms:.0f} ms" for name, ms in imports["heaviest_poller_imports"])
        parts.append(f"\nHeaviest direct imports of the poller: {heaviest}.\n")
    if "push" in results:
        parts += _push_details(results["push"])
    if "transactions" in results:
        parts += _transactions(results["transactions"])
    return parts


def _push_details(push: dict[str, Any]) -> list[str]:
    parts = ["\n## Push delivery\n", f"Backend: {push['backend']}. " + _first_paragraph("push")]
    parts.append(
        _table(
            ["path", "send → consumer start, median ms", "p90 ms", "WU / message", "RU / message", "calls / message"],
            [
                [
                    name,
                    f"{push[f'{path}_median_ms']:.0f}",
                    f"{push[f'{path}_p90_ms']:.0f}",
                    _n(push["cost"][path]["write_units"]),
                    _n(push["cost"][path]["read_units"]),
                    _n(push["cost"][path]["api_calls"]),
                ]
                for path, name in (("push", "push (dispatcher)"), ("pull", "pull (long-polling Consumer)"))
            ],
        )
    )
    parts.append(
        f"\nLatency ratio push / pull (medians, {push['messages']} messages each): {push['ratio']:.2f}. "
        f"Idle: the long-polling consumer made {push['pull_idle_calls_per_minute']:.0f} DynamoDB calls a minute "
        "on an empty sub-queue; push made none.\n"
    )
    return parts


def _transactions(figures: dict[str, Any]) -> list[str]:
    """Write units per message: ours alone, plain and in a transaction; then with the caller's own write."""
    rows = []
    for kind in ("standard", "standard_dedup", "fifo", "fifo_dedup"):
        for step, alone, together in (
            ("send", "business_then_plain", "business_in_transaction"),
            ("ack", "effect_then_plain", "effect_in_transaction"),
        ):
            ways = figures[kind][step]
            plain, transactional = ways["plain"]["write_units"], ways["transactional"]["write_units"]
            apart, joined = ways[alone]["write_units"], ways[together]["write_units"]
            rows.append(
                [
                    kind.replace("_", " + "),
                    step,
                    _n(plain),
                    _n(transactional),
                    _n(transactional - plain),
                    _n(apart),
                    _n(joined),
                    _n(joined - apart),
                    _n(ways["transactional"]["read_units"]),
                ]
            )
    header = [
        "queue",
        "step",
        "plain WU",
        "transactional WU",
        "extra WU",
        "caller's write, then plain WU",
        "both in one transaction WU",
        "extra WU",
        "transactional RU",
    ]
    return [
        "\n## Transactional send and ack\n",
        f"Backend: {figures['backend']}. " + _first_paragraph("transactions"),
        _table(header, rows),
        "",
    ]


def _first_paragraph(scenario: str) -> str:
    from importlib import import_module

    doc = import_module(f"bench.scenarios.{scenario}").__doc__ or ""
    paragraphs = [" ".join(part.split()) for part in doc.strip().split("\n\n")]
    return "\n\n".join(paragraphs) + "\n"


def render(results: dict[str, Any], meta: dict[str, Any], images: dict[str, str]) -> str:
    rows = summary(results)
    parts = [
        "# Benchmarks\n",
        f"Run on {meta['date']} with `{meta['command']}` ({meta['mode']}), in {meta['seconds']:.0f} s on "
        f"{os.cpu_count()} cores ({platform.machine()}, Python {platform.python_version()}). Every DynamoDB figure "
        f"comes from {meta['backend']}; counts and units are computed by a botocore hook on the client "
        "(`bench/meter.py`), never taken from the backend's `ConsumedCapacity` and never inferred from wall-clock "
        "time. Wall-clock figures are moto's: only ratios within one run mean anything.\n",
        "Reproduce with `make bench` (or `.venv/bin/python -m bench.run`); `--quick` runs every scenario on small "
        "sizes in about a minute (a check, not figures to publish), `--only NAME` runs one scenario and prints it. "
        "Contention and wall-clock figures move from run to run (threads interleave differently); counts of items "
        "and units do not.\n",
        "## Summary\n",
        _table(["figure", "target", "measured", "met?"], [list(row) for row in rows]),
        "",
        *_details(results, images),
        *(large_bodies.section(results["large_bodies"]) if "large_bodies" in results else []),
        *(ceilings.section(results["ceilings"]) if "ceilings" in results else []),
        *(load_step.section(results["load_step"], images["load_step"]) if "load_step" in results else []),
        *(fleet.section(results["fleet"]) if "fleet" in results else []),
        *(idle.section(results["idle"]) if "idle" in results else []),
        *(marks_key.section(results["marks_key"]) if "marks_key" in results else []),
        *(first_answer.section(results["first_answer"]) if "first_answer" in results else []),
        *_queue_wide(results),
        *(migration.section(results["migration"]) if "migration" in results else []),
        *(archive_cost.section(results["archive_cost"]) if "archive_cost" in results else []),
        *(replay.section(results["replay"]) if "replay" in results else []),
        "## How units are counted\n",
        "\n\n".join(" ".join(part.split()) for part in (METER_NOTES or "").strip().split("\n\n")) + "\n",
        f"Prices: {pricing.SOURCE}.\n",
        "## The baselines\n",
        _baseline_notes(),
    ]
    return "\n".join(parts)


def _queue_wide(results: dict[str, Any]) -> list[str]:
    """The queue-wide receive's figures (`bench/scenarios/fair.py`), when that scenario ran."""
    if "fair" not in results:
        return []
    from .scenarios import fair

    return [f"## {fair.TITLE}\n", fair.INTRO + "\n", fair.markdown(results["fair"]) + "\n"]


def _baseline_notes() -> str:
    from .baselines import hidden_until, status_index

    notes = []
    for module in (hidden_until, status_index):
        notes.append("\n\n".join(" ".join(part.split()) for part in (module.__doc__ or "").strip().split("\n\n")))
    return "\n\n".join(notes) + "\n"
