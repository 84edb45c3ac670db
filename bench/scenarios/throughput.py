"""End-to-end messages per second with 8 consumers and 5,000 messages in flight, ours against each baseline.

Each design gets a fresh table with 5,000 messages in flight (seeded as sent earlier), then a producer sends new
messages (ours in batches of 25, the baselines one by one: they have no batch send) and 8 consumer threads receive
10 at a time and delete, until every new message is deleted; the time of both is the end-to-end time. The
consumers start when the messages are in: consumers polling an empty queue would only compete with the producer
for moto's one lock. moto runs in this process and handles one
request at a time, so the figure is moto's, not DynamoDB's: only the ratio between designs in the same run means
anything (it mostly follows what each design makes the backend read). Ours runs with its default single shard, the
figure the target is judged on, and with 8 shards, one per consumer. The slower a design, the fewer messages it
gets (`MESSAGES`), so that the run stays short; the status-index baseline reads pages of 1,000 here (published:
250), which reads the same items in fewer calls and only makes it faster.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Final

from ..backend import moto_backend
from ..baselines import HiddenUntilQueue, StatusIndexQueue
from ..messages import KB, body
from ..queues import OursQueue, QueueUnderTest

NAME: Final = "throughput"
CONSUMERS: Final = 8
IN_FLIGHT: Final = 5_000
MESSAGES: Final = {"ours": 80, "ours_8_shards": 80, "hidden_until": 40, "status_index": 20}
QUICK_IN_FLIGHT: Final = 300
QUICK_MESSAGES: Final = {"ours": 30, "ours_8_shards": 30, "hidden_until": 20, "status_index": 20}
IDLE_PAUSE_SECONDS: Final = 0.1  # a long-polling consumer waits before it asks an empty queue again
STATUS_INDEX_PAGE: Final = 1000


def _create(backend: Any, name: str) -> QueueUnderTest:
    table = f"throughput-{name}"
    if name.startswith("ours"):
        return OursQueue.create(backend.client, table, shards=8 if name == "ours_8_shards" else 1)
    if name == "hidden_until":
        return HiddenUntilQueue.create(backend.client, table)
    return StatusIndexQueue.create(backend.client, table, page=STATUS_INDEX_PAGE)


def _run_design(backend: Any, name: str, in_flight: int, messages: int) -> dict[str, Any]:
    queue = _create(backend, name)
    text = body(KB)
    with backend.meter.paused():
        queue.seed(in_flight, "in_flight", text)
    consumers = [queue.consumer() for _ in range(CONSUMERS)]
    for consumer in consumers:
        if isinstance(consumer, OursQueue):
            consumer.warm()
    lock = threading.Lock()
    deleted = [0]

    def consume(consumer: QueueUnderTest) -> None:
        while True:
            with lock:
                if deleted[0] >= messages:
                    return
            got = consumer.receive(10)
            if not got:
                time.sleep(IDLE_PAUSE_SECONDS)
                continue
            consumer.delete_batch([message.handle for message in got])
            with lock:
                deleted[0] += len(got)

    threads = [threading.Thread(target=consume, args=(consumer,)) for consumer in consumers]
    with backend.meter.window() as cost:
        started = time.perf_counter()
        queue.send_batch([text] * messages)
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
    backend.client.delete_table(TableName=f"throughput-{name}")
    return {
        "design": name,
        "messages": messages,
        "seconds": seconds,
        "messages_per_second": messages / seconds,
        "items_read_per_message": cost.items_read / messages,
        "api_calls_per_message": cost.api_calls / messages,
        "wasted_per_message": cost.condition_failures / messages,
    }


def run(quick: bool = False) -> dict[str, Any]:
    in_flight, messages = (QUICK_IN_FLIGHT, QUICK_MESSAGES) if quick else (IN_FLIGHT, MESSAGES)
    rows = {}
    with moto_backend() as backend:
        for name, count in messages.items():
            rows[name] = _run_design(backend, name, in_flight, count)
            row = rows[name]
            print(
                f"  throughput {name:<13}: {row['messages_per_second']:7.1f} msg/s in moto "
                f"({row['items_read_per_message']:.1f} items read / message, {row['seconds']:.1f} s)"
            )
        backend_name = backend.name
    ours = rows["ours"]["messages_per_second"]
    ratios = {name: ours / rows[name]["messages_per_second"] for name in ("hidden_until", "status_index")}
    ratios["ours_8_shards_over_hidden_until"] = (
        rows["ours_8_shards"]["messages_per_second"] / rows["hidden_until"]["messages_per_second"]
    )
    print(
        f"  throughput ratio ours / hidden_until = {ratios['hidden_until']:.1f}x, "
        f"ours / status_index = {ratios['status_index']:.1f}x"
    )
    return {
        "backend": backend_name,
        "consumers": CONSUMERS,
        "in_flight": in_flight,
        "rows": rows,
        "ratios": ratios,
    }
