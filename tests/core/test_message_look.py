"""What a look at a message tells an operator besides its content: where its body lives, and when it was moved to
the DLQ (the console's message and DLQ views show both)."""

from __future__ import annotations

from queue_core import QueueClient

from tests.conftest import FakeClock
from tests.core.conftest import OFFLOAD


def test_a_look_says_where_the_body_lives_item_compressed_or_s3(large: QueueClient) -> None:
    large.create_queue("looks")
    q = large.queue("looks", "c1")
    short = q.send("short").message_id
    chatty = q.send("abc" * 2_000).message_id
    offloaded = q.send("".join(chr(0x4E00 + n % 20_000) for n in range(OFFLOAD))).message_id
    assert [q.get(message_id).body_stored for message_id in (short, chatty, offloaded)] == ["item", "compressed", "s3"]
    assert {message.message_id: message.body_stored for message in q.peek(10)} == {
        short: "item",
        chatty: "compressed",
        offloaded: "s3",
    }
    assert q.get(short).to_dict()["body_stored"] == "item" and q.get(short).moved_at is None


def test_a_dead_letter_says_when_it_was_moved_and_keeps_where_its_body_lives(
    large: QueueClient, clock: FakeClock
) -> None:
    large.create_queue("moved")
    q = large.queue("moved", "c1")
    message_id = q.send("abc" * 2_000).message_id
    clock.advance(30)
    moved_at = large.now_ms()
    assert q.move_to_dlq(message_id)
    clock.advance(5)
    [dead] = q.dlq_list(10)
    assert (dead.message_id, dead.moved_at, dead.body_stored) == (message_id, moved_at, "compressed")
    assert q.get(message_id).moved_at == moved_at
    q.redrive()
    assert q.get(message_id).moved_at is None
