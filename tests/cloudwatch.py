"""CloudWatch for tests that read what the functions publish: moto's threaded server on a free port, and the
sweeper's own EMF records turned into metric data as CloudWatch Logs does with them.

moto's in-process mock is not used here: starting it resets every moto backend of the process, the local server's
embedded DynamoDB included.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import boto3
from moto.server import ThreadedMotoServer
from queue_api import visibility_sweeper

REGION = "us-east-1"
FAKE_KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@contextlib.contextmanager
def moto_cloudwatch() -> Iterator[str]:
    """moto's server on 127.0.0.1 (a free port) for the test's CloudWatch calls; its endpoint URL."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def cloudwatch_client(endpoint: str) -> Any:
    return boto3.client("cloudwatch", region_name=REGION, endpoint_url=endpoint, **FAKE_KEYS)


def emf_records(depths: Sequence[Mapping[str, Any]], shards: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """The EMF records the visibility sweeper writes for these depths and shard counts (its own code)."""
    written = io.StringIO()
    with contextlib.redirect_stdout(written):
        visibility_sweeper.publish_depths(depths)
        visibility_sweeper.publish_shards(shards)
    return [json.loads(line) for line in written.getvalue().splitlines() if line.startswith("{")]


def put_emf(cloudwatch: Any, records: Sequence[Mapping[str, Any]], at: float, namespace: str | None = None) -> None:
    """Each record's metrics as CloudWatch extracts them from a log line, stamped `at` (epoch seconds), in
    `namespace` (the stack's) when given."""
    for record in records:
        for directive in record["_aws"]["CloudWatchMetrics"]:
            dimensions = [
                {"Name": name, "Value": str(record[name])} for group in directive["Dimensions"] for name in group
            ]
            data = [
                {
                    "MetricName": metric["Name"],
                    "Dimensions": dimensions,
                    "Value": float(record[metric["Name"]][0]),
                    "Unit": metric["Unit"],
                    "Timestamp": datetime.fromtimestamp(at, UTC),
                }
                for metric in directive["Metrics"]
            ]
            cloudwatch.put_metric_data(Namespace=namespace or directive["Namespace"], MetricData=data)
