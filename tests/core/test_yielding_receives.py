"""A receive whose own read of the marks names a higher priority than its plan (`shard_marks.HigherPriority`)
answers through every receive path: under an attempt id, with a long poll, and for more than one message."""

from __future__ import annotations

from typing import Any

import pytest
from queue_core import QueueClient, shard_marks

from tests.core.test_quiet_shards import _take, lists_always_old  # noqa: F401 (a fixture)
from tests.core.test_shard_marks import _process_on
from tests.core.test_warm_shards import _warmed


@pytest.mark.usefixtures("lists_always_old")
@pytest.mark.parametrize("path", ["attempt", "wait", "two"])
def test_a_warm_miss_that_finds_a_higher_priority_answers_on_every_path(
    client: QueueClient, dynamodb: Any, clock: Any, path: str
) -> None:
    _, consumer = _warmed(client, dynamodb, clock, "inverted", 2)
    _process_on(client, dynamodb, "inverted", 6).send("high", priority=5)
    _process_on(client, dynamodb, "inverted", 4).send("low")
    if path == "attempt":
        got = consumer.receive_attempt("a-1", max_messages=1)
        assert [m.body for m in got] == ["high"]
        assert [m.body for m in consumer.receive_attempt("a-1", max_messages=1)] == ["high"]
    elif path == "wait":
        got = consumer.receive(max_messages=1, wait_seconds=1)
        assert [m.body for m in got] == ["high"]
    else:
        got = consumer.receive(max_messages=2)
        assert sorted(m.body for m in got) == ["high", "low"]


@pytest.mark.usefixtures("lists_always_old")
def test_a_yielding_receive_whose_list_another_receive_replaced_meanwhile_still_answers(
    client: QueueClient, dynamodb: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another receive of the process read the marks too, its query begun before this receive and answered after
    this one's (`note_listed` keeps the last answered, whatever its `read_at`). This receive's warm miss of priority
    0 reads the marks, which name priority 5: it yields. Both messages wait, one of each priority; a receive of one
    must give one of them (the old plan visited 0 at once and gave "low"), not nothing."""
    _, consumer = _warmed(client, dynamodb, clock, "raced", 2)
    _process_on(client, dynamodb, "raced", 6).send("high", priority=5)
    _process_on(client, dynamodb, "raced", 4).send("low")
    real_read, real_priorities = shard_marks._read_again, shard_marks.Marks.priorities
    armed = []

    def read_again(*args: Any) -> Any:
        read = real_read(*args)
        armed.append(True)
        return read

    def priorities(marks: shard_marks.Marks, since: float | None = None) -> list[int] | None:
        known = real_priorities(marks, since)
        if armed and armed.pop() and since is not None:
            # The other receive's older read lands now, after this receive's own (same marks, earlier `read_at`).
            listed = [mark for kept in marks._listed.values() for mark in kept]
            marks.note_listed(listed, since - 0.001, marks._listed_ms or 0)
        return known

    monkeypatch.setattr(shard_marks, "_read_again", read_again)
    monkeypatch.setattr(shard_marks.Marks, "priorities", priorities)
    assert _take(consumer, 1) in (["high"], ["low"])
