"""The only module that talks to DynamoDB.

It turns DynamoDB's answers into the core's terms: a failed condition becomes `ConditionFailed` carrying the old
item (so the caller learns why without reading first), a throttle or an outage that outlived the SDK's retries
becomes `Throttled`, and anything else becomes `InternalError` with no internals in its message. A throttle is
never reported as a failed condition, so no caller mistakes it for a lost claim race.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager
from decimal import Decimal
from typing import Any, TypeVar

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    NoCredentialsError,
    NoRegionError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from ..errors import InternalError, MessageTooLarge, Throttled, ValidationError
from ..keys import band_due_range, band_range, index_upper
from ..table import INDEX_NAME
from . import partitions
from .write import Write, serialize

_T = TypeVar("_T")
_R = TypeVar("_R")

__all__ = [
    "ConditionFailed",
    "Item",
    "OutcomeUnknown",
    "Overdue",
    "Store",
    "TransactionCancelled",
    "Write",
    "deserialize",
    "serialize",
]

logger = logging.getLogger("queue_core")

Item = dict[str, Any]

# The answers that say a key or the table is past its throughput (not an outage).
_KEY_THROTTLES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})
# The same, as a cancelled transaction's reasons give it.
_KEY_CANCELLATIONS = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded"})
_THROTTLES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "ThrottlingError",
        "ProvisionedThroughputExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionConflict",
        # A single write refused because a transaction is writing the same item (nothing applied).
        "TransactionConflictException",
        "TransactionInProgressException",
    }
)
# Why DynamoDB throttled, from the end of each of its `ThrottlingReasons` (`TableWriteKeyRangeThroughputExceeded`,
# `IndexReadProvisionedThroughputExceeded`, ...): a table's or an index's own capacity (its provisioned units, its
# on-demand quota or maximum), not one key's. More shards cannot help such a throttle, and reports or growth would
# add reads and writes to a table already at its limit: it is counted apart from a hot key's (`capacity_throttles`).
_CAPACITY_LIMITS = ("ProvisionedThroughputExceeded", "AccountLimitExceeded", "MaxOnDemandThroughputExceeded")
_AT_CAPACITY = "the table or its index is at its capacity (provisioned units or quota); retry later"
_THROTTLING = "DynamoDB is throttling or unavailable; retry later"
# Network failures: the request may or may not have been applied, so they are reported as "retry later",
# never as a failed condition.
_UNREACHABLE = (BotoConnectionError, HTTPClientError)
_BATCH_RETRIES = 8
# Sends of one transaction, with its client request token, while its answers are lost; within `_RESEND_SECONDS`,
# far inside the ten minutes for which DynamoDB answers a repeat of a committed transaction with its success.
_TRANSACT_SENDS = 5
_RESEND_SECONDS = 60.0
_NO_BLIND_PUT_RETRY = "queue-core-no-blind-put-retry"
# Refusals of a request's shape: for a transaction that carries a caller's own items, the caller's input.
_REFUSED_INPUT = frozenset({"ValidationException", "IdempotentParameterMismatchException"})
_ITEM_TOO_LARGE = "Item size"  # DynamoDB: "Item size has exceeded the maximum allowed size" (and "... to update")
_deserializer = TypeDeserializer()


class ConditionFailed(Exception):
    """A write's condition did not hold; `item` is the item as it was (None when there was none): the caller
    reads it to tell a lost race from its own write, applied and repeated by the SDK after a lost answer.
    `repeated`: the SDK sent the request again after an attempt whose answer was lost (no answer, or a server
    error), so that attempt may have been applied (a delete leaves no item to recognise itself by); a retry after a
    throttle is not, as a throttled attempt is never applied."""

    def __init__(self, item: Item | None, repeated: bool = False) -> None:
        super().__init__("condition failed")
        self.item = item
        self.repeated = repeated


class OutcomeUnknown(Throttled):
    """A transaction's answers were lost every time it was sent (timeouts, dropped connections, still in
    progress): it may have committed. Only the same request with the same client request token (`token`) learns
    which."""

    def __init__(self, message: str, token: str) -> None:
        super().__init__(message)
        self.token = token


class Overdue(Throttled):
    """A write not sent: the settings it was built from are older than `Store.sent_by` allows, and another process
    may already act on newer ones. Nothing of it was applied; built again from settings read afresh, it may go."""

    def __init__(self) -> None:
        super().__init__(
            "not sent: the queue settings this write rests on may have changed since; nothing was applied; retry"
        )


class _NotSent(BotoCoreError):
    """Raised by the `before-send` hook in place of an attempt past its deadline (the SDK retries no such error)."""

    fmt = "not sent: past its deadline"


class TransactionCancelled(Exception):
    """A transaction failed a condition; `reasons[i]` is (code, old item) for action i."""

    def __init__(self, reasons: list[tuple[str, Item | None]]) -> None:
        super().__init__("transaction cancelled")
        self.reasons = reasons

    def failed(self) -> list[int]:
        return [i for i, (code, _) in enumerate(self.reasons) if code == "ConditionalCheckFailed"]


def deserialize(item: dict[str, Any] | None) -> Item | None:
    if not item:
        return None
    return {key: _plain(_deserializer.deserialize(value)) for key, value in item.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def capacity_throttle(answer: Any) -> bool:
    """Whether DynamoDB's throttling answer (a parsed error response) names only a table's or an index's capacity
    as its reason; an answer without reasons (older endpoints, a transaction's cancellation) is not one."""
    if not isinstance(answer, dict):
        return False
    reasons = answer.get("ThrottlingReasons") or answer.get("throttlingReasons") or []
    return bool(reasons) and all(str(reason.get("reason", "")).endswith(_CAPACITY_LIMITS) for reason in reasons)


def at_capacity(error: Throttled) -> bool:
    """Whether `error` was raised for a throttle of the table's or the index's capacity (see `capacity_throttle`)."""
    cause = error.__cause__
    return isinstance(cause, ClientError) and capacity_throttle(cause.response)


def _raise_mapped(error: Exception) -> None:
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        if code in _THROTTLES:
            raise Throttled(_AT_CAPACITY if capacity_throttle(error.response) else _THROTTLING) from error
        if code == "ValidationException" and _ITEM_TOO_LARGE in error.response.get("Error", {}).get("Message", ""):
            raise MessageTooLarge("the message and its attributes are too large to store") from error
    elif isinstance(error, _UNREACHABLE):
        raise Throttled("DynamoDB could not be reached; retry later") from error
    elif isinstance(error, NoCredentialsError | NoRegionError):
        raise InternalError("DynamoDB credentials or region are not configured") from error
    logger.exception("unexpected DynamoDB error")
    raise InternalError("internal error") from error


def _outcome_unknown(error: Throttled) -> bool:
    """Whether the request may have been applied: its answer was lost, or it is still in progress."""
    cause = error.__cause__
    if isinstance(cause, _NotSent):  # an earlier attempt's answer was lost, and this retry was held back
        return True
    if isinstance(cause, ClientError):
        return cause.response.get("Error", {}).get("Code", "") == "TransactionInProgressException"
    return isinstance(cause, _UNREACHABLE)


def _no_blind_put_retry(caught_exception: Exception | None = None, request_dict: Any = None, **_: Any) -> bool | None:
    """Keeps the SDK from sending a batch of puts again after a lost answer (False: no retry). A put cannot carry
    a condition in a batch, so the repeat would overwrite a message that a consumer claimed meanwhile (two
    holders) or bring back one already deleted; `Store.batch_write` writes such a batch again itself, one
    conditional put per item."""
    body = (request_dict or {}).get("body", b"")
    body = body if isinstance(body, bytes) else str(body).encode()
    if isinstance(caught_exception, HTTPClientError) and b"PutRequest" in body:
        return False
    return None


def _throttle_counter(store: weakref.ref[Store]) -> Callable[..., None]:
    """A `needs-retry` handler that counts the throttles of each attempt, the SDK's retried ones included; it
    holds the store weakly, so a client outliving many stores keeps none of them alive."""

    def count(response: Any = None, caught_exception: Any = None, **_: Any) -> None:
        parsed = response[1] if isinstance(response, tuple) and len(response) > 1 else None
        counted = store()
        if counted is None:
            return
        if isinstance(parsed, dict) and parsed.get("Error", {}).get("Code") in _KEY_THROTTLES:
            counted.note_throttle(parsed)
            counted._seen.counted_answer = parsed  # the last attempt's answer is the error `_call` then sees
        status = parsed.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) if isinstance(parsed, dict) else 0
        if isinstance(caught_exception, _NotSent):
            return  # never sent
        if caught_exception is not None or status >= 500:
            # No answer, or a server error: this attempt may have been applied. A throttle never was.
            counted._seen.maybe_applied = True

    return count


