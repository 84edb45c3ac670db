"""DynamoDB failing the ways the service and the network fail, injected with botocore event hooks.

Two places to fail, because they test different things:

* `Stage.CALL` (`before-call` / `after-call`): the failure reaches the core without the SDK's retries, so every
  injected fault is seen by the code under test. This is what the stress runs use: the core must never lose or
  duplicate a message, never mistake a throttle for a lost claim race, and surface `Throttled`.
* `Stage.SEND` (`before-send`): the failure replaces one HTTP attempt, so the SDK's own retry policy (attempts,
  backoff) runs as it would against the service.

A fault is either *before* the call (nothing was applied: throttles, 500s, timeouts, a partial batch) or *after*
it (the call was applied and its answer lost: the nastiest case, since a retry then repeats a write that
happened). An answer lost *and retried by the SDK* never reaches the core as an error at all: botocore's standard
retry mode retries a `ReadTimeoutError` (a transient `HTTPClientError`) with the very same request, so the write is
applied twice and the core reads the second answer (a failed condition, when the first write changed what the
condition reads). Whether the SDK retries is asked of the client itself, so a client told not to retry some
request (by a `needs-retry` handler) sees the timeout instead. Only `Stage.CALL` emulates it.
"""

from __future__ import annotations

import contextlib
import enum
import json
import math
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from botocore import xform_name
from botocore.awsrequest import AWSResponse
from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, ReadTimeoutError
from botocore.hooks import first_non_none_response
from moto.core.botocore_stubber import MockRawResponse


class Stage(enum.Enum):
    CALL = "call"
    SEND = "send"


class Kind(enum.StrEnum):
    """Every kind of fault, named as it shows up in the run's figures."""

    PROVISIONED_THROUGHPUT = "ProvisionedThroughputExceededException"
    # The same code with the reason a provisioned table gives at its units (a table's, not a key's): no shard growth.
    CAPACITY = "ProvisionedThroughputExceededException(ProvisionedThroughputExceeded)"
    THROTTLING = "ThrottlingException"
    INTERNAL_SERVER_ERROR = "InternalServerError"
    READ_TIMEOUT = "ReadTimeoutError"
    CONNECT_TIMEOUT = "ConnectTimeoutError"
    TRANSACTION_THROTTLED = "TransactionCanceledException(ThrottlingError)"
    UNPROCESSED_ITEMS = "UnprocessedItems"
    ANSWER_LOST = "answer lost after the write"
    ANSWER_LOST_RETRIED = "applied, answer lost, SDK retried"


# Failures that every operation can meet before anything is applied.
BEFORE_KINDS: tuple[Kind, ...] = (
    Kind.PROVISIONED_THROUGHPUT,
    Kind.CAPACITY,
    Kind.THROTTLING,
    Kind.INTERNAL_SERVER_ERROR,
    Kind.READ_TIMEOUT,
    Kind.CONNECT_TIMEOUT,
)
# The writes a retry can apply twice; a read sent again changes nothing.
WRITES: frozenset[str] = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
_STATUS = {Kind.PROVISIONED_THROUGHPUT: 400, Kind.CAPACITY: 400, Kind.THROTTLING: 400, Kind.INTERNAL_SERVER_ERROR: 500}
_ENDPOINT = "https://dynamodb.us-east-1.amazonaws.com"


