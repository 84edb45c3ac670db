"""Large bodies: what one message life (send, receive, delete) costs at 1 KB to 1 MiB, with compression and
offload to S3 (ours) and without them (bodies stored as sent in the item, as before).

Two kinds of body at each size: a generated event log in JSON (records that repeat field names, services and
actions, with fresh ids, times and amounts: what a chatty producer sends), and random bytes as base64 (binary
content in a text body; compression gets back only base64's own redundancy). Ours uses the defaults: zlib when it
lowers the item's write units, S3 for a stored body over 8 KiB. DynamoDB units come from the meter (item sizes by
DynamoDB's rules, index writes included); S3 requests from a hook on the S3 client. The price per million messages
adds S3 requests and a day of storage for every message (items in DynamoDB, objects in S3): a queue that drains in
seconds pays less storage, one that keeps a backlog for days pays more. Without offload, a body whose item would
pass DynamoDB's 400 KB cannot be stored at all.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

import boto3
from queue_core import MessageTooLarge, QueueClient

from .. import pricing
from ..backend import moto_backend
from ..messages import KB, event_log, random_bytes

NAME: Final = "large_bodies"
SIZES: Final = (KB, 4 * KB, 64 * KB, 256 * KB, 1024 * KB)
KINDS: Final = {"json": event_log, "random": random_bytes}
BUCKET: Final = "bench-bodies"
STORAGE_DAYS: Final = 1.0
GB: Final = 1024**3
# The largest body the bench sends: 1 MiB, SQS's limit, over the 256 KiB the core allowed before offload.
LARGEST: Final = 1024 * KB


class S3Calls:
    """Counts S3 requests by operation, and the bytes PutObject stored."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.stored_bytes = 0

    def attach(self, s3: Any) -> S3Calls:
        s3.meta.events.register("before-call.s3", self._count)
        s3.meta.events.register("provide-client-params.s3.PutObject", self._stored)
        return self

    def _count(self, model: Any, **_: Any) -> None:
        self.calls[model.name] += 1

    def _stored(self, params: dict[str, Any], **_: Any) -> None:
        self.stored_bytes += len(params.get("Body", b""))


def _price(write_units: float, read_units: float, item_bytes: int, s3: Counter, object_bytes: int) -> float:
    """Dollars per million message lives."""
    storage_months = STORAGE_DAYS / 30
    one = (
        write_units * pricing.WRITE_REQUEST_UNIT
        + read_units * pricing.READ_REQUEST_UNIT
        + item_bytes / GB * pricing.DYNAMODB_STORAGE_GB_MONTH * storage_months
        + s3["PutObject"] * pricing.S3_PUT
        + s3["GetObject"] * pricing.S3_GET
        + s3["ListObjectsV2"] * pricing.S3_LIST
        + object_bytes / GB * pricing.S3_STORAGE_GB_MONTH * storage_months
    )
    return one * 1_000_000


def _life(client: Any, meter: Any, s3_calls: S3Calls, core: QueueClient, queue: str, body: str) -> dict[str, Any]:
    jobs = core.queue(queue, "tenant-a")
    s3_before, stored_before = Counter(s3_calls.calls), s3_calls.stored_bytes
    steps: dict[str, Any] = {}
    try:
        with meter.window() as cost:
            jobs.send(body)
        steps["send"] = cost
    except MessageTooLarge:
        return {"storable": False}
    with meter.window() as cost:
        [message] = jobs.receive()
    steps["receive"] = cost
    if message.body != body:
        raise RuntimeError("a body came back changed")
    with meter.window() as cost:
        jobs.delete(message.receipt_handle)
    steps["delete"] = cost
    s3 = s3_calls.calls - s3_before
    write_units = sum(step.all_write_units for step in steps.values())
    read_units = sum(step.read_units for step in steps.values())
    item_bytes = steps["send"].largest_item
    object_bytes = s3_calls.stored_bytes - stored_before
    return {
        "storable": True,
        "write_units": write_units,
        "write_units_by_step": {name: step.all_write_units for name, step in steps.items()},
        "read_units": read_units,
        "item_bytes": item_bytes,
        "object_bytes": object_bytes,
        "s3_requests": dict(s3),
        "dollars_per_million": _price(write_units, read_units, item_bytes, s3, object_bytes),
    }


def run(quick: bool = False) -> dict[str, Any]:
    sizes = SIZES[:3] if quick else SIZES
    results: dict[str, Any] = {"sizes": list(sizes), "storage_days": STORAGE_DAYS, "rows": []}
    with moto_backend() as backend:
        client, meter = backend.client, backend.meter
        results["backend"] = backend.name
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        s3_calls = S3Calls().attach(s3)
        designs = {
            "ours": QueueClient("large-ours", dynamodb=client, s3=s3, bucket=BUCKET),
            "plain": QueueClient("large-plain", dynamodb=client, s3=s3, bucket="", compress=False),
        }
        for core in designs.values():
            core.create_table()
            core.create_queue("bench", visibility_timeout=600)
            # Steady state: settings cached and the client registered, as in a warm function.
            core.queue("bench", "tenant-a").send("warm")
            core.queue("bench", "tenant-a").receive()
        for size in sizes:
            for kind, make in KINDS.items():
                body = make(size)
                row = {"size": size, "kind": kind}
                for name, core in designs.items():
                    row[name] = _life(client, meter, s3_calls, core, "bench", body)
                results["rows"].append(row)
                print(f"  {kind:6} {size // KB:5} KB: {_line(row)}", flush=True)
    return results


def _line(row: dict[str, Any]) -> str:
    return "; ".join(
        f"{name} " + (f"{life['write_units']:.0f} WU ${life['dollars_per_million']:.2f}/M" if life["storable"] else "—")
        for name, life in ((name, row[name]) for name in ("ours", "plain"))
    )


def section(results: dict[str, Any]) -> list[str]:
    """The report's section: write units and dollars per million message lives, ours against bodies as sent."""

    def cells(life: dict[str, Any]) -> list[str]:
        if not life["storable"]:
            return ["not storable (item over 400 KB)", "—"]
        steps = life["write_units_by_step"]
        units = " + ".join(f"{steps[step]:.0f}" for step in ("send", "receive", "delete"))
        return [f"{units} = {life['write_units']:.0f}", f"${life['dollars_per_million']:,.2f}"]

    rows = []
    for row in results["rows"]:
        ours = row["ours"]
        s3 = ours.get("s3_requests", {})
        where = f"S3 ({s3.get('PutObject', 0)} PUT, {s3.get('GetObject', 0)} GET)" if s3 else "item"
        where = where if ours["storable"] else "—"
        size = f"{row['size'] // KB} KB" if row["size"] < LARGEST else "1 MiB"
        rows.append([size, row["kind"], *cells(ours), where, *cells(row["plain"])])
    header = [
        "body",
        "content",
        "ours: write units (send + receive + delete)",
        "ours: $ per million",
        "ours: body in",
        "as sent: write units",
        "as sent: $ per million",
    ]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in line) + " |" for line in rows]
    return [
        "## Large bodies: compression and offload\n",
        " ".join((__doc__ or "").split()) + "\n",
        "\n".join(lines),
        "",
        f"Prices: {pricing.SOURCE}; {pricing.STORAGE_SOURCE}; storage for {results['storage_days']:g} day per "
        "message. Reproduce with `.venv/bin/python -m bench.run --only large_bodies`.\n",
    ]
