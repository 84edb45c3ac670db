"""A small IAM policy evaluator, enough to ask a synthesized template "may this principal make this request?".

It covers what the queue's grants use: Allow and Deny statements, `Action` and `Resource` as a string or a list
with `*` and `?` wildcards (actions compared case-insensitively, as IAM does), and `ForAllValues:StringLike` /
`ForAnyValue:StringLike` / `StringLike` / `StringEquals` conditions. Like IAM, an explicit Deny wins, nothing is
allowed without an Allow, and `ForAllValues` over a key the request does not carry is true: that is why a grant
confined by `dynamodb:LeadingKeys` must never include `Scan`, which carries no leading key. CloudFormation
references in resources are resolved to fixed example values first (`Resolver`).

A DynamoDB call becomes the requests IAM authorizes for it (`dynamodb_requests`): one per item of a transaction
(as the PutItem, UpdateItem, DeleteItem or ConditionCheckItem it holds), one carrying every partition key of a
batch, and a query on an index as a request on the index's ARN whose leading key is the index partition key.
`DynamoDbRecorder` records the calls a boto3 client makes, so a test can ask whether a policy allows exactly
what some code does.
"""

from __future__ import annotations

import copy
import fnmatch
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from queue_core.table import INDEX_PARTITION_KEY, PARTITION_KEY

PARTITION = "aws"
REGION = "us-east-1"
ACCOUNT = "123456789012"
TRANSACTION_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    context: Mapping[str, Sequence[str]] = field(default_factory=dict)


def _like(pattern: str, value: str, case_sensitive: bool = True) -> bool:
    """IAM wildcards: `*` any run of characters (`/` and `:` included), `?` one character, nothing else special."""
    escaped = pattern.replace("[", "[[]")
    if not case_sensitive:
        return fnmatch.fnmatchcase(value.lower(), escaped.lower())
    return fnmatch.fnmatchcase(value, escaped)


def _listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _condition_holds(conditions: Mapping[str, Mapping[str, Any]], context: Mapping[str, Sequence[str]]) -> bool:
    for operator, tests in conditions.items():
        for key, wanted in tests.items():
            patterns = _listed(wanted)
            values = list(context.get(key, ()))
            if operator == "ForAllValues:StringLike":
                holds = all(any(_like(p, v) for p in patterns) for v in values)
            elif operator == "ForAnyValue:StringLike":
                holds = any(any(_like(p, v) for p in patterns) for v in values)
            elif operator == "StringLike":
                holds = bool(values) and all(any(_like(p, v) for p in patterns) for v in values)
            elif operator == "StringEquals":
                holds = bool(values) and all(v in patterns for v in values)
            else:
                raise ValueError(f"condition operator {operator} is not modelled")
            if not holds:
                return False
    return True


def _matches(statement: Mapping[str, Any], request: Request) -> bool:
    if "NotAction" in statement or "NotResource" in statement:
        raise ValueError("NotAction and NotResource are not modelled")
    if not any(_like(action, request.action, case_sensitive=False) for action in _listed(statement["Action"])):
        return False
    if not any(_like(resource, request.resource) for resource in _listed(statement["Resource"])):
        return False
    return _condition_holds(statement.get("Condition", {}), request.context)


def allowed(statements: Iterable[Mapping[str, Any]], request: Request) -> bool:
    """True when some statement allows the request and none denies it."""
    matching = [statement for statement in statements if _matches(statement, request)]
    if any(statement["Effect"] == "Deny" for statement in matching):
        return False
    return any(statement["Effect"] == "Allow" for statement in matching)


def all_allowed(statements: Iterable[Mapping[str, Any]], requests: Iterable[Request]) -> bool:
    """True when every request of one call is allowed: a transaction fails as a whole if one item is refused."""
    statements = list(statements)
    return all(allowed(statements, request) for request in requests)


def dynamodb_requests(operation: str, params: Mapping[str, Any], table_arn: str) -> list[Request]:
    """The requests IAM authorizes for one DynamoDB API call on the table at `table_arn` (wire-format params)."""
    action = f"dynamodb:{operation}"
    if operation in ("GetItem", "UpdateItem", "DeleteItem", "PutItem"):
        return [_keyed(action, table_arn, [params.get("Key") or params["Item"]])]
    if operation == "Query":
        index = params.get("IndexName")
        resource = f"{table_arn}/index/{index}" if index else table_arn
        return [Request(action, resource, {"dynamodb:LeadingKeys": [_queried_partition(params, index is not None)]})]
    if operation == "BatchGetItem":
        ((_, batch),) = params["RequestItems"].items()
        return [_keyed(action, table_arn, batch["Keys"])]
    if operation == "BatchWriteItem":
        ((_, writes),) = params["RequestItems"].items()
        items = [
            write["PutRequest"]["Item"] if "PutRequest" in write else write["DeleteRequest"]["Key"] for write in writes
        ]
        return [_keyed(action, table_arn, items)]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        requests = []
        for entry in params["TransactItems"]:
            ((kind, body),) = entry.items()
            item_action = "dynamodb:GetItem" if kind == "Get" else TRANSACTION_ACTIONS[kind]
            requests.append(_keyed(item_action, table_arn, [body.get("Key") or body["Item"]]))
        return requests
    return [Request(action, table_arn)]


