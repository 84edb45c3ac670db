"""Runs every scenario and writes docs/benchmarks.md and its plots in docs/img/.

`python -m bench.run` for the recorded figures (a few minutes on two cores), `--quick` for small sizes (a check
that the benchmarks still run, not figures to publish: written to a temporary folder unless `--doc` says where),
`--only NAME` for one scenario (printed, not written).
"""

from __future__ import annotations

import argparse
import datetime
import logging
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from . import plots, report
from .scenarios import (
    archive_cost,
    backlog,
    ceilings,
    cold_import,
    contention,
    cost,
    fair,
    fifo_blocked,
    first_answer,
    fleet,
    idle,
    large_bodies,
    life_cost,
    load_step,
    marks_key,
    migration,
    push,
    replay,
    sharding,
    throughput,
    transactions,
)

ROOT: Final = Path(__file__).resolve().parents[1]
DOC: Final = ROOT / "docs" / "benchmarks.md"
IMAGES: Final = ROOT / "docs" / "img"
SCENARIOS: Final = {
    module.NAME: module
    for module in (
        life_cost,
        backlog,
        contention,
        fifo_blocked,
        throughput,
        sharding,
        idle,
        marks_key,
        cold_import,
        first_answer,
        push,
        transactions,
        large_bodies,
        fair,
        ceilings,
        load_step,
        fleet,
        migration,
        archive_cost,
        replay,
    )
}


def run_all(quick: bool) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, module in SCENARIOS.items():
        started = time.perf_counter()
        print(f"{name}:", flush=True)
        results[name] = module.run(quick=quick)
        print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    print("cost:")
    results["cost"] = cost.run(quick=quick, life=results["life_cost"], backlogs=results["backlog"])
    return results


def write(results: dict[str, Any], meta: dict[str, Any], doc: Path = DOC, images: Path = IMAGES) -> None:
    names = {
        "backlog": plots.backlog(results["backlog"], images / "bench-backlog.png"),
        "contention": plots.contention(results["contention"], images / "bench-contention.png"),
        "throughput": plots.throughput(results["throughput"], images / "bench-throughput.png"),
        "sharding": plots.sharding(results["sharding"], images / "bench-sharding.png"),
    }
    if "load_step" in results:
        names["load_step"] = load_step.plot(results["load_step"], images)
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(report.render(results, meta, names))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: checks that everything runs")
    parser.add_argument("--only", choices=[*SCENARIOS, "cost"], help="run one scenario and print its figures")
    parser.add_argument("--doc", type=Path, help="where to write the report (default docs/benchmarks.md)")
    args = parser.parse_args(argv)
    logging.getLogger("queue_core").setLevel(logging.CRITICAL)
    if args.only:
        module = cost if args.only == "cost" else SCENARIOS[args.only]
        figures = module.run(quick=args.quick)
        if hasattr(module, "section"):  # the scenario's part of docs/benchmarks.md, in Markdown
            print("\n".join(module.section(figures)))
        return
    started = time.perf_counter()
    results = run_all(args.quick)
    seconds = time.perf_counter() - started
    meta = {
        "date": datetime.date.today().isoformat(),
        "command": "make bench" if not args.quick else "python -m bench.run --quick",
        "mode": "quick sizes" if args.quick else "full sizes",
        "seconds": seconds,
        "backend": results["life_cost"]["backend"],
    }
    doc = args.doc or (Path(tempfile.gettempdir()) / "bench-quick" / "benchmarks.md" if args.quick else DOC)
    write(results, meta, doc, doc.parent / "img")
    print(f"wrote {doc} in {seconds:.0f} s")


if __name__ == "__main__":
    main()
