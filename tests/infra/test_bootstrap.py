"""`make deploy` bootstraps an account and region once: only when the bootstrap stack is missing or too old."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from infra.bootstrap import DEFAULT_VERSION_PARAMETER, needs_bootstrap, requirement
from tests.infra.synth import Synthesized


@pytest.fixture
def ssm() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ssm", region_name="us-east-1")


def test_the_assembly_names_the_bootstrap_version_it_needs(synthesized: Synthesized) -> None:
    parameter, version = requirement(synthesized.outdir)
    rule = synthesized.template_json["Rules"]["CheckBootstrapVersion"]["Assertions"][0]["Assert"]
    refused = rule["Fn::Not"][0]["Fn::Contains"][0]

    assert parameter == DEFAULT_VERSION_PARAMETER
    assert version >= len(refused) + 1
    assert str(version) not in refused


def test_a_new_account_is_bootstrapped(ssm: Any) -> None:
    assert needs_bootstrap(ssm, DEFAULT_VERSION_PARAMETER, 6) is True


def test_an_old_bootstrap_stack_is_upgraded_and_a_current_one_left_alone(ssm: Any) -> None:
    ssm.put_parameter(Name=DEFAULT_VERSION_PARAMETER, Value="5", Type="String")
    assert needs_bootstrap(ssm, DEFAULT_VERSION_PARAMETER, 6) is True

    ssm.put_parameter(Name=DEFAULT_VERSION_PARAMETER, Value="30", Type="String", Overwrite=True)
    assert needs_bootstrap(ssm, DEFAULT_VERSION_PARAMETER, 8) is False