def _keyed(action: str, resource: str, items: Iterable[Mapping[str, Any]]) -> Request:
    return Request(action, resource, {"dynamodb:LeadingKeys": sorted({item[PARTITION_KEY]["S"] for item in items})})


def _queried_partition(params: Mapping[str, Any], index: bool) -> str:
    """The partition a query names: the value its key condition gives the (index) partition key."""
    wanted = INDEX_PARTITION_KEY if index else PARTITION_KEY
    names = params.get("ExpressionAttributeNames", {})
    for name, placeholder in re.findall(r"(#?\w+)\s*=\s*(:\w+)", params["KeyConditionExpression"]):
        if names.get(name, name) == wanted:
            return str(params["ExpressionAttributeValues"][placeholder]["S"])
    raise ValueError(f"no {wanted} in the key condition {params['KeyConditionExpression']!r}")


@dataclass
class DynamoDbRecorder:
    """Every DynamoDB call a boto3 client makes while attached, as (operation, parameters), in order.

    The hook sees each call once, as the caller made it (before retries), from whatever thread made it.
    """

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def attach(self, client: Any) -> DynamoDbRecorder:
        client.meta.events.register("provide-client-params.dynamodb", self._record)
        return self

    def detach(self, client: Any) -> None:
        client.meta.events.unregister("provide-client-params.dynamodb", self._record)

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()

    def requests(self, table_arn: str) -> list[list[Request]]:
        """The IAM requests of each recorded call."""
        with self._lock:
            calls = list(self.calls)
        return [dynamodb_requests(operation, params, table_arn) for operation, params in calls]

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        with self._lock:
            self.calls.append((model.name, copy.deepcopy(params)))


class Resolver:
    """Turns a template's `Ref`, `Fn::GetAtt` and `Fn::Join` into example values: pseudo parameters into a fixed
    partition, region and account, a REST API into its id, a stage into its name, a table into its ARN."""

    def __init__(self, template: Mapping[str, Any]) -> None:
        self._resources: Mapping[str, Mapping[str, Any]] = template["Resources"]

    def api_id(self, logical_id: str) -> str:
        return logical_id.lower()

    def table_arn(self, logical_id: str) -> str:
        return f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{logical_id.lower()}"

    def bucket_arn(self, logical_id: str) -> str:
        return f"arn:{PARTITION}:s3:::{logical_id.lower()}"

    def logical_ids(self, resource_type: str) -> list[str]:
        return [key for key, value in self._resources.items() if value["Type"] == resource_type]

    def value(self, node: Any) -> str:
        if isinstance(node, str):
            return node
        if "Ref" in node:
            return self._ref(node["Ref"])
        if "Fn::GetAtt" in node:
            logical_id, attribute = node["Fn::GetAtt"]
            if attribute == "Arn" and self._resources[logical_id]["Type"] == "AWS::DynamoDB::Table":
                return self.table_arn(logical_id)
            if attribute == "Arn" and self._resources[logical_id]["Type"] == "AWS::S3::Bucket":
                return self.bucket_arn(logical_id)
            raise ValueError(f"Fn::GetAtt {logical_id}.{attribute} is not modelled")
        if "Fn::Join" in node:
            separator, parts = node["Fn::Join"]
            return separator.join(self.value(part) for part in parts)
        raise ValueError(f"{node!r} is not modelled")

    def _ref(self, name: str) -> str:
        pseudo = {"AWS::Partition": PARTITION, "AWS::Region": REGION, "AWS::AccountId": ACCOUNT}
        if name in pseudo:
            return pseudo[name]
        resource = self._resources[name]
        if resource["Type"] == "AWS::ApiGateway::RestApi":
            return self.api_id(name)
        if resource["Type"] == "AWS::ApiGateway::Stage":
            return str(resource["Properties"]["StageName"])
        raise ValueError(f"Ref {name} ({resource['Type']}) is not modelled")

    def statements(self, policy_statements: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The statements with every resource resolved to text."""
        resolved = []
        for statement in policy_statements:
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            resolved.append({**statement, "Resource": [self.value(resource) for resource in resources]})
        return resolved
