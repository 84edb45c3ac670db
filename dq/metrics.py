"""What a deployed stack's functions publish to CloudWatch, read back for `dq metrics` and the console's charts.

The visibility sweeper publishes, through EMF in the stack's namespace, each sub-queue's depths (dimensions
`queue` and `client`) and each queue's `Shards` (dimension `queue`). This module reads those series with
GetMetricData, bounded: one window (at most a day), one period (a minute or more), the Maximum of each period, and
at most `MAX_CLIENTS` clients summed for a queue, in requests of at most `QUERIES_PER_REQUEST` metrics. It never
lists the whole namespace and never writes.

Only a deployed stack publishes: the local server has no CloudWatch. A reader is made from the same endpoint `dq`
talks to (its region is the execute-api host's, else the profile's), with the caller's own credentials; when they
cannot read CloudWatch the failure is a `MetricsUnavailable`, which the console shows instead of the series.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import urlsplit

from . import signing
from .targets import TargetError

Json = dict[str, Any]

DEFAULT_NAMESPACE: Final = "DynamoQueue"
# Figure key (as in the API's stats) -> the metric the sweeper publishes for it per (queue, client).
DEPTH_METRICS: Final = (
    ("visible", "VisibleMessages"),
    ("in_flight", "InFlightMessages"),
    ("delayed", "DelayedMessages"),
    ("dlq", "DlqDepth"),
    ("oldest_age_seconds", "OldestMessageAgeSeconds"),
)
SHARDS_METRIC: Final = "Shards"
# Depths are gauges sampled at each sweep: the most seen in a period is what an operator looks for.
STATISTIC: Final = "Maximum"
# A queue's series are its clients' summed (oldest age: their maximum), for this many clients at most.
MAX_CLIENTS: Final = 20
QUERIES_PER_REQUEST: Final = 50
MIN_MINUTES, MAX_MINUTES, DEFAULT_MINUTES = 5, 1440, 60
MIN_PERIOD, MAX_PERIOD, DEFAULT_PERIOD = 60, 3600, 60
LOCAL_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1"})
# Errors that mean "these credentials may not read CloudWatch here", not "the request was wrong".
_DENIED: Final = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "ExpiredToken",
        "ExpiredTokenException",
        "SignatureDoesNotMatch",
    }
)


class MetricsUnavailable(TargetError):
    """CloudWatch cannot be read for this target: the local server, no credentials, no permission, no network.
    The message says which, in one line; `dq` reports it as any refused request, the console as its fallback."""


@dataclass(frozen=True)
class Window:
    """`minutes` back from now, in periods of `period` seconds; both bounded so one read stays small."""

    minutes: int = DEFAULT_MINUTES
    period: int = DEFAULT_PERIOD

    def __post_init__(self) -> None:
        if not MIN_MINUTES <= self.minutes <= MAX_MINUTES:
            raise TargetError("ValidationError", f"minutes must be from {MIN_MINUTES} to {MAX_MINUTES}")
        if not MIN_PERIOD <= self.period <= MAX_PERIOD or self.period % 60:
            raise TargetError("ValidationError", f"period must be a multiple of 60 from {MIN_PERIOD} to {MAX_PERIOD}")

    def bounds(self, now: float) -> tuple[datetime, datetime]:
        """Aligned on the period, so each point stands for one whole period and the series of many clients add."""
        end = math.ceil(now / self.period) * self.period
        start = end - self.minutes * 60
        return datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC)


class MetricsReader:
    """Reads one queue's or one sub-queue's published series from `cloudwatch` (a boto3 CloudWatch client)."""

    def __init__(self, cloudwatch: Any, namespace: str = DEFAULT_NAMESPACE, region: str | None = None) -> None:
        self._cloudwatch = cloudwatch
        self.namespace = namespace
        self.region = region or getattr(getattr(cloudwatch, "meta", None), "region_name", None)

    def read(
        self, queue: str, client: str | None = None, window: Window | None = None, now: float | None = None
    ) -> Json:
        """The series of `queue`/`client`, or of `queue` (its clients' depths summed, their oldest age the maximum,
        and its `Shards`): `{"series": {key: [[epoch_seconds, value], ...]}, ...}`, oldest point first.
        Costs one GetMetricData for a client; for a queue one ListMetrics and one GetMetricData per
        `QUERIES_PER_REQUEST` metrics."""
        window = window or Window()
        start, end = window.bounds(time.time() if now is None else now)
        answer: Json = {
            "source": "cloudwatch",
            "namespace": self.namespace,
            "region": self.region,
            "statistic": STATISTIC,
            "period": window.period,
            "start": int(start.timestamp()),
            "end": int(end.timestamp()),
            "queue": queue,
        }
        if client is not None:
            dimensions = {"queue": queue, "client": client}
            found = self._get([(key, name, dimensions) for key, name in DEPTH_METRICS], start, end, window.period)
            answer.update(client=client, series={key: found.get(key, []) for key, _ in DEPTH_METRICS})
            return answer
        clients, more = self._clients(queue)
        queries: list[tuple[str, str, Mapping[str, str]]] = [("shards", SHARDS_METRIC, {"queue": queue})]
        for n, one in enumerate(clients):
            dimensions = {"queue": queue, "client": one}
            queries.extend((f"{key}.{n}", name, dimensions) for key, name in DEPTH_METRICS)
        found = self._get(queries, start, end, window.period)
        series = {
            key: _combine([found.get(f"{key}.{n}", []) for n in range(len(clients))], key == "oldest_age_seconds")
            for key, _ in DEPTH_METRICS
        }
        series["shards"] = found.get("shards", [])
        answer.update(series=series, clients=clients, more_clients=more)
        return answer

    def _clients(self, queue: str) -> tuple[list[str], bool]:
        """The clients CloudWatch holds depths of for `queue` (one ListMetrics page), the first `MAX_CLIENTS` by
        name, and whether there were more."""
        page = self._call(
            "list_metrics",
            Namespace=self.namespace,
            MetricName=DEPTH_METRICS[0][1],
            Dimensions=[{"Name": "queue", "Value": queue}],
        )
        names = set()
        for metric in page.get("Metrics", []):
            dimensions = {d["Name"]: d.get("Value") for d in metric.get("Dimensions", [])}
            if dimensions.get("queue") == queue and dimensions.get("client") and len(dimensions) == 2:
                names.add(str(dimensions["client"]))
        ordered = sorted(names)
        return ordered[:MAX_CLIENTS], len(ordered) > MAX_CLIENTS or bool(page.get("NextToken"))

    def _get(
        self, queries: Sequence[tuple[str, str, Mapping[str, str]]], start: datetime, end: datetime, period: int
    ) -> dict[str, list[list[float]]]:
        """Each query's points by its key, in requests of at most `QUERIES_PER_REQUEST` metrics."""
        found: dict[str, list[list[float]]] = {}
        for first in range(0, len(queries), QUERIES_PER_REQUEST):
            chunk = queries[first : first + QUERIES_PER_REQUEST]
            ids = {f"m{n}": key for n, (key, _, _) in enumerate(chunk)}
            request = [
                {
                    "Id": f"m{n}",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": self.namespace,
                            "MetricName": name,
                            "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()],
                        },
                        "Period": period,
                        "Stat": STATISTIC,
                    },
                    "ReturnData": True,
                }
                for n, (_, name, dimensions) in enumerate(chunk)
            ]
            token: str | None = None
            for _ in range(len(chunk) + 1):  # a page holds at least one whole series of this bounded window
                more = {"NextToken": token} if token else {}
                page = self._call(
                    "get_metric_data",
                    MetricDataQueries=request,
                    StartTime=start,
                    EndTime=end,
                    ScanBy="TimestampAscending",
                    **more,
                )
                for result in page.get("MetricDataResults", []):
                    points = found.setdefault(ids[result["Id"]], [])
                    points.extend(
                        [_epoch(stamp), float(value)]
                        for stamp, value in zip(result.get("Timestamps", []), result.get("Values", []), strict=False)
                    )
                token = page.get("NextToken")
                if not token:
                    break
        return {key: sorted(points) for key, points in found.items()}

    def _call(self, operation: str, **request: Any) -> Json:
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        try:
            answer: Json = getattr(self._cloudwatch, operation)(**request)
        except NoCredentialsError:
            raise MetricsUnavailable("NoCredentials", "no AWS credentials to read CloudWatch") from None
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", "ClientError"))
            message = str(error.response.get("Error", {}).get("Message", error))
            if code in _DENIED:
                raise MetricsUnavailable(code, f"these credentials cannot read CloudWatch: {message}") from None
            raise MetricsUnavailable(code, message) from None
        except BotoCoreError as error:
            raise MetricsUnavailable("ConnectionError", f"cannot read CloudWatch: {error}") from None
        return answer


