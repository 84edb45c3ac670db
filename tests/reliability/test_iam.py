"""The construct's grants, read from the synthesized template and evaluated against example requests.

A tenant given `grant_send` and `grant_consume` on `(orders, a)` may call its own sub-queue's routes and no other
tenant's, nor the queue's administration; so may its administrator (`grant_admin` naming the client), which adds
only its own sub-queue's purge and DLQ. A tenant function given `grant_library_access` may touch only the partitions
whose keys start with its own `(orders, a)`, its own client registration, and read its queue's settings, whatever
the call; an administrator of `orders` stays inside `orders`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from queue_core import QueueClient, keys

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from aws_cdk import aws_iam as iam

from infra.queue import DynamoQueue
from tests.conftest import TABLE, FakeClock
from tests.infra.synth import cdk_context
from tests.reliability.iam import (
    ACCOUNT,
    REGION,
    DynamoDbRecorder,
    Request,
    Resolver,
    all_allowed,
    allowed,
    dynamodb_requests,
)

ROLES = ("tenant", "tenant_admin", "tenant_function", "fifo_tenant_function", "orders_admin", "orders_owner")
GENERATION = "5f3a09c2"
# The role of the tenant function of each queue: client "a" of a standard and of a FIFO queue.
LIBRARY_ROLES = {"orders": "tenant_function", "jobs.fifo": "fifo_tenant_function"}
# Past the time a change of shards takes to reach every process, so FIFO groups are placed by the new count.
PLACEMENT_SETTLED_SECONDS = 120
MAX_ROUNDS = 20


class TenantStack(cdk.Stack):
    """One queue construct and one role per kind of caller."""

    def __init__(self, scope: cdk.App) -> None:
        super().__init__(scope, "Tenants")
        self.queue = DynamoQueue(self, "Queue")
        self.roles = {name: iam.Role(self, name, assumed_by=iam.AccountRootPrincipal()) for name in ROLES}
        self.queue.grant_send(self.roles["tenant"], queue="orders", client="a")
        self.queue.grant_consume(self.roles["tenant"], queue="orders", client="a")
        self.queue.grant_library_access(self.roles["tenant_function"], queue="orders", client="a")
        self.queue.grant_library_access(self.roles["fifo_tenant_function"], queue="jobs.fifo", client="a")
        self.queue.grant_admin(self.roles["tenant_admin"], queue="orders", client="a")
        self.queue.grant_admin(self.roles["orders_admin"], queue="orders")
        self.queue.grant_queue_admin(self.roles["orders_owner"], queue="orders")


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> tuple[Resolver, dict[str, list[dict[str, Any]]]]:
    """Each role's statements, resources resolved; one synth for the module."""
    outdir: Path = tmp_path_factory.mktemp("tenants.out")
    app = cdk.App(outdir=str(outdir), context=cdk_context())
    stack = TenantStack(app)
    template = app.synth().get_stack_by_name(stack.stack_name).template
    resolver = Resolver(template)
    statements: dict[str, list[dict[str, Any]]] = {}
    for name, role in stack.roles.items():
        role_id = stack.resolve(stack.get_logical_id(role.node.default_child))
        statements[name] = resolver.statements(
            statement
            for resource in template["Resources"].values()
            if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in resource["Properties"]["Roles"]
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        )
    return resolver, statements


def _invoke(resolver: Resolver, method: str, path: str) -> Request:
    (api,) = resolver.logical_ids("AWS::ApiGateway::RestApi")
    arn = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{resolver.api_id(api)}/v1/{method}{path}"
    return Request("execute-api:Invoke", arn)


