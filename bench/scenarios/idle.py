"""An idle queue at any shard count: queries per empty receive, and per delivered message at low load.

Queues with a fixed shard count (64 and `limits.MAX_SHARDS`), standard and FIFO (messages to 3 groups in turn,
and to 50). Each figure is counted with the
botocore meter, per call of the public API, in a consumer process of its own (its own core client and caches):
- an empty receive: on a queue never sent to (the consumer's first receive, and its later polls); and on a queue
  that carried messages and was drained, polled at once (its shards' marks still there) and after
  `shard_marks.MARK_SECONDS`, `SKEW_SECONDS` and the index's grace (the marks drained);
- low load: one message sent at a time by one producer, each received with receive(10) by the consumer (and, for
  the standard queue, with receive(1)), `LOW_LOAD_MESSAGES` messages; and the same from `SENDERS` producers,
  each its own process, one message each in turn; a tight loop in real time (`TIGHT_LOOPS`); and one producer's
  messages received by `CONSUMERS` processes in turn.
Time is the queue's: the clock is moved on, not waited for. The same figures at one shard are the baseline: a
receive of a one-shard queue reads that shard and nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from queue_core import QueueClient, limits, shard_marks, shards

from .. import pricing
from ..backend import moto_backend
from ..queues import OursQueue

NAME: Final = "idle"
SHARD_COUNTS: Final = (1, 64, limits.MAX_SHARDS)
LOW_LOAD_MESSAGES: Final = 30
POLLS: Final = 10
SENDERS: Final = 5
# FIFO messages go to these many groups in turn: a few, and many (each group's shard is fixed by its name).
FIFO_GROUPS: Final = (3, 50)
# Past the marks' trust, the clocks' skew and the index's grace: every mark may be drained.
_PAST_TRUST: Final = shard_marks.MARK_SECONDS + shard_marks.SKEW_SECONDS + limits.INDEX_LAG_GRACE_SECONDS + 1
# Rounds (0.2 s of the queue's clock each) after the last send in which the consumer still receives what is left,
# counted in the figure: a message left behind costs the queries that find it later.
_LATE_ROUNDS: Final = 200
# (label, producers, receive's max): one producer; `SENDERS`; one producer received one message at a time; one
# producer again, each receive finding the marks it read too old to serve (receives a second or more apart in real
# time: it reads them again, unless it goes first to the shard its last receives took from: `WARM_RECEIVES`).
LOW_LOADS: Final = (("one_sender", 1, 10), ("senders", SENDERS, 10), ("receive_1", 1, 1), ("uncached", 1, 10))
# (label, whether the producer is the consumer's process): one message at a time in real time, no pause (`_tight`).
TIGHT_LOOPS: Final = (("tight_same", True), ("tight_two", False))
# Consumer processes that take turns, one receive a round, as a fleet's containers do (`_consumers`): none of them
# knows which shards the others emptied.
CONSUMERS: Final = 4
# The counterfactual row (full sizes only): FIFO messages to this many groups at this many shards, with every write
# that makes a message visible putting its mark (`_every_send_marks`).
COUNTERFACTUAL: Final = (50, 64)


class _Clock:
    """Wall time that the scenario moves on."""

    def __init__(self) -> None:
        self.skew = 0.0

    def __call__(self) -> float:
        return time.time() + self.skew


def _queries(meter: Any, action: Any) -> int:
    with meter.window() as cost:
        action()
    return int(cost.calls["Query"])


def _process(backend: Any, clock: _Clock, queue: str, groups: int) -> OursQueue:
    """A process of its own: its own core client, settings and caches."""
    ours = OursQueue(backend.client, "idle", queue, groups=groups)
    ours.core = QueueClient("idle", dynamodb=backend.client, clock=clock)
    ours.sub = ours.core.queue(queue, "tenant-a")
    ours.warm()
    return ours


@contextmanager
def _every_send_marks() -> Iterator[None]:
    """What the figures would be if no process trusted a mark it put or read (`shard_marks.Marks.trusted`): every
    send puts its shard's mark, so that a consumer is told of each message's shard, at a mark write per message.
    A counterfactual, to weigh the receives' queries against the writes that would spare them."""
    saved = shard_marks.Marks.trusted
    shard_marks.Marks.trusted = lambda *_: False  # type: ignore[method-assign]
    try:
        yield
    finally:
        shard_marks.Marks.trusted = saved  # type: ignore[method-assign]


def _dollars(cost: Any, delivered: int) -> float:
    """On-demand dollars per million delivered messages: every call of the figure, the sends' and deletes' too."""
    per = cost.per(delivered)
    return pricing.dynamodb_dollars_per_million(per["write_units"], per["read_units"])


