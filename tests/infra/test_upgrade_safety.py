"""An upgrade of the stack never replaces nor drops the table or the bodies bucket.

The template of the last release is kept in `infra/releases/<version>.template.json`. CloudFormation replaces a
resource whose logical id changed (the old one is deleted) or one of whose replacement-requiring properties
changed; either way the data would be gone or stranded. The policies must keep both resources when they leave
the template or are replaced all the same.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from queue_core.version import __version__

from infra.paths import REPO_ROOT
from tests.infra.synth import Synthesized

RELEASES = REPO_ROOT / "infra" / "releases"

# Properties whose change makes CloudFormation replace the resource (its "Update requires: Replacement"),
# besides the key attributes' types, which `_key_types` compares.
REPLACING: dict[str, tuple[str, ...]] = {
    "AWS::DynamoDB::Table": ("TableName", "KeySchema", "LocalSecondaryIndexes", "ImportSourceSpecification"),
    "AWS::S3::Bucket": ("BucketName",),
}


def _version(path: Any) -> tuple[int, ...]:
    return tuple(int(part) for part in path.name.removesuffix(".template.json").split("."))


def last_release() -> tuple[str, dict[str, Any]]:
    path = max(RELEASES.glob("*.template.json"), key=_version)
    return path.name.removesuffix(".template.json"), json.loads(path.read_text())


def _key_types(properties: dict[str, Any]) -> dict[str, str]:
    """The types of the table's and its local indexes' key attributes: a change of one replaces the table."""
    schemas = [properties.get("KeySchema", [])]
    schemas += [index["KeySchema"] for index in properties.get("LocalSecondaryIndexes", [])]
    names = {key["AttributeName"] for schema in schemas for key in schema}
    return {
        definition["AttributeName"]: definition["AttributeType"]
        for definition in properties.get("AttributeDefinitions", [])
        if definition["AttributeName"] in names
    }


def replacement_risks(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What in `new` would replace, delete or stop retaining a stateful resource of `old`."""
    problems = []
    for logical_id, before in old["Resources"].items():
        kind = before["Type"]
        if kind not in REPLACING:
            continue
        after = new["Resources"].get(logical_id)
        if after is None or after["Type"] != kind:
            problems.append(f"{logical_id} ({kind}) is gone or renamed: CloudFormation would delete it")
            continue
        old_props, new_props = before.get("Properties", {}), after.get("Properties", {})
        for name in REPLACING[kind]:
            if old_props.get(name) != new_props.get(name):
                problems.append(f"{logical_id}.{name} changed: CloudFormation would replace it")
        if kind == "AWS::DynamoDB::Table" and _key_types(old_props) != _key_types(new_props):
            problems.append(f"{logical_id} key attribute types changed: CloudFormation would replace it")
        for policy in ("DeletionPolicy", "UpdateReplacePolicy"):
            if after.get(policy) != "Retain":
                problems.append(f"{logical_id}.{policy} is {after.get(policy)!r}, not 'Retain'")
    return problems


def test_the_last_release_had_a_table_and_a_bucket_to_keep() -> None:
    _, old = last_release()
    kinds = sorted(resource["Type"] for resource in old["Resources"].values() if resource["Type"] in REPLACING)
    assert kinds == ["AWS::DynamoDB::Table", "AWS::S3::Bucket"]


def test_an_upgrade_from_the_last_release_replaces_and_drops_nothing_stateful(synthesized: Synthesized) -> None:
    version, old = last_release()
    assert replacement_risks(old, synthesized.template_json) == [], f"upgrading from {version}"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda r: r.update(Renamed=r.pop("QueueTableD6615DF4")), "QueueTableD6615DF4 (AWS::DynamoDB::Table) is gone"),
        (lambda r: r["QueueTableD6615DF4"]["Properties"].update(TableName="other"), "TableName changed"),
        (
            lambda r: r["QueueTableD6615DF4"]["Properties"]["KeySchema"].pop(),
            "QueueTableD6615DF4.KeySchema changed",
        ),
        (
            lambda r: r["QueueTableD6615DF4"]["Properties"]["AttributeDefinitions"][0].update(AttributeType="N"),
            "key attribute types changed",
        ),
        (
            lambda r: r["QueueTableD6615DF4"]["Properties"].update(
                LocalSecondaryIndexes=[{"IndexName": "l", "KeySchema": [], "Projection": {}}]
            ),
            "LocalSecondaryIndexes changed",
        ),
        (lambda r: r["QueueBodies9CADB502"]["Properties"].update(BucketName="named"), "BucketName changed"),
        (lambda r: r["QueueBodies9CADB502"].update(DeletionPolicy="Delete"), "DeletionPolicy is 'Delete'"),
        (lambda r: r["QueueTableD6615DF4"].pop("UpdateReplacePolicy"), "UpdateReplacePolicy is None"),
    ],
)
def test_the_check_finds_each_change_that_would_lose_data(change: Any, expected: str) -> None:
    _, old = last_release()
    new = copy.deepcopy(old)
    assert replacement_risks(old, new) == []
    change(new["Resources"])
    assert any(expected in problem for problem in replacement_risks(old, new))


def test_the_stack_and_its_layer_carry_the_release_version(synthesized: Synthesized) -> None:
    assert synthesized.template_json["Description"].startswith(f"dynamo-queue {__version__}: ")
    [layer] = synthesized.of_type("AWS::Lambda::LayerVersion").values()
    assert layer["Properties"]["Description"].startswith(f"dynamo-queue {__version__}: ")
