"""Where `dq` sends its work: the HTTP API (the local server or a deployed API) or a table through the core.

Both targets answer with the HTTP API's JSON shapes, and both fail with one exception type, `TargetError`, that
carries the API's error code and message. Commands are written once against `Target` and never learn which one
they talk to, so every command behaves the same way on both.
"""

from __future__ import annotations

import contextlib
import json
import logging
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol
from urllib.error import HTTPError, URLError
from urllib.parse import quote, urlencode, urlsplit

from queue_api.operations import BY_NAME

from . import signing

Json = dict[str, Any]
# The answer's status, headers and body; an error status is an answer, not an exception.
Transport = Callable[[urllib.request.Request, float], tuple[int, Mapping[str, str], bytes]]

LOCAL_ENDPOINT: Final = "http://127.0.0.1:8080"
REQUEST_TIMEOUT_SECONDS: Final = 30.0
_MESSAGE_KEYS: Final = frozenset(
    {"body", "attributes", "delay_seconds", "group_id", "dedup_id", "priority", "deliver_at"}
)


class TargetError(Exception):
    """A refused or failed request: the API's `code` and `message`, or the same shape for a transport failure
    (`ConnectionError`, `Timeout`, `NoCredentials`, …) so that every failure prints the same way."""

    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = " ".join(message.split())
        self.status = status


class Target(Protocol):
    """The queue operations of the HTTP API; each returns that route's JSON answer."""

    name: str

    def create_queue(self, queue: str, settings: Mapping[str, Any]) -> tuple[Json, bool]:
        """The queue's settings and whether this call created it."""

    def list_queues(self) -> Json: ...

    def get_queue(self, queue: str) -> Json: ...

    def update_queue(self, queue: str, changes: Mapping[str, Any]) -> Json:
        """The queue's settings after `changes` (the updatable settings only)."""

    def delete_queue(self, queue: str) -> Json: ...

    def clients(self, queue: str) -> list[str]:
        """The ids of the clients that have sent to the queue."""

    def send(self, queue: str, client: str, message: Mapping[str, Any]) -> Json: ...

    def send_batch(self, queue: str, client: str, messages: Sequence[Mapping[str, Any]]) -> Json: ...

    def receive(self, queue: str, client: str | None, request: Mapping[str, Any]) -> Json: ...

    def delete(self, queue: str, client: str | None, receipt_handles: Sequence[str]) -> Json: ...

    def change_visibility(self, queue: str, client: str, receipt_handle: str, visibility_timeout: int) -> Json: ...

    def release(
        self, queue: str, client: str, receipt_handle: str, delay_seconds: int | None, reason: str | None = None
    ) -> Json: ...

    def peek(self, queue: str, client: str, limit: int) -> Json: ...

    def browse(self, queue: str, client: str, limit: int, filters: Mapping[str, Any] | None = None) -> Json:
        """A page of the sub-queue's waiting messages in any state; `filters`: `state`, `priority`, `group`,
        `cursor` (None values left out)."""

    def get(self, queue: str, client: str, message_id: str) -> Json: ...

    def cancel(self, queue: str, client: str, message_id: str) -> Json: ...

    def purge(self, queue: str, client: str) -> Json: ...

    def stats(self, queue: str, client: str) -> Json: ...

    def dlq_list(self, queue: str, client: str, limit: int) -> Json: ...

    def redrive(
        self,
        queue: str,
        client: str,
        max_messages: int | None,
        message_ids: list[str] | None,
        reason: str | None = None,
    ) -> Json: ...

    def dlq_reasons(self, queue: str, client: str) -> Json: ...

    def archive_list(self, queue: str, client: str | None, query: Mapping[str, Any]) -> Json: ...

    def archive_get(self, queue: str, client: str, message_id: str) -> Json: ...

    def replay_start(self, queue: str, client: str, request: Mapping[str, Any]) -> Json:
        """A new replay of the archive (`ReplayRequest`), run for its `run_seconds`; where it stands."""

    def replay_run(self, queue: str, client: str, replay_id: str, seconds: float) -> Json: ...

    def replay_list(self, queue: str, client: str, replay_id: str | None, limit: int) -> Json: ...

    def replay_cancel(self, queue: str, client: str, replay_id: str) -> Json: ...

    def move_to_dlq(self, queue: str, client: str, message_id: str) -> Json: ...


