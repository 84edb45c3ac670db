"""The `MessageId` an SQS client sees: a UUID, the same on send, receive, the DLQ, a redrive and a push event.

The queue's own message ids (`keys.MessageRef`) say where a message lives, so that `get`, `cancel` and a redrive by
id are one call; they hold a `.` and a FIFO id holds the group, up to 193 characters. SQS clients use a MessageId
as a batch entry id (at most 80 characters of `A-Za-z0-9_-`), so the SQS protocol and push events show another id:
a name-based UUID (version 5) of the message's sub-queue incarnation (queue, client, generation), its own id and its
send time. Those facts are unique per message: a standard sequence is unique in its sub-queue; a FIFO group's
sequence starts again only after the group item's TTL (twice the retention after the group's last send), when every
message that had it was sent long before, at another millisecond; a queue created again has another generation.

It is computed, not stored, so a message costs no byte more, and messages sent before these ids existed have one
too. Only where a message changes place (a FIFO redrive takes a new sequence; a standard redrive may take another
shard; a move task makes a message of another queue) is the id it had written into the new item (`SQS_ID_ATTRIBUTE`),
where it wins over the computation. A dedup item keeps the id of the message it names, so a duplicate (an SDK's
retry of a send whose answer was lost) answers the first message's SQS id.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

SQS_ID_ATTRIBUTE: Final = "sqs_id"
_NAMESPACE: Final = uuid.UUID("6f1c1d9e-3a55-4f1e-9a0c-2b7d5e8c4a10")


def derived_sqs_id(queue: str, client: str, generation: str, message_id: str, sent_at: int) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{queue}#{client}#{generation}#{message_id}#{sent_at}"))


def sqs_id_of_key(pk: str, message_id: str, sent_at: int) -> str:
    """The id of the message `message_id` sent at `sent_at`, in the sub-queue of a partition key of its own
    (`{kind}#{queue}#{client}#{generation}#…`: a live, DLQ, group or dedup item's)."""
    _, queue, client, generation = pk.split("#", 4)[:4]
    return derived_sqs_id(queue, client, generation, message_id, sent_at)


def sqs_id_of(item: dict[str, Any], message_id: str) -> str:
    """The SQS id of a message item (live or DLQ) whose queue id is `message_id`."""
    kept = item.get(SQS_ID_ATTRIBUTE)
    return str(kept) if kept else sqs_id_of_key(str(item["pk"]), message_id, int(item["sent_at"]))


def sqs_id_kept(item: dict[str, Any], message_id: str) -> dict[str, str]:
    """What a message's new item keeps when it takes a new place: the SQS id it had."""
    return {SQS_ID_ATTRIBUTE: sqs_id_of(item, message_id)}
