"""Deploy-time rules: what CloudFormation, Lambda, API Gateway, DynamoDB, EventBridge Scheduler, IAM and
CloudWatch refuse (or quietly cap) when `cdk deploy` creates the stack in a new account, checked on the
synthesized template because no test here can deploy.

Each rule names the AWS documentation page of the limit it protects; the limits are written out here, not read
from `infra`, so a wrong constant there cannot make its own rule pass. Every rule runs on three deployments: the
defaults, every setting at its lower extreme at once and every setting at its upper extreme at once (`EXTREMES`,
one synth each). `pytest --prop-sweep` adds each setting at each extreme alone.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Final

import aws_cdk as cdk
import pytest
from queue_core.table import TTL_ATTRIBUTE

from infra.functions import RUNTIME
from infra.layer import PLATFORMS, LayerBundler
from infra.paths import FUNCTIONS_DIR
from infra.props import CONTEXT_PREFIX, DynamoQueueProps
from tests.infra.synth import Synthesized, synthesize
from tests.infra.worst_case import WorstCase

CAPACITY_BOUNDS: Final = tuple(
    f"{prefix}{side}_{kind}_capacity"
    for prefix in ("", "index_")
    for side in ("min", "max")
    for kind in ("read", "write")
)
# Each setting's two extremes, as `-c dynamo-queue:<field>=<value>` gives them. Settings without an order
# (booleans, enums, names) put one value on each side, so the two sets together deploy every choice that
# changes which resources exist. DESTROY takes the unprotected table it requires.
EXTREMES: Final[dict[str, tuple[str, str]]] = {
    "table_name": ("abc", "t" * 255),
    "removal_policy": ("DESTROY", "RETAIN_ON_UPDATE_OR_DELETE"),
    "deletion_protection": ("false", "true"),
    "table_encryption": ("DEFAULT", "CUSTOMER_MANAGED"),
    "encryption_key_arn": ("none", "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"),
    "capacity": ("on_demand", "provisioned"),
    "capacity_target_utilization": ("20", "90"),
    **{bound: ("1", "40000") for bound in CAPACITY_BOUNDS},
    "memory_size_mb": ("128", "10240"),
    "architecture": ("x86_64", "arm64"),
    "layer_dependencies": ("false", "true"),
    "log_level": ("DEBUG", "ERROR"),
    "log_retention": ("ONE_DAY", "INFINITE"),
    "service_name": ("q", "s" * 1_024),
    "metrics_namespace": ("Q", "Dynamo Queue/#:._-" + "n" * 237),
    "tracing": ("false", "true"),
    "sweeper_interval_minutes": ("1", "1440"),
    "sweeper_enabled": ("false", "true"),
    "sweeper_reserved_concurrency": ("0", "1"),
    "api_stage_name": ("v", "s" * 128),
    "api_throttle_rate_limit": ("1", "10000"),
    "api_throttle_burst_limit": ("1", "5000"),
    "api_account_logging_role": ("false", "true"),
    "oldest_message_age_alarm_seconds": ("1", "1209600"),
    "dlq_depth_alarm_threshold": ("0", "1000000"),
    "dynamodb_user_errors_alarm_threshold": ("0", "1000000"),
    "alarm_period_minutes": ("1", "1440"),
    "alarm_topic": ("false", "true"),
    "alarm_email": ("none", "o" * 64 + "@" + "e" * 60 + ".example.com"),
}
COMPANIONS: Final = {
    ("removal_policy", "DESTROY"): {"deletion_protection": "false"},
    # A floor at its highest takes its ceiling along, a ceiling at its lowest its floor; both on a provisioned table.
    **{
        (f"{prefix}min_{kind}_capacity", "40000"): {f"{prefix}max_{kind}_capacity": "40000", "capacity": "provisioned"}
        for prefix in ("", "index_")
        for kind in ("read", "write")
    },
    **{
        (f"{prefix}max_{kind}_capacity", "1"): {f"{prefix}min_{kind}_capacity": "1", "capacity": "provisioned"}
        for prefix in ("", "index_")
        for kind in ("read", "write")
    },
}
DEPLOYMENTS: Final[dict[str, dict[str, str]]] = {
    "defaults": {},
    "lower": {field: lower for field, (lower, _) in EXTREMES.items()},
    "upper": {field: upper for field, (_, upper) in EXTREMES.items()},
}


def _one_at_a_time() -> dict[str, dict[str, str]]:
    deployments = {}
    for field, extremes in EXTREMES.items():
        for side, value in zip(("lower", "upper"), extremes, strict=True):
            deployments[f"{field}-{side}"] = {field: value, **COMPANIONS.get((field, value), {})}
    return deployments


SWEEP: Final = _one_at_a_time()


@dataclass(frozen=True)
class Deployment:
    name: str
    synthesized: Synthesized

    @property
    def template(self) -> dict[str, Any]:
        return self.synthesized.template_json

    @property
    def props(self) -> DynamoQueueProps:
        return self.synthesized.stack.queue.props

    @property
    def worst(self) -> WorstCase:
        return WorstCase(self.template, self.synthesized.stack.stack_name)

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return self.synthesized.of_type(resource_type)

    def properties(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {key: value.get("Properties", {}) for key, value in self.of_type(resource_type).items()}


class Deployments:
    """Each deployment synthesized once, when a test first asks for it."""

    def __init__(self, defaults: Synthesized, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._synthesized = {"defaults": defaults}
        self._tmp = tmp_path_factory

    def __getitem__(self, name: str) -> Deployment:
        if name not in self._synthesized:
            values = DEPLOYMENTS[name] if name in DEPLOYMENTS else SWEEP[name]
            context = {CONTEXT_PREFIX + field: value for field, value in values.items()}
            self._synthesized[name] = synthesize(self._tmp.mktemp(f"{name}.out"), **context)
        return Deployment(name, self._synthesized[name])


def _names(config: pytest.Config) -> list[str]:
    return [*DEPLOYMENTS, *(SWEEP if config.getoption("--prop-sweep") else ())]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "deployment" in metafunc.fixturenames:
        metafunc.parametrize("deployment", _names(metafunc.config), indirect=True)


@pytest.fixture(scope="module")
def deployments(synthesized: Synthesized, tmp_path_factory: pytest.TempPathFactory) -> Deployments:
    return Deployments(synthesized, tmp_path_factory)


@pytest.fixture
def deployment(request: pytest.FixtureRequest, deployments: Deployments) -> Deployment:
    return deployments[request.param]


def _compact(document: Any) -> str:
    """A JSON document as IAM and Lambda measure it: no white space outside strings."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def _policy_length(document: Any) -> int:
    """IAM does not count white space toward a policy's size."""
    return len(re.sub(r"\s", "", _compact(document)))


