"""How far one deployment goes at default quotas: measured units per message against every quota on each path.

Each path's message life (send, receive, delete; 700-byte bodies, items under 1 KB) is run through the core with
the meter on, on a queue with one shard so that every unit a message puts on its shard's keys lands on one key.
From the meter come the write and read units per message (table and indexes together: the table-level quota
covers both), the units per message on the busiest key of each kind (the shard's table key and index key, the
client's ready marker, a FIFO group), and the calls per message. The HTTP, invoke and SQS-protocol paths run the
same core calls inside a Lambda function, so their DynamoDB units are the library's; what they add is a request
per call (API Gateway) and an invocation per call (Lambda). The ceiling of a quota is the quota divided by what a
message takes of it; the path's ceiling is the lowest.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final

from ..backend import moto_backend
from ..meter import Totals
from ..queues import OursQueue

NAME: Final = "ceilings"
BODY: Final = "c" * 700
MESSAGES: Final = 100
TABLE_UNITS: Final = 40_000  # on-demand, per table, read and write alike (tables and their indexes)
KEY_WRITE: Final = 1_000
KEY_READ: Final = 3_000
MAX_SHARDS: Final = 64  # limits.MAX_SHARDS when this was measured; read at run time below
API_RPS: Final = 10_000
LAMBDA_CONCURRENCY: Final = 1_000
INVOCATION_SECONDS: Final = 0.05  # assumed, see section()
KINDS: Final = {"M": "shard key", "F": "FIFO group items (shard)", "G": "FIFO group", "R": "ready marker"}


def _keys(totals: Totals, messages: int) -> dict[str, dict[str, float]]:
    """WU and RU per message on the busiest key of each kind, table and index apart."""
    busiest: dict[str, dict[str, float]] = defaultdict(lambda: {"wu": 0.0, "ru": 0.0})
    for (space, key), (write, read) in totals.partitions.items():
        kind = KINDS.get(key.split("#", 1)[0])
        if kind is None or kind == KINDS["G"]:  # a group takes its own messages only, one in flight at a time
            continue
        label = f"{kind}, {'index' if '/' in space else 'table'}"
        busiest[label]["wu"] = max(busiest[label]["wu"], write / messages)
        busiest[label]["ru"] = max(busiest[label]["ru"], read / messages)
    return dict(busiest)


def _life(queue: OursQueue, meter: Any, batch: int) -> dict[str, Any]:
    with meter.window() as cost:
        for start in range(0, MESSAGES, batch):
            if batch == 1:
                queue.send(BODY)
            else:
                queue.send_batch([BODY] * min(batch, MESSAGES - start))
        done = 0
        while done < MESSAGES:
            got = queue.receive(batch)
            if not got:
                break
            if batch == 1:
                queue.delete(got[0].handle)
            else:
                queue.delete_batch([message.handle for message in got])
            done += len(got)
    return {
        "delivered": done,
        "wu": cost.all_write_units / done,
        "ru": cost.read_units / done,
        "calls": cost.api_calls / done,
        "keys": _keys(cost, done),
    }


def _queue_wide(backend: Any, batch: int) -> dict[str, Any]:
    """Ten clients send in batches; one worker pool receives queue-wide and deletes."""
    from queue_core import QueueClient

    core = QueueClient("ceilings", dynamodb=backend.client)
    core.create_table()
    name = f"wide-{batch}"
    core.create_queue(name, shards=1, queue_wide=True)
    clients = [core.queue(name, f"c{n}") for n in range(10)]
    wide = core.queue_wide(name)
    with backend.meter.window() as cost:
        for start in range(0, MESSAGES, batch):
            sub = clients[(start // batch) % len(clients)]
            if batch == 1:
                sub.send(BODY)
            else:
                sub.send_batch([{"body": BODY}] * min(batch, MESSAGES - start))
        done = 0
        while done < MESSAGES:
            got = wide.receive(max_messages=batch)
            if not got:
                break
            wide.delete_batch([message.receipt_handle for message in got])
            done += len(got)
    return {
        "delivered": done,
        "wu": cost.all_write_units / max(done, 1),
        "ru": cost.read_units / max(done, 1),
        "calls": cost.api_calls / max(done, 1),
        "keys": _keys(cost, max(done, 1)),
    }


def measure() -> dict[str, Any]:
    from queue_core import limits

    figures: dict[str, Any] = {"max_shards": limits.MAX_SHARDS}
    with moto_backend() as backend:
        for batch in (1, 10):
            figures[f"queue_wide_{batch}"] = _queue_wide(backend, batch)
        for kind, groups in (("standard", 0), ("fifo", 10)):
            for batch in (1, 10):
                queue = OursQueue.create(backend.client, "ceilings", queue=f"{kind}-{batch}", shards=1, groups=groups)
                queue.warm()
                queue.send("warm")
                for message in queue.receive(1):
                    queue.delete(message.handle)
                figures[f"{kind}_{batch}"] = _life(queue, backend.meter, batch)
    return figures


def _per_key_ceiling(life: dict[str, Any], shards: int) -> tuple[float, str]:
    worst, label = float("inf"), ""
    for name, units in life["keys"].items():
        if name == "ready marker, table":  # one per client: its ceiling is per client (see section())
            continue
        spread = shards if name.startswith("shard key") or name.startswith("FIFO group items") else 1
        for used, limit in ((units["wu"], KEY_WRITE), (units["ru"], KEY_READ)):
            if used and limit * spread / used < worst:
                worst, label = limit * spread / used, name
    return worst, label


def rows(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per path: each quota's ceiling in messages a second, and the one that binds first."""
    shards = figures["max_shards"]
    out = []
    for kind in ("standard", "fifo", "queue_wide"):
        for batch in (1, 10):
            life = figures[f"{kind}_{batch}"]
            table = min(TABLE_UNITS / life["wu"], TABLE_UNITS / life["ru"] if life["ru"] else float("inf"))
            key, key_name = _per_key_ceiling(life, shards)
            requests = 3 / batch  # send, receive, delete: one request each per batch
            invocations_per_second = LAMBDA_CONCURRENCY / INVOCATION_SECONDS
            lambdas = invocations_per_second / requests
            if kind == "queue_wide":
                paths = {"queue-wide (library)": {"table": table, "key": key}}
            else:
                paths = {
                    "library": {"table": table, "key": key},
                    "HTTP / SQS protocol": {"table": table, "key": key, "api": API_RPS / requests, "lambda": lambdas},
                    "invoke": {"table": table, "key": key, "lambda": lambdas},
                }
                if batch == 10:
                    # The dispatcher receives and deletes in batches and invokes the consumer once a batch.
                    paths["push"] = {"table": table, "key": key, "lambda": invocations_per_second * batch / 2}
            for path, ceilings in paths.items():
                binding = min(ceilings, key=ceilings.get)
                out.append(
                    {
                        "path": path,
                        "kind": kind,
                        "batch": batch,
                        "wu": life["wu"],
                        "ru": life["ru"],
                        "key_name": key_name,
                        "ceilings": ceilings,
                        "binding": binding,
                        "rate": ceilings[binding],
                    }
                )
    return out


