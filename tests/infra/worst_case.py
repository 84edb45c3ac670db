"""A template's values as long as CloudFormation could make them: every `Ref`, `Fn::GetAtt`, `Fn::Join` and
`Fn::Sub` replaced by the longest string it may resolve to, so that size limits (policy documents, environment
variables) are checked against the worst deployment rather than a lucky one.

Lengths come from AWS's documented shapes: the longest partition (`aws-us-gov`), a 14-character region code
(`ap-southeast-7`), 12-digit account ids, and names CloudFormation generates as `<stack>-<logical id>-<13
characters>`, cut to the resource type's maximum name length.
"""

from __future__ import annotations

import re
from typing import Any, Final

PSEUDO_PARAMETERS: Final = {
    "AWS::Partition": "aws-us-gov",
    "AWS::Region": "ap-southeast-7",
    "AWS::AccountId": "123456789012",
    "AWS::URLSuffix": "amazonaws.com.cn",
    "AWS::NoValue": "",
}
# Longest generated or given name per type, from each service's naming rules.
NAME_LENGTHS: Final = {
    "AWS::Lambda::Function": 64,
    "AWS::IAM::Role": 64,
    "AWS::IAM::Policy": 128,
    "AWS::DynamoDB::Table": 255,
    "AWS::Logs::LogGroup": 512,
    "AWS::SNS::Topic": 256,
    "AWS::Lambda::LayerVersion": 140,
    "AWS::CloudWatch::Alarm": 255,
    "AWS::Lambda::Permission": 100,
}
NAME_PROPERTIES: Final = {
    "AWS::Lambda::Function": "FunctionName",
    "AWS::IAM::Role": "RoleName",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::Lambda::LayerVersion": "LayerName",
    "AWS::CloudWatch::Alarm": "AlarmName",
    "AWS::ApiGateway::Stage": "StageName",
}
# Ids API Gateway and KMS assign: 10 characters for API Gateway, a UUID for a key.
ASSIGNED_ID_LENGTHS: Final = {
    "AWS::ApiGateway::RestApi": 10,
    "AWS::ApiGateway::Resource": 10,
    "AWS::ApiGateway::Deployment": 10,
    "AWS::ApiGateway::RequestValidator": 10,
    "AWS::ApiGateway::Model": 10,
    "AWS::KMS::Key": 36,
}
UNKNOWN: Final = "x" * 255
_SUB_VARIABLE: Final = re.compile(r"\$\{([^}!]+)\}")


class WorstCase:
    """Renders template values for one template, whose resources decide what each reference becomes."""

    def __init__(self, template: dict[str, Any], stack_name: str) -> None:
        self.resources: dict[str, dict[str, Any]] = template["Resources"]
        self.stack_name = stack_name

    def render(self, value: Any) -> Any:
        """The value with every intrinsic function resolved to its longest string."""
        if isinstance(value, list):
            return [self.render(item) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (key, argument), *_ = value.items()
            if key == "Ref":
                return self.ref(argument)
            if key == "Fn::GetAtt":
                logical_id, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
                return self.get_att(logical_id, attribute)
            if key == "Fn::Join":
                separator, parts = argument
                return separator.join(str(self.render(part)) for part in parts)
            if key == "Fn::Sub":
                return self.sub(argument)
            if key.startswith("Fn::"):
                return UNKNOWN
        return {key: self.render(item) for key, item in value.items()}

    def ref(self, name: str) -> str:
        if name == "AWS::StackName":
            return self.stack_name
        if name in PSEUDO_PARAMETERS:
            return PSEUDO_PARAMETERS[name]
        resource = self.resources.get(name)
        if resource is None:
            return UNKNOWN
        kind = resource["Type"]
        if kind in ASSIGNED_ID_LENGTHS:
            return "a" * ASSIGNED_ID_LENGTHS[kind]
        if kind == "AWS::Lambda::LayerVersion":
            return self._arn("lambda", f"layer:{self.name(name)}:99999")
        if kind == "AWS::SNS::Topic":
            return self._arn("sns", self.name(name))
        return self.name(name)

    def get_att(self, logical_id: str, attribute: str) -> str:
        resource = self.resources.get(logical_id)
        if resource is None or attribute != "Arn":
            return "a" * 10 if attribute == "RootResourceId" else UNKNOWN
        kind, name = resource["Type"], self.name(logical_id)
        arns = {
            "AWS::Lambda::Function": lambda: self._arn("lambda", f"function:{name}"),
            "AWS::IAM::Role": lambda: self._arn("iam", f"role/{name}", regional=False),
            "AWS::DynamoDB::Table": lambda: self._arn("dynamodb", f"table/{name}"),
            "AWS::Logs::LogGroup": lambda: self._arn("logs", f"log-group:{name}:*"),
            "AWS::KMS::Key": lambda: self._arn("kms", f"key/{'a' * 36}"),
            "AWS::CloudWatch::Alarm": lambda: self._arn("cloudwatch", f"alarm:{name}"),
        }
        return arns[kind]() if kind in arns else self._arn(kind.split("::")[1].lower(), name)

    def name(self, logical_id: str) -> str:
        """The resource's given name, or the longest one CloudFormation would generate for it."""
        resource = self.resources[logical_id]
        kind = resource["Type"]
        given = resource.get("Properties", {}).get(NAME_PROPERTIES.get(kind, ""))
        if given is not None:
            return str(self.render(given))
        return f"{self.stack_name}-{logical_id}-{'A' * 13}"[: NAME_LENGTHS.get(kind, 255)]

    def sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else argument

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return str(self.render(variables[name]))
            if "." in name:
                return self.get_att(*name.split(".", 1))
            return self.ref(name)

        return _SUB_VARIABLE.sub(replace, text)

    def _arn(self, service: str, resource: str, *, regional: bool = True) -> str:
        region = PSEUDO_PARAMETERS["AWS::Region"] if regional else ""
        partition, account = PSEUDO_PARAMETERS["AWS::Partition"], PSEUDO_PARAMETERS["AWS::AccountId"]
        return f"arn:{partition}:{service}:{region}:{account}:{resource}"
