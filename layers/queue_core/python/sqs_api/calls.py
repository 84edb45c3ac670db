"""One SQS request on its way through an action: the core, the endpoint, the checked parameters, and the queue
its `QueueUrl` names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from queue_core import QueueClient, QueueError, QueueSettings, SubQueue

from .dead_letters import source_of
from .endpoints import Endpoint
from .errors import from_core, no_queue
from .shapes import require


@dataclass(frozen=True)
class Target:
    """The queue a `QueueUrl` names: a queue, or the DLQ of `queue` when `dlq` is set."""

    name: str
    queue: str
    dlq: bool


@dataclass(frozen=True)
class Call:
    core: QueueClient
    endpoint: Endpoint
    params: dict[str, Any]

    def target(self, url_member: str = "QueueUrl") -> Target:
        name = self.endpoint.queue_of_url(require(self.params, url_member))
        return self.named(name)

    def named(self, name: str) -> Target:
        source = source_of(name)
        if source is not None:
            settings = self.settings(source)
            return Target(name, settings.name, dlq=True)
        return Target(name, self.settings(name).name, dlq=False)

    def settings(self, queue: str) -> QueueSettings:
        """The queue's settings (cached for a few seconds, as every sub-queue's); `QueueDoesNotExist` when there
        is no such queue (or no valid name)."""
        try:
            return self.core.queue(queue, self.endpoint.client).settings
        except QueueError as error:
            if error.code in ("QueueNotFound", "ValidationError"):
                raise no_queue() from None
            raise from_core(error) from None

    def sub_queue(self, target: Target) -> SubQueue:
        return self.core.queue(target.queue, self.endpoint.client)