def _urlopen(request: urllib.request.Request, timeout: float) -> tuple[int, Mapping[str, str], bytes]:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers.items()), response.read()
    except HTTPError as error:
        with error:
            return error.code, dict(error.headers.items()), error.read()


class HttpTarget:
    """The HTTP API at `endpoint` (with a stage path for a deployed API). Requests to API Gateway hosts are
    SigV4-signed with the caller's credentials; the local server's are sent as they are."""

    def __init__(self, endpoint: str, transport: Transport | None = None, credentials: Any = None) -> None:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TargetError("ValidationError", f"endpoint {endpoint!r} is not an http:// or https:// URL")
        self.name = endpoint.rstrip("/")
        self._transport = transport or _urlopen
        self._region = signing.execute_api_region(parts.hostname)
        self._credentials = credentials

    def _call(
        self,
        operation: str,
        body: Any = None,
        *,
        query: Mapping[str, Any] | None = None,
        timeout: float = REQUEST_TIMEOUT_SECONDS,
        **names: str,
    ) -> tuple[int, Json]:
        """The route of `operation` (`queue_api.operations`), its path parameters (`q`, `c`, `id`) from `names`."""
        route = BY_NAME[operation]
        method = route.method
        path = route.path_for(**{name: _segment(value) for name, value in names.items()})
        url = self.name + path + (f"?{urlencode(query)}" if query else "")
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self._region is not None:
            headers = signing.signed_headers(method, url, headers, data, self._region, self._signing_credentials())
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            status, answer_headers, raw = self._transport(request, timeout)
        except TimeoutError:
            raise TargetError("Timeout", f"{self.name} did not answer within {timeout:.0f} s") from None
        except URLError as error:
            raise TargetError("ConnectionError", f"cannot reach {self.name}: {_reason(error)}") from None
        except OSError as error:
            raise TargetError("ConnectionError", f"cannot reach {self.name}: {error.strerror or error}") from None
        answer = _json_object(raw)
        if status >= 400:
            raise _http_error(status, answer_headers, answer, raw)
        if answer is None:
            raise TargetError("InvalidResponse", f"{method} {path} answered {status} without a JSON object", status)
        return status, answer

    def _signing_credentials(self) -> Any:
        credentials = self._credentials or signing.caller_credentials()
        if credentials is None:
            raise TargetError(
                "NoCredentials",
                f"no AWS credentials to sign requests to {self.name}: configure a profile or set AWS_ACCESS_KEY_ID",
            )
        return credentials.get_frozen_credentials() if hasattr(credentials, "get_frozen_credentials") else credentials

    def create_queue(self, queue: str, settings: Mapping[str, Any]) -> tuple[Json, bool]:
        status, answer = self._call("create_queue", dict(settings), q=queue)
        return answer, status == 201

    def list_queues(self) -> Json:
        return self._call("list_queues")[1]

    def get_queue(self, queue: str) -> Json:
        return self._call("get_queue", q=queue)[1]

    def update_queue(self, queue: str, changes: Mapping[str, Any]) -> Json:
        return self._call("update_queue", dict(changes), q=queue)[1]

    def delete_queue(self, queue: str) -> Json:
        return self._call("delete_queue", q=queue)[1]

    def clients(self, queue: str) -> list[str]:
        return list(self._call("list_clients", q=queue)[1]["clients"])

    def send(self, queue: str, client: str, message: Mapping[str, Any]) -> Json:
        return self._call("send", dict(message), q=queue, c=client)[1]

    def send_batch(self, queue: str, client: str, messages: Sequence[Mapping[str, Any]]) -> Json:
        body = {"messages": [dict(message) for message in messages]}
        return self._call("send", body, q=queue, c=client)[1]

    def receive(self, queue: str, client: str | None, request: Mapping[str, Any]) -> Json:
        """`client` None: a queue-wide receive, from every client of the queue."""
        timeout = REQUEST_TIMEOUT_SECONDS + float(request.get("wait_seconds") or 0)
        if client is None:
            return self._call("receive_any", dict(request), q=queue, timeout=timeout)[1]
        return self._call("receive", dict(request), q=queue, c=client, timeout=timeout)[1]

    def delete(self, queue: str, client: str | None, receipt_handles: Sequence[str]) -> Json:
        body = {"receipt_handles": list(receipt_handles)}
        if client is None:
            return self._call("delete_any", body, q=queue)[1]
        return self._call("delete", body, q=queue, c=client)[1]

    def change_visibility(self, queue: str, client: str, receipt_handle: str, visibility_timeout: int) -> Json:
        body = {"receipt_handle": receipt_handle, "visibility_timeout": visibility_timeout}
        return self._call("change_visibility", body, q=queue, c=client)[1]

    def release(
        self, queue: str, client: str, receipt_handle: str, delay_seconds: int | None, reason: str | None = None
    ) -> Json:
        body = {"receipt_handle": receipt_handle, "delay_seconds": delay_seconds}
        if reason is not None:
            body["reason"] = reason
        return self._call("release", body, q=queue, c=client)[1]

    def peek(self, queue: str, client: str, limit: int) -> Json:
        return self._call("peek", q=queue, c=client, query={"limit": limit})[1]

    def browse(self, queue: str, client: str, limit: int, filters: Mapping[str, Any] | None = None) -> Json:
        given = {name: value for name, value in (filters or {}).items() if value is not None}
        return self._call("browse", q=queue, c=client, query={"limit": limit, **given})[1]

    def get(self, queue: str, client: str, message_id: str) -> Json:
        return self._call("get", q=queue, c=client, id=message_id)[1]

    def cancel(self, queue: str, client: str, message_id: str) -> Json:
        return self._call("cancel", q=queue, c=client, id=message_id)[1]

    def purge(self, queue: str, client: str) -> Json:
        return self._call("purge", q=queue, c=client)[1]

    def stats(self, queue: str, client: str) -> Json:
        return self._call("stats", q=queue, c=client)[1]

    def dlq_list(self, queue: str, client: str, limit: int) -> Json:
        return self._call("list_dlq", q=queue, c=client, query={"limit": limit})[1]

    def redrive(
        self,
        queue: str,
        client: str,
        max_messages: int | None,
        message_ids: list[str] | None,
        reason: str | None = None,
    ) -> Json:
        body = {"max_messages": max_messages, "message_ids": message_ids}
        if reason is not None:
            body["reason"] = reason
        return self._call("redrive", body, q=queue, c=client)[1]

    def dlq_reasons(self, queue: str, client: str) -> Json:
        return self._call("dlq_reasons", q=queue, c=client)[1]

    def archive_list(self, queue: str, client: str | None, query: Mapping[str, Any]) -> Json:
        given = {name: value for name, value in query.items() if value is not None}
        if client is None:
            return self._call("archive_list_any", q=queue, query=given)[1]
        return self._call("archive_list", q=queue, c=client, query=given)[1]

    def archive_get(self, queue: str, client: str, message_id: str) -> Json:
        return self._call("archive_get", q=queue, c=client, id=message_id)[1]

    def replay_start(self, queue: str, client: str, request: Mapping[str, Any]) -> Json:
        given = {name: value for name, value in request.items() if value is not None}
        timeout = REQUEST_TIMEOUT_SECONDS + float(given.get("run_seconds", 0))
        return self._call("replay_start", given, q=queue, c=client, timeout=timeout)[1]

    def replay_run(self, queue: str, client: str, replay_id: str, seconds: float) -> Json:
        body = {"replay_id": replay_id, "seconds": seconds}
        return self._call("replay_run", body, q=queue, c=client, timeout=REQUEST_TIMEOUT_SECONDS + seconds)[1]

    def replay_list(self, queue: str, client: str, replay_id: str | None, limit: int) -> Json:
        query: dict[str, Any] = {"limit": limit} if replay_id is None else {"replay_id": replay_id}
        return self._call("replay_list", q=queue, c=client, query=query)[1]

    def replay_cancel(self, queue: str, client: str, replay_id: str) -> Json:
        return self._call("replay_cancel", {"replay_id": replay_id}, q=queue, c=client)[1]

    def move_to_dlq(self, queue: str, client: str, message_id: str) -> Json:
        return self._call("move_to_dlq", q=queue, c=client, id=message_id)[1]


