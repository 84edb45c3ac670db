"""A worker loop over one sub-queue: receive, run a handler on worker threads, delete or release.

What users of a queue otherwise write by hand, with the details that are easy to get wrong: a handler that is
still running keeps its message (heartbeats extend the visibility), a failure releases the message with backoff,
empty receives and errors back off with jitter, FIFO groups are processed in order and never in parallel, and
`shutdown` stops receiving at once, lets running handlers finish and gives back what was not started.

With `transactional=True` the handler returns the TransactWriteItems entries of its effect (or None for none), and
the consumer commits them with the message's ack in one transaction: the effect is applied if and only if the ack
is. A message received again since (a slow handler lost its claim) cancels the transaction, so nothing is applied
and the message is left to its new holder: effects are applied exactly once however often a message is delivered.
"""

from __future__ import annotations

import logging
import queue as queues
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from . import reasons
from .errors import QueueError, ReceiptHandleStale, ValidationError
from .limits import MAX_RECEIVE, MAX_TRANSACTION_ITEMS
from .models import ReceivedMessage
from .queuewide import QueueWide
from .subqueue import SubQueue

logger = logging.getLogger("queue_core.consumer")

Handler = Callable[[ReceivedMessage], Any]
_POLL_SECONDS = 1
_MAX_IDLE_BACKOFF = 5.0