def run(quick: bool = False) -> dict[str, Any]:
    figures = measure()
    figures["rows"] = rows(figures)
    for row in figures["rows"]:
        print(
            f"  {row['path']:<20} {row['kind']:<8} batch {row['batch']:>2}: {row['wu']:.2f} WU {row['ru']:.2f} RU "
            f"a message -> {row['rate']:,.0f} msg/s ({row['binding']})"
        )
    return figures


def _n(value: float) -> str:
    return "unbounded" if value == float("inf") else f"{value:,.0f}"


QUOTAS: Final = {
    "table": "DynamoDB table throughput (40,000 WU and 40,000 RU a second, on-demand, table and indexes together)",
    "key": "DynamoDB per-key limits (1,000 WU / 3,000 RU a second on one partition key)",
    "api": "API Gateway requests (10,000 a second per account and Region, burst 5,000)",
    "lambda": "Lambda concurrency (1,000 per account and Region)",
}


def markdown(figures: dict[str, Any]) -> str:
    """The table of docs/benchmarks.md and README: one row per path and message kind."""
    lines = [
        "| path | messages | WU / RU a message | binds first | msg/s it allows | next quotas (msg/s) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in figures["rows"]:
        others = ", ".join(
            f"{name} {_n(value)}" for name, value in sorted(row["ceilings"].items(), key=lambda item: item[1])[1:]
        )
        batch = "one at a time" if row["batch"] == 1 else f"batches of {row['batch']}"
        lines.append(
            f"| {row['path']} | {row['kind']}, {batch} | {row['wu']:.2f} / {row['ru']:.2f} | "
            f"{row['binding']} | {_n(row['rate'])} | {others} |"
        )
    return "\n".join(lines)


SOURCES: Final = (
    "DynamoDB quotas: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html; "
    "per-partition limits: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
    "bp-partition-key-design.html; API Gateway: https://docs.aws.amazon.com/apigateway/latest/developerguide/"
    "limits.html; Lambda: https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html and "
    "https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html"
)


def section(figures: dict[str, Any]) -> list[str]:
    intro = "\n\n".join(" ".join(part.split()) for part in (__doc__ or "").strip().split("\n\n")[1:])
    return [
        "## How far one deployment goes at default quotas\n",
        intro + "\n",
        f"Per-key ceilings count {figures['max_shards']} shards (the most a queue takes) for a client's shard keys. "
        f"Lambda's row assumes {INVOCATION_SECONDS * 1000:.0f} ms a warm invocation (its DynamoDB calls; not "
        "measurable against moto): at other durations it scales inversely. Reproduce with "
        "`.venv/bin/python -m bench.run --only ceilings`.\n",
        markdown(figures) + "\n",
        f"Sources: {SOURCES}.\n",
    ]
