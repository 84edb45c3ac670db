"""Settings of a `DynamoQueue`: every default is the safe one for a production deployment."""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, get_type_hints

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_logs as logs
from constructs import Node

from infra.function_environment import DEFAULT_TRACING

CONTEXT_PREFIX: Final = "dynamo-queue:"

# Limits AWS documents for what these settings become. A value outside them cannot deploy, so it stops `cdk synth`
# instead of failing half-way through `cdk deploy`.
# DynamoDB "Supported data types and naming rules": 3-255 characters of a-z, A-Z, 0-9, _, - and .
TABLE_NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9_.-]{3,255}")
# Lambda quotas, "Function memory allocation": 128 MB to 10,240 MB.
MEMORY_SIZE_MB: Final = (128, 10_240)
# Lambda "Selecting and configuring an instruction set architecture".
ARCHITECTURES: Final = ("arm64", "x86_64")
# API Gateway "CreateStage": letters, digits, hyphens and underscores, at most 128 characters.
STAGE_NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")
# API Gateway quotas, "Throttle quota per account, per Region across HTTP APIs, REST APIs, WebSocket APIs, and
# WebSocket callback APIs": 10,000 requests per second with a burst of 5,000. A stage may not go beyond them.
ACCOUNT_RATE_LIMIT: Final = 10_000.0
ACCOUNT_BURST_LIMIT: Final = 5_000
# CloudWatch "Namespaces": up to 255 of these characters, and never the "AWS/" prefix AWS services own.
NAMESPACE_PATTERN: Final = re.compile(r"[0-9A-Za-z.\-_/#: ]{1,255}")
# CloudWatch "Dimension": a value is 1-1,024 characters (the service name is the `service` dimension).
SERVICE_NAME_LENGTH: Final = (1, 1_024)
# CloudWatch "PutMetricAlarm": the evaluation periods times the period may not exceed one day. Every alarm
# evaluates one period, which is the alarm period or the sweeper interval, whichever is longer.
MAX_PERIOD_MINUTES: Final = 1_440
# A sweep at a time needs no more than one reserved instance.
MAX_SWEEPER_RESERVED_CONCURRENCY: Final = 1
# CloudFormation "DeletionPolicy attribute": log groups and KMS keys take no Snapshot policy.
REMOVAL_POLICIES: Final = (
    cdk.RemovalPolicy.RETAIN,
    cdk.RemovalPolicy.DESTROY,
    cdk.RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
)
LOG_LEVELS: Final = ("DEBUG", "INFO", "WARN", "ERROR")
EMAIL_PATTERN: Final = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
# DynamoDB capacity modes: "on_demand" (pay per request) or "provisioned" (units an hour, with auto scaling).
CAPACITY_MODES: Final = ("on_demand", "provisioned")
# Application Auto Scaling's target tracking for DynamoDB: a target utilization of 20 % to 90 %.
TARGET_UTILIZATION_PERCENT: Final = (20, 90)
# KMS "Key ARN": arn:{partition}:kms:{region}:{account}:key/{key id}.
KMS_KEY_ARN_PATTERN: Final = re.compile(r"arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]{1,128}")