@dataclass
class ConsumerReport:
    received: int = 0
    succeeded: int = 0
    failed: int = 0
    released_unstarted: int = 0
    heartbeats: int = 0
    receive_errors: int = 0
    delete_errors: int = 0
    # Transactional: acks cancelled because the message had been received again since, so its effect was not
    # applied a second time.
    stale_acks: int = 0
    clean_shutdown: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Consumer:
    def __init__(
        self,
        queue: SubQueue | QueueWide,
        handler: Handler,
        concurrency: int = 4,
        batch_size: int | None = None,
        visibility_timeout: int | None = None,
        heartbeat_seconds: float | None = None,
        transactional: bool = False,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.queue = queue
        self.handler = handler
        self.transactional = transactional
        self.concurrency = concurrency
        self.batch_size = min(batch_size or concurrency, MAX_RECEIVE)
        self.visibility_timeout = visibility_timeout or queue.settings.visibility_timeout or 30
        self.heartbeat_seconds = heartbeat_seconds or max(self.visibility_timeout / 3, 0.2)
        self.report = ConsumerReport()
        self._work: queues.Queue[list[ReceivedMessage]] = queues.Queue()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        # Every message received and not yet deleted or given back, queued or running: heartbeats keep them all.
        self._held: dict[str, ReceivedMessage] = {}
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        if self._threads:
            return
        self._threads = [
            threading.Thread(target=self._receive_loop, name="consumer-receive", daemon=True),
            threading.Thread(target=self._heartbeat_loop, name="consumer-heartbeat", daemon=True),
        ]
        self._threads += [
            threading.Thread(target=self._work_loop, name=f"consumer-worker-{i}", daemon=True)
            for i in range(self.concurrency)
        ]
        for thread in self._threads:
            thread.start()

    def run(self) -> ConsumerReport:
        """Runs in the foreground until SIGINT or SIGTERM, then shuts down."""
        stopped = threading.Event()
        previous = {sig: signal.signal(sig, lambda *_: stopped.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.start()
            stopped.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return self.shutdown()

    def shutdown(self, timeout: float = 30) -> ConsumerReport:
        """Stops receiving now; running handlers may finish within `timeout`; unstarted messages are released."""
        deadline = time.monotonic() + timeout
        self._stop.set()
        self._threads[0].join(timeout=max(0.0, deadline - time.monotonic()))
        self._release_unstarted()
        for thread in self._threads[2:]:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self._release_unstarted()
        self.report.clean_shutdown = not any(thread.is_alive() for thread in self._threads[:1] + self._threads[2:])
        return self.report

    # Receiving.
    def _receive_loop(self) -> None:
        idle = 0.05
        while not self._stop.is_set():
            with self._lock:
                capacity = min(self.batch_size, self.concurrency + self.batch_size - len(self._held))
            if capacity <= 0:
                self._stop.wait(0.05)
                continue
            try:
                messages = self.queue.receive(
                    max_messages=min(capacity, self.batch_size),
                    visibility_timeout=self.visibility_timeout,
                    wait_seconds=_POLL_SECONDS,
                )
            except QueueError:
                logger.exception("receive failed")
                self.report.receive_errors += 1
                self._stop.wait(random.uniform(0, idle))
                idle = min(idle * 2, _MAX_IDLE_BACKOFF)
                continue
            if not messages:
                self._stop.wait(random.uniform(0, idle))
                idle = min(idle * 2, _MAX_IDLE_BACKOFF)
                continue
            idle = 0.05
            self.report.received += len(messages)
            with self._lock:
                self._held.update((message.receipt_handle, message) for message in messages)
            for unit in _work_units(messages):
                if self._stop.is_set():
                    self._release(unit)
                else:
                    self._work.put(unit)

    # Working.
    def _work_loop(self) -> None:
        while True:
            try:
                unit = self._work.get(timeout=0.05)
            except queues.Empty:
                if self._stop.is_set():
                    return
                continue
            self._process(unit)

    def _process(self, unit: list[ReceivedMessage]) -> None:
        """Messages of one unit (a FIFO group's batch, or one message) in order; the first failure releases
        it and every later one, so a group is never processed out of order. A delete that fails means the claim
        was lost (the group passed to another consumer, which starts again from that message): the unit's later
        messages are then not processed here, nor deleted."""
        for position, message in enumerate(unit):
            if self._stop.is_set() and position > 0:
                self._release(unit[position:])
                return
            try:
                effect = self.handler(message)
                items = self._transaction(message, effect) if self.transactional else None
            except Exception as error:
                logger.exception("handler failed for message %s", message.message_id)
                self.report.failed += 1
                self._forget(message)
                self._give_back(message, None, reasons.of_exception(error))
                self._release(unit[position + 1 :])
                return
            self._forget(message)
            try:
                if items is None:
                    self.queue.delete(message.receipt_handle)
                else:
                    self.queue.transact(items)
                self.report.succeeded += 1
            except QueueError as error:
                if items is not None and isinstance(error, ReceiptHandleStale):
                    # Received again since: nothing was applied; the message is its new holder's to process.
                    logger.info("message %s was received again: its effect is left to its holder", message.message_id)
                    self.report.stale_acks += 1
                    self._release(unit[position + 1 :])
                    return
                if items is not None:
                    # The effect was not applied (its own condition failed, or DynamoDB refused): a failure.
                    logger.exception("transaction failed for message %s", message.message_id)
                    self.report.failed += 1
                    self._give_back(message, None, f"transaction failed: {error.code}: {error.message}")
                    self._release(unit[position + 1 :])
                    return
                logger.exception("delete failed for message %s", message.message_id)
                self.report.delete_errors += 1
                if message.group_id is not None:
                    self._release(unit[position + 1 :])
                    return

    def _transaction(self, message: ReceivedMessage, effect: Any) -> list[Any]:
        """The handler's entries and the ack, all in one transaction: never split, or the effect could be
        applied without the ack (and again by the next holder)."""
        if effect is None:
            effect = []
        if not isinstance(effect, list | tuple) or not all(isinstance(item, dict) for item in effect):
            raise ValidationError("a transactional handler returns a list of TransactWriteItems entries (or None)")
        ack = self.queue.delete_transact_items(message.receipt_handle)
        if len(effect) + len(ack) > MAX_TRANSACTION_ITEMS:
            raise ValidationError(
                f"the handler's {len(effect)} transaction items and the ack's {len(ack)} exceed DynamoDB's "
                f"{MAX_TRANSACTION_ITEMS} per transaction; a transactional handler's effect must fit in one"
            )
        return [*effect, *ack]

    def _forget(self, message: ReceivedMessage) -> None:
        with self._lock:
            self._held.pop(message.receipt_handle, None)

    def _give_back(self, message: ReceivedMessage, delay: int | None, reason: str) -> None:
        """Released with why this attempt ended, kept with the message (`reasons`)."""
        try:
            self.queue.release(message.receipt_handle, delay_seconds=delay, reason=reason)
        except QueueError:
            logger.exception("release failed for message %s", message.message_id)

    def _release(self, messages: list[ReceivedMessage]) -> None:
        for message in messages:
            self._forget(message)
            self._give_back(message, 0, "not started: the consumer stopped, or an earlier message of its group failed")
            self.report.released_unstarted += 1

    def _release_unstarted(self) -> None:
        while True:
            try:
                unit = self._work.get_nowait()
            except queues.Empty:
                return
            self._release(unit)

    # Heartbeats.
    def _heartbeat_loop(self) -> None:
        """Extends every held message's visibility until the consumer has stopped and holds nothing."""
        while True:
            time.sleep(self.heartbeat_seconds)
            with self._lock:
                held = list(self._held.values())
            if self._stop.is_set() and not held:
                return
            for message in held:
                try:
                    self.queue.change_visibility(message.receipt_handle, self.visibility_timeout)
                    self.report.heartbeats += 1
                except QueueError:
                    logger.warning("heartbeat failed for message %s", message.message_id)


def _work_units(messages: list[ReceivedMessage]) -> list[list[ReceivedMessage]]:
    """One unit per FIFO group (its messages in order), one per standard message."""
    units: dict[str, list[ReceivedMessage]] = {}
    for message in messages:
        key = f"g:{message.client}:{message.group_id}" if message.group_id is not None else f"m:{message.message_id}"
        units.setdefault(key, []).append(message)
    return list(units.values())
