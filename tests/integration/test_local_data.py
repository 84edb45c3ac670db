"""`dq local` keeps its data across restarts: what was acknowledged before a stop, or before the process was
killed, is there after the next start on the same folder.

Each server runs in a process of its own, as `dq local` does: moto's state is one per process (`dq.data_dir`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.error import HTTPError

import pytest

from bench.messages import random_bytes
from dq import journal, local_server
from dq.data_dir import DataDir, DataDirError
from dq.local_server import LocalServerError, data_folder

REPO = Path(__file__).resolve().parents[2]


def environment() -> dict[str, str]:
    """This environment without AWS or dq settings, with the project importable from anywhere."""
    kept = {name: value for name, value in os.environ.items() if not name.startswith(("AWS_", "DQ_"))}
    return kept | {"PYTHONPATH": os.pathsep.join([str(REPO / "layers/queue_core/python"), str(REPO)])}


@dataclass
class Local:
    """A `dq local` process on free ports, its address and its banner."""

    process: subprocess.Popen[str]
    url: str
    banner: str

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def stop(self) -> str:
        """Ctrl-C, as a user stops it; what it printed after its banner."""
        self.process.send_signal(signal.SIGINT)
        output, _ = self.process.communicate(timeout=30)
        assert self.process.returncode == 0, output
        return output


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def dq_local(data: Path) -> Iterator[Local]:
    """`dq local --data-dir data` until the block ends, then killed unless the block stopped it."""
    port, dynamodb_port = free_port(), free_port()
    command = [sys.executable, "-c", "from dq.cli import main; main()", "local", "--port", str(port)]
    command += ["--dynamodb-port", str(dynamodb_port), "--sweep-interval", "0", "--data-dir", str(data)]
    process = subprocess.Popen(
        command, cwd=data.parent, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert process.stdout is not None
        banner = ""
        while "Ctrl-C stops." not in banner:
            line = process.stdout.readline()
            assert line, f"dq local did not start:\n{banner}"
            banner += line
        yield Local(process, f"http://127.0.0.1:{port}", banner)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_restart_after_ctrl_c_and_after_a_kill_finds_the_queue_its_messages_and_their_state(tmp_path: Path) -> None:
    """A Ctrl-C, then a kill right after an acknowledged send that leaves half a record at the end of the
    journal: each next start finds the queue, every acknowledged message with its body (in the item, compressed,
    in S3), the one in flight still in flight, and receipt handles from before that still work."""
    data = tmp_path / "data"
    offloaded, compressed = random_bytes(200_000), "the same line again\n" * 20_000
    with dq_local(data) as first:
        assert f"Data: kept in {data} across restarts (new)" in first.banner
        assert first.call("PUT", "/queues/orders", {"visibility_timeout": 300})[0] == 201
        messages = [{"body": body} for body in ("small", offloaded, compressed)]
        status, sent = first.call("POST", "/queues/orders/clients/c1/messages", {"messages": messages})
        assert status == 200 and sent["failed"] == []
        ids = [entry["message_id"] for entry in sent["successful"]]
        [taken] = first.call("POST", "/queues/orders/clients/c1/receive", {"max_messages": 1})[1]["messages"]
        stored = {i: first.call("GET", f"/queues/orders/clients/c1/messages/{i}")[1]["body_stored"] for i in ids}
        assert sorted(stored.values()) == ["compressed", "item", "s3"]
        assert "stopping\n" in first.stop()

    with dq_local(data) as second:
        assert "(found 1 table of " in second.banner and "1 object in S3)" in second.banner
        status, acked = second.call("POST", "/queues/orders/clients/c1/messages", {"body": "acknowledged"})
        assert status == 200
        second.process.kill()
        second.process.wait()
    [current] = [path for path in data.iterdir() if path.name.startswith("journal-")]
    whole = journal.encode({"service": "dynamodb", "region": "us-east-1", "environ": {}, "body": ""})
    with current.open("ab") as file:
        file.write(whole[: len(whole) // 2])

    with dq_local(data) as third:
        assert f"dropped an unfinished last write ({len(whole) // 2} bytes)" in third.banner
        stats = third.call("GET", "/queues/orders/clients/c1/stats")[1]
        assert (stats["visible"], stats["in_flight"]) == (3, 1)
        kept = third.call("GET", f"/queues/orders/clients/c1/messages/{taken['message_id']}")[1]
        assert (kept["state"], kept["receive_count"], kept["body"]) == ("in_flight", 1, taken["body"])
        received = third.call("POST", "/queues/orders/clients/c1/receive", {"max_messages": 10})[1]["messages"]
        assert sorted([taken["message_id"], *(message["message_id"] for message in received)]) == sorted(
            [*ids, acked["message_id"]]
        )
        assert sorted([taken["body"], *(message["body"] for message in received)]) == sorted(
            ["small", offloaded, compressed, "acknowledged"]
        )
        handles = [message["receipt_handle"] for message in [taken, *received]]
        status, deleted = third.call("POST", "/queues/orders/clients/c1/delete", {"receipt_handles": handles})
        assert status == 200 and deleted["failed"] == [], "a receipt handle from before the restarts still deletes"


# The embedded DynamoDB alone on a data folder, in a process of its own: it prints its endpoint, then serves.
EMBEDDED = """
import sys
import dq.data_dir
from dq.embedded_dynamodb import EmbeddedDynamoDB
dq.data_dir.COMPACT_BYTES = 4096
print(EmbeddedDynamoDB(store=dq.data_dir.DataDir(sys.argv[1]).open()).start(), flush=True)
sys.stdin.read()
"""


@contextmanager
def embedded(data: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The embedded DynamoDB on `data` and its endpoint; the process is killed when the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-c", EMBEDDED, str(data)], env=environment(), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        endpoint = process.stdout.readline().decode().strip()
        assert endpoint.startswith("http://"), "the embedded DynamoDB did not start"
        yield process, endpoint
    finally:
        process.kill()
        process.wait()


def aws(service: str, endpoint: str, region: str = "us-east-1") -> Any:
    """A boto3 client of the embedded moto, which fails at once rather than retrying."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(retries={"max_attempts": 1}),
    )


