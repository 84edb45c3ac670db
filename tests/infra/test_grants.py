"""Grants confine a tenant: HTTP callers to their own (queue, client) paths, library users to their own keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam

from infra.queue import DynamoQueue
from tests.infra.synth import cdk_context
from tests.reliability.iam import ACCOUNT, REGION, Request, Resolver, allowed

SUB_QUEUE = "queues/orders/clients/tenant-a"
REPLAY_ROUTES = {
    f"POST /{SUB_QUEUE}/replays",
    f"GET /{SUB_QUEUE}/replays",
    f"POST /{SUB_QUEUE}/replays/run",
    f"POST /{SUB_QUEUE}/replays/cancel",
}


class GrantsStack(cdk.Stack):
    """A queue and one role per kind of caller, each given one grant."""

    def __init__(self, scope: cdk.App) -> None:
        super().__init__(scope, "Grants")
        self.queue = DynamoQueue(self, "Queue")
        self.roles: dict[str, iam.Role] = {}
        grants = {
            "sender": lambda role: self.queue.grant_send(role, queue="orders", client="tenant-a"),
            "consumer": lambda role: self.queue.grant_consume(role, queue="orders", client="tenant-a"),
            "pool": lambda role: self.queue.grant_consume_all(role, queue="orders"),
            "queue_admin": lambda role: self.queue.grant_admin(role, queue="orders"),
            "queue_owner": lambda role: self.queue.grant_queue_admin(role, queue="orders"),
            "tenant_admin": lambda role: self.queue.grant_admin(role, queue="orders", client="tenant-a"),
            "client_admin": lambda role: self.queue.grant_admin(role, client="tenant-a"),
            "admin": lambda role: self.queue.grant_admin(role),
            "replayer": lambda role: self.queue.grant_replay(role, queue="orders", client="tenant-a"),
            "invoker": lambda role: self.queue.grant_invoke_poller(role),
            "library": lambda role: self.queue.grant_library_access(role, queue="orders", client="tenant-a"),
            "sqs_tenant": lambda role: self.queue.grant_sqs(role, client="tenant-a"),
            "sqs_default": lambda role: self.queue.grant_sqs(role, client="default"),
            "sqs_all": lambda role: self.queue.grant_sqs(role),
            "sqs_admin": lambda role: self.queue.grant_sqs_admin(role),
        }
        for name, grant in grants.items():
            role = iam.Role(self, name, assumed_by=iam.AccountRootPrincipal())
            grant(role)
            self.roles[name] = role


@pytest.fixture(scope="module")
def grants(tmp_path_factory: pytest.TempPathFactory) -> tuple[GrantsStack, dict[str, Any]]:
    outdir: Path = tmp_path_factory.mktemp("grants.out")
    app = cdk.App(outdir=str(outdir), context=cdk_context())
    stack = GrantsStack(app)
    template = app.synth().get_stack_by_name(stack.stack_name).template
    return stack, template


def _statements(grants: tuple[GrantsStack, dict[str, Any]], role_name: str) -> list[dict[str, Any]]:
    stack, template = grants
    role_id = stack.resolve(stack.get_logical_id(stack.roles[role_name].node.default_child))
    (policy,) = [
        resource["Properties"]["PolicyDocument"]["Statement"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in resource["Properties"]["Roles"]
    ]
    return policy


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _render(value: Any) -> str:
    """An ARN as text: `{"Ref": X}` becomes `<X>`, joins are joined."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return f"<{value['Ref']}>"
    if "Fn::GetAtt" in value:
        return "<{}.{}>".format(*value["Fn::GetAtt"])
    separator, parts = value["Fn::Join"]
    return separator.join(_render(part) for part in parts)


