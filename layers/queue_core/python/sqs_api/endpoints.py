"""Where a request came in, and the queue URLs and ARNs minted there.

A queue URL is `{endpoint}/{account}/{queue}`. Clients send it back in `QueueUrl`; what identifies the queue is
its path: the client's segment (`/sqs/{client}`, or none for `default`), the account and the queue name. The
host is not compared: the same server answers to `localhost` and `127.0.0.1`, and API Gateway to its custom
domains. A URL whose client is not this endpoint's is refused, so one tenant's SDK client cannot reach another
tenant's sub-queues by pasting their URL.

The administration endpoint (`/sqs-admin`) acts on queues, not on any client's sub-queue: it takes the URL of
a queue at any endpoint of the account, and answers the root endpoint's URLs (the client `default`'s), which
work as they are for the code that created the queue; other clients find theirs with `GetQueueUrl`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from .errors import SqsError

DEFAULT_CLIENT: Final = "default"
LOCAL_ACCOUNT: Final = "000000000000"
CLIENT_PREFIX: Final = "sqs"
ADMIN_SEGMENT: Final = "sqs-admin"


@dataclass(frozen=True)
class Endpoint:
    """`url` is what the client called without a trailing slash (`http://127.0.0.1:8080`,
    `https://…/prod/sqs/tenant-a`); `client` the client whose sub-queues it reaches."""

    url: str
    client: str = DEFAULT_CLIENT
    account: str = LOCAL_ACCOUNT
    region: str = "us-east-1"
    # Only the administration endpoint (`POST /sqs-admin`) creates, changes, tags and deletes queues: a queue is
    # shared by every client, and no client's route (`default`'s included) may reconfigure or delete what the
    # other tenants use. It serves no client's messages.
    manages_queues: bool = False

    def refuse_unless_managing(self, action: str) -> None:
        if not self.manages_queues:
            raise SqsError(
                "AccessDenied",
                f"{action} changes a queue every client shares: send it to the administration endpoint "
                f"(/{ADMIN_SEGMENT}), not a client's.",
                status=403,
            )

    def refuse_if_managing(self, action: str) -> None:
        if self.manages_queues:
            raise SqsError(
                "AccessDenied",
                f"{action} acts on a client's messages: send it to that client's endpoint (/ for the client "
                f"default, /{CLIENT_PREFIX}/{{client}}), not to the administration endpoint.",
                status=403,
            )

    def queue_url(self, queue: str) -> str:
        root = self.url.removesuffix(f"/{ADMIN_SEGMENT}") if self.manages_queues else self.url
        return f"{root}/{self.account}/{queue}"

    def queue_arn(self, queue: str) -> str:
        return f"arn:aws:sqs:{self.region}:{self.account}:{queue}"

    def queue_of_url(self, url: object) -> str:
        """The queue named by a `QueueUrl` minted at this endpoint (an `InvalidAddress` error otherwise)."""
        if not isinstance(url, str) or not url:
            raise SqsError("InvalidAddress", "The address QueueUrl is not valid for this endpoint.")
        parts = [part for part in urlsplit(url).path.split("/") if part]
        if len(parts) < 2 or parts[-2] != self.account:
            raise SqsError("InvalidAddress", f"The address {url[:200]} is not valid for this endpoint.")
        client = parts[-3] if len(parts) >= 4 and parts[-4] == CLIENT_PREFIX else DEFAULT_CLIENT
        if len(parts) >= 3 and parts[-3] == ADMIN_SEGMENT:
            client = ADMIN_SEGMENT
        if client != self.client and not self.manages_queues:
            raise SqsError(
                "InvalidAddress",
                f"The address {url[:200]} belongs to another client's endpoint; send it to that endpoint.",
            )
        return parts[-1]

    def queue_of_arn(self, arn: object, name: str = "SourceArn") -> str:
        prefix = f"arn:aws:sqs:{self.region}:{self.account}:"
        if not isinstance(arn, str) or not arn.startswith(prefix) or len(arn) == len(prefix):
            raise SqsError("ResourceNotFoundException", f"{name} is not the ARN of a queue here.")
        return arn[len(prefix) :]