def _epoch(stamp: Any) -> float:
    return float(stamp.timestamp()) if isinstance(stamp, datetime) else float(stamp)


def _combine(series: Sequence[Sequence[Sequence[float]]], maximum: bool) -> list[list[float]]:
    """One series of many clients' at the same aligned times: their sum, or with `maximum` their largest."""
    combined: dict[float, float] = {}
    for points in series:
        for stamp, value in points:
            if stamp in combined:
                combined[stamp] = max(combined[stamp], value) if maximum else combined[stamp] + value
            else:
                combined[stamp] = value
    return [[stamp, value] for stamp, value in sorted(combined.items())]


def region_for(endpoint: str) -> str | None:
    """The region of a deployed API's endpoint (its execute-api host), or None for the local server."""
    return signing.execute_api_region(urlsplit(endpoint).hostname)


def reader_for(endpoint: str, namespace: str = DEFAULT_NAMESPACE, region: str | None = None) -> MetricsReader:
    """A reader for the stack behind `endpoint`, with the caller's credentials as the AWS CLI finds them; the
    region is `region`, else the execute-api host's, else the profile's. Raises `MetricsUnavailable` for the
    local server, which publishes no metric."""
    import boto3
    from botocore.exceptions import BotoCoreError

    host = (urlsplit(endpoint).hostname or "").lower()
    if host in LOCAL_HOSTS:
        raise MetricsUnavailable(
            "NoMetrics", f"{endpoint.rstrip('/')} is the local server, which publishes no CloudWatch metric"
        )
    try:  # a missing profile or a malformed region fails here, before any request
        session = boto3.session.Session()
        chosen = region or region_for(endpoint) or session.region_name
        if not chosen:
            raise MetricsUnavailable("NoRegion", "no region for CloudWatch: give --region or set AWS_REGION")
        return MetricsReader(session.client("cloudwatch", region_name=chosen), namespace, chosen)
    except BotoCoreError as error:
        raise MetricsUnavailable("NoClient", f"cannot read CloudWatch: {error}") from None