def _segment(value: str) -> str:
    return quote(value, safe="")


def _reason(error: URLError) -> str:
    reason = error.reason
    if isinstance(reason, OSError):
        return reason.strerror or str(reason)
    return str(reason)


def _json_object(raw: bytes) -> Json | None:
    try:
        answer = json.loads(raw or b"null")
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def _http_error(status: int, headers: Mapping[str, str], answer: Json | None, raw: bytes) -> TargetError:
    """The API's own error, or API Gateway's (`{"message": …}` with its type in `x-amzn-ErrorType`, as when a
    signature is refused), or the status line when the body says nothing."""
    error = (answer or {}).get("error")
    if isinstance(error, dict) and error.get("code"):
        return TargetError(str(error["code"]), str(error.get("message", "")), status)
    lowered = {name.lower(): value for name, value in headers.items()}
    code = lowered.get("x-amzn-errortype", "").split(":", 1)[0] or f"HTTP{status}"
    message = (answer or {}).get("message") or (answer or {}).get("Message")
    if not message:
        message = raw.decode("utf-8", errors="replace").strip()[:200] or f"the API answered {status}"
    return TargetError(code, str(message), status)


@dataclass
class CoreTarget:
    """A table through `queue_core`, in this process, with no API in between. `dynamodb` is a boto3 client to use
    instead of one built from the environment."""

    table: str
    dynamodb: Any = None
    dynamodb_endpoint: str | None = None
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = f"table {self.table}"
        self._core: Any = None
        # The core logs unexpected DynamoDB errors; the CLI reports them itself, on one line.
        logging.getLogger("queue_core").addHandler(logging.NullHandler())

    @property
    def core(self) -> Any:
        if self._core is None:
            from queue_core import QueueClient

            with _core_errors():
                self._core = QueueClient(self.table, dynamodb=self.dynamodb or self._build_dynamodb())
        return self._core

    def _build_dynamodb(self) -> Any:
        """Retries like the core's own client. A local endpoint takes any region and any credentials, so it
        gets some when none are configured, as the local server's functions do. boto3's default session is
        reused, so its loaded service model is too."""
        import boto3
        import botocore.session
        from botocore.config import Config
        from botocore.exceptions import NoRegionError

        config = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=30)
        options: dict[str, Any] = {"endpoint_url": self.dynamodb_endpoint, "config": config}
        if self.dynamodb_endpoint and botocore.session.get_session().get_credentials() is None:
            options.update(aws_access_key_id="local", aws_secret_access_key="local")
        try:
            return boto3.client("dynamodb", **options)
        except NoRegionError:
            if not self.dynamodb_endpoint:
                raise TargetError(
                    "NoRegion", "no AWS region for the table: set AWS_REGION or a profile's region"
                ) from None
            return boto3.client("dynamodb", region_name="us-east-1", **options)

    def _sub_queue(self, queue: str, client: str) -> Any:
        return self.core.queue(queue, client)

    def migrate(self, dry_run: bool, on_step: Callable[[str], None] | None = None) -> Json:
        """`dq migrate`: the table upgraded in place to this release's layout (only a table target has one)."""
        with _core_errors():
            return self.core.migrate(dry_run=dry_run, on_step=on_step).to_dict()

    def create_queue(self, queue: str, settings: Mapping[str, Any]) -> tuple[Json, bool]:
        with _core_errors():
            created = self.core.create_queue(queue, **settings)
            return created.to_dict(), created.created

    def list_queues(self) -> Json:
        with _core_errors():
            return {"queues": [settings.to_dict() for settings in self.core.list_queues()]}

    def get_queue(self, queue: str) -> Json:
        with _core_errors():
            return {**self.core.get_queue(queue).to_dict(), "stats": self.core.queue_stats(queue).to_dict()}

    def update_queue(self, queue: str, changes: Mapping[str, Any]) -> Json:
        with _core_errors():
            return self.core.update_queue(queue, **changes).to_dict()

    def delete_queue(self, queue: str) -> Json:
        with _core_errors():
            self.core.delete_queue(queue)
            return {"deleted": True}

    def clients(self, queue: str) -> list[str]:
        with _core_errors():
            return list(self.core.clients(queue))

    def send(self, queue: str, client: str, message: Mapping[str, Any]) -> Json:
        unknown = set(message) - _MESSAGE_KEYS
        with _core_errors():
            if unknown:
                from queue_core import ValidationError

                raise ValidationError(f"unknown message fields: {', '.join(sorted(unknown))}")
            result = self._sub_queue(queue, client).send(**message).to_dict()
            return {**result, "successful": [{"index": 0, **result}], "failed": []}

    def send_batch(self, queue: str, client: str, messages: Sequence[Mapping[str, Any]]) -> Json:
        with _core_errors():
            return self._sub_queue(queue, client).send_batch([dict(message) for message in messages]).to_dict()

    def receive(self, queue: str, client: str | None, request: Mapping[str, Any]) -> Json:
        """`client` None: a queue-wide receive, from every client of the queue."""
        with _core_errors():
            source = self.core.queue_wide(queue) if client is None else self._sub_queue(queue, client)
            received = source.receive(**request)
            return {"messages": [message.to_dict() for message in received]}

    def delete(self, queue: str, client: str | None, receipt_handles: Sequence[str]) -> Json:
        with _core_errors():
            source = self.core.queue_wide(queue) if client is None else self._sub_queue(queue, client)
            return source.delete_batch(list(receipt_handles)).to_dict()

    def change_visibility(self, queue: str, client: str, receipt_handle: str, visibility_timeout: int) -> Json:
        with _core_errors():
            return {"visible_at": self._sub_queue(queue, client).change_visibility(receipt_handle, visibility_timeout)}

    def release(
        self, queue: str, client: str, receipt_handle: str, delay_seconds: int | None, reason: str | None = None
    ) -> Json:
        with _core_errors():
            return {"visible_at": self._sub_queue(queue, client).release(receipt_handle, delay_seconds, reason)}

    def peek(self, queue: str, client: str, limit: int) -> Json:
        with _core_errors():
            return {"messages": [message.to_dict() for message in self._sub_queue(queue, client).peek(limit)]}

    def browse(self, queue: str, client: str, limit: int, filters: Mapping[str, Any] | None = None) -> Json:
        given = filters or {}
        names = ("state", "priority", "group", "cursor")
        with _core_errors():
            return self._sub_queue(queue, client).browse(limit, *(given.get(name) for name in names)).to_dict()

    def get(self, queue: str, client: str, message_id: str) -> Json:
        with _core_errors():
            return self._sub_queue(queue, client).get(message_id).to_dict()

    def cancel(self, queue: str, client: str, message_id: str) -> Json:
        with _core_errors():
            return {"deleted": self._sub_queue(queue, client).cancel(message_id)}

    def purge(self, queue: str, client: str) -> Json:
        with _core_errors():
            return {"purged": self._sub_queue(queue, client).purge()}

    def stats(self, queue: str, client: str) -> Json:
        with _core_errors():
            return self._sub_queue(queue, client).stats().to_dict()

    def dlq_list(self, queue: str, client: str, limit: int) -> Json:
        with _core_errors():
            return {"messages": [message.to_dict() for message in self._sub_queue(queue, client).dlq_list(limit)]}

    def redrive(
        self,
        queue: str,
        client: str,
        max_messages: int | None,
        message_ids: list[str] | None,
        reason: str | None = None,
    ) -> Json:
        with _core_errors():
            return {"redriven": self._sub_queue(queue, client).redrive(max_messages, message_ids, reason)}

    def dlq_reasons(self, queue: str, client: str) -> Json:
        with _core_errors():
            groups, approximate = self._sub_queue(queue, client).dlq_reasons()
            return {"reasons": groups, "approximate": approximate}

    def archive_list(self, queue: str, client: str | None, query: Mapping[str, Any]) -> Json:
        with _core_errors():
            source = self.core.queue_wide(queue) if client is None else self._sub_queue(queue, client)
            return source.archive_list(**{name: value for name, value in query.items() if value is not None}).to_dict()

    def archive_get(self, queue: str, client: str, message_id: str) -> Json:
        with _core_errors():
            return {"messages": [copy.to_dict() for copy in self._sub_queue(queue, client).archive_get(message_id)]}

    def replay_start(self, queue: str, client: str, request: Mapping[str, Any]) -> Json:
        options = {name: value for name, value in request.items() if value is not None and name != "run_seconds"}
        with _core_errors():
            sub_queue = self._sub_queue(queue, client)
            started = sub_queue.replay_start(**options)
            if request.get("run_seconds"):
                started = sub_queue.replay_run(started.replay_id, request["run_seconds"])
            return started.to_dict()

    def replay_run(self, queue: str, client: str, replay_id: str, seconds: float) -> Json:
        with _core_errors():
            return self._sub_queue(queue, client).replay_run(replay_id, seconds).to_dict()

    def replay_list(self, queue: str, client: str, replay_id: str | None, limit: int) -> Json:
        with _core_errors():
            sub_queue = self._sub_queue(queue, client)
            found = [sub_queue.replay_status(replay_id)] if replay_id is not None else sub_queue.replay_list(limit)
            return {"replays": [status.to_dict() for status in found]}

    def replay_cancel(self, queue: str, client: str, replay_id: str) -> Json:
        with _core_errors():
            return self._sub_queue(queue, client).replay_cancel(replay_id).to_dict()

    def move_to_dlq(self, queue: str, client: str, message_id: str) -> Json:
        with _core_errors():
            return {"moved": self._sub_queue(queue, client).move_to_dlq(message_id)}