def _table(resolver: Resolver, action: str, *leading_keys: str, index: bool = False) -> Request:
    (table,) = resolver.logical_ids("AWS::DynamoDB::Table")
    arn = resolver.table_arn(table) + ("/index/gsi1" if index else "")
    return Request(action, arn, {"dynamodb:LeadingKeys": leading_keys} if leading_keys else {})


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/queues/orders/clients/a/messages", True),
        ("POST", "/queues/orders/clients/a/receive", True),
        ("POST", "/queues/orders/clients/a/delete", True),
        ("POST", "/queues/orders/clients/a/visibility", True),
        ("POST", "/queues/orders/clients/a/release", True),
        ("GET", "/queues/orders/clients/a/messages/S0.123", True),
        ("GET", "/queues/orders/clients/a/stats", True),
        ("GET", "/openapi.json", True),
        ("POST", "/queues/orders/clients/b/messages", False),
        ("POST", "/queues/orders/clients/b/receive", False),
        ("POST", "/queues/orders/clients/b/delete", False),
        ("POST", "/queues/orders/clients/ab/messages", False),
        ("POST", "/queues/orders2/clients/a/messages", False),
        ("POST", "/queues/other/clients/a/receive", False),
        ("DELETE", "/queues/orders/clients/a/messages", False),
        ("POST", "/queues/orders/clients/a/dlq/redrive", False),
        ("PUT", "/queues/orders", False),
        ("DELETE", "/queues/orders", False),
        ("GET", "/queues", False),
    ],
)
def test_a_tenant_may_call_its_own_sub_queue_routes_and_no_one_elses(
    policies: tuple[Resolver, dict[str, list[dict[str, Any]]]], method: str, path: str, expected: bool
) -> None:
    resolver, statements = policies
    assert allowed(statements["tenant"], _invoke(resolver, method, path)) is expected


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("DELETE", "/queues/orders/clients/a/messages", True),
        ("GET", "/queues/orders/clients/a/dlq", True),
        ("POST", "/queues/orders/clients/a/dlq/redrive", True),
        ("POST", "/queues/orders/clients/a/messages/S0.123/dlq", True),
        ("POST", "/queues/orders/clients/a/messages", True),
        ("POST", "/queues/orders/clients/a/receive", True),
        ("PUT", "/queues/orders", False),
        ("PATCH", "/queues/orders", False),
        ("DELETE", "/queues/orders", False),
        ("GET", "/queues/orders", False),
        ("GET", "/queues/orders/clients", False),
        ("GET", "/queues", False),
        ("DELETE", "/queues/orders/clients/b/messages", False),
        ("POST", "/queues/orders/clients/b/dlq/redrive", False),
        ("POST", "/queues/orders/clients/ab/dlq/redrive", False),
        ("DELETE", "/queues/orders2/clients/a/messages", False),
    ],
)
def test_a_tenant_admin_manages_its_sub_queue_but_not_the_queue_other_tenants_share(
    policies: tuple[Resolver, dict[str, list[dict[str, Any]]]], method: str, path: str, expected: bool
) -> None:
    resolver, statements = policies
    assert allowed(statements["tenant_admin"], _invoke(resolver, method, path)) is expected


@pytest.mark.parametrize("role", ["orders_admin", "orders_owner"])
@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("PUT", "/queues/orders", True),
        ("PATCH", "/queues/orders", True),
        ("DELETE", "/queues/orders", True),
        ("GET", "/queues/orders", True),
        ("GET", "/queues/orders/clients", True),
        ("DELETE", "/queues/orders/clients/b/messages", True),
        ("POST", "/queues/orders/clients/b/dlq/redrive", True),
        ("PUT", "/queues/other", False),
        ("POST", "/queues/other/clients/a/messages", False),
        ("GET", "/queues", False),
    ],
)
def test_an_administrator_of_one_queue_stays_inside_it(
    policies: tuple[Resolver, dict[str, list[dict[str, Any]]]], role: str, method: str, path: str, expected: bool
) -> None:
    resolver, statements = policies
    assert allowed(statements[role], _invoke(resolver, method, path)) is expected


OWN = f"orders#a#{GENERATION}"


