"""What the archive of acknowledged messages costs: a message's life (send, receive, delete; 1 KB body) on queues
with the archive off and on, standard and FIFO, step by step in write units, read units and calls, counted by the
meter's botocore hook. Off, the archive adds nothing; on, the delete reads the message once (strongly consistent)
and becomes a transaction of the delete and the archive's copy (each item's units twice, and the copy's index
entry)."""

from __future__ import annotations

from typing import Any, Final

from ..backend import moto_backend
from ..messages import KB, body
from ..queues import OursQueue
from .life_cost import unbatched

NAME: Final = "archive_cost"
COMMAND: Final = ".venv/bin/python -m bench.run --only archive_cost"


def run(quick: bool = False) -> dict[str, Any]:
    repeats = 3 if quick else 10
    results: dict[str, Any] = {"repeats": repeats}
    with moto_backend() as backend:
        client, meter = backend.client, backend.meter
        results["backend"] = backend.name
        for kind, groups in (("standard", 0), ("fifo", 1)):
            for archive_days in (0, 7):
                queue = f"arch{archive_days}.fifo" if groups else f"arch{archive_days}"
                under = OursQueue.create(client, f"archive-{kind}-{archive_days}", queue=queue, groups=groups,
                                         archive_days=archive_days)  # fmt: skip
                under.send(body(16))
                for delivered in under.receive(1):
                    under.delete(delivered.handle)
                steps = unbatched(under, meter, body(KB), repeats)
                results[f"{kind}_{'on' if archive_days else 'off'}"] = steps
    for name, steps in results.items():
        if isinstance(steps, dict) and "total" in steps:
            delete, total = steps["delete"], steps["total"]
            print(
                f"  {name}: delete {delete['write_units']:.2f} WU ({delete['index_write_units']:.2f} of the index), "
                f"{delete['read_units']:.2f} RU, {delete['api_calls']:.2f} calls; life {total['write_units']:.2f} WU, "
                f"{total['read_units']:.2f} RU"
            )
    return results


def section(figures: dict[str, Any]) -> list[str]:
    """The archive's paragraph for docs/benchmarks.md."""
    rows = []
    for kind in ("standard", "fifo"):
        for state in ("off", "on"):
            steps = figures[f"{kind}_{state}"]
            delete, total = steps["delete"], steps["total"]
            rows.append(
                f"| {kind} | {state} | {delete['write_units']:.1f} | "
                f"{delete['read_units']:.1f} | {delete['api_calls']:.0f} | "
                f"{total['write_units']:.1f} | {total['read_units']:.1f} |"
            )
    return [
        "## The archive of acknowledged messages\n",
        "A message's life (send, receive, delete; 1 KB body) with the queue's archive off (`archive_days` 0, the "
        "default) and on, per message, write units of the table and its index together. Off costs nothing: the "
        "delete is what it always was. On, the delete reads the message once and writes the delete and the "
        "archive's copy in one transaction (each item's units doubled, and one index entry to find it by id). "
        f"{figures['repeats']} lives each on {figures['backend']}. Reproduce with `{COMMAND}`.\n",
        "| queue | archive | delete WU | delete RU | delete calls | life WU | life RU |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]
