"""aiobotocore, unchanged, against the queue's SQS endpoint: `python aiobotocore_client.py QUEUE_URL` prints one JSON
line of what it saw. Run in a process of its own with `$(VENV)/aiobotocore` first on the path (its botocore is older
than the project's). The endpoint comes from SQS_ENDPOINT; credentials and region from the usual AWS_* variables.

Concurrent sends (one by one and in batches), concurrent receives, then the batch calls with each MessageId as its
entry id, as asynchronous consumers do."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from typing import Any

from aiobotocore.session import get_session


async def main(url: str) -> dict[str, Any]:
    fifo = url.endswith(".fifo")

    def fields(n: int) -> dict[str, str]:
        return {"MessageGroupId": f"group-{n % 2}", "MessageDeduplicationId": f"d{n}"} if fifo else {}

    session = get_session()
    async with session.create_client("sqs", endpoint_url=os.environ["SQS_ENDPOINT"]) as sqs:
        singles = await asyncio.gather(
            *(sqs.send_message(QueueUrl=url, MessageBody=f"single {n}", **fields(n)) for n in range(4))
        )
        batch = await sqs.send_message_batch(
            QueueUrl=url,
            Entries=[{"Id": f"e{n}", "MessageBody": f"batch {n}", **fields(n + 4)} for n in range(4)],
        )
        sent = [answer["MessageId"] for answer in singles] + [entry["MessageId"] for entry in batch["Successful"]]
        received: list[dict[str, Any]] = []
        while len(received) < len(sent):
            answers = await asyncio.gather(
                *(
                    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30, WaitTimeSeconds=1)
                    for _ in range(2)
                )
            )
            got = [message for answer in answers for message in answer.get("Messages", [])]
            if not got:
                break
            received += got
        entries = [{"Id": message["MessageId"], "ReceiptHandle": message["ReceiptHandle"]} for message in received]
        changed = await sqs.change_message_visibility_batch(
            QueueUrl=url, Entries=[{**entry, "VisibilityTimeout": 10} for entry in entries]
        )
        deleted = await sqs.delete_message_batch(QueueUrl=url, Entries=entries)
        left = await sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)
        return {
            "sent": sent,
            "received": [message["MessageId"] for message in received],
            "bodies": sorted(message["Body"] for message in received),
            "md5_ok": all(
                message["MD5OfBody"] == hashlib.md5(message["Body"].encode()).hexdigest() for message in received
            ),
            "changed": [entry["Id"] for entry in changed.get("Successful", [])],
            "deleted": [entry["Id"] for entry in deleted.get("Successful", [])],
            "failed": changed.get("Failed", []) + deleted.get("Failed", []),
            "left": len(left.get("Messages", [])),
        }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