@pytest.mark.parametrize(
    ("action", "keys", "index", "expected"),
    [
        ("dynamodb:Query", (f"M#{OWN}#0",), False, True),
        ("dynamodb:Query", (f"M#{OWN}#0",), True, True),
        ("dynamodb:Query", (f"F#{OWN}#1",), True, True),
        ("dynamodb:UpdateItem", (f"G#{OWN}#group-1",), False, True),
        ("dynamodb:BatchWriteItem", (f"M#{OWN}#0", f"X#{OWN}#3"), False, True),
        ("dynamodb:BatchGetItem", (f"F#{OWN}#0", f"F#{OWN}#1"), False, True),
        ("dynamodb:PutItem", ("C#orders#a",), False, True),
        ("dynamodb:GetItem", ("C#orders#a",), False, True),
        ("dynamodb:DeleteItem", ("C#orders#a",), False, True),
        ("dynamodb:GetItem", ("Q#orders",), False, True),
        # The client partition all tenants of a queue shared before, and other tenants' registrations.
        ("dynamodb:PutItem", ("C#orders",), False, False),
        ("dynamodb:Query", ("C#orders",), False, False),
        ("dynamodb:DeleteItem", ("C#orders",), False, False),
        ("dynamodb:GetItem", ("C#orders#b",), False, False),
        ("dynamodb:DeleteItem", ("C#orders#b",), False, False),
        ("dynamodb:GetItem", ("C#orders#ab",), False, False),
        ("dynamodb:PutItem", ("C#orders#ab",), False, False),
        ("dynamodb:Query", (f"C#orders#{GENERATION}",), True, False),
        ("dynamodb:Query", ("C#orders#a",), True, False),
        # Settings: its own queue's, read only; no other queue's; nothing of the registry.
        ("dynamodb:PutItem", ("Q#orders",), False, False),
        ("dynamodb:UpdateItem", ("Q#orders",), False, False),
        ("dynamodb:GetItem", ("Q#orders2",), False, False),
        ("dynamodb:GetItem", ("Q#other",), False, False),
        ("dynamodb:GetItem", ("REGISTRY",), False, False),
        ("dynamodb:Query", ("REGISTRY",), False, False),
        ("dynamodb:PutItem", ("REGISTRY",), False, False),
        ("dynamodb:DeleteItem", ("REGISTRY",), False, False),
        # Other sub-queues.
        ("dynamodb:Query", (f"M#orders#b#{GENERATION}#0",), False, False),
        ("dynamodb:Query", (f"M#orders#b#{GENERATION}#0",), True, False),
        ("dynamodb:Query", (f"M#orders#ab#{GENERATION}#0",), False, False),
        ("dynamodb:Query", (f"M#orders2#a#{GENERATION}#0",), False, False),
        ("dynamodb:DeleteItem", (f"D#orders#b#{GENERATION}#0",), False, False),
        # A batch mixing its own keys with anyone else's.
        ("dynamodb:BatchWriteItem", (f"M#{OWN}#0", f"M#orders#b#{GENERATION}#0"), False, False),
        ("dynamodb:BatchGetItem", (f"M#{OWN}#0", f"F#orders#b#{GENERATION}#0"), False, False),
        ("dynamodb:BatchGetItem", ("C#orders#a", "C#orders#b"), False, False),
        ("dynamodb:BatchGetItem", (f"F#{OWN}#0", "Q#orders"), False, False),
        ("dynamodb:Scan", (), False, False),
        ("dynamodb:DeleteTable", (), False, False),
    ],
    ids=lambda value: ("+".join(value) or "no-key") if isinstance(value, tuple) else None,
)
def test_a_tenant_function_reaches_only_its_own_partitions(
    policies: tuple[Resolver, dict[str, list[dict[str, Any]]]],
    action: str,
    keys: tuple[str, ...],
    index: bool,
    expected: bool,
) -> None:
    resolver, statements = policies
    assert allowed(statements["tenant_function"], _table(resolver, action, *keys, index=index)) is expected


def test_the_tenant_grant_fits_the_core_keys_of_its_sub_queue_and_of_no_other(
    policies: tuple[Resolver, dict[str, list[dict[str, Any]]]],
) -> None:
    """The key formats as the core spells them (`queue_core.keys`): every partition of `(orders, a)` in any
    generation, its registration and its queue's settings are reachable; another client's, another queue's, the
    registry's and the index's list of clients are not."""
    resolver, statements = policies
    grant = statements["tenant_function"]
    own, other = keys.Space("orders", "a", GENERATION), keys.Space("orders", "b", GENERATION)

    def may(action: str, key: str, index: bool = False) -> bool:
        return allowed(grant, _table(resolver, action, key, index=index))

    for space, expected in ((own, True), (other, False), (keys.Space("orders2", "a", GENERATION), False)):
        partitions = [
            space.message_pk(2),
            space.dlq_pk(0),
            space.group_item_pk(1),
            space.group_messages_pk("group-1"),
            space.dedup_key("d1")["pk"],
        ]
        for pk in partitions:
            assert may("dynamodb:UpdateItem", pk) is expected, pk
            assert may("dynamodb:Query", pk, index=True) is expected, pk
        assert may("dynamodb:PutItem", space.registration_key()["pk"]) is expected
    assert may("dynamodb:GetItem", keys.settings_key("orders")["pk"])
    assert not may("dynamodb:PutItem", keys.settings_key("orders")["pk"])
    assert not may("dynamodb:GetItem", keys.settings_key("orders2")["pk"])
    assert not may("dynamodb:GetItem", keys.client_registration_key("orders", "ab", GENERATION)["pk"])
    assert not may("dynamodb:GetItem", keys.listing_key("orders")["pk"])
    assert not may("dynamodb:GetItem", keys.tombstone_key("orders", GENERATION)["pk"])
    assert not may("dynamodb:Query", keys.clients_index_pk("orders", GENERATION), index=True)


