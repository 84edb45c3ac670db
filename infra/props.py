"""Settings of a `DynamoQueue`: every default is the safe one for a production deployment."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, get_type_hints

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_logs as logs
from constructs import Node

CONTEXT_PREFIX: Final = "dynamo-queue:"


@dataclass(frozen=True)
class DynamoQueueProps:
    """What a deployment may change. Plain values, so each one can also come from CDK context.

    Stateful resources (the table and the log groups) are retained and the table is deletion-protected by
    default: a `cdk destroy` must never take the messages with it unless a deployment asks for that.
    """

    # Table
    table_name: str | None = None
    removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN
    deletion_protection: bool = True
    table_encryption: dynamodb.TableEncryption = dynamodb.TableEncryption.AWS_MANAGED

    # Functions. `layer_dependencies=False` builds a layer of the project's own packages alone, for looking at
    # the layer's layout without installing wheels.
    memory_size_mb: int = 512
    layer_dependencies: bool = True
    log_level: str = "INFO"
    log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH
    service_name: str = "dynamo-queue"
    metrics_namespace: str = "DynamoQueue"

    # Sweeper: one at a time (a second concurrent sweep only wastes conditional writes). A new account whose
    # concurrency quota is 10 cannot reserve any: set `sweeper_reserved_concurrency` to 0 there to leave it
    # unreserved.
    sweeper_interval_minutes: int = 1
    sweeper_enabled: bool = True
    sweeper_reserved_concurrency: int = 1

    # API
    api_stage_name: str = "v1"
    api_throttle_rate_limit: float = 500.0
    api_throttle_burst_limit: int = 1000

    # Alarms
    oldest_message_age_alarm_seconds: int = 900
    dlq_depth_alarm_threshold: int = 0
    dynamodb_user_errors_alarm_threshold: int = 50
    alarm_period_minutes: int = 5
    alarm_topic: bool = False
    alarm_email: str | None = None

    def __post_init__(self) -> None:
        if self.sweeper_interval_minutes < 1:
            raise ValueError("sweeper_interval_minutes must be at least 1 (the Scheduler's finest rate)")
        if self.api_throttle_burst_limit < 1 or self.api_throttle_rate_limit <= 0:
            raise ValueError("API throttling limits must be positive")
        if self.log_level.upper() not in {"DEBUG", "INFO", "WARN", "ERROR"}:
            raise ValueError(f"log_level {self.log_level!r} is not one of DEBUG, INFO, WARN, ERROR")
        if self.sweeper_reserved_concurrency < 0:
            raise ValueError("sweeper_reserved_concurrency cannot be negative")

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
