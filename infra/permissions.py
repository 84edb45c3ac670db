"""Who may do what: the table actions of each function and the key patterns that confine a tenant.

Everything that decides an IAM statement of the queue lives here, so a reviewer reads one file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from queue_core.keys import layout_key
from queue_core.table import table_definition

# The DynamoDB actions each function calls on the table, and nothing else: `tests/functions/test_permissions.py`
# records every call of each function and holds these lists equal to them. IAM has no action named after the
# TransactWriteItems call: DynamoDB authorizes each item of a transaction as the PutItem, UpdateItem, DeleteItem or
# ConditionCheckItem it contains, so those grant transactions (an unknown action would only be dead weight in the
# policy, and cfn-lint reports it as W3037).
# SQS's actions span the producer's, the poller's and the DLQ redriver's: the same calls as theirs together.
# A change of a FIFO message's visibility checks the message (ConditionCheckItem) in the transaction that moves its
# group's lock: the poller's, the SQS protocol's and push delivery's.
SQS_ACTIONS: Final = tuple(
    f"dynamodb:{call}"
    for call in (
        "GetItem",
        "BatchGetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "BatchWriteItem",
        "ConditionCheckItem",
    )
)
TABLE_ACTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "producer": (
        "dynamodb:GetItem",
        # A FIFO send after a change of the queue's shard count looks for the group at its earlier places in one
        # batch; listing queues reads in batches the settings of entries that carry no copy of them.
        "dynamodb:BatchGetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:BatchWriteItem",
    ),
    "poller": (
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:BatchWriteItem",
        "dynamodb:ConditionCheckItem",
    ),
    "dlq_redriver": (
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
    ),
    "sqs": SQS_ACTIONS,
    "visibility_sweeper": (
        "dynamodb:GetItem",
        # The sweep walks every queue, whose settings it reads in one batch.
        "dynamodb:BatchGetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:BatchWriteItem",
        # A copy of a queue's settings on its listing entry that an earlier release's settings write left behind
        # is written again in a transaction that checks the settings item is still as read.
        "dynamodb:ConditionCheckItem",
    ),
    # Push delivery: receives, deletes and releases as the poller does, and takes and gives back a consumer's
    # concurrency slots (a conditional put and delete).
    "dispatcher": (
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:BatchWriteItem",
        "dynamodb:ConditionCheckItem",
    ),
}
# A query is the only call that reads an index: due messages, FIFO groups and a queue's clients are found there.
# The DLQ redriver reads dead letters and writes messages back by key; it queries the index only to find archived
# messages by id for a replay (`queue_core.replays`).
INDEX_ACTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "producer": ("dynamodb:Query",),
    "poller": ("dynamodb:Query",),
    "dlq_redriver": ("dynamodb:Query",),
    "sqs": ("dynamodb:Query",),
    "visibility_sweeper": ("dynamodb:Query",),
    "dispatcher": ("dynamodb:Query",),
}

# The S3 actions each function calls on the bucket of offloaded bodies (`queue_core.store.objects`): a send
# writes objects and removes those of duplicates; what returns messages reads them; what removes messages for good
# (delete, cancel, purge, the sweep's expiry) removes theirs. DeleteObjects is authorized as DeleteObject per key.
BUCKET_ACTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "producer": ("s3:PutObject", "s3:DeleteObject"),
    "poller": ("s3:GetObject", "s3:DeleteObject"),
    # A redrive copies each offloaded body onto itself (read and write of the object), so that it outlives the
    # message's new life.
    "dlq_redriver": ("s3:GetObject", "s3:PutObject"),
    # The sweeper removes the objects of expired messages, and runs on replays nobody runs any more, which read
    # archived bodies and write those of the new messages (`queue_core.replays.orphaned`).
    "visibility_sweeper": ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"),
    # Push delivery receives and deletes through the core, as the poller does.
    "dispatcher": ("s3:GetObject", "s3:DeleteObject"),
    # The SQS protocol sends, receives, deletes and purges, and deletes queues.
    "sqs": ("s3:PutObject", "s3:GetObject", "s3:DeleteObject"),
}
# Deleting a queue removes every object under its sub-queues' prefixes, which needs the list of them: the producer
# (the delete) and the sweeper (the last pass over a deleted queue).
BUCKET_LISTERS: Final = frozenset({"producer", "visibility_sweeper", "sqs"})
# A tenant's own function may send, receive, delete and look at its own sub-queue's objects; never list the bucket.
LIBRARY_BUCKET_ACTIONS: Final = ("s3:DeleteObject", "s3:GetObject", "s3:PutObject")

# A function that attaches the layer and works on one sub-queue may do whatever the queue's own functions do,
# but only inside that sub-queue's partitions.
LIBRARY_ACTIONS: Final = tuple(sorted({action for actions in TABLE_ACTIONS.values() for action in actions}))
LIBRARY_INDEX_ACTIONS: Final = tuple(sorted({action for actions in INDEX_ACTIONS.values() for action in actions}))
# The table's layout record (`queue_core.keys.layout_key`), read by every process before it serves the table.
LAYOUT_PK: Final = layout_key()["pk"]
# Queue settings are read, never written, by a confined tenant.
SETTINGS_ACTIONS: Final = ("dynamodb:GetItem",)
# The kinds of partition a sub-queue owns: messages, dead letters, FIFO group items, FIFO group messages, dedup,
# its ready markers (a send says its client has messages; the markers' index partition is the queue's, and a
# tenant never reads it), its load reports (what the sweep sizes an automatic shard count by), and its archive of
# acknowledged messages (written by its own deletes, read with its own peek: `queue_core.archive`), and its shard
# marks (which of its shards may hold messages: `queue_core.shard_marks`).
SUB_QUEUE_KINDS: Final = ("M", "D", "F", "G", "X", "R", "L", "V", "K")

# Queue and client names as the API accepts them, or "*" for all. Anything else (a partial wildcard such as
# "tenant-*", or an unresolved token) could widen a grant past one tenant, so it is refused.
NAME_PATTERNS: Final = {
    "queue": re.compile(r"\*|[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo"),
    "client": re.compile(r"\*|[A-Za-z0-9_-]{1,80}"),
}


@dataclass(frozen=True)
class TenantKeys:
    """`dynamodb:LeadingKeys` values of one (queue, client) sub-queue, split by what the tenant may do there.

    `read_write` and `read_only` are partition keys of the table, `index` partition keys of `gsi1`.
    """

    read_write: tuple[str, ...]
    read_only: tuple[str, ...]
    index: tuple[str, ...]


def tenant_key_patterns(queue: str, client: str) -> TenantKeys:
    """The partition keys of one sub-queue, in the core's key formats (`queue_core.keys`).

    Every partition of the sub-queue's messages starts with `{kind}#{queue}#{client}#` and goes on with the
    queue's generation and a shard, a group or a dedup bucket. Names cannot contain `#`, so `M#q#c#*` never
    reaches client `c2` or queue `q2`.

    The two registry items a tenant needs are granted by exact key, never by prefix. `C#q#c` is its client
    registration, which holds the sub-queue's receipt-signing secret: `C#q#c*` would also reach `C#q#c2`,
    another tenant's registration and secret, and `C#q` is no item a tenant needs. `Q#q` is the queue's
    settings, read-only: `Q#q*` would also reach `Q#q2`, another queue's settings. `META` holds the table's
    layout record, read-only: the library checks it once per process before it serves. Nothing of `REGISTRY` (the
    list of queues and the deleted ones) is granted.

    On `gsi1`, only the sub-queue's own message partitions, and not `C#q#c`: the index's `C#` partitions are
    `C#q#{generation}`, each listing every client of the queue, and nothing stops a client from being named like
    a generation.
    """
    check_name("queue", queue)
    check_name("client", client)
    own = tuple(f"{kind}#{queue}#{client}#*" for kind in SUB_QUEUE_KINDS)
    return TenantKeys(read_write=(*own, f"C#{queue}#{client}"), read_only=(f"Q#{queue}", LAYOUT_PK), index=own)


def check_name(kind: str, name: str) -> None:
    """Refuses a queue or client name that the API would not accept: such a grant could only be wider."""
    if not isinstance(name, str) or not NAME_PATTERNS[kind].fullmatch(name):
        raise ValueError(f"{kind} {name!r} must be '*' or 1-80 characters of A-Za-z0-9_- (a queue's may end in .fifo)")


def index_arns(table: dynamodb.ITable) -> list[str]:
    """Each index of the table by name: the index set comes from the core's table definition."""
    indexes = table_definition("unused").get("GlobalSecondaryIndexes", [])
    return [f"{table.table_arn}/index/{index['IndexName']}" for index in indexes]


