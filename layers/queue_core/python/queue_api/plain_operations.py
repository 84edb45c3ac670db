"""What some operations ask of the core, over plain values: a mapping of checked fields in, the answer's JSON
mapping out.

The pydantic handlers (`queue_api.producer.send`, `queue_api.poller.receive`, ...) and the fast routes
(`queue_api.fast_routes`) both call these, so an operation's work is written once whichever way its request
was checked; nothing here imports pydantic, which is what lets a first answer skip loading it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .core_client import queue_client
from .observability import count, tracer
from .payloads import within_budget

if TYPE_CHECKING:
    from queue_core import QueueWide, ReceivedMessage, SubQueue


@tracer.capture_method(capture_response=False)
def send_one(queue: str, client: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """One message; `fields` holds only what the caller gave, so the queue's own defaults apply to the rest.
    The answer is the batch shape of one entry, with its id also at the top level."""
    result = queue_client().queue(queue, client).send(**fields).to_dict()
    count("MessagesSent", 0 if result.get("duplicate") else 1)
    return {**result, "successful": [{"index": 0, **result}], "failed": []}


@tracer.capture_method(capture_response=False)
def send_batch(queue: str, client: str, entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    batch = queue_client().queue(queue, client).send_batch([dict(entry) for entry in entries]).to_dict()
    count("MessagesSent", sum(not entry.get("duplicate", False) for entry in batch["successful"]))
    return batch


@tracer.capture_method(capture_response=False)
def receive(queue: str, client: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Waits up to `wait_seconds` and returns as soon as anything is received: as many messages as the answer can
    carry through Lambda (`payloads`), the others given back to the queue at once."""
    sub_queue = queue_client().queue(queue, client)
    return received_answer(sub_queue.receive(**options), sub_queue)


def received_answer(claimed: list[ReceivedMessage], holder: SubQueue | QueueWide) -> dict[str, Any]:
    """The messages the answer can carry through Lambda (`payloads`); the others are given back at once, as they
    were before this receive: nobody saw them, so their receive does not count."""
    from queue_core import QueueError

    received, surplus = within_budget(claimed)
    for message in surplus:
        with contextlib.suppress(QueueError):  # a message not given back is visible again after its timeout
            holder.return_unseen(message.receipt_handle)
    count("MessagesReceived", len(received))
    count("ClaimConflicts", holder.claim_conflicts)
    return {"messages": [message.to_dict() for message in received]}


