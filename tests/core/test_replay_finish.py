"""A replay whose selection fills whole pages ends by its own `finish` write, and its run answers from that write:
the counts it reached, also when a cancel comes first or the finish's answer is lost and repeated by the SDK."""

from __future__ import annotations

import pytest
from queue_core import QueueClient, SubQueue, replays

from tests.conftest import FakeClock
from tests.core.answers import Interleave, LostAnswer, attached, expression_has


@pytest.fixture
def full_page(client: QueueClient, clock: FakeClock) -> SubQueue:
    client.create_queue("orders", archive_days=7, shards=1)
    queue = client.queue("orders", "a")
    for start in range(0, replays.PAGE, 10):
        queue.send_batch([{"body": f"m{n}"} for n in range(start, start + 10)])
    acked = 0
    while acked < replays.PAGE:
        got = queue.receive(max_messages=10)
        clock.advance(0.001)
        assert queue.delete_batch([m.receipt_handle for m in got]).failed == []
        acked += len(got)
    return queue


_FINISH = expression_has("finished_at")


def test_a_run_that_finishes_answers_its_counts(full_page: SubQueue, clock: FakeClock) -> None:
    until = full_page._now()
    done = full_page.replay(full_page.replay_start(until=until, rate=1000).replay_id, clock.advance)
    assert (done.state, done.replayed, done.skipped, done.failed) == ("done", replays.PAGE, 0, 0)
    assert done == full_page.replay_status(done.replay_id)


def test_a_lost_finish_answer_repeated_by_the_sdk(client: QueueClient, full_page: SubQueue, clock: FakeClock) -> None:
    replay_id = full_page.replay_start(until=full_page._now(), rate=1000).replay_id
    with attached(client.dynamodb, LostAnswer("UpdateItem", _FINISH)) as lost:
        done = full_page.replay(replay_id, clock.advance)
    assert lost.lost == 1
    assert (done.state, done.replayed) == ("done", replays.PAGE)
    assert done == full_page.replay_status(replay_id)


def test_a_cancel_before_the_finish_stands_with_its_counts(
    client: QueueClient, full_page: SubQueue, clock: FakeClock
) -> None:
    replay_id = full_page.replay_start(until=full_page._now(), rate=1000).replay_id
    other = QueueClient(client.table_name, dynamodb=client.dynamodb, clock=clock).queue("orders", "a")
    hook = Interleave("UpdateItem", lambda: other.replay_cancel(replay_id), _FINISH)
    with attached(client.dynamodb, hook):
        ended = full_page.replay(replay_id, clock.advance)
    assert (ended.state, ended.replayed) == ("cancelled", replays.PAGE)
    assert ended == full_page.replay_status(replay_id)
