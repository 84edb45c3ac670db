"""Node's SQS clients, unchanged, against the local server: the AWS SDK for JavaScript v3, sqs-producer and
sqs-consumer (one at a time and in batches, with a heartbeat, into a dead-letter queue after maxReceiveCount, FIFO
groups in order). Pinned in `tests/sqs_clients/package.json` and installed there by `make test` (`npm ci`); the
scenarios are `tests/sqs_clients/clients.mjs`. sqs-consumer's batch mode uses each MessageId as a batch entry id,
which SQS takes only as 1-80 characters of `A-Za-z0-9_-`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dq.local_server import LocalServer
from tests.sqs.conftest import CREDENTIALS

CLIENTS = Path(__file__).parents[1] / "sqs_clients"
ROOT = Path(__file__).parents[2]
ARN = "arn:aws:sqs:us-east-1:000000000000:"
ENTRY_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")

pytestmark = pytest.mark.skipif(
    not (CLIENTS / "node_modules" / "sqs-consumer").is_dir(),
    reason="the Node clients are not installed: `make test` installs them (npm ci in tests/sqs_clients)",
)


def _node() -> str:
    """sqs-consumer 15 asks for Node 22: the one package.json brings for the CDK, else the machine's."""
    pinned = ROOT / "node_modules" / ".bin" / "node"
    return str(pinned) if pinned.exists() else shutil.which("node") or "node"


def _run(server: LocalServer, scenario: str, *urls: str) -> dict[str, Any]:
    environment = {
        **os.environ,
        "SQS_ENDPOINT": server.url,
        "AWS_ACCESS_KEY_ID": CREDENTIALS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": CREDENTIALS["aws_secret_access_key"],
        "AWS_REGION": CREDENTIALS["region_name"],
    }
    done = subprocess.run(
        [_node(), str(CLIENTS / "clients.mjs"), scenario, *urls],
        cwd=CLIENTS,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _queue(sqs_admin: Any, name: str, **attributes: str) -> str:
    if name.endswith(".fifo"):
        attributes = {"FifoQueue": "true", **attributes}
    return sqs_admin.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]


@pytest.mark.parametrize("suffix", ["", ".fifo"])
def test_the_sdk_sends_receives_and_settles_in_batches_by_message_id(
    server: LocalServer, sqs_admin: Any, suffix: str
) -> None:
    url = _queue(sqs_admin, f"node-sdk{suffix}")
    seen = _run(server, "sdk", url)
    assert all(ENTRY_ID.fullmatch(message_id) for message_id in seen["sent"]) and len(set(seen["sent"])) == 4
    assert sorted(message["id"] for message in seen["received"]) == sorted(seen["sent"])
    assert seen["received"][0]["attributes"] == {"kind": {"DataType": "String", "StringValue": "single"}}
    assert sorted(seen["changed"]) == sorted(seen["deleted"]) == sorted(seen["sent"])
    assert seen["changeFailed"] == seen["deleteFailed"] == []


@pytest.mark.parametrize("suffix", ["", ".fifo"])
def test_sqs_producer_batches_and_sqs_consumer_takes_each_message_once_in_both_modes(
    server: LocalServer, sqs_admin: Any, suffix: str
) -> None:
    url = _queue(sqs_admin, f"node-consumer{suffix}")
    seen = _run(server, "produce_and_consume", url)
    assert seen["errors"] == [] and seen["left"] == []
    assert len(seen["sent"]) == 24 and all(ENTRY_ID.fullmatch(entry["messageId"]) for entry in seen["sent"])
    handled = seen["single"] + seen["batched"]
    assert Counter(message["body"] for message in handled) == Counter(f"produced {n}" for n in range(24))
    assert {message["id"] for message in handled} == {entry["messageId"] for entry in seen["sent"]}
    assert seen["single"] and seen["batched"]
    if suffix:
        order: dict[str, list[int]] = {}
        for message in handled:
            number = int(message["body"].split()[-1])
            order.setdefault(f"group-{number % 3}", []).append(number)
        assert all(numbers == sorted(numbers) for numbers in order.values()), order


def test_sqs_consumers_heartbeat_keeps_a_slow_message_hidden_in_both_modes(server: LocalServer, sqs_admin: Any) -> None:
    seen = _run(server, "heartbeat", _queue(sqs_admin, "node-heartbeat"), _queue(sqs_admin, "node-heartbeat-batch"))
    assert seen["seen"] == ["slow batch", "slow single"]
    assert seen["meanwhile"] == [] and seen["errors"] == [] and seen["left"] == []


@pytest.mark.parametrize("suffix", ["", ".fifo"])
def test_a_message_that_keeps_failing_reaches_the_dead_letter_queue_with_its_id(
    server: LocalServer, sqs_admin: Any, suffix: str
) -> None:
    dlq = _queue(sqs_admin, f"node-dead{suffix}")
    policy = json.dumps({"deadLetterTargetArn": f"{ARN}node-dead{suffix}", "maxReceiveCount": 2})
    url = _queue(sqs_admin, f"node-poison{suffix}", RedrivePolicy=policy)
    seen = _run(server, "dead_letter", url, dlq)
    assert seen["attempts"] == [{"id": seen["sent"], "count": "1"}, {"id": seen["sent"], "count": "2"}]
    assert seen["errors"] == 2 and seen["left"] == []
    assert seen["dead"] == [{"id": seen["sent"], "body": "poison", "count": "2"}]