def test_racing_conditional_writes_come_back_as_they_were_applied_after_a_kill(tmp_path: Path) -> None:
    """Threads race compare-and-set writes (updates and transactions) on one counter, and the journal is folded
    into snapshots as they go: after a kill, the counter holds exactly the acknowledged increments. A journal
    in another order than moto applied them would fail their conditions on replay and count fewer."""
    data = tmp_path / "data"
    threads, increments = 4, 8
    with embedded(data) as (process, endpoint):
        client = aws("dynamodb", endpoint)
        client.create_table(
            TableName="counts",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.put_item(TableName="counts", Item={"pk": {"S": "counter"}, "n": {"N": "0"}})

        def increment(worker: int) -> int:
            done = 0
            while done < increments:
                seen = client.get_item(TableName="counts", Key={"pk": {"S": "counter"}})["Item"]["n"]
                change = {
                    "TableName": "counts",
                    "Key": {"pk": {"S": "counter"}},
                    "UpdateExpression": "SET n = n + :one",
                    "ConditionExpression": "n = :seen",
                    "ExpressionAttributeValues": {":one": {"N": "1"}, ":seen": seen},
                }
                try:
                    if worker % 2:
                        client.transact_write_items(TransactItems=[{"Update": change}])
                    else:
                        client.update_item(**change)
                except (
                    client.exceptions.ConditionalCheckFailedException,
                    client.exceptions.TransactionCanceledException,
                ):
                    continue
                done += 1
            return done

        with ThreadPoolExecutor(threads) as pool:
            acknowledged = sum(pool.map(increment, range(threads)))
        process.kill()
    assert acknowledged == threads * increments
    [current] = [path.name for path in data.iterdir() if path.name.startswith("journal-")]
    assert int(current.removeprefix("journal-")) > 2, "the journal was folded into snapshots while serving"
    with embedded(data) as (_, endpoint):
        counter = aws("dynamodb", endpoint).get_item(TableName="counts", Key={"pk": {"S": "counter"}})["Item"]
    assert counter["n"] == {"N": str(acknowledged)}


def test_a_snapshot_rebuilds_tables_every_attribute_type_buckets_and_objects_as_they_were(tmp_path: Path) -> None:
    """The state after two restarts, the second from a snapshot alone, is the state before: a table's indexes,
    throughput, stream, TTL and tags, every attribute type, a bucket's region, an object's key, content headers
    and metadata."""
    data = tmp_path / "data"
    item = {
        "pk": {"S": "a"},
        "sk": {"S": "1"},
        "g": {"S": "x"},
        "b": {"B": b"\x00\xff"},
        "bs": {"BS": [b"\x01", b"\x02"]},
        "ns": {"NS": ["1", "2.5"]},
        "ss": {"SS": ["s"]},
        "m": {"M": {"n": {"N": "1.5"}, "l": {"L": [{"S": "q"}, {"B": b"\x03"}, {"NULL": True}, {"BOOL": False}]}}},
    }
    key = "dir/a b+c%d ✓.txt"

    def state(endpoint: str) -> dict[str, Any]:
        dynamodb, s3 = aws("dynamodb", endpoint, "eu-west-1"), aws("s3", endpoint, "eu-west-1")
        table = dynamodb.describe_table(TableName="t")["Table"]
        stored = s3.get_object(Bucket="eu-bucket", Key=key)
        fields = ("KeySchema", "GlobalSecondaryIndexes", "LocalSecondaryIndexes", "StreamSpecification")
        return {
            "table": {name: table.get(name) for name in fields},
            "throughput": [table["ProvisionedThroughput"][f"{kind}CapacityUnits"] for kind in ("Read", "Write")],
            "ttl": dynamodb.describe_time_to_live(TableName="t")["TimeToLiveDescription"],
            "tags": dynamodb.list_tags_of_resource(ResourceArn=table["TableArn"])["Tags"],
            "items": dynamodb.scan(TableName="t")["Items"],
            "region": s3.get_bucket_location(Bucket="eu-bucket")["LocationConstraint"],
            "object": [stored["Body"].read(), stored["ContentType"], stored["ContentEncoding"], stored["Metadata"]],
            "keys": [entry["Key"] for entry in s3.list_objects_v2(Bucket="eu-bucket")["Contents"]],
        }

    with embedded(data) as (process, endpoint):
        dynamodb, s3 = aws("dynamodb", endpoint, "eu-west-1"), aws("s3", endpoint, "eu-west-1")
        dynamodb.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk", "g", "l")],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "by-g",
                    "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                    "ProvisionedThroughput": {"ReadCapacityUnits": 3, "WriteCapacityUnits": 4},
                }
            ],
            LocalSecondaryIndexes=[
                {
                    "IndexName": "by-l",
                    "KeySchema": [
                        {"AttributeName": "pk", "KeyType": "HASH"},
                        {"AttributeName": "l", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
            ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 6},
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
            Tags=[{"Key": "k", "Value": "v"}],
        )
        dynamodb.update_time_to_live(TableName="t", TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"})
        dynamodb.put_item(TableName="t", Item=item)
        dynamodb.put_item(TableName="t", Item={"pk": {"S": "a"}, "sk": {"S": "2"}})
        dynamodb.delete_item(TableName="t", Key={"pk": {"S": "a"}, "sk": {"S": "2"}})
        s3.create_bucket(Bucket="eu-bucket", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        s3.put_object(
            Bucket="eu-bucket",
            Key=key,
            Body=b"hello",
            ContentType="text/plain",
            ContentEncoding="gzip",
            Metadata={"my_key": "1", "other": "2"},
        )
        s3.put_object(Bucket="eu-bucket", Key="gone", Body=b"x")
        s3.delete_objects(Bucket="eu-bucket", Delete={"Objects": [{"Key": "gone"}]})
        before = state(endpoint)
        process.kill()
    with embedded(data):
        pass
    with embedded(data) as (_, endpoint):
        assert state(endpoint) == before
    assert before["object"] == [b"hello", "text/plain", "gzip", {"my_key": "1", "other": "2"}]
    assert before["keys"] == [key] and before["region"] == "eu-west-1" and len(before["items"]) == 1


def test_a_second_server_refuses_a_folder_in_use_in_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    held = DataDir(data).open()
    try:
        with pytest.raises(DataDirError, match=f"in use by another dq local \\(pid {os.getpid()}\\)"):
            DataDir(data).open()
        command = [sys.executable, "-c", "from dq.cli import main; main()", "local", "--port", str(free_port())]
        command += ["--dynamodb-port", str(free_port()), "--data-dir", str(data)]
        refused = subprocess.run(command, cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=60)
    finally:
        held.close()
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1 and f"{data} is in use by another dq local" in refused.stderr


def test_reset_empties_the_folder_and_a_folder_of_other_files_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    DataDir(data).open().close()
    for name in ("snapshot", "journal-7"):
        (data / name).write_bytes(b"kept")
    DataDir(data).open(reset=True).close()
    assert sorted(path.name for path in data.iterdir()) == [".gitignore", "lock"]
    assert (data / ".gitignore").read_text().splitlines()[-1] == "*"
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(DataDirError, match="holds other files and no data of dq local"):
        DataDir(tmp_path).open(reset=True)
    assert (tmp_path / "notes.txt").exists()


def test_a_torn_or_damaged_last_record_is_dropped_and_the_whole_ones_before_it_kept(tmp_path: Path) -> None:
    path = tmp_path / "journal-1"
    kept = journal.Journal(path)
    for number in range(3):
        kept.sync(kept.append({"number": number}))
    kept.retire()
    whole = path.read_bytes()
    last = journal.encode({"number": 3})
    path.write_bytes(whole + last[:-1])
    assert journal.read(path) == journal.Contents([{"number": n} for n in range(3)], len(last) - 1)
    path.write_bytes(whole + last[:-1] + b"?")  # whole in length, but not what its checksum says
    assert journal.read(path) == journal.Contents([{"number": n} for n in range(3)], len(last))
    assert journal.read(tmp_path / "missing") == journal.Contents([], 0)


def test_the_data_folder_is_the_working_directorys_unless_told_and_none_for_a_dynamodb_of_ones_own() -> None:
    assert data_folder(None, None, False, False) == Path(local_server.DEFAULT_DATA_DIR) == Path(".dq-local")
    assert data_folder(None, "elsewhere", False, True) == Path("elsewhere")
    assert data_folder(None, None, True, False) is None
    assert data_folder("http://localhost:8000", None, False, False) is None
    with pytest.raises(LocalServerError, match="for the embedded DynamoDB"):
        data_folder("http://localhost:8000", "elsewhere", False, False)
    with pytest.raises(LocalServerError, match="--in-memory keeps nothing"):
        data_folder(None, None, True, True)
