"""The construct's grants, read from the synthesized template and evaluated against example requests.

A tenant given `grant_send` and `grant_consume` on `(orders, a)` may call its own sub-queue's routes and no other
tenant's, nor the queue's administration; a tenant function given `grant_library_access` may touch only the
partitions whose keys start with its own `(orders, a)` (and read the registry), whatever the call; an administrator
of `orders` stays inside `orders`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from aws_cdk import aws_iam as iam

from infra.queue import DynamoQueue
from tests.infra.synth import cdk_context
from tests.reliability.iam import ACCOUNT, REGION, Request, Resolver, allowed

ROLES = ("tenant", "tenant_function", "orders_admin")


class TenantStack(cdk.Stack):
    """One queue construct and one role per kind of caller."""

    def __init__(self, scope: cdk.App) -> None:
        super().__init__(scope, "Tenants")
        self.queue = DynamoQueue(self, "Queue")
        self.roles = {name: iam.Role(self, name, assumed_by=iam.AccountRootPrincipal()) for name in ROLES}
        self.queue.grant_send(self.roles["tenant"], queue="orders", client="a")
        self.queue.grant_consume(self.roles["tenant"], queue="orders", client="a")
        self.queue.grant_library_access(self.roles["tenant_function"], queue="orders", client="a")
        self.queue.grant_admin(self.roles["orders_admin"], queue="orders")


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
        ("PUT", "/queues/orders", True),
        ("DELETE", "/queues/orders/clients/b/messages", True),
        ("POST", "/queues/orders/clients/b/dlq/redrive", True),
        ("PUT", "/queues/other", False),
        ("POST", "/queues/other/clients/a/messages", False),
        ("GET", "/queues", False),
    ],
)
def test_an_administrator_of_one_queue_stays_inside_it(
    policies: tuple[Resolver, dict[str, list[dict[str, Any]]]], method: str, path: str, expected: bool
) -> None:
    resolver, statements = policies
    assert allowed(statements["orders_admin"], _invoke(resolver, method, path)) is expected


@pytest.mark.parametrize(
    ("action", "keys", "index", "expected"),
    [
        ("dynamodb:Query", ("M#orders#a#0",), False, True),
        ("dynamodb:Query", ("M#orders#a#0",), True, True),
        ("dynamodb:UpdateItem", ("G#orders#a#group-1",), False, True),
        ("dynamodb:BatchWriteItem", ("M#orders#a#0", "X#orders#a#3"), False, True),
        ("dynamodb:PutItem", ("C#orders",), False, True),
        ("dynamodb:GetItem", ("REGISTRY",), False, True),
        ("dynamodb:Query", ("M#orders#b#0",), False, False),
        ("dynamodb:Query", ("M#orders#b#0",), True, False),
        ("dynamodb:Query", ("M#orders#ab#0",), False, False),
        ("dynamodb:Query", ("M#orders2#a#0",), False, False),
        ("dynamodb:DeleteItem", ("D#orders#b#0",), False, False),
        ("dynamodb:BatchWriteItem", ("M#orders#a#0", "M#orders#b#0"), False, False),
        ("dynamodb:BatchGetItem", ("M#orders#a#0", "F#orders#b#0"), False, False),
        ("dynamodb:PutItem", ("REGISTRY",), False, False),
        ("dynamodb:DeleteItem", ("REGISTRY",), False, False),
        ("dynamodb:Scan", (), False, False),
        ("dynamodb:DeleteTable", (), False, False),
    ],
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


def test_grants_are_confined_to_tenant_paths_and_leading_keys_in_the_template(
    policies: tuple[Resolver, dict[str, list[dict[str, Any]]]],
) -> None:
    """What the evaluations rest on, read directly: every execute-api ARN of the tenant names its own
    sub-queue (or the API description), and every table statement of its function is conditioned on
    `dynamodb:LeadingKeys` and grants no call that reads without a key."""
    _, statements = policies
    for statement in statements["tenant"]:
        assert statement["Effect"] == "Allow" and statement["Action"] == "execute-api:Invoke"
        for arn in statement["Resource"]:
            path = arn.split("/", 3)[3]
            assert path.startswith("queues/orders/clients/a/") or path == "openapi.json", arn
    for statement in statements["tenant_function"]:
        keys = statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
        assert all(key == "REGISTRY" or key == "C#orders" or key.split("#")[1:3] == ["orders", "a"] for key in keys)
        actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        assert not {"dynamodb:Scan", "dynamodb:PartiQLSelect", "dynamodb:*"} & set(actions)


def test_the_evaluator_denies_without_an_allow_and_lets_an_explicit_deny_win() -> None:
    allow = {"Effect": "Allow", "Action": "dynamodb:*", "Resource": "arn:aws:dynamodb:*:*:table/t"}
    deny = {"Effect": "Deny", "Action": "dynamodb:DeleteItem", "Resource": "*"}
    request = Request("dynamodb:DeleteItem", "arn:aws:dynamodb:us-east-1:1:table/t")
    assert allowed([allow], request) and not allowed([allow, deny], request) and not allowed([], request)
    scoped = {**allow, "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["M#q#a#*"]}}}
    assert allowed([scoped], Request("dynamodb:Scan", request.resource)), "ForAllValues of no key holds, as in IAM"
