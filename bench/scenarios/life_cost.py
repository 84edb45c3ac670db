"""Message life cost: what one message costs from send to delete, step by step, with and without batches.

Write units round up per item and per KB, so the figure depends on whether the whole item (body plus the
design's own attributes) fits in 1 KB. Both are measured: a 1 KB body, and the largest body whose item still
fits in 1 KB at its largest (found by sending a probe message through a whole life and measuring its item).
Each design runs in its own table, in steady state (the queue's settings cached, the client registered).
FIFO messages go to one group when unbatched and to 10 groups in turn when batched. Ready markers are paid only by
queues received queue-wide: the same lives on queues created `queue_wide` show what that adds. A 1 KB JSON event
log (what compression meets in practice) is priced per million messages from its life's own units.
"""

from __future__ import annotations

from typing import Any, Final

from .. import pricing
from ..backend import moto_backend
from ..baselines import HiddenUntilQueue, StatusIndexQueue
from ..messages import KB, body, event_log
from ..meter import Meter, Totals
from ..queues import OursQueue, QueueUnderTest

NAME: Final = "life_cost"
STEPS: Final = ("send", "receive", "delete")
FIFO_BATCH_GROUPS: Final = 10
JSON_TARGET_DOLLARS: Final = 5.0  # per million 1 KB JSON messages, standard, on a queue not received queue-wide
Steps = dict[str, dict[str, float]]


def _with_total(steps: Steps) -> Steps:
    total = {name: sum(steps[step][name] for step in STEPS) for name in steps["send"]}
    return {**steps, "total": total}


def _life(queue: QueueUnderTest, text: str) -> None:
    queue.send(text)
    for delivered in queue.receive(1):
        queue.delete(delivered.handle)


def fitting_body(queue: QueueUnderTest, meter: Meter) -> int:
    """The largest body whose item stays within 1 KB through its whole life, for this design's item layout."""
    probe = "p"
    with meter.window() as cost:
        _life(queue, probe)
    return KB - (cost.largest_item - len(probe))


def unbatched(queue: QueueUnderTest, meter: Meter, text: str, repeats: int) -> Steps:
    """send, receive(1), delete, `repeats` times, each step metered on its own."""
    totals = {step: Totals() for step in STEPS}
    for _ in range(repeats):
        with meter.window() as cost:
            queue.send(text)
        totals["send"] += cost
        with meter.window() as cost:
            got = queue.receive(1)
        totals["receive"] += cost
        with meter.window() as cost:
            for delivered in got:
                queue.delete(delivered.handle)
        totals["delete"] += cost
    return _with_total({step: totals[step].per(repeats) for step in STEPS})


def batched(queue: QueueUnderTest, meter: Meter, text: str, count: int) -> Steps:
    """send_batch (25 a call), then receive(10) and delete_batch of what came, until `count` messages died."""
    with meter.window() as sent:
        queue.send_batch([text] * count)
    received, deleted, done = Totals(), Totals(), 0
    while done < count:
        with meter.window() as cost:
            got = queue.receive(10)
        received += cost
        if not got:
            raise RuntimeError("a receive came back empty with messages waiting")
        with meter.window() as cost:
            queue.delete_batch([delivered.handle for delivered in got])
        deleted += cost
        done += len(got)
    return _with_total({"send": sent.per(count), "receive": received.per(count), "delete": deleted.per(count)})


def run(quick: bool = False) -> dict[str, Any]:
    repeats, count = (3, 25) if quick else (10, 100)
    results: dict[str, Any] = {"repeats": repeats, "batched_messages": count}
    with moto_backend() as backend:
        client, meter = backend.client, backend.meter
        results["backend"] = backend.name
        designs: dict[str, QueueUnderTest] = {
            "standard": OursQueue.create(client, "life-standard"),
            "fifo": OursQueue.create(client, "life-fifo", queue="life.fifo", groups=1),
            "hidden_until": HiddenUntilQueue.create(client, "life-hidden-until"),
            "status_index": StatusIndexQueue.create(client, "life-status-index"),
        }
        fifo_batched = OursQueue.create(client, "life-fifo-batched", queue="batch.fifo", groups=FIFO_BATCH_GROUPS)
        for name, queue in designs.items():
            _life(queue, body(16))
            fit = fitting_body(queue, meter)
            results[name] = {
                "fitting_body_bytes": fit,
                "kb_body": unbatched(queue, meter, body(KB), repeats),
                "fitting_body": unbatched(queue, meter, body(fit), repeats),
            }
        for name, queue in (("standard", designs["standard"]), ("fifo", fifo_batched)):
            _life(queue, body(16))
            fit = results[name]["fitting_body_bytes"]
            results[name]["kb_body_batched"] = batched(queue, meter, body(KB), count)
            results[name]["fitting_body_batched"] = batched(queue, meter, body(fit), count)
        for name, queue in (
            ("standard_queue_wide", OursQueue.create(client, "life-wide", queue_wide=True)),
            ("fifo_queue_wide", OursQueue.create(client, "life-wide-fifo", queue="w.fifo", groups=1, queue_wide=True)),
        ):
            _life(queue, body(16))
            fit = results[name.removesuffix("_queue_wide")]["fitting_body_bytes"]
            results[name] = {"fitting_body_bytes": fit, "fitting_body": unbatched(queue, meter, body(fit), repeats)}
        json_text = event_log(KB)
        json_life = {
            "unbatched": unbatched(designs["standard"], meter, json_text, repeats),
            "batched": batched(designs["standard"], meter, json_text, count),
        }
        for figures in json_life.values():
            total = figures["total"]
            total["dollars_per_million"] = pricing.dynamodb_dollars_per_million(
                total["write_units"], total["read_units"]
            )
        results["json_kb"] = json_life
    for name in ("standard", "fifo", "hidden_until", "status_index", "standard_queue_wide", "fifo_queue_wide"):
        figures = results[name]
        line = ", ".join(
            f"{variant} {figures[variant]['total']['write_units']:.2f} WU"
            for variant in ("kb_body", "fitting_body", "kb_body_batched", "fitting_body_batched")
            if variant in figures
        )
        print(f"  life cost {name}: body fitting 1 KB item = {figures['fitting_body_bytes']} B; {line}")
    batched_calls = results["standard"]["kb_body_batched"]["total"]["api_calls"]
    print(f"  API calls per message with batches (standard): {batched_calls:.2f}")
    for variant, figures in results["json_kb"].items():
        total = figures["total"]
        print(
            f"  life cost 1 KB JSON, standard, {variant}: {total['write_units']:.2f} WU, {total['read_units']:.2f} RU"
            f" = ${total['dollars_per_million']:.2f} per million"
        )
    return results
