"""Push delivery: a dispatcher hands a sub-queue's messages to a consumer function as SQS events.

A dispatcher is woken (by an insert into the sub-queue, by the sweep, locally by a send), takes one of the
consumer's `max_concurrency` slots, and while the sub-queue has visible messages and its time budget allows:
claims a batch through the core with the consumer's visibility timeout, invokes the consumer synchronously with
the batch as an SQS event (split so that no payload passes Lambda's 6 MB), and as each part's answer comes deletes
what succeeded and releases what failed with the queue's backoff. The receive limit then moves poison messages to
the DLQ as everywhere else. The claims always cover what the dispatcher will still do with a message: the
visibility timeout covers the batching window and one invocation (`consumer_problems`), and before each invocation
every claim still held that would not outlast it is extended (`Dispatcher._keep`). A timed-out invocation's
messages are not released: they come back when their claim runs out, never while it may still run.

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
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any, Final

from . import keys, limits, reasons, sqs_event
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
# What a claim must still hold beyond the consumer's timeout when an invocation starts: the invoke's own time past
# the function's (the Lambda client connects in up to 5 s and waits up to 10 s past the timeout) and the settling.
CLAIM_MARGIN_SECONDS: Final = 20
# What a consumer's visibility timeout must hold beyond its batching window and timeout: the claim margin and 10 s
# for a gather that ends a little after its window, so that the ordinary path extends nothing.
VISIBILITY_MARGIN_SECONDS: Final = CLAIM_MARGIN_SECONDS + 10
# How many times a keep judges its claims against the clock again after extending the short ones (`_keep`).
KEEP_ROUNDS: Final = 3
# The error type Lambda gives a function stopped at its timeout (the local invoke says the same).
TIMEOUT_ERROR: Final = "Sandbox.Timedout"
# Why a message of a batch failed when the function answered for each message.
REPORTED_FAILED: Final = "reported failed (batchItemFailures)"
GROUP_FAILED: Final = "an earlier message of its group failed in this batch"


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
    needed = covering_visibility(spec.timeout_seconds, spec.max_batching_window_seconds)
    if spec.visibility_timeout < needed:
        problems.append(
            f"visibility_timeout ({spec.visibility_timeout} s) must cover the batching window "
            f"({spec.max_batching_window_seconds:g} s), the consumer's timeout ({spec.timeout_seconds:g} s) and "
            f"{VISIBILITY_MARGIN_SECONDS} s for the invoke and the settling: at least {needed} s. A claim taken at the "
            "start of the window must outlast the gathering and the first invocation, or the batch could be "
            "claimed again (twice in one batch, or by a second dispatcher) while this one still holds it"
        )
    return problems


def covering_visibility(timeout_seconds: float, window_seconds: float) -> int:
    """The shortest visibility timeout a consumer may have: a claim taken when the batching window opens covers
    the rest of the window, the first invocation and its settling. Later parts of a split batch, and a batch
    whose dispatcher was held up, are extended before each invocation (`Dispatcher._keep`) by as much."""
    return math.ceil(window_seconds + timeout_seconds + VISIBILITY_MARGIN_SECONDS)


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
    # Handed over and not answered in time: left to come back after their visibility (see `_leave`).
    timed_out: int = 0
    # Claimed and never handed over (a later part with no time left, a FIFO group failed in an earlier part):
    # given back at once, their receive count as it was.
    returned: int = 0
    # Claims that could not be extended (the message was received again since, or is gone): not this run's to
    # hand over or to settle any more.
    claims_lost: int = 0
    # Claims whose settle failed (a delete after a delivery, a release after a failure, a give-back of a message
    # no invocation got): each comes back when its claim runs out, counted as an attempt. Logged one by one too.
    unsettled: int = 0
    oldest_age_ms: int | None = None
    skipped: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def saw_age(self, age_ms: int) -> None:
        self.oldest_age_ms = age_ms if self.oldest_age_ms is None else max(self.oldest_age_ms, age_ms)


@dataclass
class _Claim:
    """A message this dispatcher holds, and until when (epoch ms) no one else can claim it: the time read before
    the receive or extension that set the claim, plus the visibility asked for, so never later than the claim's."""

    message: ReceivedMessage
    until: int
    # Why its delivery failed, when it did (see `reasons`).
    why: str = ""


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
                    # Read before anything is claimed: the settings are cached for seconds and an invocation may
                    # run for minutes, so a read after it meets the table again, and one that failed there would
                    # end this run with what the batch still holds neither handed over nor given back.
                    settings = self.sub_queue.settings
                    batch = self._gather(settings.fifo)
                    if not batch:
                        break
                    self._deliver(batch, settings.max_receive_count, report, remaining_seconds)
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

    def _gather(self, fifo: bool) -> dict[str, _Claim]:
        """Up to `batch_size` messages by id, in the core's order; with a batching window, waits up to the window
        (on the core's clock, as the claims run) for a full batch. A FIFO queue (also one whose name does not say
        so, which the construct could not check) takes SQS's FIFO limits: 10 at most, no window."""
        spec = self.spec
        size = min(spec.batch_size, MAX_BATCH_SIZE_WITHOUT_WINDOW) if fifo else spec.batch_size
        window_ms = 0 if fifo else int(spec.max_batching_window_seconds * 1000)
        window_ends = self._client.now_ms() + window_ms
        batch: dict[str, _Claim] = {}
        while len(batch) < size:
            want = min(limits.MAX_RECEIVE, size - len(batch))
            claimed_at = self._client.now_ms()
            try:
                got = self.sub_queue.receive(max_messages=want, visibility_timeout=spec.visibility_timeout)
            except QueueError as error:
                if not batch:
                    raise
                # What the window claimed already is delivered now: abandoned, it would come back with a receive
                # counted that nobody saw.
                logger.warning("receive in the batching window failed, delivering what it holds: %s", error)
                break
            for message in got:
                # A message comes back to the same gather only when its first claim ran out (the process was
                # paused past it): the new claim replaces the old one, whose handle is stale.
                batch[message.message_id] = _Claim(message, claimed_at + spec.visibility_timeout * 1000)
            if got:
                continue
            left = window_ends - self._client.now_ms()
            if left <= 0 or (not batch and window_ms == 0):
                break
            self._sleep(min(left / 1000, 0.2))
        return batch

    def _deliver(
        self,
        batch: dict[str, _Claim],
        max_receives: int,
        report: DispatchReport,
        remaining_seconds: Callable[[], float],
    ) -> None:
        """Part after part (see `split_for_payload`), each settled as soon as its answer comes, and every message
        still held extended before each invocation when its claim would not outlast it: no claim runs out while
        this dispatcher may still hand its message over or settle it, so no second dispatcher gets it meanwhile."""
        report.batches += 1
        now = self._client.now_ms()
        report.saw_age(now - min(claim.message.sent_at for claim in batch.values()))
        held = dict(batch)
        failed_groups: set[str] = set()
        for part in split_for_payload([claim.message for claim in batch.values()], self._source, now):
            if remaining_seconds() < self.spec.timeout_seconds + SETTLE_MARGIN_SECONDS:
                break
            blocked = [m for m in part if m.group_id is not None and m.group_id in failed_groups]
            self._return_unseen([held.pop(m.message_id) for m in blocked if m.message_id in held], report)
            covered = self.spec.timeout_seconds + CLAIM_MARGIN_SECONDS
            kept = self._keep(held.values(), covered, report)
            # What the rounds of extensions could not bring to cover the invocation goes back, never handed over
            # with a claim that may run out while the consumer holds it; judged again after each give-back (a call
            # a claim, seconds when throttled), so that every claim handed over covers the invocation from its
            # start, not from before the give-backs. A FIFO group's claims go back together: a later message of
            # the group handed over alone would be consumed before the earlier one given back.
            while short := [c for c in kept if c.until < self._client.now_ms() + int(covered * 1000)]:
                groups = {claim.message.group_id for claim in short if claim.message.group_id is not None}
                ids = {claim.message.message_id for claim in short}
                going = [claim for claim in kept if claim.message.message_id in ids or claim.message.group_id in groups]
                self._return_unseen(going, report)
                gone = {claim.message.message_id for claim in going}
                kept = [claim for claim in kept if claim.message.message_id not in gone]
            held = {claim.message.message_id: claim for claim in kept}
            sending = [held.pop(m.message_id) for m in part if m.message_id in held]
            if not sending:
                continue
            failures, ended, why = self._invoke_once([claim.message for claim in sending], now, report)
            succeeded, failed = [], []
            for claim in sending:
                message = claim.message
                in_failed_group = message.group_id is not None and message.group_id in failed_groups
                if failures is None or message.message_id in failures or in_failed_group:
                    claim.why = why if failures is None else REPORTED_FAILED if not in_failed_group else GROUP_FAILED
                    failed.append(claim)
                    if message.group_id is not None:
                        failed_groups.add(message.group_id)
                else:
                    succeeded.append(claim)
            if ended:
                self._settle(succeeded, failed, max_receives, report)
            else:
                self._leave(failed, max_receives, report)
        self._return_unseen(list(held.values()), report)

    def _invoke_once(
        self, messages: list[ReceivedMessage], now: int, report: DispatchReport
    ) -> tuple[set[str] | None, bool, str]:
        """The ids the consumer failed (None: the whole batch failed), whether the invocation has surely ended
        (not when it timed out or its answer never came, `ended_surely`), and why the whole batch failed."""
        records = [sqs_event.record(message, self._source, now) for message in messages]
        report.invocations += 1
        try:
            answer = self._invoke(sqs_event.event(records))
        except Exception as error:
            logger.exception("invoking consumer %s failed", self.spec.function)
            return None, False, f"the invoke failed: {type(error).__name__}: {error}"
        ids = identifiers(messages)
        return item_failures(answer, ids), ended_surely(answer), failure_reason(answer)

    def _keep(self, claims: Iterable[_Claim], seconds: float, report: DispatchReport) -> list[_Claim]:
        """The claims still this dispatcher's; one that would not hold for `seconds` more is first extended to
        the consumer's visibility timeout (which covers `seconds`, see `consumer_problems`). One that cannot be
        extended is lost: the message was received again since, or is gone, and is no longer this dispatcher's to
        hand over or settle. The extensions take time of their own (a call each, seconds when throttled), in which
        the claims judged long enough at the start run on: the claims are judged again against the clock after
        them, up to `KEEP_ROUNDS` times. What is still short after that is the caller's to judge (`until`)."""
        kept = list(claims)
        for _ in range(KEEP_ROUNDS):
            needed = self._client.now_ms() + int(seconds * 1000)
            short = [claim for claim in kept if claim.until < needed]
            if not short:
                break
            lost = set()
            for claim in short:
                asked = self._client.now_ms()
                try:
                    self.sub_queue.change_visibility(claim.message.receipt_handle, self.spec.visibility_timeout)
                except QueueError as error:
                    logger.warning("claim of %s lost: %s", claim.message.message_id, error.message)
                    report.claims_lost += 1
                    lost.add(claim.message.message_id)
                    continue
                claim.until = asked + self.spec.visibility_timeout * 1000
            kept = [claim for claim in kept if claim.message.message_id not in lost]
        return kept

    def _settle(self, succeeded: list[_Claim], failed: list[_Claim], max_receives: int, report: DispatchReport) -> None:
        """Deletes before releases, so that a FIFO group's lock is given back by the last message settled. A
        delete counts as delivered only under a claim still held (extended first if it ran short), so a delete
        that finds the message gone because another holder deleted it is not counted twice."""
        handles = [claim.message.receipt_handle for claim in self._keep(succeeded, SETTLE_MARGIN_SECONDS, report)]
        for start in range(0, len(handles), limits.MAX_BATCH):
            result = self.sub_queue.delete_batch(handles[start : start + limits.MAX_BATCH])
            report.delivered += len(result.successful)
            for failure in result.failed:
                logger.warning("delete after delivery failed: %s", failure.get("message"))
            report.unsettled += len(result.failed)
        for claim in failed:
            message = claim.message
            report.failed += 1
            last = bool(max_receives) and message.receive_count >= max_receives
            try:
                # The last allowed receive failed: no backoff, the next receive moves it to the DLQ at once.
                self.sub_queue.release(message.receipt_handle, 0 if last else None, claim.why)
            except QueueError as error:
                logger.warning("release after a failed delivery failed: %s", error.message)
                report.unsettled += 1
                continue
            report.released += 1
            report.moved_to_dlq += last

    def _leave(self, failed: list[_Claim], max_receives: int, report: DispatchReport) -> None:
        """An invocation that timed out or never answered may still be running: its messages are not released
        but come back when their claim runs out (it covered the consumer's timeout and more when the invocation
        started, see `_keep`), as SQS's mapping lets a timed-out batch come back."""
        for claim in failed:
            report.failed += 1
            report.timed_out += 1
            try:
                self.sub_queue.note_attempt(claim.message.receipt_handle, reasons.TIMED_OUT, claim.why)
            except QueueError as error:
                logger.warning("noting the timeout of %s failed: %s", claim.message.message_id, error.message)
            report.moved_to_dlq += bool(max_receives) and claim.message.receive_count >= max_receives

    def _return_unseen(self, claims: list[_Claim], report: DispatchReport) -> None:
        """Claimed messages no invocation got: back at once, their receive count as before this run's claim."""
        for claim in claims:
            try:
                self.sub_queue.return_unseen(claim.message.receipt_handle)
            except QueueError as error:
                logger.warning("giving back %s failed: %s", claim.message.message_id, error.message)
                report.unsettled += 1
                continue
            report.returned += 1


