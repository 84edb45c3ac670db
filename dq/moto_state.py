"""The embedded moto's state as requests: the ones that change it, recorded as they arrive, and the ones that
rebuild it from scratch.

A recorded request is the WSGI environment moto's server gave the request (its method, path, query and headers)
with its body, so that replaying it into another moto is the same request to moto. Credentials are not kept:
the signature's access key and any session token are dropped, and a replay is signed with a placeholder in the
recorded region and service (moto checks no signature; it reads the region and service from the credential
scope). Only DynamoDB and S3 requests are kept, the two services the local server uses.

`state_records` answers moto's state as the requests that recreate it: each table (keys, indexes, billing,
stream, TTL, tags) and its items, each bucket and its objects (with their content type and metadata). It reads
through moto's API, except the items, read from moto's tables (`table_items`). A snapshot made of these requests
does not depend on the moto version that wrote it.
"""

from __future__ import annotations

import base64
import io
import json
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote, urlencode

App = Callable[..., Any]

DYNAMODB_TARGET: Final = "DynamoDB_20120810."
# DynamoDB actions that change nothing; every other action is recorded (a PartiQL statement may write).
DYNAMODB_READS: Final = frozenset(
    {
        "BatchGetItem",
        "DescribeBackup",
        "DescribeContinuousBackups",
        "DescribeContributorInsights",
        "DescribeEndpoints",
        "DescribeExport",
        "DescribeGlobalTable",
        "DescribeGlobalTableSettings",
        "DescribeImport",
        "DescribeKinesisStreamingDestination",
        "DescribeLimits",
        "DescribeTable",
        "DescribeTableReplicaAutoScaling",
        "DescribeTimeToLive",
        "GetItem",
        "GetResourcePolicy",
        "ListBackups",
        "ListContributorInsights",
        "ListExports",
        "ListGlobalTables",
        "ListImports",
        "ListTables",
        "ListTagsOfResource",
        "Query",
        "Scan",
        "TransactGetItems",
    }
)
S3_WRITES: Final = frozenset({"PUT", "POST", "DELETE"})
# Read from the request, never kept: they carry the caller's credentials or describe one connection.
_DROPPED: Final = frozenset(
    {"HTTP_AUTHORIZATION", "HTTP_X_AMZ_SECURITY_TOKEN", "HTTP_CONNECTION", "HTTP_EXPECT", "HTTP_TRANSFER_ENCODING"}
)
_PRESERVED_NAMES: Final = "moto.preserved_header_names"
_S3: Final = "{http://s3.amazonaws.com/doc/2006-03-01/}"
# The object headers a snapshot keeps beside the body and the `x-amz-meta-` metadata.
_OBJECT_HEADERS: Final = frozenset(
    {"content-type", "content-encoding", "content-disposition", "content-language", "cache-control"}
)
_BATCH: Final = 25
S3_REGION: Final = "us-east-1"


def scope(environ: dict[str, Any]) -> tuple[str, str] | None:
    """The (service, region) a request is signed for, from its SigV4 credential scope; None when unsigned."""
    try:
        credential = environ["HTTP_AUTHORIZATION"].split(",")[0].split()[1]
        _, _, region, service, _ = credential.split("/")
    except (KeyError, IndexError, ValueError):
        return None
    return service.lower(), region


def changes_state(environ: dict[str, Any]) -> bool:
    """Whether the request may change what DynamoDB or S3 hold, so that it must be recorded."""
    signed = scope(environ)
    if signed is None:
        return False
    service, _ = signed
    if service == "dynamodb":
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        return target.startswith(DYNAMODB_TARGET) and target[len(DYNAMODB_TARGET) :] not in DYNAMODB_READS
    return service == "s3" and environ.get("REQUEST_METHOD") in S3_WRITES


def record(environ: dict[str, Any], body: bytes, moment: float | None = None) -> dict[str, Any]:
    """The journal record of a signed request that `changes_state`, applied at wall-clock `moment` (given for a
    request received, which a replay applies as at that time)."""
    service, region = scope(environ) or ("", "")
    kept = {
        key: value
        for key, value in environ.items()
        if isinstance(value, str) and key.isupper() and "." not in key and key not in _DROPPED
    }
    entry: dict[str, Any] = {
        "service": service,
        "region": region,
        "environ": kept,
        "body": base64.b64encode(body).decode(),
    }
    names = environ.get(_PRESERVED_NAMES)
    if names:
        entry["names"] = dict(names)
    if moment is not None:
        entry["time"] = moment
    return entry


