"""Requests to a deployed API are SigV4-signed exactly as botocore signs them; the local server's are not."""

from __future__ import annotations

import datetime
import json
import urllib.request
from collections.abc import Mapping
from pathlib import Path

import botocore.auth
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from typer.testing import CliRunner

from dq.cli import app
from dq.signing import execute_api_region
from dq.targets import HttpTarget, TargetError

API = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/prod"
FIXED_TIME = datetime.datetime(2030, 1, 2, 3, 4, 5)
SIGNATURE_HEADERS = {"authorization", "x-amz-date", "x-amz-security-token"}


class Captured:
    """A transport that records each request and answers with a canned status, headers and body."""

    def __init__(self, status: int = 200, body: object = None, headers: Mapping[str, str] | None = None) -> None:
        self.requests: list[urllib.request.Request] = []
        self.status = status
        self.body = json.dumps({"messages": []} if body is None else body).encode()
        self.headers = dict(headers or {"Content-Type": "application/json"})

    def __call__(self, request: urllib.request.Request, timeout: float) -> tuple[int, Mapping[str, str], bytes]:
        self.requests.append(request)
        return self.status, self.headers, self.body


def _botocore_signature(request: urllib.request.Request, region: str, credentials: Credentials) -> dict[str, str]:
    """What botocore's own signer produces for the same method, URL, body and (unsigned) headers."""
    headers = {name: value for name, value in request.header_items() if name.lower() not in SIGNATURE_HEADERS}
    reference = AWSRequest(method=request.get_method(), url=request.full_url, data=request.data or b"", headers=headers)
    SigV4Auth(credentials, "execute-api", region).add_auth(reference)
    return {name.lower(): value for name, value in reference.headers.items()}


@pytest.fixture
def fixed_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *args, **kwargs: FIXED_TIME)


@pytest.mark.parametrize(
    ("call", "method", "path"),
    [
        (lambda target: target.receive("orders", "tenant-a", {"max_messages": 2}), "POST", "/receive"),
        (lambda target: target.peek("orders", "tenant-a", 5), "GET", "/messages?limit=5"),
        (lambda target: target.cancel("orders", "tenant-a", "S0.123abc"), "DELETE", "/messages/S0.123abc"),
    ],
    ids=["post-with-body", "get-with-query", "delete"],
)
def test_a_captured_request_carries_botocores_signature(fixed_time: None, call, method: str, path: str) -> None:
    credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")
    transport = Captured(body={"messages": [], "deleted": True})
    call(HttpTarget(API, transport=transport, credentials=credentials))

    [request] = transport.requests
    assert (request.get_method(), request.full_url) == (method, f"{API}/queues/orders/clients/tenant-a{path}")
    sent = {name.lower(): value for name, value in request.header_items()}
    expected = _botocore_signature(request, "eu-west-1", credentials)
    assert sent["authorization"] == expected["authorization"]
    assert sent["x-amz-date"] == expected["x-amz-date"] == "20300102T030405Z"
    assert sent["x-amz-security-token"] == "session-token"
    assert "Credential=AKIDEXAMPLE/20300102/eu-west-1/execute-api/aws4_request" in sent["authorization"]
    signed = sent["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    assert set(signed) >= {"host", "x-amz-date", "x-amz-security-token"} | ({"content-type"} if request.data else set())


def test_the_signature_covers_the_body(fixed_time: None) -> None:
    credentials = Credentials("AKIDEXAMPLE", "secret")
    signatures = []
    for body in ("one", "two"):
        transport = Captured(body={"message_id": "S0.1", "sequence": "1", "successful": [], "failed": []})
        HttpTarget(API, transport=transport, credentials=credentials).send("orders", "a", {"body": body})
        signatures.append(transport.requests[0].get_header("Authorization"))
    assert signatures[0] != signatures[1]


def test_the_local_server_is_not_signed() -> None:
    transport = Captured()
    HttpTarget("http://127.0.0.1:8080", transport=transport).receive("orders", "a", {})
    [request] = transport.requests
    assert request.get_header("Authorization") is None and request.get_header("X-amz-date") is None


@pytest.mark.parametrize(
    ("host", "region"),
    [
        ("a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com", "eu-west-1"),
        ("a1b2c3d4e5.execute-api.cn-north-1.amazonaws.com.cn", "cn-north-1"),
        ("a1b2c3d4e5-vpce-0123456789abcdef0.execute-api.us-gov-west-1.vpce.amazonaws.com", "us-gov-west-1"),
        ("127.0.0.1", None),
        ("api.example.com", None),
        ("execute-api.eu-west-1.amazonaws.com.evil.example", None),
    ],
)
def test_the_region_comes_from_an_api_gateway_host(host: str, region: str | None) -> None:
    assert execute_api_region(host) == region


def test_without_credentials_a_deployed_api_is_a_one_line_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    env = {
        "AWS_ACCESS_KEY_ID": None,
        "AWS_SECRET_ACCESS_KEY": None,
        "AWS_SESSION_TOKEN": None,
        "AWS_PROFILE": None,
        "AWS_SHARED_CREDENTIALS_FILE": missing,
        "AWS_CONFIG_FILE": missing,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": None,
        "AWS_CONTAINER_CREDENTIALS_FULL_URI": None,
        "AWS_WEB_IDENTITY_TOKEN_FILE": None,
        "DQ_TABLE": None,
    }
    result = CliRunner().invoke(app, ["--endpoint", API, "peek", "-q", "orders", "-c", "a"], env=env)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: NoCredentials: no AWS credentials to sign requests to ")
    assert result.stderr.count("\n") == 1


def test_api_gateways_own_refusals_keep_their_type() -> None:
    transport = Captured(
        403,
        {"message": "The security token included in the request is invalid."},
        {"x-amzn-ErrorType": "UnrecognizedClientException:http://internal.amazon.com/coral/"},
    )
    target = HttpTarget(API, transport=transport, credentials=Credentials("AKIDEXAMPLE", "secret"))
    with pytest.raises(TargetError) as refused:
        target.list_queues()
    assert (refused.value.code, refused.value.status) == ("UnrecognizedClientException", 403)
    assert refused.value.message == "The security token included in the request is invalid."


def test_an_unreachable_endpoint_is_a_connection_error() -> None:
    result = CliRunner().invoke(app, ["--endpoint", "http://127.0.0.1:9", "queues", "ls"], env={"DQ_TABLE": None})
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ConnectionError: cannot reach http://127.0.0.1:9: ")
    assert result.stderr.count("\n") == 1
