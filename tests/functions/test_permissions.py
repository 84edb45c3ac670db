"""Each function's role allows every DynamoDB call the function makes, and nothing it never makes.

The calls are recorded, not listed by hand: each function's handler is driven through every one of its invoke
actions and HTTP routes on standard and FIFO queues, before and after a change of their shard count (the sweeper
over messages past their receive limit or their retention, stuck FIFO groups, resharded and deleted queues), while a
botocore hook on the handlers' DynamoDB client records each call. A call becomes the requests IAM authorizes for it
(`tests.reliability.iam.dynamodb_requests`: a transaction one per item, a query of the index one on the index), and
these are evaluated against the function role's policy as the synthesized template has it.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from botocore.exceptions import EndpointConnectionError
from queue_api import core_client
from queue_api.invoke import actions_for
from queue_api.openapi import document
from queue_api.operations import ROUTES
from queue_core import QueueClient, Throttled
from sqs_api.actions import ACTIONS as SQS_ACTIONS

from functions.dlq_redriver import handler as redriver
from functions.poller import handler as poller
from functions.producer import handler as producer
from functions.sqs import handler as sqs
from functions.visibility_sweeper import handler as sweeper
from tests import earlier_release
from tests.conftest import FakeClock
from tests.functions.conftest import TABLE, call, invoke
from tests.infra.synth import synthesize
from tests.reliability.iam import DynamoDbRecorder, Request, Resolver, allowed

HANDLERS: dict[str, ModuleType] = {
    "producer": producer,
    "poller": poller,
    "dlq_redriver": redriver,
    "visibility_sweeper": sweeper,
    "sqs": sqs,
}
VIAS = ("http", "invoke")
# The SQS actions only the administration endpoint serves.
SQS_ADMINISTRATION = frozenset({"CreateQueue", "SetQueueAttributes", "DeleteQueue", "TagQueue", "UntagQueue"})
# Past the time a changed shard count takes to reach every process's cached settings, so that FIFO groups are
# placed by the new count and a send looks for its group at the old places.
PLACEMENT_SETTLED_SECONDS = 120
RETENTION = 60
# Receives a session repeats until it has what it needs: a receive may stop at a shard that gave fewer than asked.
_MAX_ROUNDS = 20

Policies = tuple[str, dict[str, list[dict[str, Any]]]]


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> Policies:
    """The table's ARN and each function role's DynamoDB statements, from one synth of the app."""
    outdir: Path = tmp_path_factory.mktemp("permissions.out")
    synthesized = synthesize(outdir)
    resolver = Resolver(synthesized.template_json)
    table_arn = resolver.table_arn(synthesized.logical_id(synthesized.stack.queue.table))
    statements = {}
    for name, function in synthesized.stack.queue.functions.items():
        role_id = synthesized.resource(function)["Properties"]["Role"]["Fn::GetAtt"][0]
        statements[name] = resolver.statements(
            statement
            for policy in synthesized.of_type("AWS::IAM::Policy").values()
            if {"Ref": role_id} in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
            if any(action.startswith("dynamodb:") for action in _listed(statement["Action"]))
        )
    return table_arn, statements


@pytest.fixture
def core(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> QueueClient:
    """The handlers' shared client, on a clock the test moves (retention, visibility, settled placements)."""
    client = QueueClient(TABLE, clock=clock)
    monkeypatch.setattr(core_client, "_client", client)
    return client