@tracer.capture_method(capture_response=False)
def receive_any(queue: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Any client's messages, fairly: the highest priority first, then the clients in rotation; as many as the
    answer can carry, as a client's receive."""
    queue_wide = queue_client().queue_wide(queue)
    return received_answer(queue_wide.receive(**options), queue_wide)


def _holder(queue: str, client: str | None) -> SubQueue | QueueWide:
    """The sub-queue a handle is settled through, or with no client the queue-wide view (handles of any client)."""
    return queue_client().queue(queue, client) if client is not None else queue_client().queue_wide(queue)


@tracer.capture_method(capture_response=False)
def delete(queue: str, client: str | None, receipt_handles: Sequence[str]) -> dict[str, Any]:
    """Each handle on its own: a stale or forged one fails in `failed`, the others are still deleted."""
    result = _holder(queue, client).delete_batch(list(receipt_handles)).to_dict()
    count("MessagesDeleted", len(result["successful"]))
    return result


@tracer.capture_method(capture_response=False)
def change_visibility(queue: str, client: str | None, receipt_handle: str, seconds: int) -> dict[str, Any]:
    return {"visible_at": _holder(queue, client).change_visibility(receipt_handle, seconds)}


@tracer.capture_method(capture_response=False)
def release(
    queue: str, client: str | None, receipt_handle: str, delay_seconds: int | None, reason: str | None
) -> dict[str, Any]:
    return {"visible_at": _holder(queue, client).release(receipt_handle, delay_seconds, reason)}


@tracer.capture_method(capture_response=False)
def get(queue: str, client: str, message_id: str) -> dict[str, Any]:
    return queue_client().queue(queue, client).get(message_id).to_dict()


@tracer.capture_method(capture_response=False)
def cancel(queue: str, client: str, message_id: str) -> dict[str, Any]:
    return {"deleted": queue_client().queue(queue, client).cancel(message_id)}


@tracer.capture_method(capture_response=False)
def move_to_dlq(queue: str, client: str, message_id: str) -> dict[str, Any]:
    """An operator marks a waiting message invalid: it moves to the DLQ now, whatever its receive count, in one
    transaction. An in-flight or FIFO message is refused (400): its receiver or its receive limit decides."""
    moved = queue_client().queue(queue, client).move_to_dlq(message_id)
    count("MessagesMovedToDlq", int(moved))
    return {"moved": moved}


@tracer.capture_method(capture_response=False)
def stats(queue: str, client: str) -> dict[str, Any]:
    return queue_client().queue(queue, client).stats().to_dict()


@tracer.capture_method(capture_response=False)
def purge(queue: str, client: str) -> dict[str, Any]:
    return {"purged": queue_client().queue(queue, client).purge()}


@tracer.capture_method(capture_response=False)
def list_clients(queue: str) -> dict[str, Any]:
    """One query of the queue's client partition; a client appears once it has sent."""
    return {"clients": queue_client().clients(queue)}


@tracer.capture_method(capture_response=False)
def get_queue(queue: str) -> dict[str, Any]:
    """The queue's settings, its figures summed over its clients, and how many clients it has."""
    client = queue_client()
    settings = client.get_queue(queue).to_dict()
    stats = client.queue_stats(queue).to_dict()
    return {**settings, "stats": stats, "client_count": len(client.clients(queue))}


@tracer.capture_method(capture_response=False)
def create_queue(queue: str, settings: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """The queue's settings and whether this call created it. `settings` holds only the fields the caller gave,
    so the core's defaults stay the one source of defaults."""
    created = queue_client().create_queue(queue, **settings)
    return created.to_dict(), created.created


@tracer.capture_method(capture_response=False)
def update_queue(queue: str, changes: Mapping[str, Any]) -> dict[str, Any]:
    """The queue's settings after the change; `changes` holds only what changes. A concurrent change of `shards`
    or `retention_seconds` makes this a 409 (`QueueExists`), to be read again and retried."""
    return queue_client().update_queue(queue, **changes).to_dict()


@tracer.capture_method(capture_response=False)
def list_queues() -> dict[str, Any]:
    return {"queues": [settings.to_dict() for settings in queue_client().list_queues()]}


@tracer.capture_method(capture_response=False)
def delete_queue(queue: str) -> dict[str, Any]:
    queue_client().delete_queue(queue)
    return {"deleted": True}


@tracer.capture_method(capture_response=False)
def peek(queue: str, client: str, limit: int) -> dict[str, Any]:
    return _looked_at(queue_client().queue(queue, client).peek(limit))


@tracer.capture_method(capture_response=False)
def list_dlq(queue: str, client: str, limit: int) -> dict[str, Any]:
    return _looked_at(queue_client().queue(queue, client).dlq_list(limit))


@tracer.capture_method(capture_response=False)
def browse(queue: str, client: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """A page of the sub-queue's waiting messages; `request` holds every field of `BrowseRequest`."""
    return queue_client().queue(queue, client).browse(**request).to_dict()


@tracer.capture_method(capture_response=False)
def archive_list(queue: str, client: str | None, request: Mapping[str, Any]) -> dict[str, Any]:
    """A page of the archive of one client, or with no client of every client of the queue; `request` holds every
    field of `ArchiveRequest`."""
    if client is None:
        return queue_client().queue_wide(queue).archive_list(**request).to_dict()
    return queue_client().queue(queue, client).archive_list(**request).to_dict()


@tracer.capture_method(capture_response=False)
def archive_get(queue: str, client: str, message_id: str) -> dict[str, Any]:
    copies = queue_client().queue(queue, client).archive_get(message_id)
    return {"messages": [copy.to_dict() for copy in copies]}


@tracer.capture_method(capture_response=False)
def redrive(queue: str, client: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """All of the DLQ, the oldest `max_messages`, or the given `message_ids`, back with receive counts reset;
    `request` holds every field of `RedriveRequest`."""
    moved = queue_client().queue(queue, client).redrive(**request)
    count("MessagesRedriven", moved)
    return {"redriven": moved}


@tracer.capture_method(capture_response=False)
def dlq_reasons(queue: str, client: str) -> dict[str, Any]:
    """The dead letters grouped by their last reason, from a bounded read of the DLQ."""
    groups, approximate = queue_client().queue(queue, client).dlq_reasons()
    return {"reasons": groups, "approximate": approximate}


@tracer.capture_method(capture_response=False)
def replay_start(queue: str, client: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """Records the replay, then runs it for up to `run_seconds` (0: not at all) in this call; `request` holds
    every field of `ReplayRequest`."""
    sub_queue = queue_client().queue(queue, client)
    options = {name: value for name, value in request.items() if name != "run_seconds"}
    started = sub_queue.replay_start(**options)
    if request["run_seconds"]:
        started = sub_queue.replay_run(started.replay_id, request["run_seconds"])
    count("MessagesReplayed", started.replayed)
    return started.to_dict()


@tracer.capture_method(capture_response=False)
def replay_run(queue: str, client: str, replay_id: str, seconds: float) -> dict[str, Any]:
    sub_queue = queue_client().queue(queue, client)
    before = sub_queue.replay_status(replay_id).replayed
    found = sub_queue.replay_run(replay_id, seconds)
    count("MessagesReplayed", found.replayed - before)
    return found.to_dict()


@tracer.capture_method(capture_response=False)
def replay_list(queue: str, client: str, replay_id: str | None, limit: int) -> dict[str, Any]:
    """One replay by id, or the sub-queue's replays, newest first."""
    sub_queue = queue_client().queue(queue, client)
    found = [sub_queue.replay_status(replay_id)] if replay_id is not None else sub_queue.replay_list(limit)
    return {"replays": [status.to_dict() for status in found]}


@tracer.capture_method(capture_response=False)
def replay_cancel(queue: str, client: str, replay_id: str) -> dict[str, Any]:
    return queue_client().queue(queue, client).replay_cancel(replay_id).to_dict()


def _looked_at(messages: Sequence[Any]) -> dict[str, Any]:
    """As many of the looked-at messages as one Lambda answer carries (a hundred 1 MiB bodies would not): a look
    changes nothing, so the ones left out are simply not shown."""
    shown, _ = within_budget(messages)
    return {"messages": [message.to_dict() for message in shown]}