def _put(pk: str) -> dict[str, Any]:
    return {"Put": {"TableName": "t", "Item": {"pk": {"S": pk}, "sk": {"S": "1"}}}}


def _update(pk: str) -> dict[str, Any]:
    return {"Update": {"TableName": "t", "Key": {"pk": {"S": pk}, "sk": {"S": "1"}}, "UpdateExpression": "SET a = :a"}}


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([_update(f"G#{OWN}#g"), _put(f"M#{OWN}#0"), _put(f"X#{OWN}#7")], True),
        ([_update(f"G#{OWN}#g"), _put(f"M#orders#b#{GENERATION}#0")], False),
        ([_put(f"M#{OWN}#0"), _put("C#orders#b")], False),
        ([_put(f"M#{OWN}#0"), _update("Q#orders")], False),
        (
            [
                _put(f"M#{OWN}#0"),
                {"ConditionCheck": {"TableName": "t", "Key": {"pk": {"S": "REGISTRY"}, "sk": {"S": "Q#orders"}}}},
            ],
            False,
        ),
    ],
    ids=["own", "another-client", "another-registration", "settings-write", "registry-check"],
)
def test_a_tenant_transaction_is_refused_when_any_of_its_items_is_not_its_own(
    policies: tuple[Resolver, dict[str, list[dict[str, Any]]]], items: list[dict[str, Any]], expected: bool
) -> None:
    """DynamoDB authorizes each item of a transaction on its own: one foreign item refuses the whole call."""
    resolver, statements = policies
    (table,) = resolver.logical_ids("AWS::DynamoDB::Table")
    requests = dynamodb_requests("TransactWriteItems", {"TransactItems": items}, resolver.table_arn(table))
    assert len(requests) == len(items)
    assert all_allowed(statements["tenant_function"], requests) is expected


# The one grant a tenant function needs besides `grant_library_access` to put the queue's items in a transaction
# with its own: the actions its own items use, on its own table (README: "Exactly-once effects and the outbox").
SHOP_TABLE_ARN = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/shop-orders"
SHOP_GRANT = {
    "Effect": "Allow",
    "Action": ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"],
    "Resource": [SHOP_TABLE_ARN],
}


@pytest.mark.parametrize("queue", list(LIBRARY_ROLES))
def test_a_tenant_function_commits_the_queues_items_with_its_own_given_one_grant_on_its_own_table(
    policies: tuple[Resolver, dict[str, list[dict[str, Any]]]], client: QueueClient, queue: str
) -> None:
    """DynamoDB authorizes each item of a transaction on its own: the queue's items by the library grant, the
    caller's own by the grant on its own table. The transaction action itself needs no grant."""
    resolver, statements = policies
    (table,) = resolver.logical_ids("AWS::DynamoDB::Table")
    client.create_queue(queue)
    sub = client.queue(queue, "a")
    group = "g" if queue.endswith(".fifo") else None
    send = sub.send_transact_items("order placed", group_id=group, dedup_id="order-1")
    sub.send("to acknowledge", group_id=group)
    handles = []
    while not handles:
        handles = [message.receipt_handle for message in sub.receive(max_messages=1)]
    ack = sub.delete_transact_items(handles[0])
    own = {"Put": {"TableName": "shop-orders", "Item": {"pk": {"S": "order#1"}}}}
    queue_requests = dynamodb_requests(
        "TransactWriteItems", {"TransactItems": [*send.items, *ack]}, resolver.table_arn(table)
    )
    own_requests = dynamodb_requests("TransactWriteItems", {"TransactItems": [own]}, SHOP_TABLE_ARN)
    granted = statements[LIBRARY_ROLES[queue]]
    assert all_allowed(granted, queue_requests)
    assert not all_allowed(granted, [*queue_requests, *own_requests])
    assert all_allowed([*granted, SHOP_GRANT], [*queue_requests, *own_requests])


@pytest.fixture
def tenant_dynamodb(dynamodb: Any) -> Iterator[tuple[Any, DynamoDbRecorder]]:
    """A DynamoDB client of the tenant's own (the administrator's calls go through another), recorded."""
    own = boto3.client("dynamodb", region_name="us-east-1")
    recorder = DynamoDbRecorder().attach(own)
    yield own, recorder
    recorder.detach(own)