def grant_function_table_access(grantee: iam.IGrantable, table: dynamodb.ITable, function: str) -> list[iam.Grant]:
    """The function's actions on the table, and its queries of the indexes (an item action granted on an index
    would be one no call could use)."""
    grants = [
        iam.Grant.add_to_principal(
            grantee=grantee, actions=list(TABLE_ACTIONS[function]), resource_arns=[table.table_arn]
        )
    ]
    if INDEX_ACTIONS[function]:
        grants.append(
            iam.Grant.add_to_principal(
                grantee=grantee, actions=list(INDEX_ACTIONS[function]), resource_arns=index_arns(table)
            )
        )
    return grants


def grant_tenant_table_access(
    grantee: iam.IGrantable, table: dynamodb.ITable, queue: str, client: str
) -> list[iam.Grant]:
    """Direct table access for code that uses the core library on one sub-queue, and on no other.

    `ForAllValues:StringLike` on `dynamodb:LeadingKeys` makes every key of a request (all items of a batch or
    a transaction) match; none of the granted actions is a Scan, the one call without leading keys.
    """
    keys = tenant_key_patterns(queue, client)
    grants = (
        (LIBRARY_ACTIONS, [table.table_arn], keys.read_write),
        (SETTINGS_ACTIONS, [table.table_arn], keys.read_only),
        (LIBRARY_INDEX_ACTIONS, index_arns(table), keys.index),
    )
    return [
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=list(actions),
            resource_arns=resources,
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(patterns)}},
        )
        for actions, resources, patterns in grants
    ]