def _invoke_paths(grants: tuple[GrantsStack, dict[str, Any]], role_name: str) -> set[str]:
    """`METHOD /path` of every execute-api ARN the role may invoke."""
    (statement,) = _statements(grants, role_name)
    assert statement["Action"] == "execute-api:Invoke"
    resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
    paths = set()
    for resource in resources:
        arn = _render(resource)
        assert arn.startswith("arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<QueueApi")
        _, stage, method, path = arn.split("/", 3)
        assert stage.startswith("<QueueApiDeploymentStagev1")
        paths.add(f"{method} /{path}")
    return paths


def test_sender_may_only_send_to_its_own_sub_queue(grants: tuple[GrantsStack, dict[str, Any]]) -> None:
    assert _invoke_paths(grants, "sender") == {f"POST /{SUB_QUEUE}/messages", "GET /openapi.json"}


def test_consumer_may_only_consume_its_own_sub_queue(grants: tuple[GrantsStack, dict[str, Any]]) -> None:
    assert _invoke_paths(grants, "consumer") == {
        f"POST /{SUB_QUEUE}/receive",
        f"POST /{SUB_QUEUE}/delete",
        f"POST /{SUB_QUEUE}/visibility",
        f"POST /{SUB_QUEUE}/release",
        f"GET /{SUB_QUEUE}/messages",
        f"GET /{SUB_QUEUE}/browse",
        f"GET /{SUB_QUEUE}/messages/*",
        f"DELETE /{SUB_QUEUE}/messages/*",
        f"GET /{SUB_QUEUE}/stats",
        f"GET /{SUB_QUEUE}/archive",
        f"GET /{SUB_QUEUE}/archive/*",
        "GET /openapi.json",
    }


def test_a_worker_pool_consumes_every_client_of_one_queue_and_administers_nothing(
    grants: tuple[GrantsStack, dict[str, Any]],
) -> None:
    every = "queues/orders/clients/*"
    assert _invoke_paths(grants, "pool") == {
        *(f"POST /queues/orders/{action}" for action in ("receive", "delete", "visibility", "release")),
        *(f"POST /{every}/{action}" for action in ("receive", "delete", "visibility", "release")),
        f"GET /{every}/messages",
        f"GET /{every}/browse",
        f"GET /{every}/messages/*",
        f"DELETE /{every}/messages/*",
        f"GET /{every}/stats",
        f"GET /{every}/archive",
        f"GET /{every}/archive/*",
        "GET /queues/orders/archive",
        "GET /openapi.json",
    }


def test_queue_admin_manages_one_queue_without_listing_the_others(
    grants: tuple[GrantsStack, dict[str, Any]],
) -> None:
    paths = _invoke_paths(grants, "queue_admin")
    assert {
        "PUT /queues/orders",
        "GET /queues/orders",
        "PATCH /queues/orders",
        "DELETE /queues/orders",
        "GET /queues/orders/clients",
    } <= paths
    assert {
        "DELETE /queues/orders/clients/*/messages",
        "GET /queues/orders/clients/*/dlq",
        "POST /queues/orders/clients/*/dlq/redrive",
        "POST /queues/orders/clients/*/messages/*/dlq",
    } <= paths
    assert "GET /queues" not in paths
    assert all(
        path.startswith(
            (
                "GET /openapi.json",
                "PUT /queues/orders",
                "GET /queues/orders",
                "PATCH /queues/orders",
                "DELETE /queues/orders",
                "POST /queues/orders",
            )
        )
        for path in paths
    )


def test_a_grant_of_every_route_of_a_queue_is_the_admin_grant_of_all_its_clients(
    grants: tuple[GrantsStack, dict[str, Any]],
) -> None:
    assert _invoke_paths(grants, "queue_owner") == _invoke_paths(grants, "queue_admin")