def _library_session(admin: QueueClient, tenant_dynamodb: Any, clock: FakeClock, queue: str, client: str) -> None:
    """A tenant's function using every operation of its sub-queue through the core library, before and after the
    administrator changes the queue's shard count (the tenant's later process places FIFO groups by the new count
    and looks for them at the old places)."""
    fifo = queue.endswith(".fifo")

    def group(number: int) -> dict[str, str]:
        return {"group_id": f"g{number % 6}"} if fifo else {}

    tenant = QueueClient(TABLE, dynamodb=tenant_dynamodb, clock=clock).queue(queue, client)
    tenant.send("one", **group(0))
    tenant.send("deduped", dedup_id="d1", **group(1))
    tenant.send("deduped", dedup_id="d1", **group(1))
    tenant.send_batch([{"body": f"batch-{number}", **group(number)} for number in range(6)])
    tenant.send_batch([{"body": "batch-deduped", "dedup_id": "d2", **group(2)}, {"body": "more", **group(0)}])
    tenant.get(tenant.peek(10)[0].message_id)
    heads: dict[str, Any] = {}
    for _ in range(MAX_ROUNDS):
        for message in tenant.receive(max_messages=10, visibility_timeout=30):
            heads.setdefault(message.group_id or message.message_id, message)
        if len(heads) >= 5:
            break
    first, second, third, fourth, fifth = list(heads.values())[:5]
    tenant.get(first.message_id)
    tenant.change_visibility(first.receipt_handle, 60)
    tenant.release(second.receipt_handle, delay_seconds=0)
    tenant.release(third.receipt_handle)
    tenant.delete(fourth.receipt_handle)
    tenant.delete_batch([fifth.receipt_handle])
    tenant.stats()
    clock.advance(61)
    for _ in range(MAX_ROUNDS):
        if tenant.dlq_list(10):
            break
        tenant.receive(max_messages=10, visibility_timeout=0)
        clock.advance(1)
    dead = [message.message_id for message in tenant.dlq_list(10)]
    assert dead, "messages past their receive limit went to the DLQ"
    tenant.get(dead[0])
    tenant.redrive(message_ids=dead[:1])
    tenant.redrive(max_messages=1)
    tenant.redrive()
    tenant.cancel(tenant.peek(1)[0].message_id)

    admin.update_queue(queue, shards=3)
    clock.advance(PLACEMENT_SETTLED_SECONDS)
    later = QueueClient(TABLE, dynamodb=tenant_dynamodb, clock=clock).queue(queue, client)
    for number in range(5):
        later.send(f"later-{number}", **({"group_id": f"g{number}"} if fifo else {}))
    later.send_batch([{"body": f"later-batch-{number}", **group(number)} for number in range(3)])
    received = later.receive(max_messages=10, visibility_timeout=30)
    later.delete_batch([message.receipt_handle for message in received])
    later.get(later.peek(1)[0].message_id)
    if not fifo:
        later.move_to_dlq(later.peek(1)[0].message_id)
    later.stats()
    later.dlq_list(10)
    later.redrive()
    later.cancel(later.peek(1)[0].message_id)
    later.purge()


def _leading_keys(requests: list[Request]) -> list[str]:
    return sorted({key for request in requests for key in request.context.get("dynamodb:LeadingKeys", ())})


@pytest.mark.parametrize("queue", list(LIBRARY_ROLES))
def test_a_tenant_library_session_stays_inside_its_grant_and_another_tenants_would_be_refused(
    policies: tuple[Resolver, dict[str, list[dict[str, Any]]]],
    client: QueueClient,
    tenant_dynamodb: tuple[Any, DynamoDbRecorder],
    clock: FakeClock,
    queue: str,
) -> None:
    """Every DynamoDB request of a real session of client `a` (each item of a transaction or a batch, and each
    index query by its index partition) is allowed by the synthesized `grant_library_access(queue, "a")`. The
    same session run by client `b` is refused in every call but the reads of the queue's settings, which the
    tenants of a queue share, and of the table's layout record, which every process reads."""
    resolver, statements = policies
    (table,) = resolver.logical_ids("AWS::DynamoDB::Table")
    table_arn = resolver.table_arn(table)
    grant = statements[LIBRARY_ROLES[queue]]
    own_dynamodb, recorder = tenant_dynamodb
    client.create_queue(queue, max_receive_count=2, retention_seconds=3600, shards=2)

    _library_session(client, own_dynamodb, clock, queue, "a")
    calls = list(zip(recorder.calls, recorder.requests(table_arn), strict=True))
    recorder.clear()
    _library_session(client, own_dynamodb, clock, queue, "b")
    others = list(zip(recorder.calls, recorder.requests(table_arn), strict=True))

    refused = [
        (operation, _leading_keys(requests)) for (operation, _), requests in calls if not all_allowed(grant, requests)
    ]
    assert not refused, refused
    kinds = {key.split("#")[0] for _, requests in calls for key in _leading_keys(requests)}
    assert kinds >= {"D", "X", "C", "Q"} | ({"F", "G"} if queue.endswith(".fifo") else {"M"}), kinds
    assert any(request.resource.endswith("/index/gsi1") for _, requests in calls for request in requests)
    shared = ([f"Q#{queue}"], ["META"])
    let_through = [
        (operation, _leading_keys(requests))
        for (operation, _), requests in others
        if all_allowed(grant, requests) and _leading_keys(requests) not in shared
    ]
    assert not let_through, let_through