class Driver:
    """Runs one function's operations by HTTP or by invoke and keeps the IAM requests of the DynamoDB calls it
    makes while it runs (arranging through `core` in between is not recorded)."""

    def __init__(self, function: str, core: QueueClient, table_arn: str) -> None:
        self.function = function
        self.table_arn = table_arn
        self.recorder = DynamoDbRecorder().attach(core.dynamodb)
        self.requests: list[Request] = []
        self.reached: set[str] = set()

    def run(self, via: str, operation: str, body: dict[str, Any] | None = None, **address: str) -> Any:
        """`operation` with its address (`queue`, `client`, `message_id`) and body; its answer, which must be
        a success."""
        self.recorder.clear()
        handler = HANDLERS[self.function]
        if via == "invoke":
            answer = invoke(handler, {"action": operation, **address, **(body or {})})
            assert "error" not in answer, (operation, answer)
            self.reached.add(f"action {operation}")
        else:
            method, template = _routes_by_operation()[operation]
            path = template.format(q=address.get("queue"), c=address.get("client"), id=address.get("message_id"))
            query = {name: str(value) for name, value in (body or {}).items()} if method == "GET" else None
            reply = call(handler, method, path, None if method == "GET" else body, query=query)
            assert reply.status < 300, (operation, reply.status, reply.body)
            self.reached.add(f"{method} {template}")
            answer = reply.body
        self.requests.extend(request for requests in self.recorder.requests(self.table_arn) for request in requests)
        return answer

    def run_sqs(self, action: str, params: dict[str, Any]) -> Any:
        """An SQS action at the API's root (the client `default`), or at the administration endpoint for what
        creates, changes, tags and deletes queues; its answer, which must be a success."""
        self.recorder.clear()
        headers = {"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": "application/x-amz-json-1.0"}
        path = "/sqs-admin" if action in SQS_ADMINISTRATION else "/"
        reply = call(HANDLERS[self.function], "POST", path, params, headers=headers)
        assert reply.status == 200, (action, reply.status, reply.body)
        self.reached.add(f"sqs {action}")
        self.requests.extend(request for requests in self.recorder.requests(self.table_arn) for request in requests)
        return reply.body

    def every_entry_point(self) -> set[str]:
        """The function's invoke actions and HTTP routes (of the deployed API), all of which a session must reach;
        for the SQS function, every SQS action it serves that can succeed."""
        if self.function == "sqs":
            return {f"sqs {action}" for action in SQS_ACTIONS if action != "CancelMessageMoveTask"}
        routes = {f"{route.method} {route.path}" for route in ROUTES if route.function == self.function}
        return routes | {f"action {name}" for name in actions_for(self.function)}


@functools.cache
def _routes_by_operation() -> dict[str, tuple[str, str]]:
    """Operation id → (method, path template), from the API's OpenAPI document."""
    return {
        operation["operationId"]: (method.upper(), path)
        for path, operations in document()["paths"].items()
        for method, operation in operations.items()
    }