def test_a_tenant_admin_can_neither_change_delete_nor_describe_the_queue_it_shares(
    grants: tuple[GrantsStack, dict[str, Any]],
) -> None:
    """Its own sub-queue, every route of it; nothing of the queue's own routes, which act on or sum over
    every client of the queue."""
    assert _invoke_paths(grants, "tenant_admin") == {
        f"POST /{SUB_QUEUE}/messages",
        f"POST /{SUB_QUEUE}/receive",
        f"POST /{SUB_QUEUE}/delete",
        f"POST /{SUB_QUEUE}/visibility",
        f"POST /{SUB_QUEUE}/release",
        f"GET /{SUB_QUEUE}/messages",
        f"GET /{SUB_QUEUE}/browse",
        f"GET /{SUB_QUEUE}/messages/*",
        f"DELETE /{SUB_QUEUE}/messages/*",
        f"DELETE /{SUB_QUEUE}/messages",
        f"GET /{SUB_QUEUE}/stats",
        f"GET /{SUB_QUEUE}/dlq",
        f"GET /{SUB_QUEUE}/dlq/reasons",
        f"POST /{SUB_QUEUE}/dlq/redrive",
        f"POST /{SUB_QUEUE}/messages/*/dlq",
        f"GET /{SUB_QUEUE}/archive",
        f"GET /{SUB_QUEUE}/archive/*",
        *REPLAY_ROUTES,
        "GET /openapi.json",
    }


def test_a_replay_is_its_own_grant_apart_from_reading_the_archive(grants: tuple[GrantsStack, dict[str, Any]]) -> None:
    """Reading the archive is the consume grant (the peek grant); replaying it is an operator's, which no
    consume grant reaches."""
    assert _invoke_paths(grants, "replayer") == {*REPLAY_ROUTES, "GET /openapi.json"}
    assert not REPLAY_ROUTES & _invoke_paths(grants, "consumer")


def test_an_admin_of_one_client_in_every_queue_neither_lists_nor_manages_the_queues(
    grants: tuple[GrantsStack, dict[str, Any]],
) -> None:
    paths = _invoke_paths(grants, "client_admin") - {"GET /openapi.json"}
    assert len(paths) == 21
    assert all(path.split(" ")[1].startswith("/queues/*/clients/tenant-a/") for path in paths), paths


def test_admin_of_everything_may_list_queues(grants: tuple[GrantsStack, dict[str, Any]]) -> None:
    paths = _invoke_paths(grants, "admin")
    assert "GET /queues" in paths
    assert len(paths) == 33  # 28 routes of a client or a queue, and the 5 queue-wide consume routes


def test_invoke_grant_names_one_function(grants: tuple[GrantsStack, dict[str, Any]]) -> None:
    stack, _ = grants
    poller_id = stack.resolve(stack.get_logical_id(stack.queue.poller.node.default_child))
    (statement,) = _statements(grants, "invoker")
    assert statement["Action"] == "lambda:InvokeFunction"
    assert {_render(resource) for resource in statement["Resource"]} == {f"<{poller_id}.Arn>", f"<{poller_id}.Arn>:*"}


def test_library_access_is_confined_to_the_tenant_partitions(grants: tuple[GrantsStack, dict[str, Any]]) -> None:
    """Its own partitions read and written, its own registration and its queue's settings by exact key, its own
    partitions of the index queried; nothing of another tenant, another queue or the list of queues."""
    stack, _ = grants
    table_id = stack.resolve(stack.get_logical_id(stack.queue.table.node.default_child))
    table, index = f"<{table_id}.Arn>", f"<{table_id}.Arn>/index/gsi1"
    own = [f"{kind}#orders#tenant-a#*" for kind in ("M", "D", "F", "G", "X", "R", "L", "V", "K")]
    statements = [
        statement
        for statement in _statements(grants, "library")
        if all(action.startswith("dynamodb:") for action in _listed(statement["Action"]))
    ]
    granted = {
        (
            tuple(_render(resource) for resource in _listed(statement["Resource"])),
            tuple(sorted(_listed(statement["Action"]))),
            tuple(statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]),
        )
        for statement in statements
    }
    library = (
        "BatchGetItem",
        "BatchWriteItem",
        "ConditionCheckItem",
        "DeleteItem",
        "GetItem",
        "PutItem",
        "Query",
        "UpdateItem",
    )
    library_actions = tuple(f"dynamodb:{action}" for action in library)

    assert granted == {
        ((table,), library_actions, (*own, "C#orders#tenant-a")),
        ((table,), ("dynamodb:GetItem",), ("Q#orders", "META")),
        ((index,), ("dynamodb:Query",), tuple(own)),
    }
    for statement in statements:
        assert set(statement["Condition"]) == {"ForAllValues:StringLike"}
        assert statement["Effect"] == "Allow"