@dataclass
class Answer:
    """moto's answer to one request."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def replay(app: App, entry: dict[str, Any]) -> Answer:
    """Runs a recorded request through `app` again; refuses a record of any other service than DynamoDB's or S3's
    (a journal is replayed into a moto that serves every AWS service)."""
    if entry.get("service") not in ("dynamodb", "s3"):
        raise ValueError(f"a journal record of service {entry.get('service')!r}")
    environ = _base_environ()
    environ.update(entry["environ"])
    body = base64.b64decode(entry["body"])
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    environ[_PRESERVED_NAMES] = dict(entry.get("names") or {})
    environ["HTTP_AUTHORIZATION"] = _placeholder_signature(entry["service"], entry["region"])
    return call(app, environ)


def call(app: App, environ: dict[str, Any]) -> Answer:
    """One request through a WSGI app, in this thread; its whole answer."""
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[..., Any]:
        started[:] = [int(status.split()[0]), list(headers)]
        return lambda _data: None

    chunks = app(environ, start_response)
    try:
        body = b"".join(chunks)
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    return Answer(started[0], started[1], body)


def _base_environ() -> dict[str, Any]:
    from werkzeug.test import EnvironBuilder

    return EnvironBuilder(path="/", headers={"Host": "127.0.0.1"}).get_environ()


def _placeholder_signature(service: str, region: str) -> str:
    return (
        f"AWS4-HMAC-SHA256 Credential=dq-local/20000101/{region}/{service}/aws4_request, "
        "SignedHeaders=host, Signature=0"
    )


def request_record(
    service: str, region: str, method: str, path: str, headers: dict[str, str], body: bytes = b"", query: str = ""
) -> dict[str, Any]:
    """The record of a request built here rather than received (`path` already quoted)."""
    from werkzeug.test import EnvironBuilder

    environ = EnvironBuilder(
        method=method,
        path=path,
        query_string=query,
        headers={"Host": "127.0.0.1", **headers, "Authorization": _placeholder_signature(service, region)},
        data=body,
    ).get_environ()
    names = {_header_key(name): name for name in headers if "_" in name and name.lower().startswith("x-amz-meta-")}
    if names:
        environ[_PRESERVED_NAMES] = names
    return record(environ, body)


def _header_key(name: str) -> str:
    key = name.upper().replace("-", "_")
    return key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"


# ---- the state, as the requests that rebuild it ------------------------------------------------------------


@dataclass
class Counts:
    """What a snapshot holds."""

    tables: int = 0
    items: int = 0
    buckets: int = 0
    objects: int = 0
    regions: set[str] = field(default_factory=set)


class MotoError(RuntimeError):
    """moto answered a read of its state with an error."""


def dynamodb_record(region: str, action: str, payload: dict[str, Any]) -> dict[str, Any]:
    headers = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": DYNAMODB_TARGET + action}
    return request_record("dynamodb", region, "POST", "/", headers, json.dumps(payload).encode())


def state_records(app: App, regions: set[str], counts: Counts) -> Iterator[dict[str, Any]]:
    """The requests that rebuild moto's DynamoDB tables in `regions` and its S3 buckets, counted in `counts`."""
    for region in sorted(regions):
        yield from _dynamodb_state(app, region, counts)
    yield from _s3_state(app, counts)


def _dynamodb(app: App, region: str, action: str, payload: dict[str, Any]) -> dict[str, Any]:
    answer = replay(app, dynamodb_record(region, action, payload))
    if not answer.ok:
        raise MotoError(f"DynamoDB {action} in {region}: {answer.status} {answer.body[:300]!r}")
    return dict(json.loads(answer.body or b"{}"))


def _dynamodb_state(app: App, region: str, counts: Counts) -> Iterator[dict[str, Any]]:
    names: list[str] = []
    start: dict[str, Any] = {}
    while True:
        page = _dynamodb(app, region, "ListTables", start)
        names += page.get("TableNames", [])
        if not page.get("LastEvaluatedTableName"):
            break
        start = {"ExclusiveStartTableName": page["LastEvaluatedTableName"]}
    for name in names:
        description = _dynamodb(app, region, "DescribeTable", {"TableName": name})["Table"]
        tags = _dynamodb(app, region, "ListTagsOfResource", {"ResourceArn": description["TableArn"]}).get("Tags")
        yield dynamodb_record(region, "CreateTable", create_table_request(description, tags))
        ttl = _dynamodb(app, region, "DescribeTimeToLive", {"TableName": name})["TimeToLiveDescription"]
        if ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"):
            enabled = {"Enabled": True, "AttributeName": ttl["AttributeName"]}
            yield dynamodb_record(region, "UpdateTimeToLive", {"TableName": name, "TimeToLiveSpecification": enabled})
        counts.tables += 1
        counts.regions.add(region)
        items = table_items(description["TableArn"])
        for first in range(0, len(items), _BATCH):
            puts = [{"PutRequest": {"Item": item}} for item in items[first : first + _BATCH]]
            yield dynamodb_record(region, "BatchWriteItem", {"RequestItems": {name: puts}})
        counts.items += len(items)


