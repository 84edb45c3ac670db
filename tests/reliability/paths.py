"""The stress run's delivery paths beside the library's own calls, each under the run's ledger.

* Push: two dispatchers on one consumer (a batching window, batches split for the payload limit) hand messages to
  a consumer function that succeeds, fails some messages, fails the whole batch, or runs until its timeout. The
  function records each invocation in the ledger; its claims count as held until it returns (the dispatcher
  promises that its claims cover every invocation), so a message in two batches at once is a violation, and so is
  a message twice in one batch.
* SQS: boto3's SQS client answered in-process by the SQS handler on the run's core (its fake clock, its faults):
  receives, deletes (single and batch), visibility changes, DLQ reads, deletes by DLQ handle, and redrives by
  `StartMessageMoveTask`; after each redrive, the DLQ handles read before it are sent again, and must remove
  nothing (a DLQ handle removes only the DLQ copy it was read from, never the live message). Each SQS queue names
  a queue of its own type as its dead-letter target (as SQS code sets a shared DLQ up), and the DLQ operator reads,
  deletes and redrives each time either at the queue's own DLQ URL (`{queue}.dlq`) or at that target's URL. A
  DLQ read holds what it answers; the operator leaves some dead letters held, and no read may answer a dead letter
  again while an earlier read's hold can still run.
* SQS message ids (`queue_core.sqs_ids`): every id these paths show (sent, received, read in a DLQ or at a target,
  after a redrive, in a push event) is at most 80 characters of `A-Za-z0-9_-`, one message has one id however
  often and wherever it is seen (a message rightly stored twice may have two), and no id names two messages.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from moto.core.botocore_stubber import MockRawResponse
from queue_core import QueueClient, QueueError, ReceivedMessage, Throttled, push
from queue_core.push import ConsumerSpec, Dispatcher, InvokeAnswer
from queue_core.sqs_event import EventSource
from sqs_api.gateway import handle

from dq.proxy import http_answer, proxy_event
from dq.routes import match
from tests.reliability.ledger import Hold, receipt_token
from tests.reliability.truth import label_of

if TYPE_CHECKING:
    from tests.reliability.stress import StressRun

PUSH_QUEUE, PUSH_CLIENT = "push", "a"
SQS_QUEUES, SQS_CLIENT = ("sqs", "sqs.fifo"), "a"
# Each SQS queue's dead-letter target: an ordinary queue that reads the SQS queue's dead letters besides its own
# messages (it has none here).
SQS_DEAD_LETTER_TARGETS = {"sqs": "sqs-dead-letters", "sqs.fifo": "sqs-dead-letters.fifo"}
# The dispatchers' settings: a window, batches larger than one part of the (lowered) payload limit, a visibility
# that covers the window and one invocation, and a timeout the consumer function sometimes runs into.
PUSH_SPEC = ConsumerSpec(
    queue=PUSH_QUEUE,
    client=PUSH_CLIENT,
    function="stress:consumer",
    batch_size=20,
    max_batching_window_seconds=2,
    max_concurrency=2,
    visibility_timeout=60,
    timeout_seconds=20,
)
PUSH_DISPATCHERS = 2
# The payload limit of one invocation, lowered from Lambda's 6 MB so that batches of small messages are split.
PUSH_PAYLOAD_BYTES = 8 * 1024
PUSH_RUN_SECONDS = 900.0
SQS_CONSUMERS = 2  # per SQS sub-queue
SQS_ENDPOINT = "https://sqs.stress.internal"
ACCOUNT = "000000000000"
DLQ_EVERY_FAKE_SECONDS = 150.0
# How long a DLQ read over SQS holds what it answers (fake seconds): longer than the time between looks, so the
# dead letters the operator leaves held are due to be skipped by its next look.
DLQ_HOLD_SECONDS = 200
# What SQS takes as a batch entry id, and so what clients expect of a MessageId.
SQS_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")


def in_process_sqs(core: QueueClient, client: str) -> Any:
    """A stock boto3 SQS client whose requests go, as API Gateway proxy events, to the SQS handler on `core`
    (in this process, on its clock), instead of over the network."""
    sqs = boto3.client(
        "sqs",
        endpoint_url=f"{SQS_ENDPOINT}/sqs/{client}",
        region_name="us-east-1",
        aws_access_key_id="key",
        aws_secret_access_key="secret",
        config=Config(retries={"max_attempts": 1}),
    )

    def answer(request: Any, **_: Any) -> AWSResponse:
        url = urlsplit(request.url)
        headers = [
            (name, value.decode() if isinstance(value, bytes) else value) for name, value in request.headers.items()
        ]
        body = request.body if isinstance(request.body, bytes) else (request.body or "").encode()
        event = proxy_event("POST", url.path, url.query, headers, body, match("POST", url.path))
        status, answer_headers, payload = http_answer(handle(event, core))
        return AWSResponse(request.url, status, dict(answer_headers), MockRawResponse(payload))

    sqs.meta.events.register_first("before-send.sqs", answer)
    return sqs


def sqs_received(raw: dict[str, Any], client: str) -> ReceivedMessage:
    """A message of an SQS ReceiveMessage answer (asked with every system attribute) as the ledger records it."""
    system = raw.get("Attributes", {})
    return ReceivedMessage(
        message_id=raw["MessageId"],
        receipt_handle=raw["ReceiptHandle"],
        body=raw["Body"],
        attributes={name: value["StringValue"] for name, value in raw.get("MessageAttributes", {}).items()},
        group_id=system.get("MessageGroupId"),
        sequence=system.get("SequenceNumber", ""),
        receive_count=int(system["ApproximateReceiveCount"]),
        sent_at=int(system["SentTimestamp"]),
        first_received_at=None,
        client=client,
    )


class Paths:
    """The push and SQS workers of one `StressRun`, their figures and their own checks."""

    def __init__(self, run: StressRun, visibility: int) -> None:
        self.run = run
        self.visibility = visibility
        self.redrives = 0
        self.figures: dict[str, Counter] = {"push": Counter(), "sqs": Counter()}
        self._lock = threading.Lock()
        self._claims: dict[str, tuple[int, int, ReceivedMessage]] = {}
        # The dispatchers' claims not handed to the consumer function yet (nor given back), each with the latest its
        # claim may end: the ledger learns of a claim when it is invoked, a checkpoint must count these as held.
        self._unsent: dict[str, int] = {}
        # The latest extension of each of those claims (clock readings around the call, seconds): the claim the
        # consumer function is handed ends by it, not by its receive.
        self._extensions: dict[str, tuple[int, int, int]] = {}
        self._sqs = in_process_sqs(run.client, SQS_CLIENT)
        self._payload_limit = push.MAX_PAYLOAD_BYTES
        self._looks: Counter = Counter()
        # Each message's SQS ids as the paths saw them, by (queue, label).
        self._sqs_ids: dict[tuple[str, str], set[str]] = {}
        # Each DLQ copy read over SQS (queue, message id, dead-lettered at, copy id, from the handle): the earliest
        # fake time its claim may end. A read that answers it before then is a second holder.
        self._dead_held: dict[tuple[str, ...], float] = {}
        self._dead_problems: list[str] = []
        # Live deletes a DLQ handle may not have made: (label, token of the live item) seen by holders.
        self._tokens: dict[str, set[str]] = {}

    def create_dead_letter_targets(self) -> None:
        """The SQS queues' dead-letter targets, created and named by the queues' settings (the queues exist)."""
        for queue, target in SQS_DEAD_LETTER_TARGETS.items():
            self.run.client.create_queue(target)
            self.run.client.update_queue(queue, dead_letter_target=target)

    def _add(self, path: str, name: str, amount: int = 1) -> None:
        with self._lock:
            self.figures[path][name] += amount

    def threads(self) -> list[threading.Thread]:
        push.MAX_PAYLOAD_BYTES = PUSH_PAYLOAD_BYTES
        threads = [
            threading.Thread(target=self._dispatch, args=(n,), name=f"stress-dispatcher-{n}", daemon=True)
            for n in range(PUSH_DISPATCHERS)
        ]
        threads += [
            threading.Thread(target=self._sqs_consume, args=(queue, n), name=f"stress-sqs-{queue}", daemon=True)
            for queue in SQS_QUEUES
            for n in range(SQS_CONSUMERS)
        ]
        threads.append(threading.Thread(target=self._sqs_dead_letters, name="stress-sqs-dlq", daemon=True))
        return threads

    def close(self) -> None:
        push.MAX_PAYLOAD_BYTES = self._payload_limit

    # Push.
    def dispatcher(self, rng: random.Random) -> Dispatcher:
        """A dispatcher of the push consumer as the run wires it: the consumer function is `_consumer` (its
        answers drawn from `rng`), the batching window's wait parks for a checkpoint, and what becomes of each
        claim before it is handed over is told to these paths."""
        run = self.run

        def sleep(seconds: float) -> None:
            """The batching window's wait, parked for a checkpoint: the clock stands still during one, so a window
            waited out on it would never end, and the checkpoint would never see this dispatcher stop."""
            run.wait_if_paused()
            time.sleep(min(seconds, 0.02))

        dispatcher = Dispatcher(
            run.client,
            PUSH_SPEC,
            lambda event: self._consumer(event, rng),
            EventSource("us-east-1", ACCOUNT, PUSH_QUEUE, PUSH_CLIENT),
            sleep=sleep,
        )
        dispatcher.sub_queue = _Watched(dispatcher.sub_queue, self, run.now_ms)  # type: ignore[assignment]
        return dispatcher

    def _dispatch(self, number: int) -> None:
        run = self.run
        run.serve("push")
        dispatcher = self.dispatcher(random.Random(run.seed * 31 + number))

        def remaining() -> float:
            return 0.0 if run.stopping() or run.pausing() else PUSH_RUN_SECONDS

        run.enter()
        try:
            while not run.stopping():
                run.wait_if_paused()
                try:
                    report = dispatcher.run(remaining)
                except QueueError:
                    self._add("push", "dispatcher errors")
                    continue
                self._add("push", "batches", report.batches)
                self._add("push", "invocations", report.invocations)
                if not report.batches:
                    time.sleep(0.05)
        finally:
            run.leave()

    def claimed(self, messages: list[ReceivedMessage], before: int, after: int) -> None:
        with self._lock:
            for message in messages:
                self._claims[message.receipt_handle] = (before, after, message)
                self._unsent[message.receipt_handle] = after + PUSH_SPEC.visibility_timeout * 1000

    def extended(self, handle: str, seconds: int, before: int, after: int) -> None:
        with self._lock:
            if handle in self._unsent:
                self._unsent[handle] = max(self._unsent[handle], after + seconds * 1000)
                self._extensions[handle] = (before, after, seconds)

    def given_back(self, handle: str) -> None:
        with self._lock:
            self._unsent.pop(handle, None)
            self._extensions.pop(handle, None)

    def unsent_claims(self, now_ms: int) -> int:
        """Claims a dispatcher may still hold at `now_ms` without having handed them over (see `_unsent`)."""
        with self._lock:
            return sum(ends > now_ms for ends in self._unsent.values())

    def _consumer(self, event: dict[str, Any], rng: random.Random) -> InvokeAnswer:
        """The consumer function: records what it was handed, then answers as a function may."""
        run = self.run
        # Lambda stops an invocation at its timeout: the fake clock, which the others' work moves on, may be far
        # past that once this thread runs again on a loaded machine, and the dispatcher's claims cover no more.
        ends_by = run.now_ms() + int(PUSH_SPEC.timeout_seconds * 1000)
        records = event["Records"]
        ids = [record["messageId"] for record in records]
        if len(set(ids)) != len(ids):
            run.ledger.violation(f"push: one batch holds a message twice: {sorted(i for i in ids if ids.count(i) > 1)}")
        holds: list[Hold] = []
        by_claim: dict[tuple[int, int], list[ReceivedMessage]] = {}
        extensions: dict[str, tuple[int, int, int]] = {}
        for record in records:
            with self._lock:
                claim = self._claims.get(record["receiptHandle"])
                self._unsent.pop(record["receiptHandle"], None)
                extension = self._extensions.pop(record["receiptHandle"], None)
            if extension is not None:
                extensions[record["receiptHandle"]] = extension
            if claim is None:
                run.ledger.violation(
                    f"push: invoked with a message no receive of the dispatcher returned: {record['messageId']}"
                )
                continue
            before, after, message = claim
            self.note_sqs_id(PUSH_QUEUE, label_of({"attrs": message.attributes, "body": message.body}),
                             record["messageId"])  # fmt: skip
            handed = ReceivedMessage(
                message_id=record["messageId"],
                receipt_handle=record["receiptHandle"],
                body=record["body"],
                attributes={
                    name: value.get("stringValue", "") for name, value in record.get("messageAttributes", {}).items()
                },
                group_id=message.group_id,
                sequence=message.sequence,
                receive_count=int(record["attributes"]["ApproximateReceiveCount"]),
                sent_at=message.sent_at,
                first_received_at=message.first_received_at,
                client=PUSH_CLIENT,
            )
            by_claim.setdefault((before, after), []).append(handed)
        for (before, after), messages in by_claim.items():
            made = run.ledger.deliver(
                f"{PUSH_QUEUE}/{PUSH_CLIENT}", messages, before, after, PUSH_SPEC.visibility_timeout
            )
            run.check_delivered(messages, made)
            for hold in made:
                if hold.handle in extensions:
                    run.ledger.extended(hold, *extensions[hold.handle])
            holds += made
        self._add("push", "records", len(records))
        poison = [hold.message_id for hold in holds if run.label(hold).endswith("/poison")]
        roll = rng.random()
        timed_out = roll < 0.06
        try:
            if timed_out:
                self._add("push", "timeouts")
                run.wait_fake(PUSH_SPEC.timeout_seconds)
                return InvokeAnswer(function_error="Sandbox.Timedout")
            if roll < 0.14:
                self._add("push", "function errors")
                return InvokeAnswer(function_error="Unhandled")
            failed = set(poison)
            if roll < 0.34:
                self._add("push", "partial failures")
                failed |= {message_id for message_id in ids if rng.random() < 0.3}
            return InvokeAnswer(json.dumps({"batchItemFailures": [{"itemIdentifier": i} for i in sorted(failed)]}))
        finally:
            # A function that timed out may still run: the dispatcher leaves its claims to run out by themselves.
            run.ledger.held_through(holds, min(run.now_ms(), ends_by), given_up=not timed_out)

    # SQS.
    def _url(self, queue: str) -> str:
        return f"{SQS_ENDPOINT}/sqs/{SQS_CLIENT}/{ACCOUNT}/{queue}"

    def _sqs_consume(self, queue: str, number: int) -> None:
        run = self.run
        run.serve("sqs")
        rng = random.Random(run.seed * 53 + number + len(queue))
        url = self._url(queue)
        idle = 0.01
        run.enter()
        try:
            while not run.stopping():
                run.wait_if_paused()
                before = run.now_ms()
                request: dict[str, Any] = {
                    "QueueUrl": url,
                    "MaxNumberOfMessages": rng.randint(1, 4),
                    "VisibilityTimeout": self.visibility,
                    "AttributeNames": ["All"],
                    "MessageAttributeNames": ["All"],
                }
                try:
                    if queue.endswith(".fifo") and rng.random() < 0.25:
                        # A FIFO receive whose answer is lost, sent again with its attempt id as the SDK does: the
                        # repeat must answer the same messages, held by nobody else meanwhile.
                        request["ReceiveRequestAttemptId"] = f"{number}-{rng.getrandbits(48):x}"
                        self._sqs.receive_message(**request)
                        self._add("sqs", "receives repeated with their attempt id")
                    answer = self._sqs.receive_message(**request)
                except (ClientError, BotoCoreError):
                    self._add("sqs", "receive errors")
                    time.sleep(0.01)
                    continue
                after = run.now_ms()
                messages = [self._received(queue, raw) for raw in answer.get("Messages", [])]
                if not messages:
                    time.sleep(rng.uniform(idle / 2, idle))
                    idle = min(idle * 2, 0.25)
                    continue
                idle = 0.01
                holds = run.deliver(queue, messages, before, after)
                with self._lock:
                    for hold in holds:
                        self._tokens.setdefault(run.label(hold), set()).add(receipt_token(hold.handle))
                units: dict[str, list[Hold]] = {}
                for hold, message in zip(holds, messages, strict=True):
                    units.setdefault(message.group_id or message.message_id, []).append(hold)
                for unit in units.values():
                    self._sqs_work(url, unit, rng)
        finally:
            run.leave()

    def _received(self, queue: str, raw: dict[str, Any]) -> ReceivedMessage:
        if raw["MD5OfBody"] != hashlib.md5(raw["Body"].encode()).hexdigest():
            self.run.ledger.violation(f"sqs: {queue} {raw['MessageId']}: MD5OfBody does not match the body")
        message = sqs_received(raw, SQS_CLIENT)
        self.note_sqs_id(queue, label_of({"attrs": message.attributes, "body": message.body}), message.message_id)
        return message

    def note_sqs_id(self, queue: str, label: str, message_id: str) -> None:
        """One sighting of a message's SQS id (its send's answer, a receive, a DLQ read, a push event): see
        `_sqs_id_problems`."""
        with self._lock:
            self._sqs_ids.setdefault((queue, label), set()).add(message_id)
            if not SQS_ID.fullmatch(message_id):
                self._dead_problems.append(f"{queue} {label}: the SQS id {message_id!r} is no batch entry id")

    def _sqs_id_problems(self) -> list[str]:
        """A message shown with two SQS ids (unless it was rightly stored twice), or one id shown for two."""
        problems = []
        owners: dict[str, set[str]] = {}
        for (queue, label), ids in self._sqs_ids.items():
            if len(ids) > self.run.copies(label):
                problems.append(f"{queue} {label}: shown with {len(ids)} SQS ids: {sorted(ids)}")
            for message_id in ids:
                owners.setdefault(message_id, set()).add(f"{queue} {label}")
        problems += [f"the SQS id {i} names {sorted(names)}" for i, names in owners.items() if len(names) > 1]
        return problems

    def _sqs_work(self, url: str, unit: list[Hold], rng: random.Random) -> None:
        """A message, or a FIFO group's messages in order: crashed on, given back, extended, or deleted (one at a
        time or in a batch); a failure gives back the rest of a FIFO unit."""
        run = self.run
        done: list[Hold] = []
        for position, hold in enumerate(unit):
            roll = rng.choice((0.05, 0.15)) if run.label(hold).endswith("/poison") else rng.random()
            if roll < 0.10:
                self._add("sqs", "crashes")
                break
            if roll < 0.20:
                self._add("sqs", "releases")
                for later in unit[position:]:
                    run.ledger.settling(later, run.now_ms())
                    self._sqs_call(lambda later=later: self._sqs.change_message_visibility(
                        QueueUrl=url, ReceiptHandle=later.handle, VisibilityTimeout=0))  # fmt: skip
                break
            if roll < 0.30:
                self._add("sqs", "extensions")
                before = run.now_ms()
                run.ledger.extending(hold, before, self.visibility * 2)
                if not self._sqs_call(lambda hold=hold: self._sqs.change_message_visibility(
                        QueueUrl=url, ReceiptHandle=hold.handle, VisibilityTimeout=self.visibility * 2)):  # fmt: skip
                    break
                run.ledger.extended(hold, before, run.now_ms(), self.visibility * 2)
            done.append(hold)
        if len(done) > 1 and rng.random() < 0.5:
            self._add("sqs", "batch deletes")
            for hold in done:
                run.ledger.settling(hold, run.now_ms())
            entries = [{"Id": str(n), "ReceiptHandle": hold.handle} for n, hold in enumerate(done)]
            self._sqs_call(lambda: self._sqs.delete_message_batch(QueueUrl=url, Entries=entries))
            return
        for hold in done:
            run.ledger.settling(hold, run.now_ms())
            self._sqs_call(lambda hold=hold: self._sqs.delete_message(QueueUrl=url, ReceiptHandle=hold.handle))

    def _sqs_call(self, call: Callable[[], object]) -> bool:
        for _ in range(6):
            try:
                call()
                return True
            except ClientError as error:
                code = error.response["Error"]["Code"]
                self._add("sqs", f"error {code}")
                if code not in ("ThrottlingException", "RequestThrottled", "InternalError", "ServiceUnavailable"):
                    return False
            except BotoCoreError:
                self._add("sqs", "error transport")
            time.sleep(0.005)
        return False

    def _sqs_dead_letters(self) -> None:
        """The operator of the SQS queues' DLQs: reads them, deletes some dead letters by their DLQ handle, and
        redrives the rest by move task (`Scale.redrives` times in all); after a redrive, sends the DLQ handles
        read before it again, which must remove nothing."""
        run = self.run
        run.serve("sqs")
        rng = random.Random(run.seed * 97)
        next_look = run.clock() + DLQ_EVERY_FAKE_SECONDS
        run.enter()
        try:
            while not run.stopping():
                run.wait_if_paused()
                if run.clock() < next_look:
                    time.sleep(0.02)
                    continue
                next_look = run.clock() + DLQ_EVERY_FAKE_SECONDS
                for queue in SQS_QUEUES:
                    self._tend_dlq(queue, rng)
        finally:
            run.leave()

    def _tend_dlq(self, queue: str, rng: random.Random) -> None:
        run = self.run
        # In turn at the shared target (first) and at the queue's own DLQ.
        own = queue.replace(".fifo", ".dlq.fifo") if queue.endswith(".fifo") else f"{queue}.dlq"
        shared = self._looks[queue] % 2 == 0
        self._looks[queue] += 1
        dlq = self._url(SQS_DEAD_LETTER_TARGETS[queue] if shared else own)
        started = run.clock()
        try:
            read = self._sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, AttributeNames=["All"],
                                             MessageAttributeNames=["All"],
                                             VisibilityTimeout=DLQ_HOLD_SECONDS).get("Messages", [])  # fmt: skip
        except (ClientError, BotoCoreError):
            self._add("sqs", "DLQ read errors")
            return
        self._add("sqs", "DLQ reads at the shared target" if shared else "DLQ reads", len(read))
        for raw in read:
            attributes = {name: value["StringValue"] for name, value in raw.get("MessageAttributes", {}).items()}
            self.note_sqs_id(queue, label_of({"attrs": attributes, "body": raw["Body"]}), raw["MessageId"])
        self._check_dead_holds(read, started, run.clock())
        kept = []
        for raw in read:
            if rng.random() < 0.15:
                self._add("sqs", "DLQ dead letters left held")
            elif rng.random() < 0.4 or self.redrives >= run.scale.redrives:
                if self._sqs_call(
                    lambda raw=raw: self._sqs.delete_message(QueueUrl=dlq, ReceiptHandle=raw["ReceiptHandle"])
                ):
                    self._add("sqs", "DLQ deletes")
            else:
                kept.append(raw)
        if kept and self.redrives < run.scale.redrives:
            arn = f"arn:aws:sqs:us-east-1:{ACCOUNT}:{dlq.rsplit('/', 1)[-1]}"
            if self._sqs_call(lambda: self._sqs.start_message_move_task(SourceArn=arn)):
                with self._lock:
                    self.redrives += 1
                # The handles read before the redrive, sent again: each names a DLQ copy that is gone.
                for raw in kept:
                    self._add("sqs", "late DLQ handles")
                    self._sqs_call(
                        lambda raw=raw: self._sqs.delete_message(QueueUrl=dlq, ReceiptHandle=raw["ReceiptHandle"])
                    )

    def _check_dead_holds(self, read: list[dict[str, Any]], started: float, ended: float) -> None:
        """A DLQ read claims what it answers for `DLQ_HOLD_SECONDS` from some time between `started` and `ended`:
        answering a copy again before the earlier claim can have ended means two holders of it."""
        for raw in read:
            payload = raw["ReceiptHandle"].split(".", 1)[0]
            fields = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode().split("|")
            copy = (fields[1], fields[3], fields[4], fields[5])
            with self._lock:
                free_at = self._dead_held.get(copy)
                if free_at is not None and ended < free_at:
                    self._dead_problems.append(f"two holders of the dead letter {copy} (read again at {ended})")
                self._dead_held[copy] = started + DLQ_HOLD_SECONDS

    def redrives_done(self) -> bool:
        """Whether the DLQ operator made every redrive the run's scale asks for: the run goes on until it did (the
        SQS sub-queues' poison messages keep coming back to their DLQs meanwhile)."""
        with self._lock:
            return self.redrives >= self.run.scale.redrives

    def verify(self) -> list[str]:
        """Every live delete of the standard SQS sub-queue came from a holder: the item's claim token at its
        delete is one a receive handed out. A DLQ handle that removed a live message leaves a delete nobody asked
        for."""
        problems = list(self._dead_problems) + self._sqs_id_problems()
        for deleted in self.run.truth.deleted:
            if deleted.queue != SQS_QUEUES[0]:  # a FIFO message's claim token is its group's
                continue
            tokens = self._tokens.get(deleted.body, set())
            if deleted.token is None or str(deleted.token) not in tokens:
                problems.append(f"{deleted.queue}/{SQS_CLIENT} {deleted.body}: deleted live, but no holder's claim")
        if self.run.scale.redrives and not self.redrives:
            problems.append("sqs: no redrive by move task ran: nothing was tested")
        return problems

    def report(self, path: str) -> str:
        counts = self.figures.get(path)
        if not counts:
            return ""
        return ", " + ", ".join(f"{count} {name}" for name, count in sorted(counts.items()))


class _Watched:
    """A dispatcher's sub-queue, with the fake clock read around each receive (when the claims were made), and
    what becomes of the claims before they are handed over (extended, given back) told to `paths`."""

    def __init__(self, sub: Any, paths: Paths, now: Callable[[], int]) -> None:
        self._sub = sub
        self._paths = paths
        self._now = now

    def receive(self, *args: Any, **kwargs: Any) -> list[ReceivedMessage]:
        before = self._now()
        got = self._sub.receive(*args, **kwargs)
        self._paths.claimed(got, before, self._now())
        return got

    def change_visibility(self, handle: str, seconds: int) -> None:
        before = self._now()
        self._sub.change_visibility(handle, seconds)
        self._paths.extended(handle, seconds, before, self._now())

    def return_unseen(self, handle: str) -> None:
        """A give-back that was throttled may not have happened: its claim still counts until it ends."""
        try:
            self._sub.return_unseen(handle)
        except Throttled:
            raise
        except QueueError:
            self._paths.given_back(handle)
            raise
        self._paths.given_back(handle)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sub, name)