@dataclass(frozen=True)
class DynamoQueueProps:
    """What a deployment may change. Plain values, so each one can also come from CDK context.

    Stateful resources (the table and the log groups) are retained and the table is deletion-protected by
    default: a `cdk destroy` must never take the messages with it unless a deployment asks for that.

    Every default deploys into a new account as it is: nothing reserves Lambda concurrency, and the stack sets
    the region's API Gateway logging role that its stage logging needs. Values that no deployment could succeed
    with (the AWS limits above) are refused here, before anything is synthesized.
    """

    # Table
    table_name: str | None = None
    removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN
    deletion_protection: bool = True
    table_encryption: dynamodb.TableEncryption = dynamodb.TableEncryption.AWS_MANAGED
    # A customer managed KMS key (its ARN) that encrypts the table and the bodies bucket instead; the functions may
    # use it, and the SQS protocol reports it as every queue's `KmsMasterKeyId`.
    encryption_key_arn: str | None = None
    # Capacity: "on_demand" (the default: pay per request, no planning, bursts to the table quota at once) or
    # "provisioned": the table and its index each get read and write units an hour, kept by auto scaling at
    # `capacity_target_utilization` percent of what they consume, between a floor and a ceiling each. Cheaper for
    # a steady load (README, "What it costs"); a burst past the provisioned units is throttled until auto scaling
    # catches up (minutes), and never past the ceilings.
    capacity: str = "on_demand"
    capacity_target_utilization: int = 70
    min_read_capacity: int = 5
    max_read_capacity: int = 1_000
    min_write_capacity: int = 5
    max_write_capacity: int = 1_000
    index_min_read_capacity: int = 5
    index_max_read_capacity: int = 1_000
    index_min_write_capacity: int = 5
    index_max_write_capacity: int = 1_000

    # Functions. `layer_dependencies=False` builds a layer of the project's own packages alone, for looking at
    # the layer's layout without installing wheels. `architecture` is "arm64" (Graviton, cheaper per second) or
    # "x86_64" for a region whose Lambda has no arm64.
    memory_size_mb: int = 512
    architecture: str = "arm64"
    layer_dependencies: bool = True
    log_level: str = "INFO"
    log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH
    service_name: str = "dynamo-queue"
    metrics_namespace: str = "DynamoQueue"
    # Tracing: True turns on X-Ray for the API stage and the functions (active tracing, and Powertools' Tracer
    # through the X-Ray SDK, in maintenance since 25 February 2026). Off by default: see the README's "Tracing".
    tracing: bool = DEFAULT_TRACING

    # Sweeper. Overlapping sweeps are safe (every sweep write is conditional, and a sweep skips one that is
    # running), so nothing is reserved by default (0): Lambda refuses a reservation that would leave the account
    # less than its minimum of unreserved concurrency (100 at the usual quota of 1,000), and a new account whose
    # quota is 10 has none to spare. 1 reserves one instance, which also caps the sweeper at one.
    sweeper_interval_minutes: int = 1
    sweeper_enabled: bool = True
    sweeper_reserved_concurrency: int = 0

    # API. Stage logging (errors and access logs) needs the region's API Gateway CloudWatch role, an account-wide
    # setting: `api_account_logging_role=True` creates that role and sets it (a new account has none, and the
    # stage cannot be created without it); False leaves the account's setting alone, for an account where another
    # stack or an administrator already set it.
    api_stage_name: str = "v1"
    api_throttle_rate_limit: float = 500.0
    api_throttle_burst_limit: int = 1000
    api_account_logging_role: bool = True

    # Alarms
    oldest_message_age_alarm_seconds: int = 900
    dlq_depth_alarm_threshold: int = 0
    dynamodb_user_errors_alarm_threshold: int = 50
    alarm_period_minutes: int = 5
    alarm_topic: bool = False
    alarm_email: str | None = None

    def __post_init__(self) -> None:
        problems = self._problems()
        if problems:
            raise ValueError("; ".join(problems))

    def _problems(self) -> list[str]:
        """Every setting that could not deploy, each with the limit it breaks."""
        problems = []
        if self.table_name is not None and not TABLE_NAME_PATTERN.fullmatch(self.table_name):
            problems.append("table_name must be 3-255 characters of letters, digits, '_', '-' and '.'")
        if self.encryption_key_arn is not None and not KMS_KEY_ARN_PATTERN.fullmatch(self.encryption_key_arn):
            problems.append("encryption_key_arn must be a KMS key's ARN (arn:aws:kms:{region}:{account}:key/{id})")
        problems += self._capacity_problems()
        if self.removal_policy not in REMOVAL_POLICIES:
            problems.append(
                f"removal_policy must be RETAIN, DESTROY or RETAIN_ON_UPDATE_OR_DELETE, not {self.removal_policy}"
            )
        if self.removal_policy is cdk.RemovalPolicy.DESTROY and self.deletion_protection:
            problems.append(
                "removal_policy DESTROY needs deletion_protection=false: CloudFormation cannot delete a "
                "deletion-protected table, so the stack's deletion would fail at it"
            )
        if not MEMORY_SIZE_MB[0] <= self.memory_size_mb <= MEMORY_SIZE_MB[1]:
            problems.append(f"memory_size_mb must be {MEMORY_SIZE_MB[0]}-{MEMORY_SIZE_MB[1]} (Lambda's range)")
        if self.architecture not in ARCHITECTURES:
            problems.append(f"architecture must be one of {', '.join(ARCHITECTURES)}")
        if self.log_level.upper() not in LOG_LEVELS:
            problems.append(f"log_level {self.log_level!r} is not one of {', '.join(LOG_LEVELS)}")
        if not SERVICE_NAME_LENGTH[0] <= len(self.service_name) <= SERVICE_NAME_LENGTH[1]:
            problems.append(f"service_name must be {SERVICE_NAME_LENGTH[0]}-{SERVICE_NAME_LENGTH[1]} characters")
        if (
            not NAMESPACE_PATTERN.fullmatch(self.metrics_namespace)
            or not self.metrics_namespace.strip()
            or self.metrics_namespace.startswith("AWS/")
        ):
            problems.append(
                "metrics_namespace must be 1-255 characters of letters, digits, '.', '-', '_', '/', '#', ':' and "
                "spaces, not all spaces, and must not start with 'AWS/'"
            )
        if not 1 <= self.sweeper_interval_minutes <= MAX_PERIOD_MINUTES:
            problems.append(
                f"sweeper_interval_minutes must be 1 (the Scheduler's finest rate) to {MAX_PERIOD_MINUTES} (an "
                "alarm watches one interval, and CloudWatch evaluates at most a day)"
            )
        if not 0 <= self.sweeper_reserved_concurrency <= MAX_SWEEPER_RESERVED_CONCURRENCY:
            problems.append(
                f"sweeper_reserved_concurrency must be 0 (no reservation) to {MAX_SWEEPER_RESERVED_CONCURRENCY}"
            )
        if not STAGE_NAME_PATTERN.fullmatch(self.api_stage_name):
            problems.append("api_stage_name must be 1-128 letters, digits, '-' and '_'")
        if not 0 < self.api_throttle_rate_limit <= ACCOUNT_RATE_LIMIT:
            problems.append(
                f"api_throttle_rate_limit must be above 0 and at most the account's {ACCOUNT_RATE_LIMIT:,.0f}"
            )
        if not 1 <= self.api_throttle_burst_limit <= ACCOUNT_BURST_LIMIT:
            problems.append(f"api_throttle_burst_limit must be 1 to the account's {ACCOUNT_BURST_LIMIT:,}")
        if self.oldest_message_age_alarm_seconds < 1:
            problems.append("oldest_message_age_alarm_seconds must be at least 1")
        for name in ("dlq_depth_alarm_threshold", "dynamodb_user_errors_alarm_threshold"):
            if getattr(self, name) < 0:
                problems.append(f"{name} cannot be negative")
        if not 1 <= self.alarm_period_minutes <= MAX_PERIOD_MINUTES:
            problems.append(
                f"alarm_period_minutes must be 1 to {MAX_PERIOD_MINUTES} (CloudWatch evaluates at most a day)"
            )
        if self.alarm_email is not None and not EMAIL_PATTERN.fullmatch(self.alarm_email):
            problems.append(f"alarm_email {self.alarm_email!r} is not an email address")
        return problems

    def _capacity_problems(self) -> list[str]:
        problems = []
        if self.capacity not in CAPACITY_MODES:
            problems.append(f"capacity must be one of {', '.join(CAPACITY_MODES)}, not {self.capacity!r}")
        low, high = TARGET_UTILIZATION_PERCENT
        if not low <= self.capacity_target_utilization <= high:
            problems.append(f"capacity_target_utilization must be {low}-{high} (auto scaling's range), in percent")
        for floor, ceiling in self.capacity_bounds.values():
            if floor < 1 or ceiling < floor:
                problems.append(f"capacity floors and ceilings need 1 <= floor <= ceiling (min {floor}, max {ceiling})")
        return problems

    @property
    def capacity_bounds(self) -> dict[str, tuple[int, int]]:
        """Auto scaling's (floor, ceiling) of each provisioned dimension, in units: table and index, read and write."""
        return {
            "read": (self.min_read_capacity, self.max_read_capacity),
            "write": (self.min_write_capacity, self.max_write_capacity),
            "index_read": (self.index_min_read_capacity, self.index_max_read_capacity),
            "index_write": (self.index_min_write_capacity, self.index_max_write_capacity),
        }

    @property
    def provisioned(self) -> bool:
        return self.capacity == "provisioned"

    @property
    def wants_alarm_topic(self) -> bool:
        return self.alarm_topic or self.alarm_email is not None

    @classmethod
    def from_context(cls, node: Node, **overrides: Any) -> DynamoQueueProps:
        """Props from `dynamo-queue:<field>` context values, as `cdk deploy -c dynamo-queue:alarm_email=…` gives.

        Command-line context values are strings: each is converted to its field's type, and an unknown key is
        an error rather than a silently ignored typo.
        """
        values: dict[str, Any] = {}
        known = {field.name for field in dataclasses.fields(cls)}
        context = node.try_get_context("dynamo-queue") or {}
        if not isinstance(context, Mapping):
            raise ValueError("context 'dynamo-queue' must be an object of DynamoQueueProps fields")
        for name, raw in context.items():
            if name not in known:
                raise ValueError(f"context dynamo-queue.{name} is not a DynamoQueueProps field")
            values[name] = raw
        for name in known:
            raw = node.try_get_context(CONTEXT_PREFIX + name)
            if raw is not None:
                values[name] = raw
        hints = get_type_hints(cls)
        converted = {name: _convert(name, raw, hints[name]) for name, raw in values.items()}
        return cls(**{**converted, **overrides})


def _convert(name: str, raw: Any, hint: Any) -> Any:
    """Turn one context value into the field's type; enums are given by member name (`DESTROY`, `ONE_WEEK`)."""
    members = getattr(hint, "__args__", ())
    optional = type(None) in members
    kind = next((member for member in members if member is not type(None)), hint)
    if raw is None or (optional and isinstance(raw, str) and raw.lower() in {"", "none", "null"}):
        if not optional:
            raise ValueError(f"context {name} cannot be empty")
        return None
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return raw if isinstance(raw, kind) else kind[str(raw).upper()]
    if kind is bool:
        if isinstance(raw, bool):
            return raw
        if str(raw).lower() in {"true", "1", "yes"}:
            return True
        if str(raw).lower() in {"false", "0", "no"}:
            return False
        raise ValueError(f"context {name}={raw!r} is not a boolean")
    if kind in (int, float, str):
        return kind(raw)
    raise ValueError(f"context {name} has a type that cannot come from context")
