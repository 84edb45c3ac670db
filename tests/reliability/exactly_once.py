"""An exactly-once stress run: producers send through the outbox, consumers commit each effect with its ack.

Producers send every message in a transaction with a business write of their own (a `sent` record, conditional on
being new), through `QueueClient.transact`. Consumers receive with a visibility timeout short enough that a claim
often runs out while its holder works: some crash (drop the message), some are slow (the message is received
again by another consumer meanwhile), the rest commit the message's effect, an increment of a counter item in a
second table, in one transaction with the ack. A FIFO message's effect also moves its group's counter one on, on
the condition that it is at the message's place in the group: a message processed out of order could not commit.

At the end every message must have one `sent` record and a counter of exactly 1, the queues must be empty, and
no commit may have been refused for anything but a stale claim. The figures count the redeliveries and the
effects a stale ack kept from being applied twice.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from queue_core import (
    DuplicateMessage,
    QueueClient,
    QueueError,
    ReceiptHandleStale,
    ReceivedMessage,
    SubQueue,
    Throttled,
    TransactionConditionFailed,
)

from tests.conftest import FakeClock

EFFECTS = "effects"
STANDARD, FIFO = "once", "once.fifo"
CLIENT = "c"
VISIBILITY = 2  # seconds on the fake clock: a claim runs out after about 40 ms of real time
CLOCK_STEP_SECONDS = 1.0
CLOCK_TICK_SECONDS = 0.02
SLOW_SLEEP_SECONDS = 0.1  # past VISIBILITY on the fake clock: the slow consumer's message is received again
GROUPS = 8
SWEEP_EVERY_SECONDS = 0.5
COMMIT_TRIES = 4


@dataclass(frozen=True)
class Scale:
    messages: int
    consumers: int
    producers: int = 3
    deadline_seconds: float = 120.0


SHORT = Scale(messages=80, consumers=4, producers=2)
FULL = Scale(messages=2_000, consumers=16, producers=4, deadline_seconds=3600.0)


@dataclass(frozen=True)
class Planned:
    index: int
    queue: str
    body: str
    group_id: str | None
    place: int  # 1-based place in its FIFO group (0 for standard)


@dataclass
class Figures:
    sent: int = 0
    send_retries: int = 0
    deliveries: int = 0
    redeliveries: int = 0
    crashes: int = 0
    slow: int = 0
    committed: int = 0
    commit_retries: int = 0
    stale_acks: int = 0
    throttled_commits: int = 0
    # Transactional deletes whose building was throttled (it reads the group): the message comes back later.
    builds_throttled: int = 0
    violations: list[str] = field(default_factory=list)
    faults: Counter = field(default_factory=Counter)

    def report(self, scale: Scale) -> dict[str, Any]:
        return {
            "messages": scale.messages,
            "consumers": scale.consumers,
            "producers": scale.producers,
            "deliveries": self.deliveries,
            "redeliveries": self.redeliveries,
            "duplicate_effects_prevented": self.stale_acks,
            "crashes": self.crashes,
            "slow_consumers": self.slow,
            "commits": self.committed,
            "commits_retried_with_their_token": self.commit_retries,
            "delete_builds_throttled": self.builds_throttled,
            "send_retries": self.send_retries,
            "faults": dict(self.faults),
            "violations": len(self.violations),
        }


def plan(total: int) -> list[Planned]:
    """Half standard, half FIFO over `GROUPS` groups, each group's messages numbered by their place."""
    planned, places = [], Counter()
    for index in range(total):
        if index % 2:
            group = f"g{(index // 2) % GROUPS}"
            places[group] += 1
            planned.append(Planned(index, FIFO, f"fifo-{index:06d}", group, places[group]))
        else:
            planned.append(Planned(index, STANDARD, f"std-{index:06d}", None, 0))
    return planned