@contextmanager
def _marks_listed_for(seconds: float) -> Iterator[None]:
    """Receives that each read the marks and the priorities: as a consumer's receives more than
    `shard_marks.LIST_SECONDS` (and `shards.BANDS_SECONDS`) apart in real time do (the scenario moves the queue's
    clock, not the real one, so its other receives reuse both)."""
    saved = shard_marks.LIST_SECONDS, shards.BANDS_SECONDS
    shard_marks.LIST_SECONDS = seconds  # type: ignore[misc]
    shards.BANDS_SECONDS = min(seconds, saved[1])  # type: ignore[misc]
    if seconds < saved[1]:
        time.sleep(saved[1])  # what the consumer read before is that old now
    try:
        yield
    finally:
        shard_marks.LIST_SECONDS, shards.BANDS_SECONDS = saved  # type: ignore[misc]


def _settle(clock: _Clock, consumer: OursQueue) -> None:
    """Past the marks' trust, the skew and the index's grace, and one poll that drains what the last figure left marked:
    each figure starts from a queue whose marks name no shard."""
    clock.skew += _PAST_TRUST
    consumer.receive(10)


def _polls(meter: Any, consumer: OursQueue, polls: int) -> list[int]:
    return [_queries(meter, lambda: consumer.receive(10)) for _ in range(polls)]


def _one(backend: Any, clock: _Clock, shards: int, groups: int, quick: bool, tag: str = "") -> dict[str, Any]:
    fifo = groups > 0
    name = f"idle-{'f' if fifo else 's'}{shards}-{groups}{tag}"
    core = QueueClient("idle", dynamodb=backend.client, clock=clock)
    core.create_table()
    core.create_queue(name + (".fifo" if fifo else ""), fifo=fifo, visibility_timeout=30, shards=shards)
    queue = name + (".fifo" if fifo else "")
    meter = backend.meter
    messages = 10 if quick else LOW_LOAD_MESSAGES
    consumer = _process(backend, clock, queue, groups)
    never_first = _queries(meter, lambda: consumer.receive(10))
    never = _polls(meter, consumer, POLLS)
    producer = _process(backend, clock, queue, groups)
    row: dict[str, Any] = {"shards": shards, "fifo": fifo, "groups": groups, "never_sent_first": never_first}
    row["never_sent_poll"] = sum(never) / len(never)
    for label, senders, receive_max in LOW_LOADS:
        if fifo and receive_max == 1:
            continue
        producers = [producer] + [_process(backend, clock, queue, groups) for _ in range(senders - 1)]
        _settle(clock, consumer)
        uncached = label == "uncached"
        waited: list[int] = []  # per message, how many rounds after its own it was delivered
        with meter.window() as cost, _marks_listed_for(0.0 if uncached else shard_marks.LIST_SECONDS):
            for number in range(messages + _LATE_ROUNDS):
                if number < messages:
                    producers[number % senders].send(f"low load {number}")
                elif len(waited) >= messages:
                    break
                got = consumer.receive(receive_max)
                while got:
                    consumer.delete_batch([message.handle for message in got])
                    waited += [number - int(message.body.rsplit(" ", 1)[1]) for message in got]
                    got = consumer.receive(receive_max) if len(got) == receive_max else []
                clock.skew += 0.2
        delivered = len(waited)
        row[f"{label}_queries_per_delivered"] = cost.calls["Query"] / max(delivered, 1)
        row[f"{label}_dollars"] = _dollars(cost, delivered)
        row[f"{label}_delivered"] = delivered
        row[f"{label}_late"] = sum(1 for rounds in waited if rounds > 0)
        row[f"{label}_most_late"] = max(waited, default=0)
    drained_at_once = _polls(meter, consumer, POLLS)  # after the last figure: its marks still young
    clock.skew += _PAST_TRUST
    drained_later = _polls(meter, consumer, POLLS)
    with _marks_listed_for(0.0):
        drained_apart = _polls(meter, consumer, POLLS)
    row["drained_poll_at_once"] = sum(drained_at_once) / len(drained_at_once)
    row["drained_poll_max_at_once"] = max(drained_at_once)
    row["drained_poll_later"] = sum(drained_later[1:]) / (len(drained_later) - 1)
    row["drained_poll_max_later"] = max(drained_later)
    row["drained_poll_apart"] = sum(drained_apart) / len(drained_apart)
    for label, same in TIGHT_LOOPS:  # last: their consumers are other processes, whose takes this one never saw
        _settle(clock, consumer)
        row.update(_tight(backend, meter, clock, queue, groups, label, same, messages))
    _settle(clock, consumer)
    row.update(_consumers(backend, meter, clock, queue, groups, producer, messages))
    return row


