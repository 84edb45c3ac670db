"""Synthesizing the app for tests exactly as `cdk synth` does (same entry point, `cdk.json` context and cdk-nag
checks), except that asset bundling is skipped: a unit test does not install the layer's wheels.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

import app as entry_point
from infra.paths import REPO_ROOT
from infra.stack import DynamoQueueStack


def cdk_context(**extra: Any) -> dict[str, Any]:
    """The context `cdk synth` passes (feature flags of cdk.json), without bundling."""
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    return {**context, "aws:cdk:bundling-stacks": [], **extra}


@dataclass(frozen=True)
class Synthesized:
    stack: DynamoQueueStack
    outdir: Path
    template: Template
    template_json: dict[str, Any]

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.template_json["Resources"]

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {key: value for key, value in self.resources.items() if value["Type"] == resource_type}

    def logical_id(self, construct: Any) -> str:
        """The template id of an L2 construct's CloudFormation resource."""
        return self.stack.resolve(self.stack.get_logical_id(construct.node.default_child))

    def resource(self, construct: Any) -> dict[str, Any]:
        return self.resources[self.logical_id(construct)]

    def validation_report(self) -> dict[str, Any]:
        return json.loads((self.outdir / "validation-report.json").read_text())


def synthesize(outdir: Path, **context: Any) -> Synthesized:
    app = cdk.App(outdir=str(outdir), context=cdk_context(**context))
    app, stack = entry_point.build_app(app)
    assembly = app.synth()
    template = assembly.get_stack_by_name(stack.stack_name).template
    return Synthesized(stack=stack, outdir=outdir, template=Template.from_json(template), template_json=template)


def cfn_lint(synthesized: Synthesized) -> str:
    """cfn-lint's findings on the synthesized template ("" when it finds nothing). W3005 is the CDK's own redundant
    DependsOn next to a GetAtt: harmless, and not ours to change."""
    template = synthesized.outdir / f"{synthesized.stack.artifact_id}.template.json"
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), "--ignore-checks", "W3005", "--", str(template)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return "" if result.returncode == 0 else (result.stdout + result.stderr or f"exit {result.returncode}")
