"""Queue-wide receive: what it reads per message whatever the number of idle clients, how long quiet clients'
messages wait beside a noisy one, what concurrent queue-wide consumers waste, and what the set of clients with
visible messages (ready markers) adds to a message's life.

Run alone with `python -m bench.scenarios.fair` (`--quick` for small sizes); it prints the table recorded in
docs/benchmarks.md. Registered idle clients are written as registrations (the items a first send leaves), since
an idle client has no ready marker whatever it did before.
"""

from __future__ import annotations

import argparse
import json
import threading
from typing import Any, Final

from queue_core import QueueClient

from ..backend import moto_backend
from ..meter import Meter, Totals

NAME: Final = "fair"
TITLE: Final = "Queue-wide receive: idle clients, fairness, concurrent consumers, ready markers"
INTRO: Final = (
    "Queues created `queue_wide` (ready markers from their first send). "
    "Queue-wide receive(10) with 10 active clients (20 messages each) among 10, 1,000 and 10,000 registered ones "
    "(on a still clock: markers read again when used up; in real time also once per 0.1 s per consumer process); "
    "the quiet clients' dwell (send to receive, on a fake clock advanced 100 ms a round) alone and beside a noisy "
    "client with a 2,000-message backlog that sends more than the consumer takes, in one run; 16 queue-wide "
    "consumers (each its own core client) on 10 clients' 480 messages; and the write units of ready markers per "
    "message life. Rerun alone with `.venv/bin/python -m bench.scenarios.fair` (about 5 minutes on two shared "
    "cores), or as part of `make bench`."
)
TABLE: Final = "bench-fair"
REGISTERED: Final = (10, 1000, 10_000)
ACTIVE: Final = 10
PER_ACTIVE: Final = 20
QUIET: Final = 20
NOISY_BACKLOG: Final = 2000
TICK_MS: Final = 100
TICKS: Final = 40
CONSUMERS: Final = 16


class _Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.now += seconds


def _register_idle(client: Any, core: QueueClient, queue: str, count: int) -> None:
    generation = core.get_queue(queue).generation
    for start in range(0, count, 25):
        items = [
            {
                "pk": {"S": f"C#{queue}#idle-{n}"},
                "sk": {"S": generation},
                "gsi1pk": {"S": f"C#{queue}#{generation}"},
                "gsi1sk": {"S": f"idle-{n}"},
                "secret": {"S": "0" * 64},
                "first_seen_at": {"N": "0"},
            }
            for n in range(start, min(start + 25, count))
        ]
        client.batch_write_item(RequestItems={TABLE: [{"PutRequest": {"Item": item}} for item in items]})


def reads_by_registered(client: Any, meter: Meter, registered: tuple[int, ...]) -> list[dict[str, Any]]:
    """Items read and calls per delivered message of queue-wide receive(10), 10 clients active of `registered`.
    The clock stands still: the markers are read again when used up, never because moto, slower with every item
    in its table, made `REFRESH_SECONDS` (0.1 s) pass (on DynamoDB that re-read adds the ready clients' markers once per
    0.1 s, whatever the number of registered clients)."""
    rows = []
    for count in registered:
        core = QueueClient(TABLE, dynamodb=client, clock=_Clock())
        queue = f"reg{count}"
        core.create_queue(queue, visibility_timeout=600, queue_wide=True)
        _register_idle(client, core, queue, count - ACTIVE)
        for n in range(ACTIVE):
            core.queue(queue, f"active-{n}").send_batch([{"body": "x"} for _ in range(PER_ACTIVE)])
        wide = core.queue_wide(queue)
        received, delivered = Totals(), 0
        while True:
            with meter.window() as cost:
                got = wide.receive(max_messages=10)
            received += cost
            if not got:
                break
            delivered += len(got)
            with meter.paused():
                wide.delete_batch([message.receipt_handle for message in got])
        assert delivered == ACTIVE * PER_ACTIVE, delivered
        per = received.per(delivered)
        rows.append(
            {
                "registered": count,
                "active": ACTIVE,
                "delivered": delivered,
                "items_read": round(per["items_read"], 2),
                "api_calls": round(per["api_calls"], 2),
            }
        )
    return rows


def dwell(client: Any, ticks: int, backlog: int) -> dict[str, Any]:
    """Quiet clients send one message each every 4 ticks (5 a tick in all); one consumer receives 10 a tick.
    Mean send-to-receive time of the quiet clients' messages, alone and beside a noisy client with a backlog
    that sends 10 more a tick (more than the consumer takes): the ratio is what the noisy client costs them."""
    means = {}
    for label, noisy in (("alone", False), ("beside_noisy", True)):
        clock = _Clock()
        core = QueueClient(TABLE, dynamodb=client, clock=clock)
        queue = f"dwell-{label}"
        core.create_queue(queue, visibility_timeout=3600, max_receive_count=0, queue_wide=True)
        if noisy:
            for _start in range(0, backlog, 25):
                core.queue(queue, "noisy").send_batch([{"body": "n"} for _ in range(25)])
        wide = core.queue_wide(queue)
        waits = []
        for tick in range(ticks):
            now_ms = int(clock() * 1000)
            for n in range(QUIET):
                if (tick + n) % 4 == 0:
                    core.queue(queue, f"quiet-{n}").send(str(now_ms))
            if noisy:
                core.queue(queue, "noisy").send_batch([{"body": "n"} for _ in range(10)])
            clock.advance(TICK_MS / 1000)
            got = wide.receive(max_messages=10)
            at = int(clock() * 1000)
            waits += [at - int(message.body) for message in got if message.client != "noisy"]
            if got:
                wide.delete_batch([message.receipt_handle for message in got])
        means[label] = sum(waits) / max(len(waits), 1)
        means[f"{label}_received"] = len(waits)
    means["ratio"] = round(means["beside_noisy"] / means["alone"], 2)
    return means