def test_grants_are_confined_to_tenant_paths_and_leading_keys_in_the_template(
    policies: tuple[Resolver, dict[str, list[dict[str, Any]]]],
) -> None:
    """What the evaluations rest on, read directly: every execute-api ARN of the tenant and of its administrator
    names its own sub-queue (or the API description), and every table statement of its function is conditioned on
    `dynamodb:LeadingKeys`, names its own registration and its queue's settings by exact key, and grants no call
    that reads without a key; its bucket statement names its own prefix."""
    _, statements = policies
    for statement in statements["tenant"] + statements["tenant_admin"]:
        assert statement["Effect"] == "Allow" and statement["Action"] == "execute-api:Invoke"
        for arn in statement["Resource"]:
            path = arn.split("/", 3)[3]
            assert path.startswith("queues/orders/clients/a/") or path == "openapi.json", arn
    for statement in statements["tenant_function"]:
        if all(action.startswith("s3:") for action in _listed_actions(statement)):
            assert [resource.split(":::", 1)[1].split("/", 1)[1] for resource in statement["Resource"]] == [
                "orders/a/*"
            ]
            continue
        keys = statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
        shared = ("C#orders#a", "Q#orders", "META")
        assert all(key in shared or key.split("#")[1:4] == ["orders", "a", "*"] for key in keys)
        actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        assert not {"dynamodb:Scan", "dynamodb:PartiQLSelect", "dynamodb:*"} & set(actions)


def _listed_actions(statement: dict[str, Any]) -> list[str]:
    return [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]


def test_the_evaluator_denies_without_an_allow_and_lets_an_explicit_deny_win() -> None:
    allow = {"Effect": "Allow", "Action": "dynamodb:*", "Resource": "arn:aws:dynamodb:*:*:table/t"}
    deny = {"Effect": "Deny", "Action": "dynamodb:DeleteItem", "Resource": "*"}
    request = Request("dynamodb:DeleteItem", "arn:aws:dynamodb:us-east-1:1:table/t")
    assert allowed([allow], request) and not allowed([allow, deny], request) and not allowed([], request)
    scoped = {**allow, "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["M#q#a#*"]}}}
    assert allowed([scoped], Request("dynamodb:Scan", request.resource)), "ForAllValues of no key holds, as in IAM"


@pytest.mark.parametrize(
    ("key", "allowed_to_tenant"),
    [
        (f"orders/a/{GENERATION}/0f1e2d", True),
        (f"orders/b/{GENERATION}/0f1e2d", False),
        (f"orders/ab/{GENERATION}/0f1e2d", False),
        (f"orders2/a/{GENERATION}/0f1e2d", False),
        (f"jobs.fifo/a/{GENERATION}/0f1e2d", False),
    ],
)
def test_a_tenant_function_reaches_only_its_own_offloaded_bodies(
    policies: tuple[Resolver, dict[str, list[dict[str, Any]]]], key: str, allowed_to_tenant: bool
) -> None:
    """Object keys start `{queue}/{client}/`: the library grant's prefix lets the tenant's function write, read and
    remove its own sub-queue's bodies, and no other's; it may never list the bucket."""
    resolver, statements = policies
    (bucket,) = resolver.logical_ids("AWS::S3::Bucket")
    arn = resolver.bucket_arn(bucket)
    for action in ("s3:PutObject", "s3:GetObject", "s3:DeleteObject"):
        assert allowed(statements["tenant_function"], Request(action, f"{arn}/{key}")) is allowed_to_tenant
    assert not allowed(statements["tenant_function"], Request("s3:ListBucket", arn))