# The operations that change items: what a deadline holds back. A read lands nothing, and some must go out past it:
# the read that tells which puts of a batch whose answer was lost were stored (`Store._write_each_once`).
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})


def _deadline_keeper(store: weakref.ref[Store]) -> Callable[..., None]:
    """A `before-send` handler of each write operation that holds back every attempt past its thread's deadline
    (`Store.sent_by`), the SDK's retries included: registered first on the operation's own event (which botocore
    runs before the service-wide one), so no other handler (a test's stub) sees the attempt before it."""

    def keep(**_: Any) -> None:
        kept = store()
        deadline = getattr(kept._seen, "send_by", None) if kept is not None else None
        if deadline is not None and time.monotonic() > deadline:
            raise _NotSent()

    return keep


class Store:
    """Thin, typed access to one table."""

    def __init__(self, dynamodb: Any, table_name: str) -> None:
        self.client = dynamodb
        self.table = table_name
        dynamodb.meta.events.register(
            "needs-retry.dynamodb.BatchWriteItem", _no_blind_put_retry, unique_id=_NO_BLIND_PUT_RETRY
        )
        # Every throttle DynamoDB answered to this thread, those the SDK retried included: what tells an automatic
        # shard count that a key is past its limit (read as a difference around a call; see `autoshard`). Per
        # thread, so that a call is not charged with the throttles of other threads' calls on other queues.
        self._seen = threading.local()
        dynamodb.meta.events.register_first("needs-retry.dynamodb", _throttle_counter(weakref.ref(self)))
        keeper = _deadline_keeper(weakref.ref(self))
        for operation in sorted(_WRITES):
            dynamodb.meta.events.register_first(f"before-send.dynamodb.{operation}", keeper)

    @contextmanager
    def sent_by(self, deadline: float | None) -> Iterator[None]:
        """Within it, this thread's writes are sent, each of the SDK's attempts included, by `deadline` (monotonic;
        None: no deadline) or not at all: `Overdue` when nothing was sent, else what a lost answer raises
        (`OutcomeUnknown`, `Throttled`). What bounds how late a write built from a process's cached settings can
        land after another process changed them (`limits.SETTINGS_SPREAD_SECONDS`). Nested, the earlier holds."""
        outer = getattr(self._seen, "send_by", None)
        if deadline is not None and outer is not None:
            deadline = min(deadline, outer)
        self._seen.send_by = deadline if deadline is not None else outer
        try:
            yield
        finally:
            self._seen.send_by = outer

    @contextmanager
    def at_old_place(self, share: float = 1.0) -> Iterator[None]:
        """Within it, this thread's requests act where an earlier shard count placed a FIFO group (`share`: the
        part of the key's load that placement puts there): that part of each key throttle they meet is counted in
        `old_place_throttles` too (the old count's load, which a larger count would not relieve; see `autoshard`)."""
        outer = getattr(self._seen, "at_old", 0.0)
        self._seen.at_old = max(outer, share)
        try:
            yield
        finally:
            self._seen.at_old = outer

    @property
    def throttles(self) -> int:
        """Throttles of a key answered to this thread so far (what an automatic shard count grows for)."""
        return getattr(self._seen, "count", 0)

    @property
    def old_place_throttles(self) -> float:
        """Of `throttles`, the part met at FIFO groups' old places (`at_old_place`)."""
        return getattr(self._seen, "old", 0.0)

    @property
    def capacity_throttles(self) -> int:
        """Throttles of the table's or the index's capacity answered to this thread so far: never a reason to grow."""
        return getattr(self._seen, "capacity", 0)

    @property
    def unsharded_throttles(self) -> int:
        """Throttles answered to this thread so far on partitions no shard count splits (`partitions`): never a
        reason to grow."""
        return getattr(self._seen, "unsharded", 0)

    def note_throttle(self, answer: Any = None, off_shards: bool | None = None) -> None:
        """Counts one throttle: as the table's when `answer` names only the capacity as its reason, as an unsharded
        partition's when it was met on no shard's key (`off_shards`; None: as `partitions` reads the request
        `_call` is making), else as a key's."""
        if off_shards is None:
            request = getattr(self._seen, "request", None)
            off_shards = request is not None and partitions.off_shards(request)
        if capacity_throttle(answer):
            self._seen.capacity = self.capacity_throttles + 1
        elif off_shards:
            self._seen.unsharded = self.unsharded_throttles + 1
        else:
            self._seen.count = self.throttles + 1
            self._seen.old = self.old_place_throttles + getattr(self._seen, "at_old", 0.0)

    def _counts(self) -> tuple[float, ...]:
        """This thread's throttles so far: a key's, at old places, of the capacity, off the shards' keys."""
        return (self.throttles, self.old_place_throttles, self.capacity_throttles, self.unsharded_throttles)

    def map_counted(self, pool: Executor, action: Callable[[_T], _R], items: Iterable[_T]) -> list[_R]:
        """`pool.map(action, items)`, each task's throttles counted on this thread as if it had met them itself
        (and at an old place when this thread is `at_old_place`): a call is charged with what its parallel parts
        met, which the pool's threads would otherwise keep. A task's exception is raised once every count is in."""
        at_old = getattr(self._seen, "at_old", 0.0)

        def counted(item: _T) -> tuple[_R | None, Exception | None, tuple[float, ...]]:
            before = self._counts()
            outcome: _R | None = None
            error: Exception | None = None
            with self.at_old_place(at_old):
                try:
                    outcome = action(item)
                except Exception as raised:  # raised on the caller's thread, once every count is in
                    error = raised
            return outcome, error, tuple(after - first for after, first in zip(self._counts(), before, strict=True))

        done = list(pool.map(counted, items))
        for _, _, (count, old, capacity, unsharded) in done:
            self._seen.count = self.throttles + int(count)
            self._seen.old = self.old_place_throttles + old
            self._seen.capacity = self.capacity_throttles + int(capacity)
            self._seen.unsharded = self.unsharded_throttles + int(unsharded)
        failed = next((error for _, error, _ in done if error is not None), None)
        if failed is not None:
            raise failed
        return [outcome for outcome, _, _ in done]  # type: ignore[misc]

    def _call(self, operation: str, caller_input: bool = False, **kwargs: Any) -> dict[str, Any]:
        self._seen.maybe_applied = False
        self._seen.counted_answer = None
        self._seen.request = kwargs  # what the throttles the SDK's retry handler counts were met on
        try:
            return getattr(self.client, operation)(**kwargs)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in _KEY_THROTTLES and error.response is not getattr(self._seen, "counted_answer", None):
                # Counted here only when no attempt's answer went through the SDK's retry handler (an answer given
                # before the request was sent, as a stub gives it): else that handler counted it already.
                self.note_throttle(error.response)
            if caller_input and code in _REFUSED_INPUT:
                message = error.response.get("Error", {}).get("Message", "") or code
                raise ValidationError(f"DynamoDB refused the transaction: {message}") from None
            if caller_input and code == "ResourceNotFoundException":
                raise ValidationError(self._missing_tables(kwargs.get("TransactItems") or [])) from None
            if code == "ConditionalCheckFailedException":
                # Sent again after an attempt whose answer was lost: that attempt may be what the condition saw.
                raise ConditionFailed(deserialize(error.response.get("Item")), self._seen.maybe_applied) from None
            if code == "TransactionCanceledException":
                reasons = error.response.get("CancellationReasons", [])
                throttled = [n for n, reason in enumerate(reasons) if reason.get("Code") in _KEY_CANCELLATIONS]
                if throttled:
                    self.note_throttle(off_shards=partitions.off_shards(kwargs, throttled))
                self._raise_cancelled(error)
            _raise_mapped(error)
        except _NotSent as error:
            if not self._seen.maybe_applied:
                raise Overdue() from None
            # An earlier attempt's answer was lost: it may have been applied, as after a network failure.
            raise Throttled("DynamoDB's answer was lost and the write may have been applied; retry later") from error
        except BotoCoreError as error:
            _raise_mapped(error)
        finally:
            self._seen.request = None
        raise AssertionError("unreachable")

    def _missing_tables(self, items: Sequence[dict[str, Any]]) -> str:
        """Which of a transaction's tables do not exist (DynamoDB's answer names none): usually a caller's own
        table not created yet, or one in another region or account than the queue's. Nothing was written."""
        names = sorted({part.get("TableName", "") for entry in items for part in entry.values()} - {""})
        missing = []
        for name in names:
            try:
                self.client.describe_table(TableName=name)
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                    missing.append(name)
            except BotoCoreError:
                continue
        if not missing:
            # DescribeTable refused (a function granted only its items' actions) or unreachable: name the candidates.
            listed = ", ".join(repr(name) for name in names)
            return (
                f"a table of the transaction ({listed}) does not exist (in this account and region); "
                "nothing was written"
            )
        listed = ", ".join(repr(name) for name in missing)
        return (
            f"table {listed} does not exist (in this account and region); nothing was written"
            if len(missing) == 1
            else f"tables {listed} do not exist (in this account and region); nothing was written"
        )

    @staticmethod
    def _raise_cancelled(error: ClientError) -> None:
        reasons = [
            (reason.get("Code", "None"), deserialize(reason.get("Item")))
            for reason in error.response.get("CancellationReasons", [])
        ]
        if any(code in _THROTTLES for code, _ in reasons):
            raise Throttled(_THROTTLING) from error
        # DynamoDB cancels a transaction that would make an item too large with a reason of its own (moto refuses
        # the whole request instead, as it does a single write): the same error as a single write's.
        if any(
            _ITEM_TOO_LARGE in reason.get("Message", "") for reason in error.response.get("CancellationReasons", [])
        ):
            raise MessageTooLarge("the message and its attributes are too large to store") from error
        if not any(code == "ConditionalCheckFailed" for code, _ in reasons):
            _raise_mapped(error)
        raise TransactionCancelled(reasons) from None

    # Single items.
    def get(self, key: dict[str, str], consistent: bool = True) -> Item | None:
        answer = self._call("get_item", TableName=self.table, Key=serialize(key), ConsistentRead=consistent)
        return deserialize(answer.get("Item"))

    def delete(self, key: dict[str, str]) -> Item | None:
        """Deletes unconditionally and returns the old item (None if there was none)."""
        answer = self._call("delete_item", TableName=self.table, Key=serialize(key), ReturnValues="ALL_OLD")
        return deserialize(answer.get("Attributes"))

    def write(self, write: Write) -> Item | None:
        """Runs one named write; a failed condition raises `ConditionFailed` with the item as it was."""
        arguments: dict[str, Any] = {"TableName": self.table, **write.expression_arguments()}
        if write.kind == "Put":
            self._call("put_item", Item=serialize(write.item or {}), **arguments)
            return None
        arguments["Key"] = serialize(write.key or {})
        if write.kind == "Update":
            answer = self._call("update_item", UpdateExpression=write.update, ReturnValues=write.returns, **arguments)
        else:
            answer = self._call("delete_item", ReturnValues=write.returns, **arguments)
        return deserialize(answer.get("Attributes"))

    def transact_writes(self, writes: Sequence[Write]) -> None:
        """All writes or none; a failed condition raises `TransactionCancelled` with each action's reason. Sent
        again after a lost answer, as `transact_items` is: a FIFO send whose answer was lost learns that it
        committed instead of reporting a failure its caller would answer with a second copy."""
        self._transact([write.transact_item(self.table) for write in writes], str(uuid.uuid4()), caller_input=False)

    def transact_items(self, items: Sequence[dict[str, Any]], token: str | None = None) -> None:
        """A transaction of items already in the low-level format, on any table (a caller's own items beside
        ours). The client request token makes a repeat idempotent for ten minutes: when the SDK sends a commit
        again after a lost answer, DynamoDB answers success without applying it twice, instead of failing the
        conditions the first attempt changed. DynamoDB's refusals of the items' shape are `ValidationError`."""
        self._transact(list(items), token or str(uuid.uuid4()), caller_input=True)

    def _transact(self, items: list[dict[str, Any]], token: str, caller_input: bool) -> None:
        """Sends the very same request again, token included, while its answer is lost after the SDK's own
        retries (or DynamoDB says the first is still in progress): the answer of a repeat is the first commit's
        (success, applied once) or, if the first never arrived, the request's own. Raises `OutcomeUnknown` when
        every answer was lost."""
        started = time.monotonic()
        for attempt in range(_TRANSACT_SENDS):
            try:
                self._call(
                    "transact_write_items", caller_input=caller_input, TransactItems=items, ClientRequestToken=token
                )
                return
            except Throttled as error:
                # Held back by its deadline after an answer was lost (this send's, or an earlier send's): the
                # request may have been applied and cannot go again.
                held = isinstance(error.__cause__, _NotSent) or (isinstance(error, Overdue) and attempt > 0)
                if not held and not _outcome_unknown(error):
                    raise
                if held or attempt == _TRANSACT_SENDS - 1 or time.monotonic() - started > _RESEND_SECONDS:
                    raise OutcomeUnknown(
                        "DynamoDB's answers were lost: the transaction may have committed; retry", token
                    ) from error
                _backoff(attempt)

    # Many items.
    def batch_get(self, keys: list[dict[str, str]]) -> list[Item]:
        """Each distinct key once: DynamoDB refuses a batch that names one item twice, or none."""
        found: list[Item] = []
        distinct = list({(key["pk"], key["sk"]): key for key in keys}.values())
        if not distinct:
            return found
        pending: dict[str, Any] = {self.table: {"Keys": [serialize(k) for k in distinct], "ConsistentRead": True}}
        for attempt in range(_BATCH_RETRIES):
            answer = self._call("batch_get_item", RequestItems=pending)
            found.extend(deserialize(item) for item in answer.get("Responses", {}).get(self.table, []))
            pending = answer.get("UnprocessedKeys") or {}
            if not pending:
                return found
            _backoff(attempt)
        raise Throttled("DynamoDB kept items unprocessed; retry later")

    def batch_write(self, puts: list[Item] = (), deletes: list[dict[str, str]] = ()) -> list[int]:
        """Writes up to 25 unconditioned puts and deletes; returns the positions (puts first) left unprocessed
        after bounded retries, so that the caller can report them instead of losing them."""
        requests = [{"PutRequest": {"Item": serialize(item)}} for item in puts]
        requests += [{"DeleteRequest": {"Key": serialize(key)}} for key in deletes]
        if len(requests) > 25:
            raise ValueError("a batch write takes at most 25 requests")
        positions = {_request_id(request): index for index, request in enumerate(requests)}
        pending = requests
        for attempt in range(_BATCH_RETRIES):
            if not pending:
                return []
            try:
                answer = self._call("batch_write_item", RequestItems={self.table: pending})
            except Throttled as error:
                if isinstance(error.__cause__, HTTPClientError | _NotSent):
                    pending = self._write_each_once(pending)
                    break
                if isinstance(error, Overdue) and attempt == 0:
                    raise  # nothing of the batch was sent: the caller may build it again
                if attempt == _BATCH_RETRIES - 1 or at_capacity(error) or isinstance(error, Overdue):
                    # A table at its capacity stays there until its units are raised (minutes): the SDK's own
                    # retries have waited already, and more rounds would only add requests to it.
                    break
                _backoff(attempt)
                continue
            pending = answer.get("UnprocessedItems", {}).get(self.table, [])
            if pending:  # items left unprocessed: DynamoDB throttled their keys
                self.note_throttle(off_shards=partitions.off_shards({"RequestItems": {self.table: pending}}))
                _backoff(attempt)
        return sorted(positions[_request_id(request)] for request in pending)

    def _write_each_once(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """After a batch's answer was lost: a put whose item is there was stored by it (every message key is
        new); a put whose item is missing is left for the caller to report, never written again, since it may
        have been stored, received and deleted meanwhile (written again it would come back from the dead).
        Deletes are sent again as they were. Returns those left."""
        puts = [request for request in requests if "PutRequest" in request]
        keys = [{name: request["PutRequest"]["Item"][name] for name in ("pk", "sk")} for request in puts]
        try:
            stored = {(item["pk"], item["sk"]) for item in self.batch_get([deserialize(key) for key in keys])}
        except Throttled:
            return requests
        left = [
            request for request, key in zip(puts, keys, strict=True) if tuple(deserialize(key).values()) not in stored
        ]
        for request in requests:
            if "DeleteRequest" in request:
                try:
                    self._call("delete_item", TableName=self.table, Key=request["DeleteRequest"]["Key"])
                except Throttled:
                    left.append(request)
        return left

    def query(
        self,
        pk: str,
        *,
        index: bool = False,
        sk_condition: str = "",
        values: dict[str, Any] | None = None,
        limit: int | None = None,
        forward: bool = True,
        projection: str | None = None,
        filter: str | None = None,
        names: dict[str, str] | None = None,
        start: dict[str, Any] | None = None,
        consistent: bool = False,
        count: bool = False,
    ) -> tuple[list[Item], dict[str, Any] | None, int]:
        """One page: (items, the key to continue from or None, items read)."""
        key_name = "gsi1pk" if index else "pk"
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": f"{key_name} = :qpk" + (f" AND {sk_condition}" if sk_condition else ""),
            "ExpressionAttributeValues": serialize({":qpk": pk, **(values or {})}),
            "ScanIndexForward": forward,
        }
        if index:
            kwargs["IndexName"] = INDEX_NAME
        elif consistent:
            kwargs["ConsistentRead"] = True
        if limit:
            kwargs["Limit"] = limit
        if projection:
            kwargs["ProjectionExpression"] = projection
        if filter:
            kwargs["FilterExpression"] = filter
        if names:
            kwargs["ExpressionAttributeNames"] = names
        if start:
            kwargs["ExclusiveStartKey"] = start
        if count:
            kwargs["Select"] = "COUNT"
        answer = self._call("query", **kwargs)
        items = [deserialize(item) for item in answer.get("Items", [])]
        return items, answer.get("LastEvaluatedKey"), int(answer.get("ScannedCount", 0))

    def due(
        self,
        pk: str,
        now_ms: int,
        limit: int,
        forward: bool = True,
        start: dict[str, Any] | None = None,
        priority: int = 0,
    ) -> tuple[list[Item], dict[str, Any] | None, int]:
        """One page of an index partition's entries of one priority that are due by `now_ms` (visible messages,
        available groups): in-flight, delayed and locked ones sort after now, other priorities elsewhere, and
        neither is ever read."""
        condition, values = _due(priority, now_ms)
        return self.query(
            pk, index=True, sk_condition=condition, values=values, limit=limit, forward=forward, start=start
        )

    def due_all(self, pk: str, now_ms: int, max_items: int, priority: int = 0) -> Iterator[Item]:
        """Every due entry of one priority of an index partition, up to `max_items` read."""
        condition, values = _due(priority, now_ms)
        return self.query_all(pk, index=True, sk_condition=condition, values=values, max_items=max_items)

    def earliest(self, pk: str, priority: int = 0, limit: int = 1) -> list[Item]:
        """The first index entries of one priority, due or not: when its partition has something visible next."""
        low, high = band_range(priority)
        condition, values = "gsi1sk BETWEEN :lo AND :hi", {":lo": low or "0", ":hi": high}
        items, _, _ = self.query(pk, index=True, sk_condition=condition, values=values, limit=limit)
        return items

    def ready_markers(self, pk: str, high: str, limit: int, start: dict[str, Any] | None = None) -> tuple:
        """One page of a queue's ready markers whose index key is at most `high` (see `keys.ready_index_sk`)."""
        return self.query(pk, index=True, sk_condition="gsi1sk <= :hi", values={":hi": high}, limit=limit, start=start)

    def after(self, pk: str, after: str | None, limit: int) -> tuple[list[Item], bool]:
        """One page of a partition's items in sort-key order, those after `after` (all when None), strongly
        consistent: (items, whether more may follow). One Query of at most `limit` items (and 1 MB)."""
        condition, values = ("sk > :after", {":after": after}) if after is not None else ("", None)
        items, more, _ = self.query(pk, sk_condition=condition, values=values, limit=limit, consistent=True)
        return items, more is not None

    def prefixed(self, pk: str, prefix: str, attributes: tuple[str, ...] = ()) -> list[Item]:
        """The items of a partition whose sort key starts with `prefix`, strongly consistent; only the named
        `attributes` of each when any are named (an answer costs by its attributes, in moto's serializer most)."""
        projection = {
            "projection": ", ".join(f"#a{n}" for n in range(len(attributes))),
            "names": {f"#a{n}": attribute for n, attribute in enumerate(attributes)},
        }
        return list(
            self.query_all(
                pk,
                sk_condition="begins_with(sk, :prefix)",
                values={":prefix": prefix},
                consistent=True,
                **(projection if attributes else {}),
            )
        )

    def query_all(self, pk: str, *, max_items: int | None = None, **kwargs: Any) -> Iterator[Item]:
        """Every item of a partition (or index partition), page by page, up to `max_items` read."""
        start, read = None, 0
        while True:
            limit = None if max_items is None else max_items - read
            items, start, scanned = self.query(pk, start=start, limit=limit, **kwargs)
            read += scanned
            yield from items
            if not start or (max_items is not None and read >= max_items):
                return

    def delete_partition(
        self,
        pk: str,
        sk_prefix: str | None = None,
        *,
        one_by_one: str | None = None,
        removed: Callable[[list[Item]], Any] | None = None,
    ) -> int:
        """Deletes every item of a partition; returns how many were deleted. Items read with the attribute
        `one_by_one` are deleted each on its own, answering the item it removed, and `removed` is told those old
        items: what the deletes really removed, never an item read earlier that left its key meanwhile (moved to
        the DLQ, whose copy names the same object). The others go in batched deletes of 25, which answer nothing
        of what they found. A delete repeated by the SDK after a lost answer finds nothing: what it removed is
        not told (left behind, never removed twice)."""
        deleted = 0
        batch: list[dict[str, str]] = []
        gone: list[Item] = []
        condition, values = ("begins_with(sk, :prefix)", {":prefix": sk_prefix}) if sk_prefix else ("", None)
        names = {"#one": one_by_one} if one_by_one else None
        projection = "pk, sk, #one" if one_by_one else "pk, sk"
        for item in self.query_all(pk, sk_condition=condition, values=values, projection=projection, names=names):
            key = {"pk": item["pk"], "sk": item["sk"]}
            if one_by_one is not None and one_by_one in item:
                old = self.delete(key)
                gone += [old] if old is not None else []
            else:
                batch.append(key)
            if len(batch) == 25:
                deleted += self._delete_keys(batch)
                batch = []
            if len(gone) == 25:
                deleted += _told(gone, removed)
                gone = []
        return deleted + (self._delete_keys(batch) if batch else 0) + _told(gone, removed)

    def _delete_keys(self, keys: list[dict[str, str]]) -> int:
        if self.batch_write(deletes=keys):
            raise Throttled("DynamoDB kept deletes unprocessed; retry later")
        return len(keys)


def _told(items: list[Item], removed: Callable[[list[Item]], Any] | None) -> int:
    if items and removed is not None:
        removed(items)
    return len(items)


def _due(priority: int, now_ms: int) -> tuple[str, dict[str, Any]]:
    if not priority:
        return "gsi1sk <= :hi", {":hi": index_upper(now_ms)}
    low, high = band_due_range(priority, now_ms)
    return "gsi1sk BETWEEN :lo AND :hi", {":lo": low, ":hi": high}


def _request_id(request: dict[str, Any]) -> str:
    return repr(request)


def _backoff(attempt: int) -> None:
    time.sleep(random.uniform(0, min(1.0, 0.02 * 2**attempt)))