def object_prefix_pattern(queue: str, client: str) -> str:
    """The key pattern of one sub-queue's offloaded bodies (`queue_core.keys.Space.object_prefix`): names cannot
    contain `/`, so `q/c/*` never reaches client `c2` or queue `q2`."""
    check_name("queue", queue)
    check_name("client", client)
    return f"{queue}/{client}/*"


def grant_function_bucket_access(grantee: iam.IGrantable, bucket: s3.IBucket, function: str) -> list[iam.Grant]:
    grants = [
        iam.Grant.add_to_principal(
            grantee=grantee, actions=list(BUCKET_ACTIONS[function]), resource_arns=[bucket.arn_for_objects("*")]
        )
    ]
    if function in BUCKET_LISTERS:
        grants.append(
            iam.Grant.add_to_principal(grantee=grantee, actions=["s3:ListBucket"], resource_arns=[bucket.bucket_arn])
        )
    return grants


def grant_tenant_bucket_access(grantee: iam.IGrantable, bucket: s3.IBucket, queue: str, client: str) -> iam.Grant:
    """The objects of one sub-queue's offloaded bodies, and no other's."""
    return iam.Grant.add_to_principal(
        grantee=grantee,
        actions=list(LIBRARY_BUCKET_ACTIONS),
        resource_arns=[bucket.arn_for_objects(object_prefix_pattern(queue, client))],
    )