def test_library_access_reaches_only_the_tenant_s_own_offloaded_bodies(
    grants: tuple[GrantsStack, dict[str, Any]],
) -> None:
    stack, _ = grants
    bucket_id = stack.resolve(stack.get_logical_id(stack.queue.bodies_bucket.node.default_child))
    (statement,) = [
        statement
        for statement in _statements(grants, "library")
        if any(action.startswith("s3:") for action in _listed(statement["Action"]))
    ]
    assert sorted(_listed(statement["Action"])) == ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
    assert [_render(resource) for resource in _listed(statement["Resource"])] == [
        f"<{bucket_id}.Arn>/orders/tenant-a/*"
    ]


@pytest.mark.parametrize(
    ("queue", "client"),
    [("orders*", "a"), ("orders", "tenant-*"), ("a/b", "c"), ("", "c"), ("orders", "a.fifo"), ("q#x", "c")],
)
def test_grants_refuse_names_that_could_widen_them(
    grants: tuple[GrantsStack, dict[str, Any]], queue: str, client: str
) -> None:
    stack, _ = grants
    role = stack.roles["sender"]
    with pytest.raises(ValueError, match="must be"):
        stack.queue.grant_send(role, queue=queue, client=client)
    with pytest.raises(ValueError, match="must be"):
        stack.queue.grant_library_access(role, queue=queue, client=client)


def test_an_sqs_grant_reaches_its_clients_endpoint_and_only_default_or_all_reach_the_root(
    grants: tuple[GrantsStack, dict[str, Any]],
) -> None:
    assert _invoke_paths(grants, "sqs_tenant") == {"POST /sqs/tenant-a"}
    assert _invoke_paths(grants, "sqs_default") == {"POST /sqs/default", "POST /"}
    assert _invoke_paths(grants, "sqs_all") == {"POST /sqs/*", "POST /"}
    assert _invoke_paths(grants, "sqs_admin") == {"POST /sqs-admin"}


SQS_ROUTES = {
    "admin": "/sqs-admin",
    "root (client default)": "/",
    "default": "/sqs/default",
    "tenant-a": "/sqs/tenant-a",
    "tenant-b": "/sqs/tenant-b",
}
# Who reaches which SQS route, each request evaluated against the role's policy in the synthesized template. Queue
# administration (CreateQueue, SetQueueAttributes, DeleteQueue, tags) is served only at `/sqs-admin`, so only
# `grant_sqs_admin` reaches it: no grant that names a client, `default` and `*` included, nor any REST grant.
SQS_REACH = {
    "sqs_tenant": {"tenant-a"},
    "sqs_default": {"root (client default)", "default"},
    "sqs_all": {"root (client default)", "default", "tenant-a", "tenant-b"},
    "sqs_admin": {"admin"},
    "admin": set(),
    "queue_owner": set(),
    "client_admin": set(),
    "sender": set(),
}


@pytest.mark.parametrize("role", sorted(SQS_REACH))
def test_only_the_sqs_admin_grant_reaches_queue_administration(
    grants: tuple[GrantsStack, dict[str, Any]], role: str
) -> None:
    resolver = Resolver(grants[1])
    (api,) = resolver.logical_ids("AWS::ApiGateway::RestApi")
    api_arn = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{resolver.api_id(api)}"
    statements = resolver.statements(_statements(grants, role))
    reached = {
        name
        for name, path in SQS_ROUTES.items()
        if allowed(statements, Request("execute-api:Invoke", f"{api_arn}/v1/POST{path}"))
    }
    assert reached == SQS_REACH[role]
