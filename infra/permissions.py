"""Who may do what: the table actions of each function and the key patterns that confine a tenant.

Everything that decides an IAM statement of the queue lives here, so a reviewer reads one file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from queue_core.keys import REGISTRY_PK
from queue_core.table import table_definition

# The DynamoDB actions each function calls, and nothing else. IAM has no action named after the
# TransactWriteItems call: DynamoDB authorizes each item of a transaction as the PutItem, UpdateItem,
# DeleteItem or ConditionCheckItem it contains, so those grant transactions (an unknown action would only be
# dead weight in the policy, and cfn-lint reports it as W3037).
TABLE_ACTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "producer": (
        "dynamodb:GetItem",
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
        "dynamodb:BatchWriteItem",
    ),
    "visibility_sweeper": (
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:BatchWriteItem",
    ),
}

# A function that attaches the layer and works on one sub-queue may do whatever the queue's own functions do,
# but only inside that sub-queue's partitions.
LIBRARY_ACTIONS: Final = tuple(sorted({action for actions in TABLE_ACTIONS.values() for action in actions}))
# Queue settings are read, never written, by a confined tenant.
REGISTRY_ACTIONS: Final = ("dynamodb:GetItem",)

# Queue and client names as the API accepts them, or "*" for all. Anything else (a partial wildcard such as
# "tenant-*", or an unresolved token) could widen a grant past one tenant, so it is refused.
NAME_PATTERNS: Final = {
    "queue": re.compile(r"\*|[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo"),
    "client": re.compile(r"\*|[A-Za-z0-9_-]{1,80}"),
}


@dataclass(frozen=True)
class TenantKeys:
    """`dynamodb:LeadingKeys` patterns of one (queue, client) sub-queue, split by what the tenant may do."""

    read_write: tuple[str, ...]
    read_only: tuple[str, ...]


def tenant_key_patterns(queue: str, client: str) -> TenantKeys:
    """The partition keys of one sub-queue, in the core's key formats (`queue_core.keys`).

    Messages (`M#`), dead letters (`D#`), FIFO group items (`F#`) and group messages (`G#`) carry a shard or a
    group after the client; dedup items (`X#`) a bucket. Names cannot contain `#`, so `M#q#c#*` never reaches
    client `c2` or queue `q2`. The client registry partition `C#q` holds every client of the queue: a tenant
    may write it because sending registers its own client there, which is the one place where it shares a
    partition with other tenants of the same queue.
    """
    check_name("queue", queue)
    check_name("client", client)
    own = tuple(f"{prefix}#{queue}#{client}#*" for prefix in ("M", "D", "F", "G", "X"))
    return TenantKeys(read_write=(*own, f"C#{queue}"), read_only=(REGISTRY_PK,))


def check_name(kind: str, name: str) -> None:
    """Refuses a queue or client name that the API would not accept: such a grant could only be wider."""
    if not isinstance(name, str) or not NAME_PATTERNS[kind].fullmatch(name):
        raise ValueError(f"{kind} {name!r} must be '*' or 1-80 characters of A-Za-z0-9_- (a queue's may end in .fifo)")


def table_resource_arns(table: dynamodb.ITable) -> list[str]:
    """The table and each of its indexes by name: the index set comes from the core's table definition."""
    indexes = table_definition("unused").get("GlobalSecondaryIndexes", [])
    return [table.table_arn, *(f"{table.table_arn}/index/{index['IndexName']}" for index in indexes)]


def grant_table_actions(grantee: iam.IGrantable, table: dynamodb.ITable, actions: Sequence[str]) -> iam.Grant:
    return iam.Grant.add_to_principal(grantee=grantee, actions=list(actions), resource_arns=table_resource_arns(table))


def grant_function_table_access(grantee: iam.IGrantable, table: dynamodb.ITable, function: str) -> iam.Grant:
    return grant_table_actions(grantee, table, TABLE_ACTIONS[function])


def grant_tenant_table_access(
    grantee: iam.IGrantable, table: dynamodb.ITable, queue: str, client: str
) -> list[iam.Grant]:
    """Direct table access for code that uses the core library on one sub-queue, and on no other.

    `ForAllValues:StringLike` on `dynamodb:LeadingKeys` makes every key of a request (all items of a batch or
    a transaction) match; none of the granted actions is a Scan, the one call without leading keys.
    """
    keys = tenant_key_patterns(queue, client)
    resources = table_resource_arns(table)
    return [
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=list(actions),
            resource_arns=resources,
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(patterns)}},
        )
        for actions, patterns in ((LIBRARY_ACTIONS, keys.read_write), (REGISTRY_ACTIONS, keys.read_only))
    ]
