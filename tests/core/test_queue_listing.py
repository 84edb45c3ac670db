"""Listing queues is one query of the listing entries, which carry a copy of each queue's settings written with
them; an entry written before entries carried the copy is completed from the settings item, in batches of
DynamoDB's largest BatchGetItem (100 keys). A settings write by an earlier release (which knew no copy) leaves the
copy behind until the next sweep, which reads the settings themselves and refreshes every copy that differs."""

from __future__ import annotations

from queue_core import QueueClient
from queue_core.settings import QueueSettings

from tests import earlier_release
from tests.conftest import TABLE
from tests.core.answers import LostAnswer, attached
from tests.dynamo_calls import CallCounter


def test_more_than_a_hundred_queues_are_all_listed(client: QueueClient) -> None:
    names = [f"queue-{n:03d}" for n in range(101)]
    for name in names:
        client.create_queue(name)
    assert [settings.name for settings in client.list_queues()] == names


def test_the_list_is_one_query_and_follows_every_settings_write(
    client: QueueClient, dynamodb, counter: CallCounter
) -> None:
    client.create_queue("plain")
    client.create_queue("target")
    client.create_queue("source", max_receive_count=3, dead_letter_target="target")
    client.update_queue("plain", visibility_timeout=77)
    client.tag_queue("plain", {"team": "a"})
    counter.reset()
    fresh = QueueClient(TABLE, dynamodb=dynamodb)
    listed = {settings.name: settings for settings in fresh.list_queues()}
    assert dict(counter.calls) == {"GetItem": 1, "Query": 1}  # the layout record, then the listing entries
    assert [listed[name].to_dict() for name in listed] == [client.get_queue(name).to_dict() for name in listed]
    assert listed["plain"].visibility_timeout == 77 and listed["plain"].tags == {"team": "a"}
    assert listed["source"].dead_letter_target == "target"


def test_entries_without_the_copy_are_completed_from_the_settings(
    client: QueueClient, dynamodb, counter: CallCounter
) -> None:
    """Entries as earlier versions wrote them hold only the name: those alone are read from the settings."""
    for name in ("new", "old-1", "old-2"):
        client.create_queue(name, visibility_timeout=41)
    for name in ("old-1", "old-2"):
        entry = {"pk": {"S": "REGISTRY"}, "sk": {"S": f"Q#{name}"}, "name": {"S": name}}
        dynamodb.put_item(TableName=TABLE, Item=entry)
    counter.reset()
    listed = QueueClient(TABLE, dynamodb=dynamodb).list_queues()
    assert [(s.name, s.visibility_timeout) for s in listed] == [("new", 41), ("old-1", 41), ("old-2", 41)]
    assert counter.calls["BatchGetItem"] == 1 and counter.items_read == 2 + 3 + 1  # 2 settings, 3 entries, layout
    client.update_queue("old-1", visibility_timeout=42)  # any settings write puts the copy
    counter.reset()
    listed = QueueClient(TABLE, dynamodb=dynamodb).list_queues()
    assert [(s.name, s.visibility_timeout) for s in listed] == [("new", 41), ("old-1", 42), ("old-2", 41)]
    assert counter.calls["BatchGetItem"] == 1 and counter.items_read == 1 + 3 + 1


def listed(dynamodb) -> dict[str, QueueSettings]:
    """The list of queues as a process that never read a queue's settings sees it."""
    return {settings.name: settings for settings in QueueClient(TABLE, dynamodb=dynamodb).list_queues()}


