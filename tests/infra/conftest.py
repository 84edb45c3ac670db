"""One synth of the app for all infrastructure tests: building the stack costs seconds, reading it costs none."""

from __future__ import annotations

import os

import pytest

# jsii starts Node when aws_cdk is imported: an end-of-life Node would print a banner on every test run.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk.assertions import Template

from tests.infra.synth import Synthesized, synthesize


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def template(synthesized: Synthesized) -> Template:
    return synthesized.template