def _consumers(
    backend: Any, meter: Any, clock: _Clock, queue: str, groups: int, producer: OursQueue, messages: int
) -> dict[str, Any]:
    """The low-load trickle of one producer received by `CONSUMERS` processes in turn, one a round (0.2 s of the
    queue's clock): a fleet's containers behind one queue. A process visits the shards the marks name that it did
    not empty itself, so the marks a send puts cost a query in each consumer that has not looked since; none is
    told what the others emptied (that would be a write per shard emptied)."""
    fleet = [_process(backend, clock, queue, groups) for _ in range(CONSUMERS)]
    for consumer in fleet:
        consumer.receive(10)
    return _rounds(meter, clock, producer, fleet, messages, "consumers", step=0.2)


def _tight(
    backend: Any, meter: Any, clock: _Clock, queue: str, groups: int, label: str, same: bool, messages: int
) -> dict[str, Any]:
    """One message sent at a time and received at once, in real time with no pause (a test's loop, a fast
    producer-consumer pair): the queue's clock is not moved, so the marks a process read stay fresh for
    `shard_marks.LIST_SECONDS` across many rounds, and a standard sender sending more than `SendRotation.RUN` a
    second moves on to the next shard every `RUN` messages. `same`: the producer is the consumer's process."""
    producer = _process(backend, clock, queue, groups)
    consumer = producer if same else _process(backend, clock, queue, groups)
    return _rounds(meter, clock, producer, [consumer], messages, label)


def _rounds(
    meter: Any,
    clock: _Clock,
    producer: OursQueue,
    consumers: list[OursQueue],
    messages: int,
    label: str,
    step: float = 0.0,
) -> dict[str, Any]:
    """Rounds of one message sent while any is left, then received by the next consumer in turn (receive(10),
    again while a receive comes back full), the queue's clock moved `step` seconds after each; `_LATE_ROUNDS`
    more at most until every message came. Queries per delivered message, labelled."""
    delivered = 0
    with meter.window() as cost:
        for number in range(messages + _LATE_ROUNDS):
            if number < messages:
                producer.send(f"{label} {number}")
            elif delivered >= messages:
                break
            consumer = consumers[number % len(consumers)]
            got = consumer.receive(10)
            while got:
                consumer.delete_batch([message.handle for message in got])
                delivered += len(got)
                got = consumer.receive(10) if len(got) == 10 else []
            clock.skew += step
    return {
        f"{label}_queries_per_delivered": cost.calls["Query"] / max(delivered, 1),
        f"{label}_dollars": _dollars(cost, delivered),
        f"{label}_delivered": delivered,
    }


def _late(row: dict[str, Any]) -> str:
    """How many messages of each low-load figure came in a later round than their own, and the most rounds late."""
    return " / ".join(
        f"{row[f'{label}_late']} ({row[f'{label}_most_late']})"
        for label, _, receive_max in LOW_LOADS
        if f"{label}_late" in row
    )


def _kind(row: dict[str, Any]) -> str:
    if not row["fifo"]:
        return "standard"
    marks = ", every send marks (counterfactual)" if row.get("every_send_marks") else ""
    return f"FIFO, {row['groups']} groups{marks}"


def _print(row: dict[str, Any]) -> None:
    print(
        f"  {_kind(row)}, {row['shards']:>3} shards: empty receive "
        f"{row['never_sent_first']} first, {row['never_sent_poll']:.1f} a poll (never sent), "
        f"{row['drained_poll_at_once']:.1f} / {row['drained_poll_later']:.1f} (drained, at once / later, "
        f"most {row['drained_poll_max_at_once']} / {row['drained_poll_max_later']}), "
        f"{row['drained_poll_apart']:.1f} a poll a second or more apart; low load "
        f"{row['one_sender_queries_per_delivered']:.2f} queries per delivered (one sender), "
        f"{row['senders_queries_per_delivered']:.2f} ({SENDERS} senders), "
        f"{row['uncached_queries_per_delivered']:.2f} (one sender, receives a second or more apart)"
        + (f", {row['receive_1_queries_per_delivered']:.2f} (receive(1))" if not row["fifo"] else "")
        + f"; a tight loop {row['tight_same_queries_per_delivered']:.2f} (one process) / "
        f"{row['tight_two_queries_per_delivered']:.2f} (two); "
        f"{row['consumers_queries_per_delivered']:.2f} ({CONSUMERS} consumers in turn); "
        f"${row['one_sender_dollars']:.2f} / ${row['consumers_dollars']:.2f} per million delivered "
        f"(one sender / {CONSUMERS} consumers)"
    )
    print("    delivered late (most rounds late): " + _late(row))


def run(quick: bool = False) -> dict[str, Any]:
    rows = []
    with moto_backend() as backend:
        clock = _Clock()
        for groups in (0, *FIFO_GROUPS):
            for shards in SHARD_COUNTS if not quick else (1, 64):
                rows.append(_one(backend, clock, shards, groups, quick))
                _print(rows[-1])
        if not quick:
            groups, shards = COUNTERFACTUAL
            with _every_send_marks():
                rows.append({**_one(backend, clock, shards, groups, quick, "-marked"), "every_send_marks": True})
            _print(rows[-1])
        name = backend.name
    return {"backend": name, "rows": rows}