def test_a_copy_an_earlier_release_left_behind_is_refreshed_by_the_next_sweep(
    client: QueueClient, dynamodb, counter: CallCounter
) -> None:
    client.create_queue("kept", visibility_timeout=41)
    client.create_queue("changed", visibility_timeout=41)
    changed = earlier_release.change_settings(dynamodb, TABLE, client.get_queue("changed"), visibility_timeout=55)
    assert listed(dynamodb)["changed"].visibility_timeout == 41  # until the sweep
    counter.reset()
    client.sweep()
    assert counter.calls["TransactWriteItems"] == 1  # the stale copy alone, fenced on the settings read
    assert listed(dynamodb)["changed"].to_item() == changed.to_item() == client.get_queue("changed").to_item()
    assert listed(dynamodb)["kept"].visibility_timeout == 41
    counter.reset()
    client.sweep()
    assert "TransactWriteItems" not in counter.calls  # every copy is current: nothing written


def test_the_sweep_gives_entries_without_a_copy_theirs(client: QueueClient, dynamodb, counter: CallCounter) -> None:
    client.create_queue("old", visibility_timeout=41)
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "REGISTRY"}, "sk": {"S": "Q#old"}, "name": {"S": "old"}})
    client.sweep()
    counter.reset()
    assert listed(dynamodb)["old"].to_item() == client.get_queue("old").to_item()
    assert "BatchGetItem" not in counter.calls


def test_a_refresh_never_replaces_the_copy_of_newer_settings_nor_lists_a_deleted_queue(
    client: QueueClient, dynamodb
) -> None:
    registry = client._ctx.registry
    client.create_queue("q", visibility_timeout=41)
    read = client.get_queue("q")
    client.update_queue("q", visibility_timeout=70)
    assert registry.refresh_copy(read) is False
    assert listed(dynamodb)["q"].visibility_timeout == 70
    # Left behind by an earlier release, then changed again by this one before the sweep's refresh lands.
    stale = earlier_release.change_settings(dynamodb, TABLE, client.get_queue("q"), visibility_timeout=80)
    client.update_queue("q", visibility_timeout=90)
    assert registry.refresh_copy(stale) is False
    assert listed(dynamodb)["q"].to_item() == client.get_queue("q").to_item()
    current = client.get_queue("q")
    client.delete_queue("q")
    assert registry.refresh_copy(current) is False
    assert listed(dynamodb) == {}


def test_a_refresh_whose_answer_was_lost_while_the_settings_changed_keeps_the_newer_copy(
    client: QueueClient, dynamodb
) -> None:
    client.create_queue("q", visibility_timeout=41)
    earlier_release.change_settings(dynamodb, TABLE, client.get_queue("q"), visibility_timeout=55)
    other = QueueClient(TABLE, dynamodb=dynamodb)

    def meanwhile() -> None:
        other.update_queue("q", visibility_timeout=66)

    with attached(dynamodb, LostAnswer("TransactWriteItems", meanwhile=meanwhile)) as lost:
        report = client.sweep()
    assert lost.lost == 1 and report.failures == 0
    assert listed(dynamodb)["q"].to_item() == client.get_queue("q").to_item()
    assert listed(dynamodb)["q"].visibility_timeout == 66


def test_a_pass_refreshes_copies_within_its_budget_and_the_next_pass_goes_on(
    client: QueueClient, dynamodb, counter: CallCounter
) -> None:
    """A table of an earlier release has no copy on any entry: a pass writes them while its budget lasts (one at
    least), says it left work, and the next pass writes the rest."""
    for name in ("a", "b", "c"):
        client.create_queue(name, visibility_timeout=41)
        dynamodb.put_item(
            TableName=TABLE, Item={"pk": {"S": "REGISTRY"}, "sk": {"S": f"Q#{name}"}, "name": {"S": name}}
        )
    counter.reset()
    first = client.sweep(budget_seconds=0)
    assert counter.calls["TransactWriteItems"] == 1 and not first.complete
    counter.reset()
    assert client.sweep().complete and counter.calls["TransactWriteItems"] == 2
    counter.reset()
    assert [s.to_item() for s in listed(dynamodb).values()] == [client.get_queue(n).to_item() for n in "abc"]
    assert "BatchGetItem" not in counter.calls
