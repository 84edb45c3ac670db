"""Every operation of the queue, listed once: its invoke action, its HTTP route, the function that serves it and
the grant that opens it.

Everything that knows a route or an action is derived from `OPERATIONS`: each function's resolver and invoke
actions (`queue_api.resolver`, `queue_api.invoke`), the OpenAPI document, API Gateway's resources, methods and
grants (`infra.api`, `infra.queue`), the local server's routing and the CLI's HTTP target (`dq.routes`,
`dq.targets`). Adding an operation is one entry here, plus its handler: the function of the same name in the
module named after the function that serves it (`queue_api.poller.receive`), which takes the validated address
and request and returns the answer model (or the answer and an HTTP status other than 200).

The table names its models and handlers instead of importing them, so reading it costs nothing: the CLI, the CDK
app and a function's cold start use it without loading pydantic, Powertools' validation or boto3.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final


class Access(enum.Enum):
    """Which grant of the construct opens a route (`grant_send`, `grant_consume`, `grant_admin`, `grant_replay`); a
    route of a
    whole queue also needs a grant that names no client (`grant_queue_admin`)."""

    DESCRIBE = "describe"  # the API's own description: part of every grant, it holds no data
    SEND = "send"
    CONSUME = "consume"
    ADMIN = "admin"
    REPLAY = "replay"  # replays of the archive: an operator's action, `grant_replay` (and every admin grant)


PRODUCER: Final = "producer"
POLLER: Final = "poller"
DLQ_REDRIVER: Final = "dlq_redriver"
VISIBILITY_SWEEPER: Final = "visibility_sweeper"
FUNCTIONS: Final = (PRODUCER, POLLER, DLQ_REDRIVER, VISIBILITY_SWEEPER)

QUEUES_TAG: Final = "Queues"
MESSAGES_TAG: Final = "Messages"
DLQ_TAG: Final = "Dead-letter queue"
ARCHIVE_TAG: Final = "Archive"
DOCUMENTATION_TAG: Final = "Documentation"

# Errors any operation that takes a request and reads DynamoDB may answer; 500 is documented for every operation.
REFUSED: Final = (400, 429)
BODY_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})


@dataclass(frozen=True)
class Operation:
    """One operation. `path` is API Gateway's form: `{q}`, `{c}` and `{id}` are the queue, the client and the
    message id, which are also the fields of the invoke event's address (`queue`, `client`, `message_id`).

    `request` and `answer` name types of `queue_api.schemas`. The request is the HTTP body, or for a route with
    `query` parameters the query string; a body whose every field has a default may be left out.
    """

    name: str  # the invoke action and the OpenAPI operationId
    method: str | None  # None (and no path): an invoke action only
    path: str | None
    function: str
    access: Access | None  # None for an operation with no HTTP route
    answer: str
    request: str = "NoAddress"
    summary: str = ""
    tag: str = ""
    errors: tuple[int, ...] = REFUSED  # documented error statuses besides 500
    success: str = "OK"  # the description of the 200 answer
    created: str | None = None  # the description of a 201 answer, for an operation that may create what it names
    query: tuple[str, ...] = ()
    invocable: bool = True
    scheduled: bool = False  # what the function runs for an event without `action` (a schedule's)
    uses_context: bool = False  # the handler also takes the Lambda context

    @property
    def path_parameters(self) -> tuple[str, ...]:
        return tuple(part[1:-1] for part in (self.path or "").split("/") if part.startswith("{"))

    @property
    def has_body(self) -> bool:
        return self.method in BODY_METHODS and self.request != "NoAddress" and not self.query

    def path_for(self, **names: str) -> str:
        """The path with its parameters filled in from `q`, `c` and `id`."""
        if self.path is None:
            raise ValueError(f"{self.name} has no HTTP route")
        return self.path.format_map(names)

    def handler(self) -> Callable[..., Any]:
        """`queue_api.<function>.<name>`, imported on first use like everything below."""
        return getattr(importlib.import_module(f"queue_api.{self.function}"), self.name)

    def request_type(self) -> Any:
        return getattr(importlib.import_module("queue_api.schemas"), self.request)

    def answer_type(self) -> Any:
        return getattr(importlib.import_module("queue_api.schemas"), self.answer)

    def body_required(self) -> bool:
        """Whether a request without a body is refused (API Gateway checks such a body's shape at the edge)."""
        if not self.has_body:
            return False
        return not importlib.import_module("queue_api.schemas").may_be_left_out(self.request_type())


SUB_QUEUE: Final = "/queues/{q}/clients/{c}"

# The order is the OpenAPI document's (Powertools lists the paths with parameters first) and API Gateway's.
# fmt: off
OPERATIONS: Final = (
    Operation(
        "list_queues", "GET", "/queues", PRODUCER, Access.ADMIN, answer="QueueList",
        summary="List the queues", tag=QUEUES_TAG,
    ),
    Operation(
        "openapi", "GET", "/openapi.json", PRODUCER, Access.DESCRIBE, answer="OpenApiDocument",
        summary="This API's OpenAPI 3.1 document", tag=DOCUMENTATION_TAG, errors=(), success="OpenAPI 3.1 JSON",
        invocable=False,
    ),
    Operation(
        "create_queue", "PUT", "/queues/{q}", PRODUCER, Access.ADMIN, request="CreateQueueRequest",
        answer="QueueSettingsAnswer", summary="Create a queue (idempotent for the same settings)", tag=QUEUES_TAG,
        errors=(400, 404, 409, 429), success="the queue already existed with these settings",
        created="the queue was created",
    ),
    Operation(
        "get_queue", "GET", "/queues/{q}", PRODUCER, Access.ADMIN, answer="QueueDescription",
        summary="A queue's settings and its figures summed over its clients", tag=QUEUES_TAG, errors=(400, 404, 429),
    ),
    Operation(
        "delete_queue", "DELETE", "/queues/{q}", PRODUCER, Access.ADMIN, answer="Deleted",
        summary="Delete a queue and its messages", tag=QUEUES_TAG, errors=(400, 404, 429),
    ),
    Operation(
        "update_queue", "PATCH", "/queues/{q}", PRODUCER, Access.ADMIN, request="UpdateQueueRequest",
        answer="QueueSettingsAnswer", tag=QUEUES_TAG, errors=(400, 404, 409, 429),
        summary="Change a live queue's settings (not fifo nor content_based_dedup); shards may grow or shrink",
    ),
    Operation(
        "list_clients", "GET", "/queues/{q}/clients", PRODUCER, Access.ADMIN, answer="ClientList",
        summary="The ids of the clients that have sent to a queue", tag=QUEUES_TAG, errors=(400, 404, 429),
    ),
    Operation(
        "send", "POST", f"{SUB_QUEUE}/messages", PRODUCER, Access.SEND, request="SendRequest", answer="SendAnswer",
        summary="Send one message, or a batch of 1-25 as {'messages': [...]}", tag=MESSAGES_TAG,
        errors=(400, 404, 413, 429),
    ),
    Operation(
        "receive", "POST", f"{SUB_QUEUE}/receive", POLLER, Access.CONSUME, request="ReceiveRequest",
        answer="ReceiveAnswer", summary="Receive up to 10 messages, long-polling up to 20 s", tag=MESSAGES_TAG,
        errors=(400, 404, 429),
    ),
    Operation(
        "delete", "POST", f"{SUB_QUEUE}/delete", POLLER, Access.CONSUME, request="DeleteRequest",
        answer="DeleteAnswer", summary="Delete received messages by receipt handle (1-25)", tag=MESSAGES_TAG,
        errors=(400, 404, 429),
    ),
    Operation(
        "change_visibility", "POST", f"{SUB_QUEUE}/visibility", POLLER, Access.CONSUME, request="VisibilityRequest",
        answer="VisibleAt", summary="Change a received message's visibility timeout", tag=MESSAGES_TAG,
        errors=(400, 404, 409, 429),
    ),
    Operation(
        "release", "POST", f"{SUB_QUEUE}/release", POLLER, Access.CONSUME, request="ReleaseRequest",
        answer="VisibleAt", summary="Give a received message back (nack), after a delay or a randomized backoff",
        tag=MESSAGES_TAG, errors=(400, 404, 409, 429),
    ),
    Operation(
        "receive_any", "POST", "/queues/{q}/receive", POLLER, Access.CONSUME, request="ReceiveRequest",
        answer="ReceiveAnswer", tag=MESSAGES_TAG, errors=(400, 404, 429),
        summary="Receive up to 10 messages of any client (each names its client): highest priority first, "
        "clients in a fair rotation",
    ),
    Operation(
        "delete_any", "POST", "/queues/{q}/delete", POLLER, Access.CONSUME, request="DeleteRequest",
        answer="DeleteAnswer", summary="Delete received messages of any client by receipt handle (1-25)",
        tag=MESSAGES_TAG, errors=(400, 404, 429),
    ),
    Operation(
        "change_visibility_any", "POST", "/queues/{q}/visibility", POLLER, Access.CONSUME,
        request="VisibilityRequest", answer="VisibleAt", tag=MESSAGES_TAG, errors=(400, 404, 409, 429),
        summary="Change the visibility timeout of a received message of any client",
    ),
    Operation(
        "release_any", "POST", "/queues/{q}/release", POLLER, Access.CONSUME, request="ReleaseRequest",
        answer="VisibleAt", tag=MESSAGES_TAG, errors=(400, 404, 409, 429),
        summary="Give a received message of any client back (nack)",
    ),
    Operation(
        "peek", "GET", f"{SUB_QUEUE}/messages", POLLER, Access.CONSUME, request="ListRequest", query=("limit",),
        answer="MessageList", summary="Visible messages, oldest first, without claiming them", tag=MESSAGES_TAG,
        errors=(400, 404, 429),
    ),
    Operation(
        "browse", "GET", f"{SUB_QUEUE}/browse", POLLER, Access.CONSUME, request="BrowseRequest",
        query=("limit", "state", "priority", "group", "cursor"), answer="BrowsePageAnswer", tag=MESSAGES_TAG,
        summary="Waiting messages in any state (visible, in flight, delayed) with until when, page by page, "
        "filtered by state, priority or group, without claiming them; a bounded read: a page may be short",
        errors=(400, 404, 429),
    ),
    Operation(
        "archive_list", "GET", f"{SUB_QUEUE}/archive", POLLER, Access.CONSUME, request="ArchiveRequest",
        query=("since", "until", "order", "limit", "cursor"), answer="ArchivePageAnswer", tag=ARCHIVE_TAG,
        summary="Acknowledged messages kept by the archive (archive_days), by time range, newest or oldest first, "
        "page by page", errors=(400, 404, 429),
    ),
    Operation(
        "archive_get", "GET", f"{SUB_QUEUE}/archive/{{id}}", POLLER, Access.CONSUME, answer="ArchivedCopies",
        summary="An acknowledged message from the archive by id: one copy per acknowledgement", tag=ARCHIVE_TAG,
        errors=(400, 404, 429),
    ),
    Operation(
        "archive_list_any", "GET", "/queues/{q}/archive", POLLER, Access.CONSUME, request="ArchiveRequest",
        query=("since", "until", "order", "limit", "cursor"), answer="ArchivePageAnswer", tag=ARCHIVE_TAG,
        summary="Acknowledged messages of every client of a queue kept by the archive, by time range, page by page",
        errors=(400, 404, 429),
    ),
    Operation(
        "replay_start", "POST", f"{SUB_QUEUE}/replays", DLQ_REDRIVER, Access.REPLAY, request="ReplayRequest",
        answer="ReplayAnswer", tag=ARCHIVE_TAG, errors=(400, 404, 429),
        summary="Start a replay of the archive into the sub-queue as new messages (a time range or ids, filtered by "
        "attributes, at a rate), run it for up to run_seconds, and answer where it stands",
    ),
    Operation(
        "replay_list", "GET", f"{SUB_QUEUE}/replays", DLQ_REDRIVER, Access.REPLAY, request="ReplayListRequest",
        query=("replay_id", "limit"), answer="ReplayList", tag=ARCHIVE_TAG, errors=(400, 404, 429),
        summary="The sub-queue's replays, newest first, or one by replay_id: state, counts and progress",
    ),
    Operation(
        "replay_run", "POST", f"{SUB_QUEUE}/replays/run", DLQ_REDRIVER, Access.REPLAY, request="ReplayRunRequest",
        answer="ReplayAnswer", tag=ARCHIVE_TAG, errors=(400, 404, 429),
        summary="Go on with a running replay from where it stopped, for up to seconds; answer where it stands",
    ),
    Operation(
        "replay_cancel", "POST", f"{SUB_QUEUE}/replays/cancel", DLQ_REDRIVER, Access.REPLAY,
        request="ReplayIdRequest", answer="ReplayAnswer", tag=ARCHIVE_TAG, errors=(400, 404, 429),
        summary="Cancel a running replay: nothing more is sent and its counts are final",
    ),
    Operation(
        "get", "GET", f"{SUB_QUEUE}/messages/{{id}}", POLLER, Access.CONSUME, answer="MessageAnswer",
        summary="One message and its state: visible, in_flight, delayed or dlq", tag=MESSAGES_TAG,
        errors=(400, 404, 410, 429),
    ),
    Operation(
        "cancel", "DELETE", f"{SUB_QUEUE}/messages/{{id}}", POLLER, Access.CONSUME, answer="Deleted",
        summary="Cancel a message before it is processed, wherever it is", tag=MESSAGES_TAG, errors=(400, 404, 429),
    ),
    Operation(
        "purge", "DELETE", f"{SUB_QUEUE}/messages", POLLER, Access.ADMIN, answer="Purged",
        summary="Remove every waiting and in-flight message (not the DLQ)", tag=MESSAGES_TAG, errors=(400, 404, 429),
    ),
    Operation(
        "stats", "GET", f"{SUB_QUEUE}/stats", POLLER, Access.CONSUME, answer="QueueStatsAnswer",
        summary="Visible, in flight, delayed, DLQ and the oldest message's age", tag=MESSAGES_TAG,
        errors=(400, 404, 429),
    ),
    Operation(
        "list_dlq", "GET", f"{SUB_QUEUE}/dlq", DLQ_REDRIVER, Access.ADMIN, request="ListRequest", query=("limit",),
        answer="MessageList", summary="Messages in the sub-queue's dead-letter queue", tag=DLQ_TAG,
        errors=(400, 404, 429),
    ),
    Operation(
        "redrive", "POST", f"{SUB_QUEUE}/dlq/redrive", DLQ_REDRIVER, Access.ADMIN, request="RedriveRequest",
        answer="Redriven", summary="Move DLQ messages back to the sub-queue: all, the oldest max_messages, or by id",
        tag=DLQ_TAG, errors=(400, 404, 429),
    ),
    Operation(
        "dlq_reasons", "GET", f"{SUB_QUEUE}/dlq/reasons", DLQ_REDRIVER, Access.ADMIN, answer="DlqReasons",
        summary="Why the dead letters failed: their distinct last reasons with counts and first and last seen",
        tag=DLQ_TAG, errors=(400, 404, 429),
    ),
    Operation(
        "move_to_dlq", "POST", f"{SUB_QUEUE}/messages/{{id}}/dlq", DLQ_REDRIVER, Access.ADMIN, answer="Moved",
        summary="Move a waiting message to the DLQ now: an operator marks it invalid", tag=DLQ_TAG,
        errors=(400, 404, 429),
    ),
    Operation(
        "sweep", None, None, VISIBILITY_SWEEPER, None, request="SweepRequest", answer="SweepAnswer",
        scheduled=True, uses_context=True,
    ),
)
# fmt: on

ROUTES: Final = tuple(operation for operation in OPERATIONS if operation.path is not None)
BY_NAME: Final = {operation.name: operation for operation in OPERATIONS}


def of_function(function: str) -> tuple[Operation, ...]:
    return tuple(operation for operation in OPERATIONS if operation.function == function)


def scheduled_action(function: str) -> str | None:
    """The action `function` runs for an event that names none, if it has one."""
    return next((operation.name for operation in of_function(function) if operation.scheduled), None)