def _function_ids_behind_the_api(deployment: Deployment) -> set[str]:
    ids = set()
    for method in deployment.properties("AWS::ApiGateway::Method").values():
        for part in method["Integration"]["Uri"]["Fn::Join"][1]:
            if isinstance(part, dict) and "Fn::GetAtt" in part:
                ids.add(part["Fn::GetAtt"][0])
    return ids


def _referenced_ids(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if "Ref" in value and isinstance(value["Ref"], str):
            yield value["Ref"]
        if "Fn::GetAtt" in value:
            yield value["Fn::GetAtt"][0]
        for item in value.values():
            yield from _referenced_ids(item)
    elif isinstance(value, list):
        for item in value:
            yield from _referenced_ids(item)


def _waits_for(template: dict[str, Any], logical_id: str, other: str) -> bool:
    """Whether CloudFormation creates `other` before `logical_id`: a DependsOn or a reference, at any depth."""
    resources = template["Resources"]
    seen, pending = set(), [logical_id]
    while pending:
        current = pending.pop()
        if current == other:
            return True
        if current in seen or current not in resources:
            continue
        seen.add(current)
        depends_on = resources[current].get("DependsOn", [])
        pending.extend([depends_on] if isinstance(depends_on, str) else depends_on)
        pending.extend(_referenced_ids(resources[current].get("Properties", {})))
    return False


def _role_inline_policies(deployment: Deployment, role_id: str) -> list[Any]:
    role = deployment.of_type("AWS::IAM::Role")[role_id]["Properties"]
    documents = [policy["PolicyDocument"] for policy in role.get("Policies", [])]
    documents += [
        policy["PolicyDocument"]
        for policy in deployment.properties("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy.get("Roles", [])
    ]
    return documents


def _statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    statements = document["Statement"]
    return statements if isinstance(statements, list) else [statements]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_every_setting_has_its_extremes_written_down() -> None:
    """A new `DynamoQueueProps` field must say what its extremes are, or no rule would ever see them."""
    assert set(EXTREMES) == {field.name for field in dataclasses.fields(DynamoQueueProps)}


def test_extremes_are_valid_settings() -> None:
    """Both extreme sets are settings the props accept (each extreme alone is, when `--prop-sweep` builds it)."""
    for values in DEPLOYMENTS.values():
        context = {CONTEXT_PREFIX + field: value for field, value in values.items()}
        DynamoQueueProps.from_context(cdk.App(context=context).node)


# ---- Lambda ----------------------------------------------------------------------------------------------------

# Lambda "Lambda runtimes" (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html): supported
# runtimes with both architectures, and the date each is deprecated (creating functions is blocked soon after).
SUPPORTED_RUNTIMES: Final = {"python3.14": date(2029, 6, 30)}
ARCHITECTURES: Final = {"arm64", "x86_64"}
# API Gateway quotas (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html): "Integration
# timeout: 50 milliseconds - 29 seconds for all integration types".
INTEGRATION_TIMEOUT_MS: Final = (50, 29_000)
MAX_UNZIPPED_BYTES: Final = 250 * 1024 * 1024


def test_lambda_memory_and_timeout_are_within_lambda_limits(deployment: Deployment) -> None:
    """Lambda quotas (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html): "Function memory
    allocation: 128 MB to 10,240 MB, in 1-MB increments" and "Function timeout: 900 seconds (15 minutes)"."""
    for function_id, function in deployment.properties("AWS::Lambda::Function").items():
        assert 128 <= function["MemorySize"] <= 10_240, function_id
        assert 1 <= function["Timeout"] <= 900, function_id


def test_functions_behind_the_api_stop_when_api_gateway_stops_waiting(deployment: Deployment) -> None:
    """API Gateway quotas (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html): a REST API
    integration times out after 50 ms to 29 s (29 s unless the account's quota was raised). A function that runs
    longer goes on working for a caller already answered 504, so it may not outlast its integration."""
    functions = deployment.properties("AWS::Lambda::Function")
    behind_the_api = _function_ids_behind_the_api(deployment)
    assert behind_the_api
    for method in deployment.properties("AWS::ApiGateway::Method").values():
        timeout_ms = method["Integration"].get("TimeoutInMillis", INTEGRATION_TIMEOUT_MS[1])
        assert INTEGRATION_TIMEOUT_MS[0] <= timeout_ms <= INTEGRATION_TIMEOUT_MS[1]
    for function_id in behind_the_api:
        assert functions[function_id]["Timeout"] * 1000 <= INTEGRATION_TIMEOUT_MS[1], function_id


def test_no_concurrency_is_reserved_unless_asked_for(deployment: Deployment) -> None:
    """Lambda "Configuring reserved concurrency for a function"
    (https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html): a reservation may not leave
    the account less than its minimum of unreserved concurrency (100 at the usual quota of 1,000), so a new
    account whose quota is 10 refuses any reservation and the deploy fails. None is made unless the props ask."""
    reserved = {
        function_id: function["ReservedConcurrentExecutions"]
        for function_id, function in deployment.properties("AWS::Lambda::Function").items()
        if "ReservedConcurrentExecutions" in function
    }
    wanted = deployment.props.sweeper_reserved_concurrency
    if wanted == 0:
        assert reserved == {}
    else:
        sweeper_id = deployment.synthesized.logical_id(deployment.synthesized.stack.queue.sweeper)
        assert reserved == {sweeper_id: wanted}


def test_runtime_and_architecture_are_supported_and_the_layer_matches_them(deployment: Deployment) -> None:
    """Lambda "Lambda runtimes" (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html): python3.14
    is supported on arm64 and x86_64 until its deprecation date. Lambda "Selecting and configuring an
    instruction set architecture" (https://docs.aws.amazon.com/lambda/latest/dg/foundation-arch.html): a
    function has exactly one architecture; arm64 is available in most Regions (the Lambda pricing page lists
    them), and `architecture=x86_64` deploys where it is not. Lambda "Adding layers to functions"
    (https://docs.aws.amazon.com/lambda/latest/dg/adding-layers.html): at most 5 layers, compatible with the
    function's runtime and architecture."""
    layers = deployment.properties("AWS::Lambda::LayerVersion")
    for function_id, function in deployment.properties("AWS::Lambda::Function").items():
        runtime, (architecture,) = function["Runtime"], function["Architectures"]
        assert runtime in SUPPORTED_RUNTIMES, function_id
        assert date.today() < SUPPORTED_RUNTIMES[runtime], f"{runtime} is deprecated: choose a newer runtime"
        assert architecture in ARCHITECTURES
        assert architecture == deployment.props.architecture
        assert len(function["Layers"]) <= 5
        for layer in function["Layers"]:
            compatible = layers[layer["Ref"]]
            assert runtime in compatible["CompatibleRuntimes"], function_id
            assert architecture in compatible["CompatibleArchitectures"], function_id


def test_descriptions_and_environment_fit_lambda_limits(deployment: Deployment) -> None:
    """Lambda "CreateFunction" (https://docs.aws.amazon.com/lambda/latest/api/API_CreateFunction.html) and
    "PublishLayerVersion": a description is at most 256 characters. Lambda quotas
    (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html): "Function environment variables:
    4 KB, for all environment variables associated with the function, in aggregate", measured here with the
    table name at its longest."""
    worst = deployment.worst
    for function_id, function in deployment.properties("AWS::Lambda::Function").items():
        assert len(function.get("Description", "")) <= 256, function_id
        variables = worst.render(function["Environment"]["Variables"])
        assert len(_compact(variables).encode()) <= 4 * 1024, function_id
    for layer in deployment.properties("AWS::Lambda::LayerVersion").values():
        assert len(layer.get("Description", "")) <= 256


def test_log_levels_are_set_only_with_json_logs(deployment: Deployment) -> None:
    """Lambda "LoggingConfig" (https://docs.aws.amazon.com/lambda/latest/api/API_LoggingConfig.html): application
    and system log levels apply only to functions whose LogFormat is JSON; otherwise the deploy is refused."""
    for function_id, function in deployment.properties("AWS::Lambda::Function").items():
        logging = function.get("LoggingConfig", {})
        if {"ApplicationLogLevel", "SystemLogLevel"} & logging.keys():
            assert logging["LogFormat"] == "JSON", function_id
        assert logging.get("ApplicationLogLevel", "INFO") in {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}


def _bytes_under(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


def test_layer_and_function_code_fit_lambdas_unzipped_limit(deployment: Deployment, tmp_path: Path) -> None:
    """Lambda quotas (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html): "Deployment
    package (.zip file archive) size: 250 MB (unzipped)", counting the function's code and all its layers. The
    layer is built as `cdk deploy` builds it (the wheels come from `.layer-build/`), for the deployment's
    architecture; its compiled extensions must be for that architecture and the runtime's Python, or the first
    invoke fails to import them."""
    props = deployment.props
    bundler = LayerBundler(
        python_version=RUNTIME.name.removeprefix("python"),
        platform=PLATFORMS[props.architecture],
        install_dependencies=props.layer_dependencies,
    )
    assert bundler.try_bundle(str(tmp_path))
    layer_bytes = _bytes_under(tmp_path)
    for function_dir in FUNCTIONS_DIR.iterdir():
        if function_dir.is_dir():
            assert layer_bytes + _bytes_under(function_dir) <= MAX_UNZIPPED_BYTES, function_dir.name
    machine = {"arm64": "aarch64", "x86_64": "x86_64"}[props.architecture]
    extensions = list(tmp_path.rglob("*.so"))
    assert bool(extensions) == props.layer_dependencies
    python_tag = "cpython-" + RUNTIME.name.removeprefix("python").replace(".", "")
    for extension in extensions:
        assert python_tag in extension.name and machine in extension.name, extension.name


def test_each_function_resource_policy_fits_lambdas_limit(deployment: Deployment) -> None:
    """Lambda quotas (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html): "Function
    resource-based policy: 20 KB". API Gateway adds one statement per method a function serves; each is
    measured as Lambda stores it, with names and ARNs at their longest."""
    worst = deployment.worst
    statements: dict[str, list[dict[str, Any]]] = {}
    for permission_id, permission in deployment.properties("AWS::Lambda::Permission").items():
        function_id = next(_referenced_ids(permission["FunctionName"]))
        statement = {
            "Sid": worst.name(permission_id),
            "Effect": "Allow",
            "Principal": {"Service": permission["Principal"]},
            "Action": permission["Action"],
            "Resource": worst.get_att(function_id, "Arn"),
        }
        if "SourceArn" in permission:
            statement["Condition"] = {"ArnLike": {"AWS:SourceArn": worst.render(permission["SourceArn"])}}
        statements.setdefault(function_id, []).append(statement)
    for function_id, function_statements in statements.items():
        policy = {"Version": "2012-10-17", "Id": "default", "Statement": function_statements}
        assert len(_compact(policy).encode()) <= 20 * 1024, function_id


# ---- API Gateway -----------------------------------------------------------------------------------------------

# API Gateway quotas (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html): "Throttle quota
# per account, per Region across HTTP APIs, REST APIs, WebSocket APIs, and WebSocket callback APIs".
ACCOUNT_RATE_LIMIT: Final = 10_000
ACCOUNT_BURST_LIMIT: Final = 5_000


def _stage(deployment: Deployment) -> tuple[str, dict[str, Any]]:
    ((stage_id, stage),) = deployment.properties("AWS::ApiGateway::Stage").items()
    return stage_id, stage


def test_stage_throttling_stays_within_the_accounts_default_quota(deployment: Deployment) -> None:
    """API Gateway "Throttle API requests for better throughput"
    (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-request-throttling.html): stage
    limits above the account's quota (10,000 requests per second, burst 5,000 by default) are not honoured, so
    a setting above them would promise a capacity the stage does not have."""
    _, stage = _stage(deployment)
    for settings in stage["MethodSettings"]:
        assert 0 < settings["ThrottlingRateLimit"] <= ACCOUNT_RATE_LIMIT
        assert 0 < settings["ThrottlingBurstLimit"] <= ACCOUNT_BURST_LIMIT


def test_stage_name_and_settings_are_ones_api_gateway_accepts(deployment: Deployment) -> None:
    """API Gateway "CreateStage" (https://docs.aws.amazon.com/apigateway/latest/api/API_CreateStage.html): a
    stage name is up to 128 letters, digits, hyphens and underscores. "MethodSetting"
    (https://docs.aws.amazon.com/apigateway/latest/api/API_MethodSetting.html): `/*/*` for every method, and a
    logging level of OFF, ERROR or INFO."""
    _, stage = _stage(deployment)
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,128}", stage["StageName"])
    for settings in stage["MethodSettings"]:
        assert (settings["ResourcePath"], settings["HttpMethod"]) == ("/*", "*")
        assert settings.get("LoggingLevel", "OFF") in {"OFF", "ERROR", "INFO"}


def test_access_log_format_and_destination_are_accepted(deployment: Deployment) -> None:
    """API Gateway "Set up CloudWatch logging for REST APIs in API Gateway"
    (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html): the access log format
    must include `$context.requestId` or `$context.extendedRequestId`, and a log group ARN is given without the
    `:*` suffix."""
    _, stage = _stage(deployment)
    access_log = stage["AccessLogSetting"]
    assert "$context.requestId" in access_log["Format"] or "$context.extendedRequestId" in access_log["Format"]
    destination = deployment.worst.render(access_log["DestinationArn"])
    assert ":log-group:" in destination and not destination.endswith(":*")


def test_stage_logging_has_the_accounts_logging_role_before_the_stage_exists(deployment: Deployment) -> None:
    """API Gateway "Set up CloudWatch logging for REST APIs in API Gateway"
    (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html): execution and access
    logging need the region's CloudWatch role ARN in the account settings, or the stage is refused ("CloudWatch
    Logs role ARN must be set in account settings to enable logging"). With `api_account_logging_role` the
    stack sets it (`AWS::ApiGateway::Account`, a role API Gateway can assume with AmazonAPIGatewayPushToCloud
    WatchLogs) before it creates the stage, and keeps both on deletion; without it the account's own setting is
    left alone. "AWS::ApiGateway::Account" (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/
    aws-resource-apigateway-account.html): one such resource per account and region."""
    stage_id, stage = _stage(deployment)
    accounts = deployment.of_type("AWS::ApiGateway::Account")
    logs = stage["MethodSettings"][0].get("LoggingLevel", "OFF") != "OFF" or "AccessLogSetting" in stage
    assert logs
    if not deployment.props.api_account_logging_role:
        assert accounts == {}
        return
    ((account_id, account),) = accounts.items()
    role_id = account["Properties"]["CloudWatchRoleArn"]["Fn::GetAtt"][0]
    role = deployment.of_type("AWS::IAM::Role")[role_id]
    trust = _statements(role["Properties"]["AssumeRolePolicyDocument"])
    managed = deployment.worst.render(role["Properties"]["ManagedPolicyArns"])
    assert _waits_for(deployment.template, stage_id, account_id)
    assert {"Service": "apigateway.amazonaws.com"} in [statement["Principal"] for statement in trust]
    assert managed == ["arn:aws-us-gov:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"]
    assert account["DeletionPolicy"] == role["DeletionPolicy"] == "Retain"


def test_models_and_resources_fit_api_gateway_limits(deployment: Deployment) -> None:
    """API Gateway "CreateModel" (https://docs.aws.amazon.com/apigateway/latest/api/API_CreateModel.html): a
    model name is alphanumeric. API Gateway quotas
    (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html): "Resources per API: 300"."""
    for model in deployment.properties("AWS::ApiGateway::Model").values():
        assert re.fullmatch(r"[A-Za-z0-9]+", model["Name"])
    assert len(deployment.of_type("AWS::ApiGateway::Resource")) < 300


# ---- DynamoDB --------------------------------------------------------------------------------------------------


def _table(deployment: Deployment) -> tuple[dict[str, Any], dict[str, Any]]:
    ((table,),) = [list(deployment.of_type("AWS::DynamoDB::Table").values())]
    return table, table["Properties"]


def test_table_expires_items_on_the_attribute_the_core_writes(deployment: Deployment) -> None:
    """DynamoDB "Enable time to live (TTL)"
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/time-to-live-ttl-how-to.html): TTL
    deletes items by one attribute name, enabled on the table; a different name would never expire anything."""
    _, table = _table(deployment)
    assert table["TimeToLiveSpecification"] == {"AttributeName": TTL_ATTRIBUTE, "Enabled": True}


def test_attribute_definitions_are_exactly_the_key_attributes(deployment: Deployment) -> None:
    """DynamoDB "CreateTable" (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/
    API_CreateTable.html): AttributeDefinitions describe the key schema of the table and its indexes, and an
    attribute defined but used by no key is refused."""
    _, table = _table(deployment)
    keys = {key["AttributeName"] for key in table["KeySchema"]}
    for index in table.get("GlobalSecondaryIndexes", []):
        keys |= {key["AttributeName"] for key in index["KeySchema"]}
    assert {attribute["AttributeName"] for attribute in table["AttributeDefinitions"]} == keys


def test_index_projections_are_valid(deployment: Deployment) -> None:
    """DynamoDB "Projection" (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/
    API_Projection.html) and quotas (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/
    ServiceQuotas.html): NonKeyAttributes only with INCLUDE, at most 100 projected attributes over all indexes,
    and at most 20 global secondary indexes."""
    _, table = _table(deployment)
    indexes = table.get("GlobalSecondaryIndexes", [])
    assert len(indexes) <= 20
    projected = 0
    for index in indexes:
        projection = index["Projection"]
        assert projection["ProjectionType"] in {"KEYS_ONLY", "INCLUDE", "ALL"}
        non_key = projection.get("NonKeyAttributes", [])
        assert bool(non_key) == (projection["ProjectionType"] == "INCLUDE"), index["IndexName"]
        assert re.fullmatch(r"[A-Za-z0-9_.-]{3,255}", index["IndexName"])
        projected += len(non_key)
    assert projected <= 100


def test_table_capacity_fits_its_billing_mode(deployment: Deployment) -> None:
    """ "AWS::DynamoDB::Table" (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/
    aws-resource-dynamodb-table.html): with PAY_PER_REQUEST, ProvisionedThroughput may not be given for the
    table or any index; with PROVISIONED (the default billing mode), the table and every index need it. "Managing
    throughput capacity automatically with DynamoDB auto scaling": a target utilization of 20-90 %, a minimum at
    least 1 and not above the maximum."""
    _, table = _table(deployment)
    provisioned = deployment.props.provisioned
    assert table.get("BillingMode", "PROVISIONED") == ("PROVISIONED" if provisioned else "PAY_PER_REQUEST")
    for part in (table, *table.get("GlobalSecondaryIndexes", [])):
        assert ("ProvisionedThroughput" in part) == provisioned
    targets = deployment.properties("AWS::ApplicationAutoScaling::ScalableTarget").values()
    assert len(targets) == (2 + 2 * len(table.get("GlobalSecondaryIndexes", [])) if provisioned else 0)
    for target in targets:
        assert 1 <= target["MinCapacity"] <= target["MaxCapacity"]
    for policy in deployment.properties("AWS::ApplicationAutoScaling::ScalingPolicy").values():
        assert 20 <= policy["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] <= 90


def test_table_name_and_deletion_fit_dynamodb(deployment: Deployment) -> None:
    """DynamoDB "Supported data types and naming rules" (https://docs.aws.amazon.com/amazondynamodb/latest/
    developerguide/HowItWorks.NamingRulesDataTypes.html): 3-255 characters of a-z, A-Z, 0-9, `_`, `-`, `.`.
    DynamoDB "Using deletion protection" (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/
    WorkingWithTables.Basics.html#WorkingWithTables.Basics.DeletionProtection): a protected table cannot be
    deleted, so a table the stack deletes with it is never protected."""
    resource, table = _table(deployment)
    if "TableName" in table:
        assert re.fullmatch(r"[A-Za-z0-9_.-]{3,255}", table["TableName"])
    if resource.get("DeletionPolicy", "Delete") == "Delete":
        assert table["DeletionProtectionEnabled"] is False


# ---- EventBridge Scheduler -------------------------------------------------------------------------------------


def _schedule(deployment: Deployment) -> dict[str, Any]:
    (schedule,) = deployment.properties("AWS::Scheduler::Schedule").values()
    return schedule


def test_schedule_target_role_may_be_assumed_by_scheduler_and_invoke_the_sweeper(deployment: Deployment) -> None:
    """EventBridge Scheduler "Set up the execution role" (https://docs.aws.amazon.com/scheduler/latest/UserGuide/
    setting-up.html#setting-up-execution-role): every target needs a role that trusts scheduler.amazonaws.com
    and allows the target's action, here lambda:InvokeFunction on the sweeper."""
    target = _schedule(deployment)["Target"]
    role_id = target["RoleArn"]["Fn::GetAtt"][0]
    role = deployment.of_type("AWS::IAM::Role")[role_id]["Properties"]
    trust = _statements(role["AssumeRolePolicyDocument"])
    allowed = [
        statement
        for document in _role_inline_policies(deployment, role_id)
        for statement in _statements(document)
        if statement["Effect"] == "Allow" and "lambda:InvokeFunction" in _as_list(statement["Action"])
    ]
    assert [statement["Principal"] for statement in trust] == [{"Service": "scheduler.amazonaws.com"}]
    assert any(target["Arn"] in _as_list(statement["Resource"]) for statement in allowed)


RATE_EXPRESSION: Final = r"rate\((1 (minute|hour|day)|([2-9]|[1-9]\d+) (minutes|hours|days))\)"


def test_schedule_retries_nothing_and_fires_on_time(deployment: Deployment) -> None:
    """EventBridge Scheduler "RetryPolicy" (https://docs.aws.amazon.com/scheduler/latest/APIReference/
    API_RetryPolicy.html): 0-185 attempts within 60-86,400 s; 0 here, since the next sweep is one interval away.
    "FlexibleTimeWindow" (https://docs.aws.amazon.com/scheduler/latest/APIReference/API_FlexibleTimeWindow.html):
    required, OFF or FLEXIBLE with a 1-1,440 minute window. "Schedule types"
    (https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html): `rate(value unit)`, a positive
    whole value and a singular unit for 1."""
    schedule = _schedule(deployment)
    retry = schedule["Target"]["RetryPolicy"]
    window = schedule["FlexibleTimeWindow"]
    assert retry["MaximumRetryAttempts"] == 0
    assert 60 <= retry["MaximumEventAgeInSeconds"] <= 86_400
    assert window["Mode"] == "OFF" or 1 <= window["MaximumWindowInMinutes"] <= 1_440
    assert re.fullmatch(RATE_EXPRESSION, schedule["ScheduleExpression"])
    assert schedule["State"] in {"ENABLED", "DISABLED"}


# ---- IAM -------------------------------------------------------------------------------------------------------

# IAM "IAM and AWS STS quotas" (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html).
MAX_ROLE_INLINE_POLICIES_CHARS: Final = 10_240
MAX_MANAGED_POLICY_CHARS: Final = 6_144
MAX_TRUST_POLICY_CHARS: Final = 2_048
MAX_MANAGED_POLICIES_PER_ROLE: Final = 10
# IAM "CreateRole" (https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateRole.html): Description.
ROLE_DESCRIPTION: Final = re.compile(r"[\u0009\u000A\u000D\u0020-\u007E\u00A1-\u00FF]{0,1000}")


def test_role_policies_fit_iam_size_quotas(deployment: Deployment) -> None:
    """IAM "IAM and AWS STS quotas" (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html):
    a role's inline policies together at most 10,240 characters, a managed policy at most 6,144, a trust policy
    at most 2,048, at most 10 managed policies per role; white space is not counted. ARNs and names are
    measured at their longest."""
    worst = deployment.worst
    for role_id, role in deployment.properties("AWS::IAM::Role").items():
        inline = sum(_policy_length(worst.render(document)) for document in _role_inline_policies(deployment, role_id))
        assert inline <= MAX_ROLE_INLINE_POLICIES_CHARS, role_id
        assert _policy_length(worst.render(role["AssumeRolePolicyDocument"])) <= MAX_TRUST_POLICY_CHARS, role_id
        assert len(role.get("ManagedPolicyArns", [])) <= MAX_MANAGED_POLICIES_PER_ROLE, role_id
    for policy_id, policy in deployment.properties("AWS::IAM::ManagedPolicy").items():
        assert _policy_length(worst.render(policy["PolicyDocument"])) <= MAX_MANAGED_POLICY_CHARS, policy_id


def test_role_descriptions_use_only_what_iam_accepts(deployment: Deployment) -> None:
    """IAM "CreateRole" (https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateRole.html): a description
    is at most 1,000 characters of tab, line breaks, printable ASCII and Latin-1; a dash or quote from outside
    that range fails the deploy."""
    for role_id, role in deployment.properties("AWS::IAM::Role").items():
        assert ROLE_DESCRIPTION.fullmatch(role.get("Description", "")), role_id


def test_key_and_topic_policies_fit_their_limits(deployment: Deployment) -> None:
    """KMS quotas (https://docs.aws.amazon.com/kms/latest/developerguide/resource-limits.html): "Key policy
    document size: 32 KB". SNS "Amazon SNS quotas" (https://docs.aws.amazon.com/general/latest/gr/sns.html):
    a topic policy is at most 30 KB."""
    worst = deployment.worst
    for key in deployment.properties("AWS::KMS::Key").values():
        assert len(_compact(worst.render(key["KeyPolicy"])).encode()) <= 32 * 1024
    for policy in deployment.properties("AWS::SNS::TopicPolicy").values():
        assert len(_compact(worst.render(policy["PolicyDocument"])).encode()) <= 30 * 1024


# ---- CloudWatch ------------------------------------------------------------------------------------------------

# CloudWatch Logs "PutRetentionPolicy" (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/
# API_PutRetentionPolicy.html): the only retention periods it accepts.
RETENTION_DAYS: Final = {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
                         2922, 3288, 3653}  # fmt: skip


def test_alarm_periods_and_metrics_are_ones_cloudwatch_accepts(deployment: Deployment) -> None:
    """CloudWatch "PutMetricAlarm" (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/
    API_PutMetricAlarm.html): a period of 10, 30 or a multiple of 60 seconds; evaluation periods times period at
    most one day (86,400 s); at most 5 actions per state; a description of at most 1,024 characters. CloudWatch
    "Create a CloudWatch alarm based on a metric math expression" (https://docs.aws.amazon.com/AmazonCloudWatch/
    latest/monitoring/Create-alarm-on-metric-math-expression.html): at most 10 metrics. "Use search expressions
    in graphs" (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-search-expressions.html):
    an alarm cannot watch a SEARCH expression."""
    for alarm_id, alarm in deployment.properties("AWS::CloudWatch::Alarm").items():
        queries = alarm.get("Metrics", [])
        periods = (
            [alarm["Period"]]
            if "Period" in alarm
            else [q["MetricStat"]["Period"] for q in queries if "MetricStat" in q]
        )
        assert periods, alarm_id
        for period in periods:
            assert period in {10, 30} or period % 60 == 0, alarm_id
            assert period * alarm["EvaluationPeriods"] <= 86_400, alarm_id
        assert sum("MetricStat" in query for query in queries) <= 10, alarm_id
        assert not any("SEARCH(" in query.get("Expression", "") for query in queries), alarm_id
        assert len(alarm.get("AlarmDescription", "")) <= 1_024, alarm_id
        for actions in ("AlarmActions", "OKActions", "InsufficientDataActions"):
            assert len(alarm.get(actions, [])) <= 5, alarm_id


def test_alarms_watch_a_namespace_cloudwatch_accepts(deployment: Deployment) -> None:
    """CloudWatch "Namespaces" (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/
    cloudwatch_concepts.html#Namespace): up to 255 characters of letters, digits and `. - _ / # :` or space,
    and AWS/ is reserved for AWS services."""
    for alarm in deployment.properties("AWS::CloudWatch::Alarm").values():
        namespaces = [alarm["Namespace"]] if "Namespace" in alarm else []
        namespaces += [q["MetricStat"]["Metric"]["Namespace"] for q in alarm.get("Metrics", []) if "MetricStat" in q]
        for namespace in namespaces:
            assert re.fullmatch(r"[0-9A-Za-z.\-_/#: ]{1,255}", namespace)
            if namespace == deployment.props.metrics_namespace:
                assert not namespace.startswith("AWS/")


def test_log_group_retention_is_one_cloudwatch_logs_accepts(deployment: Deployment) -> None:
    """CloudWatch Logs "PutRetentionPolicy" (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/
    API_PutRetentionPolicy.html): retention is one of a fixed list of days, or absent (kept forever)."""
    for group_id, group in deployment.properties("AWS::Logs::LogGroup").items():
        assert group.get("RetentionInDays", 1) in RETENTION_DAYS, group_id


# ---- CloudFormation --------------------------------------------------------------------------------------------

# CloudFormation quotas (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html).
MAX_RESOURCES: Final = 500
MAX_OUTPUTS: Final = 200
MAX_PARAMETERS: Final = 200
MAX_TEMPLATE_BYTES: Final = 1_000_000
MAX_DESCRIPTION_BYTES: Final = 1_024
LOGICAL_ID: Final = re.compile(r"[A-Za-z0-9]{1,255}")


def test_template_fits_cloudformation_quotas(deployment: Deployment) -> None:
    """CloudFormation quotas (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/
    cloudformation-limits.html): 500 resources, 200 outputs, 200 parameters, a 1,024-byte description, and a
    template of at most 1 MB from S3 (the CDK uploads every template to the bootstrap bucket, so the 51,200-byte
    limit of a template sent in the request does not apply)."""
    template = deployment.template
    assert len(template["Resources"]) <= MAX_RESOURCES
    assert len(template.get("Outputs", {})) <= MAX_OUTPUTS
    assert len(template.get("Parameters", {})) <= MAX_PARAMETERS
    assert len(template.get("Description", "").encode()) <= MAX_DESCRIPTION_BYTES
    assert len(json.dumps(template).encode()) <= MAX_TEMPLATE_BYTES


def test_logical_ids_are_valid_and_unique(deployment: Deployment) -> None:
    """CloudFormation "Resources" (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/
    resources-section-structure.html): a logical id is alphanumeric and unique in the template; the quotas page
    allows 255 characters. A parameter and a resource may not share one."""
    template = deployment.template
    sections = ("Resources", "Outputs", "Parameters", "Conditions", "Mappings")
    for section in sections:
        for logical_id in template.get(section, {}):
            assert LOGICAL_ID.fullmatch(logical_id), f"{section}: {logical_id}"
    assert not template.get("Parameters", {}).keys() & template["Resources"].keys()


def test_outputs_and_exports_are_valid_and_unique(deployment: Deployment) -> None:
    """CloudFormation "Outputs" (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/
    outputs-section-structure.html): export names are unique in the account and region, alphanumeric with `:`
    and `-`, at most 255 characters; an output's description is at most 1,024 bytes."""
    outputs = deployment.template.get("Outputs", {})
    exports = [output["Export"]["Name"] for output in outputs.values() if "Export" in output]
    assert len(exports) == len(set(map(json.dumps, exports)))
    for name in exports:
        assert isinstance(name, dict) or re.fullmatch(r"[A-Za-z0-9:-]{1,255}", name)
    for output_id, output in outputs.items():
        assert len(output.get("Description", "").encode()) <= MAX_DESCRIPTION_BYTES, output_id


def test_deletion_policies_are_ones_each_resource_takes(deployment: Deployment) -> None:
    """CloudFormation "DeletionPolicy attribute" (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/
    aws-attribute-deletionpolicy.html): Delete, Retain or RetainExceptOnCreate for any resource; Snapshot only
    for the types that support it, none of which is in this stack."""
    for logical_id, resource in deployment.template["Resources"].items():
        for attribute in ("DeletionPolicy", "UpdateReplacePolicy"):
            assert resource.get(attribute, "Delete") in {"Delete", "Retain", "RetainExceptOnCreate"}, logical_id


# ---- cdk-nag and cfn-lint on every extreme ---------------------------------------------------------------------


def test_cdk_nag_finds_nothing_unacknowledged(deployment: Deployment) -> None:
    """The AWS Solutions checks run at every synth: an unacknowledged error would already have stopped it."""
    for report in deployment.synthesized.validation_report()["pluginReports"]:
        assert report["conclusion"] == "success", report["pluginName"]
        assert report["violations"] == []


def test_cfn_lint_finds_nothing_at_any_extreme(request: pytest.FixtureRequest, deployments: Deployments) -> None:
    """cfn-lint checks every resource against CloudFormation's own schemas (allowed values, patterns, lengths);
    the defaults are linted in `test_compliance.py`, the extremes here, in one run."""
    templates = []
    for name in _names(request.config):
        if name != "defaults":
            synthesized = deployments[name].synthesized
            templates.append(str(synthesized.outdir / f"{synthesized.stack.artifact_id}.template.json"))
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    result = subprocess.run(
        [str(cfn_lint), "--ignore-checks", "W3005", "--", *templates],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
