"""A FIFO group whose messages outlive their retention while it is never empty, under lost answers: sends,
receives that remove the expired heads they meet, deletes (some by handles whose claim ran out), cancels by id and
the clock, in generated orders. After each step the group's count (what the stats show) is never below the
messages it holds, and its record of removals grows only with the removals that are not expiries; at the end
every message neither deleted, cancelled nor expired is delivered, and the group, emptied, leaves the index with
nothing recorded.

The short form runs in `make test`; `--stress` runs more examples.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings
from queue_core import MessageNotFound, QueueClient, QueueError, ReceivedMessage
from queue_core.subqueue import SubQueue

from tests.conftest import TABLE, FakeClock, examples
from tests.core.answers import LostAnswer, attached

RETENTION = 3_600
VISIBILITY = 30
_names = itertools.count()

Action = tuple[str, int, str | None]
ACTIONS = st.tuples(
    st.sampled_from(["send"] * 3 + ["receive"] * 3 + ["delete", "cancel", "advance", "advance"]),
    st.integers(0, 9),
    st.sampled_from([None] * 8 + ["UpdateItem", "DeleteItem", "TransactWriteItems"]),
)
ADVANCES = (1, 31, RETENTION + 1, RETENTION + 1)


@dataclass
class Run:
    client: QueueClient
    clock: FakeClock
    queue: SubQueue
    name: str
    sent: dict[str, tuple[str, float]] = field(default_factory=dict)  # body: (id, sent at)
    removed: set[str] = field(default_factory=set)  # deleted or cancelled, as answered
    # Refused after a lost answer: the first attempt may have removed it (a cancel's delete sent again finds
    # nothing, as one finds a message another process removed).
    maybe: set[str] = field(default_factory=set)
    held: list[ReceivedMessage] = field(default_factory=list)
    received_at: dict[str, float] = field(default_factory=dict)  # a handle: when it was given
    not_expiries: int = 0  # removals that may be recorded by sequence: cancels, late deletes, lost answers
    due: list[str] = field(default_factory=list)  # what a drain must deliver, in order
    tried: str | None = None  # the message the step's delete or cancel named

    def act(self, action: Action) -> None:
        kind, number, lose = action
        lost = LostAnswer(lose, lambda body: True) if lose else None
        self.tried = None
        with attached(self.client.dynamodb, lost) if lost else contextlib.nullcontext():
            getattr(self, kind)(number)
        if lost is not None and lost.lost:
            self.not_expiries += 1
            if self.tried is not None and self.tried not in self.removed:
                self.maybe.add(self.tried)

    def send(self, number: int) -> None:
        for _ in range(number % 4 + 1):
            body = f"m{len(self.sent)}"
            self.sent[body] = (self.queue.send(body, group_id="g").message_id, self.clock())

    def receive(self, number: int) -> None:
        got = self.queue.receive(max_messages=number % 3 + 1, visibility_timeout=VISIBILITY)
        for message in got:
            self.received_at[message.receipt_handle] = self.clock()
        self.held.extend(got)

    def delete(self, number: int) -> None:
        if not self.held:
            return
        message = self.held.pop(number % len(self.held))
        self.tried = message.body
        if self.clock() - self.received_at[message.receipt_handle] >= VISIBILITY:
            self.not_expiries += 1  # a handle whose claim ran out: its removal may be recorded by sequence
        with contextlib.suppress(QueueError):
            self.queue.delete(message.receipt_handle)
            self.removed.add(message.body)

    def cancel(self, number: int) -> None:
        if not self.sent:
            return
        body = self.tried = list(self.sent)[number * 7 % len(self.sent)]
        self.not_expiries += 1
        with contextlib.suppress(MessageNotFound):
            if self.queue.cancel(self.sent[body][0]):
                self.removed.add(body)

    def advance(self, number: int) -> None:
        self.clock.advance(ADVANCES[number % len(ADVANCES)])

    def group(self) -> dict[str, Any]:
        items = self.client.dynamodb.scan(TableName=TABLE)["Items"]
        prefix = f"F#{self.name}#"
        found = [item for item in items if item["pk"]["S"].startswith(prefix) and item["sk"]["S"] == "g"]
        return found[0] if found else {}

    def messages_held(self) -> int:
        items = self.client.dynamodb.scan(TableName=TABLE)["Items"]
        return sum(1 for item in items if item["pk"]["S"].startswith("G#") and self.name in item["pk"]["S"])

    def check(self) -> None:
        group = self.group()
        count = int(group.get("msg_count", {}).get("N", 0))
        present = self.messages_held()
        assert count >= present, f"the group counts {count} messages and holds {present}"
        gone = len(group.get("gone", {}).get("SS", []))
        assert gone <= self.not_expiries, f"{gone} removals recorded by sequence, {self.not_expiries} not expiries"

    def drain(self) -> list[str]:
        self.clock.advance(VISIBILITY + 1)
        now = self.clock()
        delivered: list[str] = []
        while True:
            got = self.queue.receive(max_messages=10, visibility_timeout=VISIBILITY)
            if not got:
                break
            delivered.extend(message.body for message in got)
            self.queue.delete_batch([message.receipt_handle for message in got])
        self.due = sorted(
            (body for body, (_, at) in self.sent.items() if body not in self.removed and at + RETENTION > now),
            key=lambda body: int(body[1:]),
        )
        return delivered


@contextlib.contextmanager
def _run(client: QueueClient, clock: FakeClock) -> Iterator[Run]:
    name = f"exp{next(_names)}.fifo"
    client.create_queue(name, retention_seconds=RETENTION, visibility_timeout=VISIBILITY)
    try:
        yield Run(client, clock, client.queue(name, "c"), name)
    finally:
        client.delete_queue(name)
        # Its items too, so that each example's scans read only its own.
        items = client.dynamodb.scan(TableName=TABLE, ProjectionExpression="pk, sk")["Items"]
        for item in items:
            if f"#{name}#" in item["pk"]["S"]:
                client.dynamodb.delete_item(TableName=TABLE, Key=item)


def test_a_group_whose_messages_expire_under_lost_answers_counts_them_once_and_records_no_expiry(
    client: QueueClient, clock: FakeClock
) -> None:
    @settings(
        max_examples=examples(60),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.lists(ACTIONS, min_size=4, max_size=30))
    def run(actions: list[Action]) -> None:
        with _run(client, clock) as queue_run:
            for action in actions:
                queue_run.act(action)
                queue_run.check()
            delivered = [body for body in queue_run.drain() if body not in queue_run.maybe]
            due = [body for body in queue_run.due if body not in queue_run.maybe]
            assert delivered == due, f"every message neither removed nor expired, in order: {actions}"
            group = queue_run.group()
            left = int(group.get("msg_count", {}).get("N", 0)), group.get("gone")
            assert left == (0, None), f"the emptied group counts {left}: {actions}"

    run()