def section(results: dict[str, Any]) -> list[str]:
    lines = [
        "## An idle queue at any shard count",
        "",
        "Receives of a queue of several shards read its shard marks (one query) and visit only the shards they name "
        "(design.md, *Which shards a receive visits*). Counted per call of the public API in a consumer process of "
        "its own, on queues of a fixed shard count: an empty receive on a queue never sent to; polls of a queue "
        "drained a moment ago (its marks younger than the trust and the grace: each such shard is visited) and "
        f"{_PAST_TRUST} s later (the first poll drains the marks, "
        "the most in brackets); and queries per delivered message at low load: one message at a time, 0.2 s apart on "
        f"the queue's clock, {LOW_LOAD_MESSAGES} messages, from one producer and from {SENDERS} (each a process of its "
        "own), received with receive(10) until a receive comes back short (and with receive(1), standard), and in "
        "a tight loop (real time, no pause: one message sent and received at once, the producer the consumer's own "
        "process or another; the marks a process read stay fresh across many rounds, and a standard sender of more "
        "than ten a second moves to the next shard every ten messages), and from one producer received by "
        f"{CONSUMERS} consumer processes in turn, one receive a round (a fleet's containers: each visits the marked "
        "shards it did not empty itself), each "
        "figure from a queue whose marks were drained; each figure counts as well the receives of up to "
        f"{_LATE_ROUNDS} more rounds (no sends) until every message came, and the last column says how many came in "
        "a later round than their own, and how many rounds late at most (a receive visits one shard its process "
        "emptied with the marks as they are: design.md, *Shards a process emptied*). "
        "The scenario moves the queue's clock, not the real one, so "
        f"a consumer reuses the marks it read for {shard_marks.LIST_SECONDS:.0f} s of real time across many "
        "receives; the polls a second or more apart have each receive read them and the priorities, and so has the "
        "last column (receives a second or more apart) but when a receive goes first to the shard its process's "
        f"last two receives took from, at most {shard_marks.WARM_RECEIVES} in a row (`shard_marks.WARM_RECEIVES`; "
        "a consumer whose receives each come from a fresh process pays the marks each time). FIFO "
        "messages go to 3 groups in turn, and to 50. One shard is the baseline: its receive reads that shard alone, "
        "as before. Before shard marks, an empty receive of a queue of 64 shards cost 64 queries (512 at 512 "
        "shards) and the low-load trickle 13.1 queries per delivered message at 64 shards (the sharding scenario). "
        "The dollars are on-demand prices for every call of the figure (the sends' and deletes' as well), per "
        "million delivered. The last row is a counterfactual, run only to weigh the design: no process trusts a "
        "mark it put or read, so every send puts its shard's mark and a consumer is told where each message is, at "
        "a mark write per message (a write unit costs five read units, and a query of one small item half a read "
        "unit: a mark write pays for ten such queries).",
        "",
        "| queue | shards | empty receive: first / a poll (never sent) | drained: at once / later (most) / later, "
        "polls a second or more apart | queries per delivered: one sender / 5 senders / receive(1) | one sender, "
        "receives a second or more apart | a tight loop: one process / two | one sender, "
        f"{CONSUMERS} consumers in turn | delivered in a later round (most rounds late), in the order of the low-load "
        f"columns | dollars per million delivered: one sender / {CONSUMERS} consumers in turn |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in results["rows"]:
        one = f"{row['receive_1_queries_per_delivered']:.2f}" if "receive_1_queries_per_delivered" in row else "-"
        lines.append(
            f"| {_kind(row)} | {row['shards']} | {row['never_sent_first']} / "
            f"{row['never_sent_poll']:.1f} | {row['drained_poll_at_once']:.1f} / {row['drained_poll_later']:.1f} "
            f"({row['drained_poll_max_at_once']} / {row['drained_poll_max_later']}) / "
            f"{row['drained_poll_apart']:.1f} | "
            f"{row['one_sender_queries_per_delivered']:.2f} / {row['senders_queries_per_delivered']:.2f} / {one} | "
            f"{row['uncached_queries_per_delivered']:.2f} | {row['tight_same_queries_per_delivered']:.2f} / "
            f"{row['tight_two_queries_per_delivered']:.2f} | {row['consumers_queries_per_delivered']:.2f} | "
            f"{_late(row)} | {row['one_sender_dollars']:.2f} / {row['consumers_dollars']:.2f} |"
        )
    lines += ["", f"Backend: {results['backend']}. Rerun: `.venv/bin/python -m bench.run --only idle`.", ""]
    return lines