def table_items(arn: str) -> list[dict[str, Any]]:
    """Under moto's lock: every item of the table `arn` names, as `PutItem` takes it. Read from moto's table
    itself: its `Scan` answer costs about a millisecond an item to serialize, which made a start with a few
    thousand messages take seconds."""
    from moto.dynamodb.models import dynamodb_backends

    from .embedded_dynamodb import MOTO_VERSIONS, require_moto_version

    require_moto_version("table_items", MOTO_VERSIONS)
    _, _, _, region, account, resource = arn.split(":", 5)
    table = dynamodb_backends[account][region].get_table(resource.split("/", 1)[1])
    return [{name: _attribute(value) for name, value in item.attrs.items()} for item in table.all_items()]


def _attribute(value: Any) -> dict[str, Any]:
    """A moto attribute value in DynamoDB's JSON form."""
    if value.type == "M":
        return {"M": {name: _attribute(inner) for name, inner in value.value.items()}}
    if value.type == "L":
        return {"L": [_attribute(inner) for inner in value.value]}
    if value.type == "B":
        return {"B": _base64(value.value)}
    if value.type == "BS":
        return {"BS": [_base64(inner) for inner in value.value]}
    return {value.type: value.value}


def _base64(value: bytes | str) -> str:
    return base64.b64encode(value).decode() if isinstance(value, bytes) else value


def create_table_request(description: dict[str, Any], tags: list[dict[str, str]] | None) -> dict[str, Any]:
    """The `CreateTable` request of a table as `DescribeTable` describes it."""
    on_demand = description.get("BillingModeSummary", {}).get("BillingMode") == "PAY_PER_REQUEST"

    def throughput(described: dict[str, Any]) -> dict[str, Any]:
        if on_demand:
            return {}
        given = described.get("ProvisionedThroughput", {})
        units = {key: given.get(key) or 1 for key in ("ReadCapacityUnits", "WriteCapacityUnits")}
        return {"ProvisionedThroughput": units}

    request: dict[str, Any] = {
        "TableName": description["TableName"],
        "KeySchema": description["KeySchema"],
        "AttributeDefinitions": description["AttributeDefinitions"],
        **({"BillingMode": "PAY_PER_REQUEST"} if on_demand else throughput(description)),
    }
    indexes = [
        {"IndexName": index["IndexName"], "KeySchema": index["KeySchema"], "Projection": index["Projection"]}
        | throughput(index)
        for index in description.get("GlobalSecondaryIndexes", [])
    ]
    if indexes:
        request["GlobalSecondaryIndexes"] = indexes
    local = [
        {"IndexName": index["IndexName"], "KeySchema": index["KeySchema"], "Projection": index["Projection"]}
        for index in description.get("LocalSecondaryIndexes", [])
    ]
    if local:
        request["LocalSecondaryIndexes"] = local
    stream = description.get("StreamSpecification")
    if stream and stream.get("StreamEnabled"):
        request["StreamSpecification"] = stream
    if description.get("DeletionProtectionEnabled"):
        request["DeletionProtectionEnabled"] = True
    table_class = description.get("TableClassSummary", {}).get("TableClass")
    if table_class:
        request["TableClass"] = table_class
    if tags:
        request["Tags"] = tags
    return request


def _s3(app: App, method: str, path: str, query: str = "") -> Answer:
    answer = replay(app, request_record("s3", S3_REGION, method, path, {}, query=query))
    if not answer.ok:
        raise MotoError(f"S3 {method} {path}?{query}: {answer.status} {answer.body[:300]!r}")
    return answer


def _s3_state(app: App, counts: Counts) -> Iterator[dict[str, Any]]:
    listing = ElementTree.fromstring(_s3(app, "GET", "/").body)
    for bucket in [name.text or "" for name in listing.iterfind(f"{_S3}Buckets/{_S3}Bucket/{_S3}Name")]:
        location = ElementTree.fromstring(_s3(app, "GET", f"/{quote(bucket)}", "location").body).text or S3_REGION
        create = b""
        if location != S3_REGION:
            create = (
                f'<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                f"<LocationConstraint>{location}</LocationConstraint></CreateBucketConfiguration>"
            ).encode()
        yield request_record("s3", location, "PUT", f"/{quote(bucket)}", {}, create)
        counts.buckets += 1
        for key in _object_keys(app, bucket):
            path = f"/{quote(bucket)}/{quote(key, safe='/~')}"
            stored = _s3(app, "GET", path)
            headers = {
                name: value
                for name, value in stored.headers
                if name.lower() in _OBJECT_HEADERS or name.lower().startswith("x-amz-meta-")
            }
            yield request_record("s3", location, "PUT", path, headers, stored.body)
            counts.objects += 1


def _object_keys(app: App, bucket: str) -> Iterator[str]:
    query = {"list-type": "2"}
    while True:
        page = ElementTree.fromstring(_s3(app, "GET", f"/{quote(bucket)}", urlencode(query)).body)
        for key in page.iterfind(f"{_S3}Contents/{_S3}Key"):
            yield key.text or ""
        token = page.findtext(f"{_S3}NextContinuationToken")
        if page.findtext(f"{_S3}IsTruncated") != "true" or not token:
            return
        query["continuation-token"] = token