@contextlib.contextmanager
def _unreachable(dynamodb: Any, operation: str) -> Iterator[None]:
    """DynamoDB cannot be reached for `operation`: what is under way stops half done, as in an outage."""

    def fail(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")

    dynamodb.meta.events.register(f"before-call.dynamodb.{operation}", fail)
    try:
        yield
    finally:
        dynamodb.meta.events.unregister(f"before-call.dynamodb.{operation}", fail)


def _producer_session(driver: Driver, core: QueueClient, clock: FakeClock) -> None:
    """Queues created (again with the same settings), described, listed, changed and deleted; sends of one and of
    a batch, with delays and dedup ids, to standard and FIFO queues before and after a change of shards."""
    driver.run("http", "openapi")
    for via in VIAS:
        orders, jobs = f"orders-{via}", f"jobs-{via}.fifo"
        run = functools.partial(driver.run, via)
        run("create_queue", {"shards": 2, "max_receive_count": 3}, queue=orders)
        run("create_queue", {"shards": 2, "max_receive_count": 3}, queue=orders)
        run("create_queue", {"shards": 2, "content_based_dedup": True}, queue=jobs)
        for client in ("a", "b"):
            run("send", {"body": "one"}, queue=orders, client=client)
            run("send", {"body": "late", "delay_seconds": 5, "attributes": {"k": "v"}}, queue=orders, client=client)
            run("send", {"body": "deduped", "dedup_id": "d1"}, queue=orders, client=client)
            run("send", {"body": "deduped", "dedup_id": "d1"}, queue=orders, client=client)
            batch = [{"body": "b1"}, {"body": "b2", "dedup_id": "d2"}, {"body": "b3"}]
            run("send", {"messages": batch}, queue=orders, client=client)
            run("send", {"body": "j1", "group_id": "g1"}, queue=jobs, client=client)
            run("send", {"body": "j1", "group_id": "g1"}, queue=jobs, client=client)
            batch = [{"body": "j2", "group_id": "g1"}, {"body": "j3", "group_id": "g2", "dedup_id": "x"}]
            run("send", {"messages": batch}, queue=jobs, client=client)
        run("update_queue", {"shards": 3}, queue=orders)
        run("update_queue", {"shards": 3, "visibility_timeout": 45}, queue=jobs)
        clock.advance(PLACEMENT_SETTLED_SECONDS)
        run("send", {"body": "after"}, queue=orders, client="a")
        run("send", {"messages": [{"body": "after-1"}, {"body": "after-2"}]}, queue=orders, client="a")
        for group in ("g1", "g2", "g3", "g4"):
            run("send", {"body": f"after-{group}", "group_id": group}, queue=jobs, client="a")
        batch = [{"body": f"batch-{group}", "group_id": group} for group in ("g1", "g5", "g6")]
        run("send", {"messages": batch}, queue=jobs, client="a")
        for queue in (orders, jobs):
            run("get_queue", queue=queue)
            run("list_clients", queue=queue)
        run("list_queues")
        run("delete_queue", queue=orders)
        run("delete_queue", queue=jobs)


def _arrange_resharded(core: QueueClient, clock: FakeClock, *, suffix: str, **settings: Any) -> tuple[str, str]:
    """A standard and a FIFO queue with messages under a first and a second shard layout."""
    orders, jobs = f"orders-{suffix}", f"jobs-{suffix}.fifo"
    core.create_queue(orders, shards=2, **settings)
    core.create_queue(jobs, shards=2, **settings)
    for number in range(6):
        core.queue(orders, "a").send(f"first-{number}")
        core.queue(jobs, "a").send(f"first-{number}", group_id=f"g{number % 3}")
    core.update_queue(orders, shards=3)
    core.update_queue(jobs, shards=3)
    clock.advance(PLACEMENT_SETTLED_SECONDS)
    for number in range(6):
        core.queue(orders, "a").send(f"second-{number}")
        core.queue(jobs, "a").send(f"second-{number}", group_id=f"g{number % 5}")
    return orders, jobs


def _poller_session(driver: Driver, core: QueueClient, clock: FakeClock) -> None:
    """Every consumer operation on a resharded standard and FIFO queue: receive (also past the receive limit, to
    the DLQ), change visibility, release with and without a delay, delete, peek, browse, get in each state, cancel live
    and dead-lettered messages, stats and purge."""
    for via in VIAS:
        run = functools.partial(driver.run, via)
        for queue in _arrange_resharded(core, clock, suffix=via, max_receive_count=2, visibility_timeout=30):
            sub = {"queue": queue, "client": "a"}
            ids = [message.message_id for message in core.queue(queue, "a").peek(10)]
            run("get", message_id=ids[0], **sub)
            heads: dict[str, str] = {}
            for _ in range(_MAX_ROUNDS):
                for message in run("receive", {"max_messages": 10, "visibility_timeout": 30}, **sub)["messages"]:
                    heads.setdefault(message["group_id"] or message["message_id"], message["receipt_handle"])
                if len(heads) >= 5:
                    break
            first, second, third, fourth, fifth = list(heads.values())[:5]
            run("get", message_id=ids[0], **sub)
            run("change_visibility", {"receipt_handle": first, "visibility_timeout": 60}, **sub)
            run("release", {"receipt_handle": second, "delay_seconds": 0}, **sub)
            run("release", {"receipt_handle": third}, **sub)
            run("delete", {"receipt_handles": [fourth, fifth]}, **sub)
            run("peek", {"limit": 10}, **sub)
            page = run("browse", {"limit": 3}, **sub)
            run("browse", {"limit": 10, "state": "in_flight", "cursor": page["cursor"]}, **sub)
            if queue.endswith(".fifo"):
                run("browse", {"group": "g1"}, **sub)
            run("stats", **sub)
            clock.advance(61)  # past every visibility given above
            for _ in range(_MAX_ROUNDS):
                if core.queue(queue, "a").dlq_list(10):
                    break
                run("receive", {"max_messages": 10, "visibility_timeout": 0}, **sub)
                clock.advance(1)
            dead = [message.message_id for message in core.queue(queue, "a").dlq_list(10)]
            assert dead, "messages past their receive limit went to the DLQ"
            run("get", message_id=dead[0], **sub)
            run("cancel", message_id=dead[0], **sub)
            live = [message.message_id for message in core.queue(queue, "a").peek(10)]
            if live:
                run("cancel", message_id=live[0], **sub)
            run("stats", **sub)
            run("purge", **sub)
            _queue_wide_session(run, core, queue)
        _archive_session(run, core, via)


def _archive_session(run: Callable[..., Any], core: QueueClient, via: str) -> None:
    """A queue that keeps an archive: deletes (one, and a batch) that archive, then its pages and a copy by id."""
    queue = f"kept{via}"
    core.create_queue(queue, archive_days=1)
    sub = {"queue": queue, "client": "a"}
    core.queue(queue, "a").send_batch([{"body": "one"}, {"body": "two"}])
    handles = [message.receipt_handle for message in core.queue(queue, "a").receive(max_messages=2)]
    run("delete", {"receipt_handles": handles}, **sub)
    page = run("archive_list", {"limit": 1, "order": "oldest"}, **sub)
    run("archive_get", message_id=page["messages"][0]["message_id"], **sub)
    run("archive_list_any", {"limit": 1}, queue=queue)


def _queue_wide_session(run: Callable[..., Any], core: QueueClient, queue: str) -> None:
    """The queue-wide routes: receive across clients, then each way of settling what came."""
    fifo = core.get_queue(queue).fifo
    for client in ("a", "b"):
        entries = [{"body": f"{client}{i}", **({"group_id": f"g{i}"} if fifo else {})} for i in range(4)]
        core.queue(queue, client).send_batch(entries)
    ask = {"max_messages": 10, "visibility_timeout": 30}
    handles: list[str] = []
    for _ in range(_MAX_ROUNDS):
        handles += [message["receipt_handle"] for message in run("receive_any", ask, queue=queue)["messages"]]
        if len(handles) >= 3:
            break
    run("change_visibility_any", {"receipt_handle": handles[0], "visibility_timeout": 60}, queue=queue)
    run("release_any", {"receipt_handle": handles[1], "delay_seconds": 0}, queue=queue)
    run("delete_any", {"receipt_handles": handles[2:]}, queue=queue)


def _dlq_redriver_session(driver: Driver, core: QueueClient, clock: FakeClock) -> None:
    """The DLQ of a resharded standard and FIFO queue listed and redriven by id, by count and whole; a waiting
    message moved to the DLQ by hand."""
    for via in VIAS:
        run = functools.partial(driver.run, via)
        orders, jobs = _arrange_resharded(core, clock, suffix=via, max_receive_count=1, visibility_timeout=0)
        for queue in (orders, jobs):
            sub = {"queue": queue, "client": "a"}
            consumer = core.queue(queue, "a")
            for _ in range(_MAX_ROUNDS):
                if len(consumer.dlq_list(10)) >= 3:
                    break
                consumer.receive(max_messages=10, visibility_timeout=0)
                clock.advance(1)
            dead = [message.message_id for message in consumer.dlq_list(10)]
            assert len(dead) >= 3, "messages past their receive limit went to the DLQ"
            run("list_dlq", {"limit": 10}, **sub)
            run("dlq_reasons", **sub)
            run("redrive", {"message_ids": dead[:2]}, **sub)
            run("redrive", {"max_messages": 1}, **sub)
            run("redrive", **sub)
        waiting = core.queue(orders, "a").peek(1)[0].message_id
        run("move_to_dlq", queue=orders, client="a", message_id=waiting)
        _replay_session(run, core, via)


def _replay_session(run: Callable[..., Any], core: QueueClient, via: str) -> None:
    """Replays of the archive of a standard and a FIFO queue: by id (the index finds the copies) and by time range,
    run, listed and cancelled."""
    for queue in (f"kept-{via}", f"kept-{via}.fifo"):
        core.create_queue(queue, archive_days=1, content_based_dedup=queue.endswith(".fifo"))
        sub_queue = core.queue(queue, "a")
        group = "g" if queue.endswith(".fifo") else None
        acked = [sub_queue.send(f"m{n}", group_id=group).message_id for n in range(2)]
        for message in sub_queue.receive(max_messages=2):
            sub_queue.delete(message.receipt_handle)
        sub = {"queue": queue, "client": "a"}
        by_id = run("replay_start", {"message_ids": acked[:1], "run_seconds": 1}, **sub)
        assert by_id["replayed"] == 1, by_id
        started = run("replay_start", {"rate": 1000}, **sub)
        run("replay_run", {"replay_id": started["replay_id"], "seconds": 1}, **sub)
        run("replay_list", {"replay_id": started["replay_id"]}, **sub)
        other = run("replay_start", {}, **sub)
        run("replay_cancel", {"replay_id": other["replay_id"]}, **sub)


def _sweeper_session(driver: Driver, core: QueueClient, clock: FakeClock) -> None:
    """Sweeps over messages past their receive limit (moved to the DLQ), FIFO groups a crashed consumer left
    locked, messages and dead letters past their retention, resharded queues, deleted queues whose removal an
    outage cut short, a listed copy of settings an earlier release left behind, and replays left running with
    nobody to run them (standard and FIFO, by time range)."""
    orders, jobs = _arrange_resharded(core, clock, suffix="sweep", max_receive_count=1, retention_seconds=RETENTION)
    for kept in ("kept-sweep", "kept-sweep.fifo"):
        core.create_queue(kept, archive_days=1, content_based_dedup=kept.endswith(".fifo"))
        sub_queue = core.queue(kept, "a")
        for n in range(2):
            sub_queue.send(f"m{n}", group_id="g" if kept.endswith(".fifo") else None)
            for message in sub_queue.receive():
                sub_queue.delete(message.receipt_handle)
        sub_queue.replay_start(rate=1000)
    core.queue(orders, "a").receive(max_messages=3, visibility_timeout=0)
    core.queue(jobs, "a").receive(max_messages=3, visibility_timeout=20)
    # A change of settings by an earlier release, which left the copy on the queue's listing entry behind.
    earlier_release.change_settings(core.dynamodb, TABLE, core.get_queue(orders), visibility_timeout=45)
    for gone in ("gone", "gone.fifo"):
        core.create_queue(gone)
        core.queue(gone, "a").send("left behind", **({"group_id": "g"} if gone.endswith(".fifo") else {}))
        with _unreachable(core.dynamodb, "Query"), pytest.raises(Throttled):
            core.delete_queue(gone)
    run = driver.run
    run("invoke", "sweep")
    assert core.queue(orders, "a").stats().dlq > 0, "the sweep moved messages past their receive limit"
    clock.advance(30)
    report = run("invoke", "sweep", {"budget_seconds": 60})
    assert report["groups_freed"] > 0, "the sweep freed the group a consumer left locked"
    clock.advance(2 * RETENTION + 1)
    report = run("invoke", "sweep")
    assert report["expired_deleted"] > 0, "the sweep removed messages past their retention"
    assert (report["replays_resumed"], report["replayed"]) == (2, 4), "the sweep ran the orphaned replays on"
    run("invoke", "sweep")


def _sqs_session(driver: Driver, core: QueueClient, clock: FakeClock) -> None:
    """Every SQS action on a standard queue with a DLQ and on a FIFO queue: queues created, found, listed,
    described, changed, tagged, purged and deleted; messages sent, received, settled, dead-lettered, read from
    the DLQ and moved back."""
    run = driver.run_sqs
    arn = "arn:aws:sqs:us-east-1:123456789012:"
    policy = '{"deadLetterTargetArn": "' + arn + 'orders.dlq", "maxReceiveCount": 1}'
    url = run("CreateQueue", {"QueueName": "orders", "Attributes": {"RedrivePolicy": policy}, "tags": {"a": "1"}})
    url = url["QueueUrl"]
    fifo = run("CreateQueue", {"QueueName": "jobs.fifo", "Attributes": {"FifoQueue": "true"}})["QueueUrl"]
    dlq = run("GetQueueUrl", {"QueueName": "orders.dlq"})["QueueUrl"]
    run("ListQueues", {})
    run("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["All"]})
    run("SetQueueAttributes", {"QueueUrl": url, "Attributes": {"VisibilityTimeout": "20"}})
    run("TagQueue", {"QueueUrl": url, "Tags": {"b": "2"}})
    run("UntagQueue", {"QueueUrl": url, "TagKeys": ["a"]})
    run("ListQueueTags", {"QueueUrl": url})
    run("ListDeadLetterSourceQueues", {"QueueUrl": dlq})
    run("SendMessage", {"QueueUrl": url, "MessageBody": "one"})
    entries = [{"Id": f"m{n}", "MessageBody": f"m{n}"} for n in range(4)]
    run("SendMessageBatch", {"QueueUrl": url, "Entries": entries})
    group = {"MessageGroupId": "g", "MessageDeduplicationId": "d"}
    run("SendMessage", {"QueueUrl": fifo, "MessageBody": "j", **group})
    run("SendMessageBatch", {"QueueUrl": fifo, "Entries": [{"Id": "x", "MessageBody": "k", **group}]})
    held = run("ReceiveMessage", {"QueueUrl": url, "MaxNumberOfMessages": 10, "VisibilityTimeout": 30})["Messages"]
    handles = [message["ReceiptHandle"] for message in held]
    run("ChangeMessageVisibility", {"QueueUrl": url, "ReceiptHandle": handles[0], "VisibilityTimeout": 0})
    changes = [{"Id": "c", "ReceiptHandle": handles[1], "VisibilityTimeout": 0}]
    run("ChangeMessageVisibilityBatch", {"QueueUrl": url, "Entries": changes})
    run("DeleteMessage", {"QueueUrl": url, "ReceiptHandle": handles[2]})
    run("DeleteMessageBatch", {"QueueUrl": url, "Entries": [{"Id": "d", "ReceiptHandle": handles[3]}]})
    [job] = run("ReceiveMessage", {"QueueUrl": fifo})["Messages"]
    run("DeleteMessage", {"QueueUrl": fifo, "ReceiptHandle": job["ReceiptHandle"]})
    clock.advance(31)
    for _ in range(_MAX_ROUNDS):
        if core.queue("orders", "default").dlq_list(10):
            break
        run("ReceiveMessage", {"QueueUrl": url, "MaxNumberOfMessages": 10, "VisibilityTimeout": 0})
        clock.advance(1)
    [dead, *_] = run("ReceiveMessage", {"QueueUrl": dlq, "MaxNumberOfMessages": 10})["Messages"]
    run("DeleteMessage", {"QueueUrl": dlq, "ReceiptHandle": dead["ReceiptHandle"]})
    run("StartMessageMoveTask", {"SourceArn": f"{arn}orders.dlq"})
    run("ListMessageMoveTasks", {"SourceArn": f"{arn}orders.dlq"})
    # A shared dead-letter queue: named by orders, read and deleted from, and its dead letters moved into it.
    target = run("CreateQueue", {"QueueName": "orders-dead"})["QueueUrl"]
    allow = '{"redrivePermission": "byQueue", "sourceQueueArns": ["' + arn + 'orders"]}'
    run("SetQueueAttributes", {"QueueUrl": target, "Attributes": {"RedriveAllowPolicy": allow}})
    shared = '{"deadLetterTargetArn": "' + arn + 'orders-dead", "maxReceiveCount": 1}'
    run("SetQueueAttributes", {"QueueUrl": url, "Attributes": {"RedrivePolicy": shared}})
    run("ListDeadLetterSourceQueues", {"QueueUrl": target})
    run("SendMessageBatch", {"QueueUrl": url, "Entries": entries[:2]})
    for _ in range(_MAX_ROUNDS):
        if len(core.queue("orders", "default").dlq_list(10)) >= 2:
            break
        run("ReceiveMessage", {"QueueUrl": url, "MaxNumberOfMessages": 10, "VisibilityTimeout": 0})
        clock.advance(1)
    [first, *_] = run("ReceiveMessage", {"QueueUrl": target, "MaxNumberOfMessages": 10})["Messages"]
    run("DeleteMessage", {"QueueUrl": target, "ReceiptHandle": first["ReceiptHandle"]})
    run("StartMessageMoveTask", {"SourceArn": f"{arn}orders-dead", "DestinationArn": f"{arn}orders-dead"})
    # A FIFO receive repeated with its attempt id.
    run("SendMessage", {"QueueUrl": fifo, "MessageBody": "again", "MessageGroupId": "g", "MessageDeduplicationId": "e"})
    for _ in range(2):
        run("ReceiveMessage", {"QueueUrl": fifo, "ReceiveRequestAttemptId": "attempt"})
    run("PurgeQueue", {"QueueUrl": url})
    run("DeleteQueue", {"QueueUrl": url})
    run("DeleteQueue", {"QueueUrl": fifo})
    run("DeleteQueue", {"QueueUrl": target})


SESSIONS: dict[str, Callable[[Driver, QueueClient, FakeClock], None]] = {
    "producer": _producer_session,
    "poller": _poller_session,
    "dlq_redriver": _dlq_redriver_session,
    "visibility_sweeper": _sweeper_session,
    "sqs": _sqs_session,
}


@pytest.fixture
def driver(request: pytest.FixtureRequest, core: QueueClient, policies: Policies) -> Iterator[Driver]:
    table_arn, _ = policies
    driving = Driver(request.param, core, table_arn)
    yield driving
    driving.recorder.detach(core.dynamodb)


@pytest.mark.parametrize("driver", list(SESSIONS), indirect=True)
def test_a_function_may_make_every_dynamodb_call_it_makes_and_no_other(
    driver: Driver, core: QueueClient, clock: FakeClock, policies: Policies
) -> None:
    """Calls and grants compared as (IAM action, resource), the resource shown as `table` or `table/index/...`."""
    table_arn, all_statements = policies
    statements = all_statements[driver.function]
    SESSIONS[driver.function](driver, core, clock)

    assert driver.reached == driver.every_entry_point(), "the session reaches every action and route"
    refused = {
        _named(request.action, request.resource, table_arn)
        for request in driver.requests
        if not allowed(statements, request)
    }
    assert sorted(refused) == [], "calls the role does not allow"
    used = {_named(request.action, request.resource, table_arn) for request in driver.requests}
    granted = {
        _named(action, resource, table_arn)
        for statement in statements
        for action in _listed(statement["Action"])
        for resource in statement["Resource"]
    }
    assert sorted(granted - used) == [], "granted and never called"


def _named(action: str, resource: str, table_arn: str) -> tuple[str, str]:
    return action, ("table" + resource.removeprefix(table_arn) if resource.startswith(table_arn) else resource)


def _listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)