def wasted_claims(client: Any, meter: Meter, messages_per_client: int) -> dict[str, Any]:
    """16 queue-wide consumers (each its own core client, as Lambda instances are) on 10 clients' messages,
    receive(10) and delete_batch until half are deleted: conditional writes lost per delivered message."""
    core = QueueClient(TABLE, dynamodb=client)
    queue = "wasted"
    core.create_queue(queue, visibility_timeout=600, queue_wide=True)
    for n in range(ACTIVE):
        sub = core.queue(queue, f"c{n}")
        for start in range(0, messages_per_client, 25):
            sub.send_batch([{"body": "w"} for _ in range(min(25, messages_per_client - start))])
    total = ACTIVE * messages_per_client
    lock = threading.Lock()
    state = {"delivered": 0, "conflicts": 0}
    barrier = threading.Barrier(CONSUMERS)

    def consume() -> None:
        wide = QueueClient(TABLE, dynamodb=client).queue_wide(queue)
        barrier.wait()
        while True:
            with lock:
                if state["delivered"] >= total // 2:
                    return
            got = wide.receive(max_messages=10)
            if got:
                wide.delete_batch([message.receipt_handle for message in got])
            with lock:
                state["delivered"] += len(got)

    mark = meter.mark()
    threads = [threading.Thread(target=consume) for _ in range(CONSUMERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cost = meter.since(mark)
    claims = cost.calls["UpdateItem"]
    return {
        "consumers": CONSUMERS,
        "delivered": state["delivered"],
        "failed_conditions_per_delivered": round(cost.condition_failures / state["delivered"], 3),
        "claims_per_delivered": round(claims / state["delivered"], 3),
    }


def extra_units(client: Any, meter: Meter, count: int) -> dict[str, Any]:
    """Write units of ready markers per message life (send one at a time, queue-wide receive(1), delete), for a
    busy client and for clients that send a single message each (the worst case: a marker put, a drain)."""
    core = QueueClient(TABLE, dynamodb=client)
    figures = {}
    for label, clients, batch in (
        ("busy_client", 1, 1),
        ("busy_client_batches_of_10", 1, 10),
        ("one_message_clients", count, 1),
    ):
        queue = f"extra-{label}"
        core.create_queue(queue, visibility_timeout=600, queue_wide=True)
        wide = core.queue_wide(queue)
        mark = meter.mark()
        for n in range(0, count, batch):
            core.queue(queue, f"c{n % clients}").send_batch([{"body": "m"} for _ in range(batch)])
            for message in wide.receive(max_messages=batch):
                wide.delete(message.receipt_handle)
        while wide.receive(max_messages=1):
            pass  # drains what is left of the markers: part of the cost
        cost = meter.since(mark)
        marker_units = sum(units[0] for (space, key), units in cost.partitions.items() if key.startswith("R#"))
        figures[label] = {
            "marker_write_units_per_message": round(marker_units / count, 2),
            "all_write_units_per_message": round(cost.all_write_units / count, 2),
        }
    return figures


def run(quick: bool = False) -> dict[str, Any]:
    with moto_backend() as backend:
        client, meter = backend.client, backend.meter
        QueueClient(TABLE, dynamodb=client).create_table()
        registered = (10, 100, 1000) if quick else REGISTERED
        return {
            "reads": reads_by_registered(client, meter, registered),
            "dwell": dwell(client, TICKS // 2 if quick else TICKS, NOISY_BACKLOG // 4 if quick else NOISY_BACKLOG),
            "contention": wasted_claims(client, meter, 12 if quick else 48),
            "extra": extra_units(client, meter, 20 if quick else 100),
        }


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "| registered clients (10 active) | delivered | items read / delivered | calls / delivered |",
        "| --- | --- | --- | --- |",
    ]
    for row in results["reads"]:
        lines.append(f"| {row['registered']:,} | {row['delivered']} | {row['items_read']} | {row['api_calls']} |")
    dwell_figures, contention, extra = results["dwell"], results["contention"], results["extra"]
    lines += [
        "",
        "| figure | measured | target |",
        "| --- | --- | --- |",
        f"| quiet clients' mean dwell alone / beside a noisy client (ms) | {dwell_figures['alone']:.0f} / "
        f"{dwell_figures['beside_noisy']:.0f} | |",
        f"| dwell ratio | {dwell_figures['ratio']} | ≤ 1.5 |",
        f"| {contention['consumers']} queue-wide consumers: failed conditional writes / delivered | "
        f"{contention['failed_conditions_per_delivered']} | |",
        f"| {contention['consumers']} queue-wide consumers: UpdateItem calls / delivered | "
        f"{contention['claims_per_delivered']} | |",
        f"| marker write units per message life, a busy client | "
        f"{extra['busy_client']['marker_write_units_per_message']} | ≤ 1 |",
        f"| marker write units per message life, a busy client sending batches of 10 | "
        f"{extra['busy_client_batches_of_10']['marker_write_units_per_message']} | ≤ 1 |",
        f"| marker write units per message life, one message per client | "
        f"{extra['one_message_clients']['marker_write_units_per_message']} | |",
        "",
        "A busy client's single sends cost one marker write unit each (the marker is put again, unchanged) plus "
        "three per busy period: the first put writes the marker's index entry, and the drain when the client runs "
        "dry deletes the marker and its entry. The figure above is one busy period of 100 messages (1 + 3/100).",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scenarios.fair")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = run(quick=args.quick)
    print(json.dumps(results, indent=2) if args.json else markdown(results))


if __name__ == "__main__":
    main()
