"""FIFO with a blocked group: one group holds a long backlog behind a head in flight, beside many active groups.

A FIFO receive must never read a blocked group's backlog: the cost of delivering the active groups' messages
should be the same with 0 or 2,000 messages waiting behind the blocked head. Each case gets a fresh FIFO queue;
the blocked group's messages are sent first and its head received (and kept in flight), then the active groups'
messages are sent; a consumer receives 10 at a time and deletes until every active message is delivered.
"""

from __future__ import annotations

from typing import Any, Final

from ..backend import moto_backend
from ..messages import KB, body
from ..queues import BATCH_WRITE, OursQueue

NAME: Final = "fifo_blocked"
BLOCKED: Final = 2_000
QUICK_BLOCKED: Final = 200
ACTIVE_GROUPS: Final = 50
PER_GROUP: Final = 4
QUICK_PER_GROUP: Final = 2


def run_case(backend: Any, blocked: int, per_group: int) -> dict[str, Any]:
    queue = OursQueue.create(backend.client, f"fifo-blocked-{blocked}", queue="blocked.fifo", groups=ACTIVE_GROUPS)
    text = body(KB)
    with backend.meter.paused():
        for start in range(0, blocked, BATCH_WRITE):
            count = min(BATCH_WRITE, blocked - start)
            queue.sub.send_batch([{"body": text, "group_id": "blocked"} for _ in range(count)])
        held = queue.sub.receive(1) if blocked else []
        queue.send_batch([text] * (ACTIVE_GROUPS * per_group))
    if blocked and (len(held) != 1 or held[0].group_id != "blocked"):
        raise RuntimeError("the blocked group's head was not received first")
    total, delivered, receives = ACTIVE_GROUPS * per_group, 0, 0
    with backend.meter.window() as cost:
        while delivered < total:
            got = queue.sub.receive(10)
            receives += 1
            if not got:
                break
            if any(message.group_id == "blocked" for message in got):
                raise RuntimeError("a blocked group delivered a message while its head was in flight")
            queue.sub.delete_batch([message.receipt_handle for message in got])
            delivered += len(got)
    figures = cost.per(delivered)
    figures.update(blocked=blocked, active_groups=ACTIVE_GROUPS, delivered=delivered, receives=receives)
    return figures


def run(quick: bool = False) -> dict[str, Any]:
    blocked, per_group = (QUICK_BLOCKED, QUICK_PER_GROUP) if quick else (BLOCKED, PER_GROUP)
    rows = []
    with moto_backend() as backend:
        for case in (0, blocked):
            row = run_case(backend, case, per_group)
            rows.append(row)
            print(
                f"  fifo with {case:>5} blocked + {ACTIVE_GROUPS} active groups: "
                f"{row['items_read']:.2f} items read / delivered, {row['read_units']:.2f} RU, "
                f"{row['api_calls']:.2f} calls / delivered"
            )
        name = backend.name
    return {"backend": name, "rows": rows}
