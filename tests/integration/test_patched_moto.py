"""Our moto patches change how fast moto answers, never what it answers.

The same transactions, queries and scans (`moto_scenarios`) run on stock moto, on moto as the tests and the local
server patch it, and on moto as the benchmark patches it, each in a process of its own: every outcome and every
table, index and stream afterwards must be the same. The patches also refuse to load on a moto version they were
not written for.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import moto
import pytest

from bench.backend import KEY_ORDERING_MOTO_VERSIONS, faster_key_ordering
from dq.embedded_dynamodb import (
    MOTO_VERSIONS,
    UnsupportedMotoVersion,
    fast_queries,
    fast_serialization,
    fast_transactions,
    idempotent_transactions,
    serialize_moto_requests,
    untracked_items,
)
from tests.integration.moto_scenarios import CONFIGURATIONS, QUERIED

REPO = Path(__file__).resolve().parents[2]
PATCHED = [configuration for configuration in CONFIGURATIONS if configuration != "stock"]


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, Any]]:
    """What each configuration printed; the processes run side by side."""
    environment = {name: value for name, value in os.environ.items() if name != "AWS_ENDPOINT_URL_DYNAMODB"}
    processes = {
        configuration: subprocess.Popen(
            [sys.executable, "-m", "tests.integration.moto_scenarios", configuration],
            cwd=REPO,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for configuration in CONFIGURATIONS
    }
    printed = {}
    for configuration, process in processes.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode()
        printed[configuration] = json.loads(out)
    return printed


@pytest.mark.parametrize("configuration", PATCHED)
def test_patched_moto_ends_every_transaction_as_stock_moto_does(
    outcomes: dict[str, dict[str, Any]], configuration: str
) -> None:
    stock, patched = outcomes["stock"]["transactions"], outcomes[configuration]["transactions"]
    assert list(patched) == list(stock)
    for name, outcome in stock.items():
        assert patched[name] == outcome, name


def test_patched_moto_writes_every_answer_byte_for_byte_as_stock_moto_does(outcomes: dict[str, dict[str, Any]]) -> None:
    """The answers' bodies as moto serialized them (`fast_serialization` finds their fields another way), the
    transactions' and every attribute type's in each configuration, and the queries' and scans' where they run."""
    stock = outcomes["stock"]["bodies"]
    assert [len(stock[phase]) > 5 for phase in ("transactions", "queries", "types")] == [True] * 3
    for configuration in PATCHED:
        patched = outcomes[configuration]["bodies"]
        assert list(patched) == [phase for phase in stock if configuration in QUERIED or phase != "queries"]
        for phase, answers in patched.items():
            assert answers == stock[phase], (configuration, phase)
    assert outcomes["stock"]["types"]["update"] == outcomes["stock"]["types"]["delete"]


@pytest.mark.parametrize("configuration", [configuration for configuration in QUERIED if configuration != "stock"])
def test_patched_moto_returns_the_pages_of_stock_moto_for_every_query_and_scan(
    outcomes: dict[str, dict[str, Any]], configuration: str
) -> None:
    stock, patched = outcomes["stock"]["queries"], outcomes[configuration]["queries"]
    assert list(patched) == list(stock)
    for name, pages in stock.items():
        assert patched[name] == pages, name


def test_committed_transactions_change_the_tables_and_failed_ones_leave_them_exactly_as_before(
    outcomes: dict[str, dict[str, Any]],
) -> None:
    for name, outcome in outcomes["stock"]["transactions"].items():
        if name.startswith("commit:"):
            assert outcome.get("ok") and not outcome["unchanged"], name
        else:
            assert outcome.get("error") and outcome["unchanged"], name


def test_a_failed_condition_cancels_with_its_reason_and_the_old_item_only_when_asked(
    outcomes: dict[str, dict[str, Any]],
) -> None:
    cancellations = {
        name: outcome for name, outcome in outcomes["stock"]["transactions"].items() if "fails its condition" in name
    }
    assert len(cancellations) == 16  # four kinds of action, failing first or last, with ALL_OLD or NONE
    for name, outcome in cancellations.items():
        reasons = outcome["reasons"]
        failed = reasons[-1] if "(last)" in name else reasons[0]
        assert outcome["error"] == "TransactionCanceledException", name
        assert [reason["Code"] for reason in reasons].count("None") == len(reasons) - 1, name
        assert failed["Code"] == "ConditionalCheckFailed", name
        assert ("Item" in failed) == name.endswith("ALL_OLD"), name
        if name.endswith("ALL_OLD"):
            assert (failed["Item"]["pk"], failed["Item"]["sk"]) == ({"S": "a"}, {"S": "1"}), name


def test_two_actions_on_one_item_are_refused_even_when_one_only_checks_a_condition(
    outcomes: dict[str, dict[str, Any]],
) -> None:
    transactions = outcomes["stock"]["transactions"]
    for name in (
        "refused: a condition on an item an earlier action of the same transaction writes",
        "refused: an update and a delete of one existing item",
    ):
        assert transactions[name]["error"] == "ValidationException", name
        assert "multiple operations on one item" in transactions[name]["message"], name


def test_paged_queries_follow_the_exclusive_start_key_through_every_item(outcomes: dict[str, dict[str, Any]]) -> None:
    queries = outcomes["stock"]["queries"]
    for name, pages in queries.items():
        if name.endswith("limit=1"):
            whole = queries[name.removesuffix("limit=1") + "limit=None"]
            assert [item for page in pages for item in page["Items"]] == whole[0]["Items"], name
            assert len(pages) >= len(whole[0]["Items"]) > 1, name


PATCHES: dict[str, Callable[[], None]] = {
    "serialize_moto_requests": serialize_moto_requests,
    "fast_transactions": fast_transactions,
    "fast_queries": fast_queries,
    "idempotent_transactions": idempotent_transactions,
    "untracked_items": untracked_items,
    "fast_serialization": fast_serialization,
    "faster_key_ordering": faster_key_ordering,
}


@pytest.mark.parametrize("patch", PATCHES)
def test_a_patch_refuses_to_load_on_a_moto_version_it_was_not_written_for(
    patch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.core import responses
    from moto.core.serialize import ResponseSerializer
    from moto.dynamodb import models
    from moto.dynamodb.models.dynamo_type import DynamoType, Item
    from moto.dynamodb.responses import DynamoHandler

    untouched = (
        ResponseSerializer.get_value,
        responses.method_names_from_class,
        DynamoHandler.call_action,
        DynamoHandler.transact_write_items,
        models.DynamoDBBackend.transact_write_items,
        DynamoType.__eq__,
        models.Table.query,
        vars(Item).get("__new__"),
    )
    monkeypatch.setattr(moto, "__version__", "99.0.0")
    with pytest.raises(UnsupportedMotoVersion) as refusal:
        PATCHES[patch]()
    assert re.search(rf"{patch} .* written for moto 5\.2\.5, but moto 99\.0\.0 is installed", str(refusal.value))
    assert (
        ResponseSerializer.get_value,
        responses.method_names_from_class,
        DynamoHandler.call_action,
        DynamoHandler.transact_write_items,
        models.DynamoDBBackend.transact_write_items,
        DynamoType.__eq__,
        models.Table.query,
        vars(Item).get("__new__"),
    ) == untouched


def test_an_item_no_table_holds_any_more_is_freed() -> None:
    """moto's models list every instance they make, for its dashboard: each item and each copy moto makes of one
    (an update copies the old item, a scan what it answers) stayed in memory for the life of the mock, gigabytes
    in a long stress run. With `untracked_items` none is listed."""
    import boto3
    from moto import mock_aws
    from moto.dynamodb.models.dynamo_type import Item

    untracked_items()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.put_item(TableName="t", Item={"pk": {"S": "a"}, "n": {"N": "0"}})
        for _ in range(20):
            client.update_item(TableName="t", Key={"pk": {"S": "a"}}, UpdateExpression="ADD n :one",
                               ExpressionAttributeValues={":one": {"N": "1"}})  # fmt: skip
        assert client.scan(TableName="t")["Items"] == [{"pk": {"S": "a"}, "n": {"N": "20"}}]
        assert Item.instances_tracked == []


def test_the_pinned_moto_is_installed_and_is_a_version_every_patch_was_written_for() -> None:
    requirements = (REPO / "requirements-dev.txt").read_text()
    (pinned,) = re.findall(r"^moto(?:\[[^\]]*\])?==(\S+)$", requirements, flags=re.MULTILINE)
    assert moto.__version__ == pinned
    assert pinned in MOTO_VERSIONS
    assert pinned in KEY_ORDERING_MOTO_VERSIONS
