"""Listing queues reads every queue's settings in batches of DynamoDB's largest BatchGetItem (100 keys)."""

from __future__ import annotations

from queue_core import QueueClient


def test_more_than_a_hundred_queues_are_all_listed(client: QueueClient) -> None:
    names = [f"queue-{n:03d}" for n in range(101)]
    for name in names:
        client.create_queue(name)
    assert [settings.name for settings in client.list_queues()] == names
