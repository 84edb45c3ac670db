"""What SQS's encryption and FIFO throughput attributes can truthfully say about this queue.

Every message lives in the stack's DynamoDB table, encrypted at rest, and large bodies in its bucket, encrypted
too. With the stack's default the table uses DynamoDB's AWS managed key (`aws/dynamodb`) and the bucket S3-managed
keys: that is what `SqsManagedSseEnabled=true` stands for here. A stack deployed with a customer managed KMS key
(`DynamoQueueProps.encryption_key_arn`) encrypts both with that key and tells the SQS function its ARN in
`DQ_KMS_KEY_ARN`: then `KmsMasterKeyId` names that key, and no other key can be asked for a queue, since every queue
shares the table. DynamoDB keeps a table key for five minutes between uses of the KMS key, which no queue can
change: `KmsDataKeyReusePeriodSeconds` is 300.

A FIFO queue's dedup ids are unique per queue (per client), across its groups: `DeduplicationScope` is `queue`.
Its throughput is per message group (each group has its own item and its own ordering; the queue has no ceiling of
its own): `FifoThroughputLimit` is `perMessageGroupId`.
"""

from __future__ import annotations

import os
from typing import Final

KEY_VARIABLE: Final = "DQ_KMS_KEY_ARN"
DATA_KEY_REUSE_SECONDS: Final = "300"
DEDUPLICATION_SCOPE: Final = "queue"
THROUGHPUT_LIMIT: Final = "perMessageGroupId"
DEFAULT_KEYS: Final = "the table with the AWS managed key aws/dynamodb, large bodies with S3-managed keys"


def table_key() -> str:
    """The ARN of the customer managed key the stack encrypts the table and the bucket with, or ""."""
    return os.environ.get(KEY_VARIABLE, "")


def names_table_key(value: str) -> bool:
    """Whether a `KmsMasterKeyId` names the stack's key: its ARN, or its key id (the ARN's last part)."""
    key = table_key()
    return bool(key) and value in (key, key.rsplit("/", 1)[-1])


def refusal_of_key(value: str) -> str:
    key = table_key()
    if key:
        return (
            f"every queue's messages are encrypted with the stack's key {key}; {value[:256]} is not that key "
            "(one key encrypts the table every queue shares)"
        )
    return (
        f"this stack encrypts {DEFAULT_KEYS}; deploy it with a customer managed key "
        "(DynamoQueueProps.encryption_key_arn) to name that key here"
    )


def reported() -> dict[str, str]:
    """The encryption attributes every queue reports."""
    key = table_key()
    if key:
        return {
            "KmsMasterKeyId": key,
            "KmsDataKeyReusePeriodSeconds": DATA_KEY_REUSE_SECONDS,
            "SqsManagedSseEnabled": "false",
        }
    return {"SqsManagedSseEnabled": "true"}