def ended_surely(answer: InvokeAnswer) -> bool:
    """False for a timeout: Lambda's (error type `Sandbox.Timedout` in the answer) or the local invoke's (the call
    goes on in its thread)."""
    if answer.function_error == TIMEOUT_ERROR:
        return False
    if answer.function_error is None or not answer.payload:
        return True
    try:
        body = json.loads(answer.payload)
    except ValueError:
        return True
    return not (isinstance(body, dict) and body.get("errorType") == TIMEOUT_ERROR)


def failure_reason(answer: InvokeAnswer) -> str:
    """Why a whole batch failed, as Lambda said it: the function's `errorType: errorMessage` and stack trace, a
    timeout, or an answer that is not of `batchItemFailures`' shape (unused when the batch did not fail)."""
    if not ended_surely(answer):
        return "timed out"
    body: Any = None
    if answer.payload:
        try:
            body = json.loads(answer.payload)
        except ValueError:
            body = None
    if answer.function_error is None:
        return "the function's answer is not a batchItemFailures answer"
    if isinstance(body, dict) and ("errorType" in body or "errorMessage" in body):
        headline = f"{body.get('errorType', answer.function_error)}: {body.get('errorMessage', '')}".strip()
        trace = body.get("stackTrace")
        lines = [str(line).rstrip() for line in trace] if isinstance(trace, list) else []
        return "\n".join([headline.splitlines()[0] if headline else answer.function_error, *lines])
    return f"function error: {answer.function_error}"


def identifiers(messages: list[ReceivedMessage]) -> dict[str, str]:
    """Each identifier a consumer may report a message's failure by, to the message's queue id: the event's
    `messageId` (its SQS id), and its queue id, which records of releases before SQS ids carried."""
    named = {message.message_id: message.message_id for message in messages}
    return {**named, **{message.sqs_message_id: message.message_id for message in messages}}


def item_failures(answer: InvokeAnswer, ids: dict[str, str]) -> set[str] | None:
    """The consumer's answer read as SQS's mapping with `ReportBatchItemFailures` reads it: the queue ids of the
    messages it failed (`ids`: see `identifiers`)."""
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
        failed.add(ids[identifier])
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
