"""`dq metrics`: what a deployed stack's sweeper published to CloudWatch, read back bounded, for a sub-queue and
for a queue (its clients summed, with its shard count); refused plainly for the local server and when the
credentials may not read CloudWatch. CloudWatch is moto's server; the published data is the sweeper's own EMF."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.stub import Stubber
from queue_api import visibility_sweeper
from typer.testing import CliRunner

from dq import metrics
from dq.cli import app
from dq.metrics import MetricsReader, MetricsUnavailable, Window
from dq.targets import TargetError
from tests.cloudwatch import FAKE_KEYS, cloudwatch_client, emf_records, moto_cloudwatch, put_emf

API = "https://abc123def4.execute-api.us-east-1.amazonaws.com/prod"


@pytest.fixture(scope="module")
def cloudwatch() -> Iterator[tuple[str, Any]]:
    with moto_cloudwatch() as endpoint:
        yield endpoint, cloudwatch_client(endpoint)


def publish(cloudwatch: Any, queue: str, minutes_ago: int, namespace: str | None = None, **clients: dict) -> None:
    depths = [{"queue": queue, "client": client, **figures} for client, figures in clients.items()]
    shards = [{"queue": queue, "shards": len(clients)}]
    put_emf(cloudwatch, emf_records(depths, shards), time.time() - minutes_ago * 60, namespace)


def figures(visible: int, in_flight: int = 0, delayed: int = 0, dlq: int = 0, oldest: float = 0) -> dict:
    return {"visible": visible, "in_flight": in_flight, "delayed": delayed, "dlq": dlq, "oldest_age_seconds": oldest}


def values(answer: dict, key: str) -> list[float]:
    return [value for _, value in answer["series"][key]]


def test_the_reader_names_the_metrics_the_sweeper_publishes() -> None:
    assert [name for _, name in metrics.DEPTH_METRICS] == [
        name for key, name, _ in visibility_sweeper.DEPTH_METRICS if key != "stuck"
    ]
    assert metrics.SHARDS_METRIC == visibility_sweeper.SHARDS_METRIC


def test_a_sub_queues_series_are_what_its_sweeps_published(cloudwatch: tuple[str, Any]) -> None:
    _, client = cloudwatch
    for minutes_ago, visible in ((9, 3), (6, 8), (2, 5)):
        publish(client, "orders", minutes_ago, a=figures(visible, in_flight=1, oldest=visible * 10))
    publish(client, "orders-other", 2, a=figures(99))
    answer = MetricsReader(client).read("orders", "a", Window(minutes=15))
    assert values(answer, "visible") == [3, 8, 5]
    assert values(answer, "in_flight") == [1, 1, 1]
    assert values(answer, "oldest_age_seconds") == [30, 80, 50]
    stamps = [stamp for stamp, _ in answer["series"]["visible"]]
    assert stamps == sorted(stamps) and all(stamp % 60 == 0 for stamp in stamps)
    assert answer["end"] - answer["start"] == 15 * 60 and answer["end"] >= time.time()
    assert (answer["source"], answer["statistic"], answer["period"]) == ("cloudwatch", "Maximum", 60)


def test_a_queues_series_sum_its_clients_with_the_oldest_age_their_largest(cloudwatch: tuple[str, Any]) -> None:
    _, client = cloudwatch
    publish(client, "billing", 4, a=figures(2, dlq=1, oldest=40), b=figures(5, delayed=3, oldest=90))
    publish(client, "billing", 1, a=figures(1, oldest=20), b=figures(0, oldest=0), c=figures(7, oldest=5))
    answer = MetricsReader(client).read("billing", window=Window(minutes=10))
    assert answer["clients"] == ["a", "b", "c"] and answer["more_clients"] is False
    assert values(answer, "visible") == [7, 8]
    assert values(answer, "delayed") == [3, 0]
    assert values(answer, "dlq") == [1, 0]
    assert values(answer, "oldest_age_seconds") == [90, 20]
    assert values(answer, "shards") == [2, 3]


def test_a_queue_sums_at_most_max_clients_and_says_there_were_more(cloudwatch: tuple[str, Any]) -> None:
    _, client = cloudwatch
    many = {f"c{n:02d}": figures(1) for n in range(metrics.MAX_CLIENTS + 2)}
    publish(client, "crowded", 1, **many)
    answer = MetricsReader(client).read("crowded", window=Window(minutes=5))
    assert len(answer["clients"]) == metrics.MAX_CLIENTS and answer["more_clients"] is True
    assert values(answer, "visible") == [metrics.MAX_CLIENTS]


def test_the_stacks_own_namespace_is_read_when_named(cloudwatch: tuple[str, Any]) -> None:
    _, client = cloudwatch
    publish(client, "named", 1, "Shop/Queue", a=figures(4))
    assert values(MetricsReader(client).read("named", window=Window(minutes=5)), "visible") == []
    assert values(MetricsReader(client, "Shop/Queue").read("named", window=Window(minutes=5)), "visible") == [4]


def test_credentials_that_may_not_read_cloudwatch_are_a_metrics_unavailable() -> None:
    client = cloudwatch_client("http://127.0.0.1:9")
    with Stubber(client) as stub:
        stub.add_client_error(
            "get_metric_data",
            service_error_code="AccessDenied",
            service_message="User: arn:aws:iam::123456789012:user/ops is not authorized to perform: "
            "cloudwatch:GetMetricData",
            http_status_code=403,
        )
        with pytest.raises(MetricsUnavailable) as refused:
            MetricsReader(client).read("orders", "a")
    assert refused.value.code == "AccessDenied"
    assert "cannot read CloudWatch" in refused.value.message and "GetMetricData" in refused.value.message


def test_a_window_out_of_bounds_is_refused_before_any_call() -> None:
    for minutes, period in ((4, 60), (1441, 60), (60, 30), (60, 90)):
        with pytest.raises(TargetError, match="ValidationError"):
            Window(minutes, period)


def _dq(*args: str, cloudwatch_endpoint: str) -> Any:
    env = {"AWS_ENDPOINT_URL_CLOUDWATCH": cloudwatch_endpoint, "DQ_ENDPOINT": None, "DQ_TABLE": None}
    env |= {"AWS_ACCESS_KEY_ID": FAKE_KEYS["aws_access_key_id"], "AWS_SECRET_ACCESS_KEY": "testing"}
    env |= {"AWS_PROFILE": None, "AWS_REGION": None, "AWS_DEFAULT_REGION": None}
    return CliRunner().invoke(app, list(args), env=env)


def test_dq_metrics_reads_a_deployed_stacks_series_in_the_api_hosts_region(cloudwatch: tuple[str, Any]) -> None:
    endpoint, client = cloudwatch
    publish(client, "cli-q", 3, a=figures(6, in_flight=2, oldest=120))
    result = _dq(
        "--endpoint",
        API,
        "metrics",
        "-q",
        "cli-q",
        "-c",
        "a",
        "--minutes",
        "10",
        "--json",
        cloudwatch_endpoint=endpoint,
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert (answer["region"], values(answer, "visible"), values(answer, "in_flight")) == ("us-east-1", [6], [2])
    shown = _dq("--endpoint", API, "metrics", "-q", "cli-q", "--minutes", "10", cloudwatch_endpoint=endpoint)
    assert shown.exit_code == 0, shown.output
    assert "cli-q: Maximum per 1 min from CloudWatch (DynamoQueue)" in shown.stdout
    row = [line.split() for line in shown.stdout.splitlines() if line.strip()[:2].isdigit()]
    assert [cells[1:] for cells in row] == [["6", "2", "0", "0", "2", "min", "1"]]


def test_dq_metrics_says_the_local_server_publishes_none() -> None:
    result = _dq("--endpoint", "http://127.0.0.1:8080", "metrics", "-q", "orders", cloudwatch_endpoint="http://x")
    assert result.exit_code == 1
    assert "NoMetrics" in result.stderr and "publishes no CloudWatch metric" in result.stderr
    bad = _dq("--endpoint", API, "metrics", "-q", "orders", "--minutes", "2", cloudwatch_endpoint="http://x")
    assert bad.exit_code == 2


def test_a_profile_that_does_not_exist_or_a_malformed_region_is_a_clear_error() -> None:
    for args, env, words in (
        ((), {"AWS_PROFILE": "no-such-profile"}, "no-such-profile"),
        (("--region", "not/a/region"), {}, "not/a/region"),
    ):
        result = CliRunner().invoke(
            app,
            ["--endpoint", API, "metrics", "-q", "orders", *args],
            env={"DQ_ENDPOINT": None, "DQ_TABLE": None, "AWS_PROFILE": None, **env},
        )
        assert result.exit_code == 1, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        assert "NoClient: cannot read CloudWatch" in result.stderr and words in result.stderr