def create_effects_table(dynamodb: Any) -> None:
    dynamodb.create_table(
        TableName=EFFECTS,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def record_sent(body: str) -> dict[str, Any]:
    """The producer's business write: new, or the transaction is cancelled."""
    return {
        "Put": {
            "TableName": EFFECTS,
            "Item": {"id": {"S": f"sent#{body}"}},
            "ConditionExpression": "attribute_not_exists(id)",
        }
    }


def count_effect(body: str) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": EFFECTS,
            "Key": {"id": {"S": f"effect#{body}"}},
            "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }


def move_group_on(group: str, place: int) -> dict[str, Any]:
    """The group's counter moves from `place - 1` to `place`: only the group's next message can commit."""
    return {
        "Update": {
            "TableName": EFFECTS,
            "Key": {"id": {"S": f"group#{group}"}},
            "UpdateExpression": "SET done = :place",
            "ConditionExpression": "(attribute_not_exists(done) AND :previous = :zero) OR done = :previous",
            "ExpressionAttributeValues": {
                ":place": {"N": str(place)},
                ":previous": {"N": str(place - 1)},
                ":zero": {"N": "0"},
            },
        }
    }


class ExactlyOnceRun:
    def __init__(self, client: QueueClient, clock: FakeClock, scale: Scale, seed: int = 3) -> None:
        self.client = client
        self.clock = clock
        self.scale = scale
        self.seed = seed
        self.planned = plan(scale.messages)
        self.places = {message.body: message for message in self.planned}
        self.figures = Figures()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._producers_done = threading.Event()
        self.elapsed = 0.0

    def create(self) -> None:
        create_effects_table(self.client.dynamodb)
        self.client.create_queue(STANDARD, visibility_timeout=VISIBILITY, max_receive_count=0, shards=2)
        self.client.create_queue(FIFO, visibility_timeout=VISIBILITY, max_receive_count=0)

    def _add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            setattr(self.figures, name, getattr(self.figures, name) + amount)

    def _violation(self, text: str) -> None:
        with self._lock:
            self.figures.violations.append(text)

    # Producers: one per share of the groups, so that each group is sent in order.
    def _produce(self, worker: int) -> None:
        rng = random.Random(self.seed * 101 + worker)
        for message in self.planned:
            if _producer_of(message, self.scale.producers) != worker:
                continue
            self._send(self.client.queue(message.queue, CLIENT), message, rng)

    def _send(self, sub: SubQueue, message: Planned, rng: random.Random) -> None:
        """Until stored: a try whose answer was lost past the SDK's retries may have committed; the next one then
        finds its own `sent` record (or its dedup item) and is done."""
        while not self._stop.is_set():
            try:
                send = sub.send_transact_items(message.body, group_id=message.group_id, dedup_id=message.body)
                self.client.transact([record_sent(message.body), send])
            except TransactionConditionFailed as failed:
                if failed.index != 0:
                    self._violation(f"{message.body}: the send's transaction failed item {failed.index}")
            except DuplicateMessage:
                pass
            except QueueError:
                self._add("send_retries")
                time.sleep(rng.uniform(0, 0.01))
                continue
            self._add("sent")
            return

    # Consumers.
    def _consume(self, worker: int) -> None:
        rng = random.Random(self.seed * 7919 + worker)
        sub = self.client.queue(STANDARD if worker % 2 else FIFO, CLIENT)
        idle = 0.005
        while not self._stop.is_set():
            try:
                messages = sub.receive(max_messages=rng.randint(1, 3))
            except QueueError:
                time.sleep(rng.uniform(0, 0.01))
                continue
            if not messages:
                time.sleep(rng.uniform(idle / 2, idle))
                idle = min(idle * 2, 0.1)
                continue
            idle = 0.005
            self._add("deliveries", len(messages))
            self._add("redeliveries", sum(message.receive_count > 1 for message in messages))
            for message in messages:  # the first not committed ends the batch: its group's later ones must wait
                if not self._work(sub, message, rng):
                    break

    def _work(self, sub: SubQueue, message: ReceivedMessage, rng: random.Random) -> bool:
        roll = rng.random()
        if roll < 0.08:
            self._add("crashes")
            return False
        effect = [count_effect(message.body)]
        planned = self.places[message.body]
        if planned.group_id is not None:
            effect.append(move_group_on(planned.group_id, planned.place))
        try:
            items = [*effect, *sub.delete_transact_items(message.receipt_handle)]
        except Throttled:
            # Building the delete reads the group (a FIFO claim's last ack): unreached, nothing was written, and
            # the message comes back when its claim ends, as after a crash.
            self._add("builds_throttled")
            return False
        except ReceiptHandleStale:
            self._add("stale_acks")
            return False
        if roll < 0.2:
            self._add("slow")
            time.sleep(SLOW_SLEEP_SECONDS)
        return self._commit(sub, message, items)

    def _commit(self, sub: SubQueue, message: ReceivedMessage, items: list[Any]) -> bool:
        """A commit whose answer was lost past the SDK's retries is tried again with its token: DynamoDB answers
        the repeat of a committed transaction with its success."""
        token = hashlib.sha256(message.receipt_handle.encode()).hexdigest()[:36]  # one per claim
        for attempt in range(COMMIT_TRIES):
            try:
                sub.transact(items, token=token)
            except ReceiptHandleStale:
                self._add("stale_acks")
                return False
            except Throttled:
                self._add("commit_retries")
                time.sleep(0.005 * (attempt + 1))
                continue
            except QueueError as error:
                self._violation(f"{message.body}: commit refused: {error.code} {error}")
                return False
            self._add("committed")
            return True
        self._add("throttled_commits")
        return False

    # The driver.
    def _tick(self) -> None:
        while not self._stop.is_set():
            time.sleep(CLOCK_TICK_SECONDS)
            self.clock.advance(CLOCK_STEP_SECONDS)

    def _sweep(self) -> None:
        while not self._stop.wait(SWEEP_EVERY_SECONDS):
            try:
                self.client.sweep(budget_seconds=0.5)
            except QueueError:
                continue

    def _settled(self) -> bool:
        """Every message is gone from the table itself (not from the stats: a FIFO group's count is bookkeeping,
        and the run must not end on it)."""
        if not self._producers_done.is_set():
            return False
        try:
            items = _scan(self.client.dynamodb, self.client.table_name)
        except (BotoCoreError, ClientError):  # an injected fault: look again later
            return False
        return not any(_is_message(item) for item in items)

    def run(self) -> None:
        started = time.monotonic()
        producers = [
            threading.Thread(target=self._produce, args=(i,), name=f"once-producer-{i}", daemon=True)
            for i in range(self.scale.producers)
        ]
        others = [
            threading.Thread(target=self._consume, args=(i,), name=f"once-consumer-{i}", daemon=True)
            for i in range(self.scale.consumers)
        ]
        others += [
            threading.Thread(target=self._tick, name="once-clock", daemon=True),
            threading.Thread(target=self._sweep, name="once-sweeper", daemon=True),
        ]
        for thread in producers + others:
            thread.start()
        deadline = started + self.scale.deadline_seconds
        for thread in producers:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self._producers_done.set()
        while time.monotonic() < deadline and not self._settled():
            time.sleep(0.25)
        self._stop.set()
        for thread in producers + others:
            thread.join(timeout=30)
        self.elapsed = time.monotonic() - started

    def verify(self) -> list[str]:
        problems = list(self.figures.violations)
        items = _scan(self.client.dynamodb, EFFECTS)
        sent = {item["id"]["S"].removeprefix("sent#") for item in items if item["id"]["S"].startswith("sent#")}
        effects = {
            item["id"]["S"].removeprefix("effect#"): int(item["n"]["N"])
            for item in items
            if item["id"]["S"].startswith("effect#")
        }
        for message in self.planned:
            if message.body not in sent:
                problems.append(f"{message.body}: never sent")
            count = effects.get(message.body, 0)
            if count != 1:
                problems.append(f"{message.body}: effect applied {count} times")
        groups = {item["id"]["S"].removeprefix("group#"): int(item["done"]["N"]) for item in items if "done" in item}
        for group, last in Counter(m.group_id for m in self.planned if m.group_id).items():
            if groups.get(group) != last:
                problems.append(f"group {group}: at place {groups.get(group)} of {last}")
        for queue in (STANDARD, FIFO):
            stats = self.client.queue(queue, CLIENT).stats()
            if stats.visible + stats.in_flight + stats.delayed + stats.dlq:
                problems.append(f"{queue}: not empty at the end: {stats.to_dict()}")
        left = [item for item in _scan(self.client.dynamodb, self.client.table_name) if _is_message(item)]
        if left:
            problems.append(f"{len(left)} message items left in the table")
        return problems


def _producer_of(message: Planned, producers: int) -> int:
    """A FIFO group has one producer, so its messages are sent (and numbered) in order."""
    return (int(message.group_id[1:]) if message.group_id else message.index) % producers


def _is_message(item: dict[str, Any]) -> bool:
    return item["pk"]["S"][:2] in ("M#", "G#", "D#")


def _scan(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    items, start = [], None
    while True:
        page = dynamodb.scan(TableName=table, ConsistentRead=True, **({"ExclusiveStartKey": start} if start else {}))
        items += page["Items"]
        start = page.get("LastEvaluatedKey")
        if not start:
            return items
