"""Push delivery: how soon a consumer function starts after a send, and what a delivered message costs in
DynamoDB, against the pull path (the core's long-polling `Consumer`) in the same run.

Latency: messages are sent one at a time with idle gaps of a few hundred milliseconds (a trickle, where the
difference shows), and the time from the send call to the first line of the consumer is taken for each. Push runs
the dispatcher in this process as `dq local --consumer` does, woken by the send as the table's stream wakes it on
AWS (the stream's own delay, typically well under a second, is not in this figure). Pull runs `Consumer` with
its long-polling receive. Only the ratio means anything: moto's wall-clock time is in both.

Cost: the same number of messages sent in batches, then delivered once by each path: pull as receive (10) and a
batch delete, push as one dispatcher run (slot taken and given back, batches of 10 claimed, the consumer invoked,
deleted, a last look at the sub-queue). Units are counted from the calls (`bench/meter.py`). Idle: DynamoDB calls
a minute while the sub-queue is empty: the long-polling consumer keeps querying, push makes none (the stream's
reads are not DynamoDB table reads and are free to Lambda).
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from typing import Any, Final

from queue_core import Consumer, QueueClient
from queue_core.push import ConsumerSpec, Dispatcher
from queue_core.sqs_event import EventSource

from dq.consumers import LocalConsumer, LocalDispatchers, in_process_invoke

from ..backend import moto_backend

NAME: Final = "push"
QUEUE: Final = "push"
CLIENT: Final = "bench"
GAP_SECONDS: Final = (0.2, 0.6)
IDLE_SECONDS: Final = 5.0
SOURCE: Final = EventSource("us-east-1", "000000000000", QUEUE, CLIENT)


class _Starts:
    """When the consumer first saw each body."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self.lock = threading.Lock()
        self.arrived = threading.Event()

    def saw(self, body: str) -> None:
        with self.lock:
            self.at.setdefault(body, time.perf_counter())
        self.arrived.set()


def _latencies(send: Any, starts: _Starts, count: int, tag: str) -> list[float]:
    rng = random.Random(7)
    sent: dict[str, float] = {}
    for index in range(count):
        time.sleep(rng.uniform(*GAP_SECONDS))
        body = f"{tag}-{index}"
        starts.arrived.clear()
        sent[body] = time.perf_counter()
        send(body)
        starts.arrived.wait(30)
    deadline = time.monotonic() + 30
    while len(starts.at) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    return [starts.at[body] - sent[body] for body in sent if body in starts.at]


def _push_latency(client: QueueClient, count: int) -> list[float]:
    starts = _Starts()

    def function(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for record in event["Records"]:
            starts.saw(record["body"])
        return {"batchItemFailures": []}

    spec = ConsumerSpec(queue=QUEUE, client=CLIENT, function="bench", max_concurrency=1)
    push = LocalDispatchers([LocalConsumer(spec, function)], client, "us-east-1", interval=60)
    push.start()
    queue = client.queue(QUEUE, CLIENT)

    def send(body: str) -> None:
        queue.send(body)
        push.wake(QUEUE, CLIENT)

    try:
        return _latencies(send, starts, count, "push")
    finally:
        push.stop()


def _pull_latency(client: QueueClient, count: int) -> list[float]:
    starts = _Starts()
    queue = client.queue(QUEUE, CLIENT)
    consumer = Consumer(queue, lambda message: starts.saw(message.body), concurrency=1, batch_size=10)
    consumer.start()
    try:
        return _latencies(queue.send, starts, count, "pull")
    finally:
        consumer.shutdown(timeout=5)


def _cost(client: QueueClient, meter: Any, count: int) -> dict[str, dict[str, float]]:
    queue = client.queue(QUEUE, CLIENT)
    results = {}
    for path in ("pull", "push"):
        for start in range(0, count, 25):
            queue.send_batch([{"body": f"{path}-{i}"} for i in range(start, min(count, start + 25))])
        with meter.window() as cost:
            if path == "pull":
                delivered = 0
                while delivered < count:
                    got = queue.receive(max_messages=10)
                    if not got:
                        break
                    queue.delete_batch([message.receipt_handle for message in got])
                    delivered += len(got)
            else:
                spec = ConsumerSpec(queue=QUEUE, client=CLIENT, function="bench", max_concurrency=1)
                invoke = in_process_invoke(lambda event, context: None, "bench", spec.timeout_seconds)
                delivered = Dispatcher(client, spec, invoke, SOURCE).run(lambda: 900.0).delivered
        results[path] = cost.per(delivered)
    return results


def _idle_calls_per_minute(client: QueueClient, meter: Any, seconds: float) -> float:
    queue = client.queue(QUEUE, CLIENT)
    consumer = Consumer(queue, lambda message: None, concurrency=1)
    with meter.window() as cost:
        consumer.start()
        time.sleep(seconds)
        consumer.shutdown(timeout=5)
    return cost.api_calls * 60 / seconds


def run(quick: bool = False) -> dict[str, Any]:
    count = 5 if quick else 40
    with moto_backend() as backend:
        client = QueueClient("bench-push", dynamodb=backend.client)
        with backend.meter.paused():
            client.create_table()
            client.create_queue(QUEUE, visibility_timeout=60)
            client.queue(QUEUE, CLIENT).send("warm")
            client.queue(QUEUE, CLIENT).purge()
        push = _push_latency(client, count)
        pull = _pull_latency(client, count)
        cost = _cost(client, backend.meter, 20 if quick else 100)
        idle = _idle_calls_per_minute(client, backend.meter, 2.0 if quick else IDLE_SECONDS)
        result = {
            "backend": backend.name,
            "messages": count,
            "push_median_ms": statistics.median(push) * 1000,
            "pull_median_ms": statistics.median(pull) * 1000,
            "push_p90_ms": _p90(push) * 1000,
            "pull_p90_ms": _p90(pull) * 1000,
            "cost": cost,
            "pull_idle_calls_per_minute": idle,
        }
    result["ratio"] = result["push_median_ms"] / result["pull_median_ms"]
    print(
        f"  latency send -> consumer start, median: push {result['push_median_ms']:.0f} ms, pull "
        f"{result['pull_median_ms']:.0f} ms (ratio {result['ratio']:.2f}); p90 push {result['push_p90_ms']:.0f} ms, "
        f"pull {result['pull_p90_ms']:.0f} ms"
    )
    for path in ("pull", "push"):
        figures = cost[path]
        print(
            f"  {path}: {figures['write_units']:.2f} WU, {figures['read_units']:.2f} RU, "
            f"{figures['api_calls']:.2f} calls per delivered message"
        )
    print(f"  idle: pull {idle:.0f} DynamoDB calls a minute, push 0")
    return result


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