@dataclass
class FaultInjector:
    """Fails a share of one client's DynamoDB calls.

    `before_rate` of the calls fail before they are applied (a kind drawn from `before_kinds`, plus the
    operation-specific kinds when `operation_kinds` is set: a transaction cancelled by throttling, a batch write
    left partly unprocessed), or the rate `rates` names for the operation; `after_rate` of the calls that
    succeeded lose their answer; `retried_rate` of the writes are applied, lose their answer and are sent again by
    the SDK (or, if the SDK would not retry them, surface as the timeout), with `meanwhile` run after the first
    attempt (what the rest of the world does during the timeout and the backoff; nothing is injected into its
    calls). `operations` limits the faults to some operation names (all when empty), `selects` to the requests it
    accepts (asked once per call, after `operations`, with the operation name and the request body), `budget` to
    a number of faults (no limit when None). `unprocessed_share` is the share of a batch write left unprocessed (a
    random part when None). Counts are kept by kind, and at `Stage.SEND` the HTTP attempts by operation; when
    `label` is given (asked with the request's body, on the thread that makes the call), also by label and kind in
    `counts_by_label`.
    """

    before_rate: float = 0.0
    after_rate: float = 0.0
    retried_rate: float = 0.0
    stage: Stage = Stage.CALL
    before_kinds: tuple[Kind, ...] = BEFORE_KINDS
    operation_kinds: bool = True
    rates: dict[str, float] = field(default_factory=dict)
    operations: frozenset[str] = frozenset()
    selects: Callable[[str, dict[str, Any]], bool] | None = None
    meanwhile: Callable[[], object] | None = None
    budget: int | None = None
    unprocessed_share: float | None = None
    seed: int = 0
    label: Callable[[dict[str, Any]], str] | None = None
    counts: Counter = field(default_factory=Counter)
    counts_by_label: Counter = field(default_factory=Counter)
    attempts: Counter = field(default_factory=Counter)
    enabled: bool = True

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()
        self._clients: list[Any] = []
        self._quiet_threads: set[int] = set()

    # Wiring.
    def attach(self, client: Any) -> FaultInjector:
        events = client.meta.events
        if self.stage is Stage.CALL:
            events.register("before-parameter-build.dynamodb", self._keep_parameters, unique_id=self._id("params"))
            events.register(
                "before-call.dynamodb",
                lambda **kwargs: self._before_call(client, **kwargs),
                unique_id=self._id("before-call"),
            )
            events.register("after-call.dynamodb", self._after_call, unique_id=self._id("after-call"))
        else:
            events.register_first("before-send.dynamodb", self._before_send, unique_id=self._id("before-send"))
        self._clients.append(client)
        return self

    def detach(self) -> None:
        for client in self._clients:
            events = client.meta.events
            events.unregister("before-parameter-build.dynamodb", unique_id=self._id("params"))
            events.unregister("before-call.dynamodb", unique_id=self._id("before-call"))
            events.unregister("after-call.dynamodb", unique_id=self._id("after-call"))
            events.unregister("before-send.dynamodb", unique_id=self._id("before-send"))
        self._clients.clear()

    def _id(self, hook: str) -> str:
        return f"fault-injector-{id(self)}-{hook}"

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    # Decisions.
    def _draw(self) -> float:
        with self._lock:
            return self._random.random()

    def _choice(self, options: Iterable[Kind]) -> Kind:
        with self._lock:
            return self._random.choice(list(options))

    def _targets(self, operation: str, request: dict[str, Any]) -> bool:
        if not self.enabled or threading.get_ident() in self._quiet_threads:
            return False
        if self.operations and operation not in self.operations:
            return False
        if self.selects is not None and not self.selects(operation, request):
            return False
        return self._within_budget()

    def _within_budget(self) -> bool:
        return self.budget is None or self.total < self.budget

    def _count(self, kind: Kind, request: dict[str, Any]) -> None:
        label = self.label(request) if self.label is not None else None
        with self._lock:
            self.counts[kind] += 1
            if label is not None:
                self.counts_by_label[(label, kind)] += 1

    def _before_kind(self, operation: str, request: dict[str, Any]) -> Kind | None:
        """A failure before the call is applied, drawn for a call the injector targets; None for no failure."""
        if self._draw() >= self.rates.get(operation, self.before_rate):
            return None
        kinds = list(self.before_kinds)
        if self.operation_kinds and operation == "TransactWriteItems":
            kinds.append(Kind.TRANSACTION_THROTTLED)
        if self.operation_kinds and operation == "BatchWriteItem":
            kinds += [Kind.UNPROCESSED_ITEMS] * max(1, len(kinds))
        if not kinds:
            return None
        kind = self._choice(kinds)
        self._count(kind, request)
        return kind

    # Stage.CALL: before-call may answer instead of DynamoDB, or apply the request once more before it is sent;
    # after-call may lose an answer.
    @staticmethod
    def _keep_parameters(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        """The call's parameters as the caller gave them (after botocore filled in any idempotency token), for a
        request that must be applied twice."""
        context["fault_parameters"] = params

    def _before_call(self, client: Any, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> Any:
        operation = model.name
        request = _body(params)
        targeted = self._targets(operation, request)
        kind = self._before_kind(operation, request) if targeted else None
        context["fault_request"] = request
        if kind is None:
            if targeted and self._retries(operation):
                context["fault_may_lose_answer"] = False
                self._apply_twice(client, model, params, context)
                return None
            context["fault_may_lose_answer"] = targeted
            return None
        if kind is Kind.UNPROCESSED_ITEMS:
            return self._leave_unprocessed(params, request, context)
        context["fault_may_lose_answer"] = False
        return _failure(kind, request)

    def _retries(self, operation: str) -> bool:
        return self.retried_rate > 0 and operation in WRITES and self._draw() < self.retried_rate

    def _apply_twice(self, client: Any, model: Any, params: dict[str, Any], context: dict[str, Any]) -> None:
        """The first attempt: applied, its answer (success or error) lost. If the SDK retries a read timeout of
        this request (its retry policy and the client's own `needs-retry` handlers decide, as they would), the
        call goes on as the retry, and its answer is the one the caller reads; if not, the caller reads the
        timeout of the first attempt.

        A transaction is the exception. botocore fills `ClientRequestToken` in once per call, so its retry carries
        the first attempt's token, and DynamoDB answers a retry of a transaction that succeeded with that success,
        applying nothing again. moto ignores the token: applying the transaction a second time here would be a
        fault the service never makes, so the call is sent once, and its answer stands for both attempts."""
        operation = model.name
        if operation != "TransactWriteItems":
            self._elsewhere(lambda: _first_attempt(client, operation, context["fault_parameters"]))
        timeout = ReadTimeoutError(endpoint_url=_ENDPOINT)
        retried = _sdk_retries(client, model, params, timeout)
        self._count(Kind.ANSWER_LOST_RETRIED if retried else Kind.ANSWER_LOST, _body(params))
        if self.meanwhile is not None:
            self._elsewhere(self.meanwhile)
        if retried:
            # botocore counts the retry in the answer's metadata (`RetryAttempts`), which the core reads to tell
            # its own repeated request from another caller's write.
            context["fault_retried"] = True
            return
        if operation != "TransactWriteItems":
            raise timeout
        context["fault_loses_answer"] = True

    def _elsewhere(self, call: Callable[[], object]) -> None:
        """Runs `call` on a thread of its own, as another process would (nothing of this thread's state is
        touched), with no fault injected into the DynamoDB calls it makes there; waits for it."""
        failure: list[BaseException] = []

        def run() -> None:
            with self._lock:
                self._quiet_threads.add(threading.get_ident())
            try:
                call()
            except BaseException as error:  # handed to the waiting thread, raised there
                failure.append(error)
            finally:
                with self._lock:
                    self._quiet_threads.discard(threading.get_ident())

        thread = threading.Thread(target=run, name="fault-elsewhere")
        thread.start()
        thread.join()
        if failure:
            raise failure[0]

    def _after_call(
        self, http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        left = context.pop("fault_unprocessed", None)
        if left:
            table, requests = left
            parsed.setdefault("UnprocessedItems", {}).setdefault(table, []).extend(requests)
        if context.pop("fault_retried", False):
            parsed.setdefault("ResponseMetadata", {})["RetryAttempts"] = 1
        if context.pop("fault_loses_answer", False):
            raise ReadTimeoutError(endpoint_url=_ENDPOINT)
        if not context.pop("fault_may_lose_answer", False) or http_response.status_code >= 300:
            return
        if self.enabled and self._within_budget() and self._draw() < self.after_rate:
            self._count(Kind.ANSWER_LOST, context.get("fault_request", {}))
            raise ReadTimeoutError(endpoint_url=_ENDPOINT)

    def _leave_unprocessed(self, params: dict[str, Any], request: dict[str, Any], context: dict[str, Any]) -> Any:
        """Sends part of the batch for real and reports the rest unprocessed, as DynamoDB does under load.

        The unprocessed entries are reported as the caller gave them, as botocore parses them out of an answer:
        the request's body holds binary values in base64, and handed back from there a retry would store the
        base64 text itself (a compressed body stored so could never be read back)."""
        ((table, requests),) = request["RequestItems"].items()
        given = context["fault_parameters"]["RequestItems"][table]
        with self._lock:
            if self.unprocessed_share is None:
                chosen = set(self._random.sample(range(len(requests)), self._random.randrange(len(requests))))
            else:
                chosen = set(range(len(requests) - math.ceil(len(requests) * self.unprocessed_share)))
        kept = [entry for position, entry in enumerate(requests) if position in chosen]
        left = [entry for position, entry in enumerate(given) if position not in chosen]
        context["fault_may_lose_answer"] = False
        if not kept:
            return AWSResponse(_ENDPOINT, 200, {}, MockRawResponse(b"{}")), {
                "UnprocessedItems": {table: left},
                "ResponseMetadata": {"HTTPStatusCode": 200},
            }
        params["body"] = json.dumps({**request, "RequestItems": {table: kept}}).encode()
        context["fault_unprocessed"] = (table, left)
        return None

    # Stage.SEND: one HTTP attempt fails; the SDK decides whether to retry.
    def _before_send(self, request: Any, **_: Any) -> Any:
        operation = (request.headers.get("X-Amz-Target") or b"").decode().rsplit(".", 1)[-1]
        body = json.loads(request.body or b"{}")
        with self._lock:
            self.attempts[operation] += 1
        kind = self._before_kind(operation, body) if self._targets(operation, body) else None
        if kind is None:
            return None
        if kind in (Kind.READ_TIMEOUT, Kind.CONNECT_TIMEOUT):
            raise _timeout(kind)
        if kind is Kind.UNPROCESSED_ITEMS:
            left = json.dumps({"UnprocessedItems": body["RequestItems"]}).encode()
            return AWSResponse(request.url, 200, {}, MockRawResponse(left))
        status, parsed = _error_document(kind, body)
        payload = {"__type": f"com.amazonaws.dynamodb.v20120810#{parsed['Error']['Code']}", "message": "injected"}
        for name in ("CancellationReasons", "ThrottlingReasons"):
            if name in parsed:
                payload[name] = parsed[name]
        return AWSResponse(request.url, status, {}, MockRawResponse(json.dumps(payload).encode()))


def _sdk_retries(client: Any, model: Any, request: dict[str, Any], error: Exception) -> bool:
    """Whether the client's SDK would send `request` again after `error` on its first attempt: the question
    botocore's endpoint asks its `needs-retry` handlers, asked the same way."""
    answers = client.meta.events.emit(
        f"needs-retry.{model.service_model.service_id.hyphenize()}.{model.name}",
        response=None,
        endpoint=None,
        operation=model,
        attempts=1,
        caught_exception=error,
        request_dict=request,
    )
    delay = first_non_none_response(answers)
    return delay is not None and delay is not False


def _first_attempt(client: Any, operation: str, parameters: dict[str, Any]) -> None:
    """The call, sent ahead of itself; its answer is lost, whatever it is."""
    with contextlib.suppress(ClientError, BotoCoreError):
        getattr(client, xform_name(operation))(**parameters)


def _body(params: dict[str, Any]) -> dict[str, Any]:
    body = params.get("body") or b"{}"
    return json.loads(body.decode() if isinstance(body, bytes) else body)


def _timeout(kind: Kind) -> Exception:
    if kind is Kind.READ_TIMEOUT:
        return ReadTimeoutError(endpoint_url=_ENDPOINT)
    return ConnectTimeoutError(endpoint_url=_ENDPOINT)


def _error_document(kind: Kind, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    if kind is Kind.TRANSACTION_THROTTLED:
        actions = request.get("TransactItems", [])
        reasons = [{"Code": "None"} for _ in actions]
        if reasons:
            reasons[-1] = {"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity."}
        return 400, {
            "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"},
            "CancellationReasons": reasons,
        }
    if kind is Kind.CAPACITY:
        writes = any(name in request for name in ("Item", "UpdateExpression", "TransactItems", "RequestItems"))
        reason = f"Table{'Write' if writes else 'Read'}ProvisionedThroughputExceeded"
        return 400, {
            "Error": {"Code": Kind.PROVISIONED_THROUGHPUT.value, "Message": "injected"},
            "ThrottlingReasons": [{"reason": reason, "resource": "injected"}],
        }
    code = kind.value
    return _STATUS[kind], {"Error": {"Code": code, "Message": "injected"}}


def _failure(kind: Kind, request: dict[str, Any]) -> tuple[AWSResponse, dict[str, Any]]:
    if kind in (Kind.READ_TIMEOUT, Kind.CONNECT_TIMEOUT):
        raise _timeout(kind)
    status, parsed = _error_document(kind, request)
    parsed["ResponseMetadata"] = {"HTTPStatusCode": status}
    return AWSResponse(_ENDPOINT, status, {}, MockRawResponse(b"")), parsed
