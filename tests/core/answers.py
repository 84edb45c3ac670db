"""DynamoDB answers that go missing, and writes that land in between: tools for the scenario tests.

`LostAnswer` makes the service apply a request and then lose its answer (a read timeout), so that the SDK's own
retry sends the very same request again, as botocore does against DynamoDB. It works at the `before-send` stage:
it hands the request to moto itself (applied), then raises the timeout, and botocore's retry handler takes over.
DynamoDB makes a retried `TransactWriteItems` idempotent through its client request token and moto does not, so
transactions are not a target here.

`Interleave` runs a piece of code just before a chosen request leaves, as if another process had been faster.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ReadTimeoutError
from moto.core.models import botocore_stubber

Match = Callable[[dict[str, Any]], bool]


def _body(request: Any) -> dict[str, Any]:
    body = request.body
    return json.loads(body.decode() if isinstance(body, bytes) else body or "{}")


def expression_has(text: str) -> Match:
    """Matches a request whose update or condition expression contains `text`."""
    return lambda body: text in body.get("UpdateExpression", "") + body.get("ConditionExpression", "")


class LostAnswer:
    """`meanwhile` runs after the request was applied and before the SDK's retry: another process at work."""

    def __init__(
        self,
        operation: str,
        match: Match = lambda body: True,
        times: int = 1,
        meanwhile: Callable[[], None] = lambda: None,
    ) -> None:
        self.operation = operation
        self.match = match
        self.left = times
        self.meanwhile = meanwhile
        self.lost = 0

    def _before_send(self, request: Any, event_name: str, **_: Any) -> None:
        if self.left <= 0 or not self.match(_body(request)):
            return
        self.left -= 1
        self.lost += 1
        botocore_stubber(event_name=event_name, request=request)
        self.meanwhile()
        raise ReadTimeoutError(endpoint_url=request.url)


class Interleave:
    def __init__(self, operation: str, action: Callable[[], None], match: Match = lambda body: True) -> None:
        self.operation = operation
        self.action = action
        self.match = match
        self.done = False

    def _before_send(self, request: Any, **_: Any) -> None:
        if not self.done and self.match(_body(request)):
            self.done = True
            self.action()


@contextmanager
def attached(dynamodb: Any, hook: LostAnswer | Interleave) -> Iterator[LostAnswer | Interleave]:
    event = f"before-send.dynamodb.{hook.operation}"
    dynamodb.meta.events.register(event, hook._before_send)
    try:
        yield hook
    finally:
        dynamodb.meta.events.unregister(event, hook._before_send)
