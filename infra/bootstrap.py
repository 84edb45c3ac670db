"""Is the account and region `cdk deploy` targets bootstrapped for this cloud assembly? `make deploy` asks first,
so `cdk bootstrap`, which needs far wider permissions than a deploy, runs once per account and region (and again
only when a newer CDK needs a newer bootstrap stack), not before every deploy.

`python -m infra.bootstrap cdk.out` exits 0 when the environment is ready, 1 when it must be bootstrapped. When
the version cannot be read (no credentials, or a deployer allowed only to assume the CDK's roles), it exits 0
and leaves the verdict to `cdk deploy`, which checks the same parameter through its own role.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Final

import boto3
from botocore.exceptions import BotoCoreError, ClientError

DEFAULT_VERSION_PARAMETER: Final = "/cdk-bootstrap/hnb659fds/version"


def requirement(assembly: Path) -> tuple[str, int]:
    """The SSM parameter holding the bootstrap version, and the lowest version every artifact of the assembly
    accepts (each names its own in `manifest.json`)."""
    manifest = json.loads((assembly / "manifest.json").read_text())
    parameter, version = DEFAULT_VERSION_PARAMETER, 0
    for artifact in manifest.get("artifacts", {}).values():
        for properties in _with_requirements(artifact.get("properties", {})):
            version = max(version, int(properties["requiresBootstrapStackVersion"]))
            parameter = properties.get("bootstrapStackVersionSsmParameter", parameter)
    return parameter, version


def _with_requirements(properties: dict[str, Any]) -> list[dict[str, Any]]:
    found = [properties] if "requiresBootstrapStackVersion" in properties else []
    lookup = properties.get("lookupRole", {})
    return found + ([lookup] if "requiresBootstrapStackVersion" in lookup else [])


def needs_bootstrap(ssm: Any, parameter: str, required_version: int) -> bool:
    """True when the environment has no bootstrap stack, or one older than the assembly needs."""
    try:
        value = ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
    except ssm.exceptions.ParameterNotFound:
        return True
    return int(value) < required_version


def main(argv: list[str]) -> int:
    parameter, required = requirement(Path(argv[0]) if argv else Path("cdk.out"))
    try:
        missing = needs_bootstrap(boto3.client("ssm"), parameter, required)
    except (ClientError, BotoCoreError) as error:
        print(f"cannot read {parameter} ({error}); cdk deploy will check the bootstrap version itself")
        return 0
    if missing:
        print(f"this account and region need the CDK bootstrap stack, version {required} or later")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
