"""Push delivery: a dispatcher hands a sub-queue's messages to a consumer function as SQS events.

A dispatcher is woken (by an insert into the sub-queue, by the sweep, locally by a send), takes one of the
consumer's `max_concurrency` slots, and while the sub-queue has visible messages and its time budget allows:
claims a batch through the core with the consumer's visibility timeout, invokes the consumer synchronously with
the batch as an SQS event (split so that no payload passes Lambda's 6 MB), deletes what succeeded and releases
what failed with the queue's backoff. The receive limit then moves poison messages to the DLQ as everywhere else.

What the consumer answers is read as SQS's event source mapping reads it with `ReportBatchItemFailures`: no answer,
or an empty or null `batchItemFailures`, is success; each `itemIdentifier` fails that message; a function error, a
timeout, or an answer that is not of that shape (an identifier that names no message of the batch) fails the
whole batch. FIFO: a failed message also fails every later message of its group in the batch, as SQS does.

The invoke is injected (`Invoke`): a Lambda client on AWS, an in-process function under `dq local`. DynamoDB is
reached only through the core: the slots are leases (`leases`), one conditional write to take and one to give back.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from . import keys, limits, sqs_event
from .client import QueueClient
from .errors import QueueError, ValidationError
from .models import ReceivedMessage
from .sqs_event import EventSource
from .subqueue import SubQueue

logger = logging.getLogger("queue_core.push")

# Lambda's limit on a synchronous invocation's request payload.
MAX_PAYLOAD_BYTES: Final = 6 * 1024 * 1024
# SQS's event source mapping limits, which a consumer's settings follow.
MAX_BATCH_SIZE: Final = 10_000
MAX_BATCH_SIZE_WITHOUT_WINDOW: Final = 10
MAX_BATCHING_WINDOW_SECONDS: Final = 300
MAX_CONCURRENCY: Final = 1_000
# Time kept back after the consumer's own timeout for the deletes and releases of its batch.
SETTLE_MARGIN_SECONDS: Final = 5.0


@dataclass(frozen=True)
class ConsumerSpec:
    """One push consumer: the sub-queue it takes messages from and how (the settings of SQS's mapping).
    `function` is what the invoke reaches (a Lambda function name or ARN, or a local `module:function`)."""

    queue: str
    client: str
    function: str
    batch_size: int = 10
    max_batching_window_seconds: float = 0
    max_concurrency: int = 2
    visibility_timeout: int = 60
    timeout_seconds: float = 30

    def __post_init__(self) -> None:
        problems = consumer_problems(self)
        if problems:
            raise ValidationError("; ".join(problems))

    @property
    def name(self) -> str:
        return f"{self.queue}/{self.client}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ConsumerSpec:
        return cls(**raw)


def consumer_problems(spec: ConsumerSpec) -> list[str]:
    """Every setting SQS's event source mapping would refuse, each with the reason."""
    problems = []
    if not 1 <= spec.batch_size <= MAX_BATCH_SIZE:
        problems.append(f"batch_size must be 1-{MAX_BATCH_SIZE}")
    if spec.batch_size > MAX_BATCH_SIZE_WITHOUT_WINDOW and spec.max_batching_window_seconds < 1:
        problems.append(
            f"batch_size above {MAX_BATCH_SIZE_WITHOUT_WINDOW} needs max_batching_window of at least 1 s (as SQS's)"
        )
    if not 0 <= spec.max_batching_window_seconds <= MAX_BATCHING_WINDOW_SECONDS:
        problems.append(f"max_batching_window must be 0-{MAX_BATCHING_WINDOW_SECONDS} s")
    if spec.queue.endswith(".fifo") and (
        spec.batch_size > MAX_BATCH_SIZE_WITHOUT_WINDOW or spec.max_batching_window_seconds
    ):
        problems.append(
            f"a FIFO queue's consumer takes batches of at most {MAX_BATCH_SIZE_WITHOUT_WINDOW} and no batching "
            "window (as SQS's): a batch holds its groups until the whole batch is settled"
        )
    if not 1 <= spec.max_concurrency <= MAX_CONCURRENCY:
        problems.append(f"max_concurrency must be 1-{MAX_CONCURRENCY}")
    if not 0 < spec.visibility_timeout <= limits.MAX_VISIBILITY_SECONDS:
        problems.append(f"visibility_timeout must be 1-{limits.MAX_VISIBILITY_SECONDS} s")
    if spec.visibility_timeout < spec.timeout_seconds:
        problems.append(
            f"visibility_timeout ({spec.visibility_timeout} s) is shorter than the consumer's timeout "
            f"({spec.timeout_seconds:g} s): a batch could become visible again and go to a second invocation while "
            "the first still runs (SQS refuses such a mapping for the same reason)"
        )
    return problems


@dataclass(frozen=True)
class InvokeAnswer:
    """What a synchronous invoke gave back: the function's answer (JSON text, None when it returned nothing) or,
    when it failed (an exception, a timeout, a crash), the error's type in `function_error`."""

    payload: str | None = None
    function_error: str | None = None


Invoke = Callable[[dict[str, Any]], InvokeAnswer]


@dataclass
class DispatchReport:
    """One dispatcher run. `skipped`: every slot was held, the running dispatchers deliver what is there."""

    queue: str = ""
    client: str = ""
    batches: int = 0
    invocations: int = 0
    delivered: int = 0
    failed: int = 0
    released: int = 0
    moved_to_dlq: int = 0
    oldest_age_ms: int | None = None
    skipped: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def saw_age(self, age_ms: int) -> None:
        self.oldest_age_ms = age_ms if self.oldest_age_ms is None else max(self.oldest_age_ms, age_ms)


@dataclass
class _Outcome:
    succeeded: list[ReceivedMessage] = field(default_factory=list)
    failed: list[ReceivedMessage] = field(default_factory=list)


class Dispatcher:
    """Delivers one consumer's sub-queue. `remaining_seconds` is the caller's time left (a Lambda context's);
    no batch is claimed unless the consumer's whole timeout and the settling fit in it."""

    def __init__(
        self, client: QueueClient, spec: ConsumerSpec, invoke: Invoke, source: EventSource, sleep=time.sleep
    ) -> None:
        self._client = client
        self.spec = spec
        self._invoke = invoke
        self._source = source
        self._sleep = sleep
        self.sub_queue: SubQueue = client.queue(spec.queue, spec.client)

    def run(self, remaining_seconds: Callable[[], float]) -> DispatchReport:
        report = DispatchReport(queue=self.spec.queue, client=self.spec.client)
        spec = self.spec
        looked_again = False
        while True:
            # Never more dispatchers in flight for one consumer than its slots; each holds its slot for the rest
            # of its run at most, so a crashed one's slot frees itself.
            holding = self._client.take_consumer_slot(
                spec.queue, spec.client, spec.max_concurrency, max(remaining_seconds(), 1.0)
            )
            if holding is None:
                report.skipped = report.batches == 0
                return report
            slot, holder = holding
            batches_before = report.batches
            try:
                while self._has_time(remaining_seconds()):
                    batch = self._gather(remaining_seconds)
                    if not batch:
                        break
                    self._deliver(batch, report)
            finally:
                self._client.give_back_consumer_slot(spec.queue, spec.client, slot, holder)
            # A message inserted after the last empty receive woke a dispatcher that found no free slot: it was this
            # one's, so it looks once more after giving the slot back. A round that claimed nothing ends the run
            # the second time, so a message that peek shows and no receive can claim never keeps it spinning.
            if report.batches == batches_before:
                if looked_again:
                    return report
                looked_again = True
            if not self._has_time(remaining_seconds()) or not self.sub_queue.peek(1):
                return report

    def _has_time(self, remaining: float) -> bool:
        return remaining >= self.spec.timeout_seconds + self.spec.max_batching_window_seconds + SETTLE_MARGIN_SECONDS

    def _gather(self, remaining_seconds: Callable[[], float]) -> list[ReceivedMessage]:
        """Up to `batch_size` messages; with a batching window, waits up to the window for a full batch. A FIFO
        queue (also one whose name does not say so, which the construct could not check) takes SQS's FIFO
        limits: 10 at most, no window."""
        spec = self.spec
        fifo = self.sub_queue.settings.fifo
        size = min(spec.batch_size, MAX_BATCH_SIZE_WITHOUT_WINDOW) if fifo else spec.batch_size
        window = 0 if fifo else spec.max_batching_window_seconds
        window_ends = time.monotonic() + window
        batch: list[ReceivedMessage] = []
        while len(batch) < size:
            want = min(limits.MAX_RECEIVE, size - len(batch))
            got = self.sub_queue.receive(max_messages=want, visibility_timeout=spec.visibility_timeout)
            batch += got
            if got:
                continue
            left = window_ends - time.monotonic()
            if left <= 0 or (not batch and window == 0):
                break
            self._sleep(min(left, 0.2))
        return batch

    def _deliver(self, batch: list[ReceivedMessage], report: DispatchReport) -> None:
        report.batches += 1
        now = self._client.now_ms()
        report.saw_age(now - min(message.sent_at for message in batch))
        outcome = _Outcome()
        failed_groups: set[str] = set()
        for chunk in split_for_payload(batch, self._source, now):
            blocked = [m for m in chunk if m.group_id is not None and m.group_id in failed_groups]
            outcome.failed += blocked
            sending = [m for m in chunk if m not in blocked]
            if not sending:
                continue
            failures = self._invoke_once(sending, now, report)
            for message in sending:
                in_failed_group = message.group_id is not None and message.group_id in failed_groups
                if failures is None or message.message_id in failures or in_failed_group:
                    outcome.failed.append(message)
                    if message.group_id is not None:
                        failed_groups.add(message.group_id)
                else:
                    outcome.succeeded.append(message)
        self._settle(outcome, report)

    def _invoke_once(self, messages: list[ReceivedMessage], now: int, report: DispatchReport) -> set[str] | None:
        """The ids the consumer failed; None when the whole batch failed."""
        records = [sqs_event.record(message, self._source, now) for message in messages]
        report.invocations += 1
        try:
            answer = self._invoke(sqs_event.event(records))
        except Exception:
            logger.exception("invoking consumer %s failed", self.spec.function)
            return None
        return item_failures(answer, {message.message_id for message in messages})

    def _settle(self, outcome: _Outcome, report: DispatchReport) -> None:
        """Deletes before releases, so that a FIFO group's lock is given back by the last message settled."""
        handles = [message.receipt_handle for message in outcome.succeeded]
        for start in range(0, len(handles), limits.MAX_BATCH):
            result = self.sub_queue.delete_batch(handles[start : start + limits.MAX_BATCH])
            report.delivered += len(result.successful)
            for failure in result.failed:
                logger.warning("delete after delivery failed: %s", failure.get("message"))
        max_receives = self.sub_queue.settings.max_receive_count
        for message in outcome.failed:
            report.failed += 1
            last = bool(max_receives) and message.receive_count >= max_receives
            try:
                # The last allowed receive failed: no backoff, the next receive moves it to the DLQ at once.
                self.sub_queue.release(message.receipt_handle, 0 if last else None)
            except QueueError as error:
                logger.warning("release after a failed delivery failed: %s", error.message)
                continue
            report.released += 1
            report.moved_to_dlq += last


def item_failures(answer: InvokeAnswer, ids: set[str]) -> set[str] | None:
    """The consumer's answer read as SQS's mapping with `ReportBatchItemFailures` reads it."""
    if answer.function_error is not None:
        return None
    if answer.payload is None or not answer.payload.strip():
        return set()
    try:
        body = json.loads(answer.payload)
    except ValueError:
        return None
    if body is None:
        return set()
    if not isinstance(body, dict):
        return None
    entries = body.get("batchItemFailures")
    if entries is None:
        return set()
    if not isinstance(entries, list):
        return None
    failed: set[str] = set()
    for entry in entries:
        identifier = entry.get("itemIdentifier") if isinstance(entry, dict) else None
        if not isinstance(identifier, str) or identifier not in ids:
            return None
        failed.add(identifier)
    return failed


def split_for_payload(batch: list[ReceivedMessage], source: EventSource, now: int) -> list[list[ReceivedMessage]]:
    """Consecutive pieces of the batch (order kept), each an event within Lambda's synchronous payload limit."""
    chunks: list[list[ReceivedMessage]] = []
    current: list[ReceivedMessage] = []
    size = sqs_event.payload_bytes([])
    for message in batch:
        added = sqs_event.payload_bytes([sqs_event.record(message, source, now)]) - sqs_event.payload_bytes([]) + 1
        if current and size + added > MAX_PAYLOAD_BYTES:
            chunks.append(current)
            current, size = [], sqs_event.payload_bytes([])
        current.append(message)
        size += added
    if current:
        chunks.append(current)
    return chunks


def wake_list(depths: list[dict[str, Any]], consumers: list[ConsumerSpec]) -> list[ConsumerSpec]:
    """The consumers whose sub-queue the sweep found with visible messages: released, delayed and expired
    messages produce no insert, so the sweep wakes their dispatchers, and nothing waits longer than one sweep."""
    waiting = {(depth["queue"], depth["client"]) for depth in depths if depth.get("visible")}
    return [spec for spec in consumers if (spec.queue, spec.client) in waiting]


def woken_sub_queues(stream_records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The sub-queues a DynamoDB stream batch names (inserts of live messages), each once, in order."""
    found: dict[tuple[str, str], None] = {}
    for stream_record in stream_records:
        pk = stream_record.get("dynamodb", {}).get("Keys", {}).get("pk", {}).get("S")
        sub_queue = keys.sub_queue_of(pk) if isinstance(pk, str) else None
        if sub_queue is not None:
            found[sub_queue] = None
    return list(found)