@contextlib.contextmanager
def _core_errors() -> Iterator[None]:
    """The core's errors as `TargetError`. The core reports any failure to reach DynamoDB as `Throttled` and
    hides internals from API callers; the operator at this terminal owns the table, so missing credentials and
    an unreachable endpoint are named, and the DynamoDB error behind any other failure is added."""
    from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, NoCredentialsError
    from queue_core import QueueError

    try:
        yield
    except QueueError as error:
        cause = error.__cause__
        if isinstance(cause, NoCredentialsError):
            raise TargetError("NoCredentials", "no AWS credentials for DynamoDB: configure a profile") from None
        if isinstance(cause, EndpointConnectionError):
            raise TargetError("ConnectionError", f"cannot reach DynamoDB: {cause}") from None
        message = error.message
        if error.status >= 429 and cause is not None:
            message = f"{message} ({cause})"
        raise TargetError(error.code, message, error.status) from None
    except (BotoCoreError, ClientError) as error:
        raise TargetError("AWSError", str(error)) from None


@dataclass(frozen=True)
class TargetChoice:
    """What the user asked for: an endpoint or a table (never both); nothing means the local server."""

    endpoint: str | None = None
    table: str | None = None
    dynamodb_endpoint: str | None = None

    def open(self) -> Target:
        if self.table:
            return CoreTarget(self.table, dynamodb_endpoint=self.dynamodb_endpoint)
        return HttpTarget(self.endpoint or LOCAL_ENDPOINT)
