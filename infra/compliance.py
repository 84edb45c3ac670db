"""cdk-nag acknowledgements, recorded next to the resource they concern, each with the reason it is accepted."""

from __future__ import annotations

from typing import Final

import aws_cdk as cdk
from constructs import IConstruct

NAG_PACK: Final = "AwsSolutions"
MIN_REASON_LENGTH: Final = 40


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Accept one AwsSolutions finding (`AwsSolutions-IAM5[Resource::*]`) on `scope` and everything under it.

    A reason too short to tell a reviewer why the finding is safe here is refused at synth time.
    """
    if len(reason.strip()) < MIN_REASON_LENGTH:
        raise ValueError(f"acknowledging {rule} needs a reason a reviewer can check, got {reason!r}")
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=f"{NAG_PACK}::{rule}", reason=reason))
