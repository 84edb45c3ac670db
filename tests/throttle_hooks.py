"""DynamoDB throttles for chosen requests, answered before DynamoDB sees them (a `before-call` hook).

The core sees such a throttle without the SDK's retries, as when they ran out; nothing of the request is applied.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ClientError

Match = Callable[[dict[str, Any]], bool]


def throttle_error(operation: str) -> ClientError:
    return ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "throttled"}}, operation)


def request_body(params: dict[str, Any]) -> dict[str, Any]:
    """The request's JSON as botocore serialized it: what a match reads."""
    body = params.get("body") or b"{}"
    return json.loads(body.decode() if isinstance(body, bytes) else body)


class ThrottleOne:
    """Answers the `nth` request of `operation` that `match` accepts with ProvisionedThroughputExceeded."""

    def __init__(self, operation: str, match: Match, nth: int = 1) -> None:
        self.operation = operation
        self.match = match
        self.left = nth
        self.thrown = 0

    def _before_call(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name != self.operation or self.left <= 0 or not self.match(request_body(params)):
            return
        self.left -= 1
        if self.left == 0:
            self.thrown += 1
            raise throttle_error(self.operation)


class ThrottleAll:
    """Answers every request of `operation` that `match` accepts with ProvisionedThroughputExceeded."""

    def __init__(self, operation: str, match: Match) -> None:
        self.operation = operation
        self.match = match
        self.thrown = 0

    def _before_call(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == self.operation and self.match(request_body(params)):
            self.thrown += 1
            raise throttle_error(self.operation)


@contextmanager
def throttled(dynamodb: Any, hook: ThrottleOne) -> Iterator[ThrottleOne]:
    """The hook on `dynamodb` for the block, which must meet its one throttle."""
    with _hooked(dynamodb, hook):
        yield hook
    assert hook.thrown == 1


@contextmanager
def throttling(dynamodb: Any, hook: ThrottleAll) -> Iterator[ThrottleAll]:
    """The hook on `dynamodb` for the block, which must meet at least one throttle."""
    with _hooked(dynamodb, hook):
        yield hook
    assert hook.thrown > 0


@contextmanager
def _hooked(dynamodb: Any, hook: ThrottleOne | ThrottleAll) -> Iterator[None]:
    dynamodb.meta.events.register("before-call.dynamodb", hook._before_call)
    try:
        yield
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb", hook._before_call)
