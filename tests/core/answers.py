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

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ReadTimeoutError
from moto.core.botocore_stubber import MockRawResponse
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


class AnswerNeverCame:
    """The request is applied and its answers are lost until the SDK gives up: the caller gets the timeout (the
    SDK's retries exhausted, or a client without retries). Each of the first `times` matching calls is lost,
    `meanwhile` running after each one is applied."""

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

    def _before_call(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        body = params.get("body") or b"{}"
        body = json.loads(body.decode() if isinstance(body, bytes) else body)
        context["answer_never_came"] = self.left > 0 and self.match(body)
        if context["answer_never_came"]:
            self.left -= 1

    def _after_call(self, context: dict[str, Any], **_: Any) -> None:
        if context.pop("answer_never_came", False):
            self.lost += 1
            self.meanwhile()
            raise ReadTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")


@contextmanager
def never_answered(dynamodb: Any, hook: AnswerNeverCame) -> Iterator[AnswerNeverCame]:
    events = dynamodb.meta.events
    events.register(f"before-call.dynamodb.{hook.operation}", hook._before_call)
    events.register(f"after-call.dynamodb.{hook.operation}", hook._after_call)
    try:
        yield hook
    finally:
        events.unregister(f"before-call.dynamodb.{hook.operation}", hook._before_call)
        events.unregister(f"after-call.dynamodb.{hook.operation}", hook._after_call)


def transaction_of_group(group: str) -> Match:
    """Matches a FIFO send's transaction for `group` (its first action updates the group item)."""

    def match(body: dict[str, Any]) -> bool:
        items = body.get("TransactItems") or [{}]
        return items[0].get("Update", {}).get("Key", {}).get("sk", {}).get("S") == group

    return match


class Refused:
    """DynamoDB refuses each matching request with `code` and `message`, applying nothing, while `on` is set
    (DynamoDB's answer to an item over its size limit, by default)."""

    def __init__(
        self,
        operation: str,
        match: Match = lambda body: True,
        code: str = "ValidationException",
        message: str = "Item size has exceeded the maximum allowed size",
    ) -> None:
        self.operation = operation
        self.match = match
        self.code = code
        self.message = message
        self.on = True
        self.refused = 0

    def _before_call(self, params: dict[str, Any], **_: Any) -> Any:
        body = params.get("body") or b"{}"
        if not self.on or not self.match(json.loads(body.decode() if isinstance(body, bytes) else body)):
            return None
        self.refused += 1
        parsed = {"Error": {"Code": self.code, "Message": self.message}, "ResponseMetadata": {"HTTPStatusCode": 400}}
        return AWSResponse("https://dynamodb.us-east-1.amazonaws.com", 400, {}, MockRawResponse(b"")), parsed


@contextmanager
def refused(dynamodb: Any, hook: Refused) -> Iterator[Refused]:
    event = f"before-call.dynamodb.{hook.operation}"
    dynamodb.meta.events.register(event, hook._before_call)
    try:
        yield hook
    finally:
        dynamodb.meta.events.unregister(event, hook._before_call)


class TooLargeInATransaction:
    """DynamoDB's answer to a transaction that would make an item larger than its limit: the transaction is
    cancelled with the reason `ValidationError` for that item and `None` for the others (moto instead refuses
    the whole request with a `ValidationException`, as it does for a single write)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.refused = 0

    def before_call(self, params: dict[str, Any], **_: Any) -> Any:
        body = params.get("body") or b"{}"
        request = json.loads(body.decode() if isinstance(body, bytes) else body)
        if self.text not in json.dumps(request):
            return None
        self.refused += 1
        return cancelled_transaction(request, "ValidationError", "Item size has exceeded the maximum allowed size")


def cancelled_transaction(request: dict[str, Any], code: str, message: str) -> tuple[AWSResponse, dict[str, Any]]:
    """DynamoDB's answer to a transaction cancelled for its first action (`code`, `message`), the others passing:
    for a `before-call` hook to return in place of the call."""
    reasons = [{"Code": code, "Message": message}]
    reasons += [{"Code": "None"}] * (len(request.get("TransactItems", [])) - 1)
    parsed = {
        "Error": {
            "Code": "TransactionCanceledException",
            "Message": "Transaction cancelled, please refer cancellation reasons for specific reasons "
            f"[{', '.join(reason['Code'] for reason in reasons)}]",
        },
        "CancellationReasons": reasons,
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    return AWSResponse("https://dynamodb.us-east-1.amazonaws.com", 400, {}, MockRawResponse(b"")), parsed


@contextmanager
def too_large_in_a_transaction(dynamodb: Any, text: str) -> Iterator[TooLargeInATransaction]:
    hook = TooLargeInATransaction(text)
    event = "before-call.dynamodb.TransactWriteItems"
    dynamodb.meta.events.register(event, hook.before_call)
    try:
        yield hook
    finally:
        dynamodb.meta.events.unregister(event, hook.before_call)
