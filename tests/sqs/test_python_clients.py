"""Python's asynchronous SQS clients, unchanged, against the local server: aiobotocore (in a process of its own, its
botocore older than the project's: `tests/sqs_clients/requirements-aiobotocore.txt`, installed by `make test`) and
dramatiq with dramatiq-sqs (pinned in requirements-dev.txt), its workers, retries and dead-letter queue."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from base64 import b64decode
from pathlib import Path
from typing import Any

import dramatiq
import pytest
from dramatiq import Worker
from dramatiq_sqs import SQSBroker

from dq.local_server import LocalServer
from tests.sqs.conftest import CREDENTIALS

ROOT = Path(__file__).parents[2]
AIOBOTOCORE = ROOT / ".venv" / "aiobotocore"
ENTRY_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")


@pytest.mark.skipif(not (AIOBOTOCORE / "aiobotocore").is_dir(), reason="`make test` installs aiobotocore")
@pytest.mark.parametrize("suffix", ["", ".fifo"])
def test_aiobotocore_sends_receives_and_settles_in_batches_by_message_id(
    server: LocalServer, sqs_admin: Any, suffix: str
) -> None:
    attributes = {"FifoQueue": "true"} if suffix else {}
    url = sqs_admin.create_queue(QueueName=f"aiobotocore{suffix}", Attributes=attributes)["QueueUrl"]
    environment = {
        **os.environ,
        "PYTHONPATH": str(AIOBOTOCORE),
        "SQS_ENDPOINT": server.url,
        "AWS_ACCESS_KEY_ID": CREDENTIALS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": CREDENTIALS["aws_secret_access_key"],
        "AWS_DEFAULT_REGION": CREDENTIALS["region_name"],
    }
    script = ROOT / "tests" / "sqs_clients" / "aiobotocore_client.py"
    done = subprocess.run(
        [sys.executable, str(script), url], env=environment, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    assert len(set(seen["sent"])) == 8 and all(ENTRY_ID.fullmatch(message_id) for message_id in seen["sent"])
    assert sorted(seen["received"]) == sorted(seen["sent"]) and seen["md5_ok"]
    assert seen["bodies"] == sorted([f"single {n}" for n in range(4)] + [f"batch {n}" for n in range(4)])
    assert sorted(seen["changed"]) == sorted(seen["deleted"]) == sorted(seen["sent"])
    assert seen["failed"] == [] and seen["left"] == 0


def test_dramatiq_workers_run_each_task_once_and_dead_letter_what_keeps_failing(
    server: LocalServer, sqs_admin: Any
) -> None:
    """dramatiq-sqs finds the queues it is given (queue administration is the admin endpoint's), sends each task
    base64-encoded, retries a failure as a new message and, once its retries are spent, sends it to `{queue}_dlq`
    and deletes it; `join` waits on the queue's approximate counts."""
    for name in ("dq_tasks", "dq_tasks_dlq"):
        sqs_admin.create_queue(QueueName=name)
    broker = SQSBroker(namespace="dq", dead_letter=True, visibility_timeout=30, endpoint_url=server.url, **CREDENTIALS)
    done: list[int] = []
    attempts: list[str] = []
    lock = threading.Lock()

    @dramatiq.actor(broker=broker, queue_name="tasks", max_retries=0)
    def work(number: int) -> None:
        with lock:
            done.append(number)

    @dramatiq.actor(broker=broker, queue_name="tasks", max_retries=1, min_backoff=10, max_backoff=10)
    def fail(name: str) -> None:
        with lock:
            attempts.append(name)
        raise RuntimeError("cannot do it")

    for number in range(6):
        work.send(number)
    failing = fail.send("poison")
    worker = Worker(broker, worker_threads=2, worker_timeout=1000)
    worker.start()
    try:
        broker.join("tasks", timeout=60)
    finally:
        worker.stop(timeout=10_000)
    assert sorted(done) == list(range(6)) and attempts == ["poison", "poison"]
    sqs = broker.sqs.meta.client
    dead = sqs.receive_message(QueueUrl=sqs.get_queue_url(QueueName="dq_tasks_dlq")["QueueUrl"], MaxNumberOfMessages=10)
    [message] = dead["Messages"]
    assert dramatiq.Message.decode(b64decode(message["Body"])).message_id == failing.message_id
