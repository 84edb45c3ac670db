"""The console's refusals over plain HTTP: no secret (or one in a cookie), a foreign Host (DNS rebinding), a change
from another origin (CSRF) or by another method; and what every answer carries (CSP). Nothing here reaches an
API."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from dq.cli import app, run_line
from dq.console import ConsoleServer
from dq.console.server import ASSETS, CSP
from dq.local_server import DEFAULT_PORT, LocalServer
from dq.session import Session
from dq.shell import Shell
from dq.targets import HttpTarget

REPO = Path(__file__).resolve().parents[2]
STATIC = REPO / "dq" / "console" / "static"
# Nothing listens here: a request that got past the checks would answer ConnectionError, not a refusal.
NOWHERE = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def console() -> Iterator[ConsoleServer]:
    with ConsoleServer(HttpTarget(NOWHERE)) as running:
        yield running


def request(
    console: ConsoleServer, method: str, path: str, headers: dict[str, str] | None = None, body: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", console.port, timeout=10)
    try:
        connection.putrequest(method, path, skip_host=True)
        sent = {"Host": f"127.0.0.1:{console.port}", **(headers or {})}
        if body is not None:
            sent["Content-Length"] = str(len(body))
        for name, value in sent.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def secret(console: ConsoleServer) -> dict[str, str]:
    """The header the console's page sends with each API call."""
    return {"Authorization": f"Bearer {console.token}"}


def test_the_printed_url_gives_the_secret_in_its_fragment_and_the_page_needs_none(console: ConsoleServer) -> None:
    """A browser sends no fragment: the secret reaches no server, this one included, until the page sends it."""
    assert console.url == f"{console.origin}/#token={console.token}"
    for path in ("/", *(f"/{name}" for name in ASSETS)):
        status, headers, body = request(console, "GET", path)
        assert status == 200 and console.token.encode() not in body and "set-cookie" not in headers
        assert headers["content-security-policy"] == CSP and "'unsafe-inline'" not in CSP
        assert headers["cross-origin-resource-policy"] == "same-origin"
    assert b'<script type="module" src="/console.js"' in request(console, "GET", "/")[2]
    assert (
        request(console, "POST", "/", {"Origin": console.origin, "Content-Type": "application/json"}, b"{}")[0] == 405
    )


@pytest.mark.parametrize("path", ["/api/info", "/api/queues", "/api/metrics?queue=q"])
def test_without_the_secret_every_api_route_is_refused(console: ConsoleServer, path: str) -> None:
    status, _, body = request(console, "GET", path)
    assert status == 403 and b"dq console" in body
    for forged in ("Bearer forged", f"Basic {console.token}", console.token, "Bearer"):
        assert request(console, "GET", path, {"Authorization": forged})[0] == 403, forged
    assert request(console, "GET", f"/api/info?token={console.token}")[0] == 403


@pytest.mark.parametrize("host", ["localhost:{port}", "evil.example:{port}", "127.0.0.1:1", "127.0.0.1"])
def test_a_host_other_than_the_bound_address_is_refused(console: ConsoleServer, host: str) -> None:
    status, _, _ = request(console, "GET", "/api/info", {**secret(console), "Host": host.format(port=console.port)})
    assert status == 421


@pytest.mark.parametrize(
    "origin",
    [
        {},
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Referer": "http://evil.example/page"},
        {"Origin": "http://localhost:{port}"},
    ],
)
def test_a_change_from_another_origin_is_refused(console: ConsoleServer, origin: dict[str, str]) -> None:
    headers = {**secret(console), "Content-Type": "application/json"}
    headers |= {name: value.format(port=console.port) for name, value in origin.items()}
    for method, path in (("POST", "/api/queues/victim"), ("DELETE", "/api/queues/victim")):
        status, _, body = request(console, method, path, headers, b"{}")
        assert status == 403, (method, body)


def test_a_change_from_the_page_passes_the_checks(console: ConsoleServer) -> None:
    """Past every check, the console asks the API; here none listens, so the answer is its connection error."""
    for source in ({"Origin": console.origin}, {"Referer": f"{console.origin}/#/q/victim"}):
        headers = {**secret(console), "Content-Type": "application/json", **source}
        status, _, body = request(console, "POST", "/api/queues/victim", headers, b"{}")
        assert status == 502 and b"ConnectionError" in body


def test_a_change_needs_a_json_body_and_reads_need_get(console: ConsoleServer) -> None:
    headers = {**secret(console), "Origin": console.origin}
    form = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
    assert request(console, "POST", "/api/queues/victim", form, b"a=1")[0] == 415
    for method in ("PUT", "PATCH"):
        assert (
            request(console, method, "/api/queues/victim", {**headers, "Content-Type": "application/json"}, b"{}")[0]
            == 405
        )
    status, _, body = request(console, "GET", "/api/queues/victim/clients/c/purge", secret(console))
    assert status == 404 and b"NotFound" in body


def test_the_page_weighs_under_300_kb_and_has_no_inline_script() -> None:
    files = [path for path in STATIC.iterdir() if path.is_file()]
    assert sum(path.stat().st_size for path in files) <= 300 * 1024
    page = (STATIC / "index.html").read_text()
    assert page.count("<script") == 1 and '<script type="module" src="/console.js"></script>' in page
    scripts = [path for path in files if path.suffix == ".js"]
    assert {path.name for path in scripts} == {name for name in ASSETS if name.endswith(".js")}
    assert not any("innerHTML" in path.read_text() or "eval(" in path.read_text() for path in scripts)


def test_dq_console_prints_its_url_and_targets_what_dq_targets() -> None:
    """`--api` after `console` overrides the global `--endpoint`; the URL printed once carries the secret."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "dq.cli", "--endpoint", "http://127.0.0.1:1", "console", "--port", str(port)]
    # Started with Ctrl-C ignored, as a background job of a CI shell starts it: it must stop on it all the same.
    process = subprocess.Popen(
        [*command, "--api", NOWHERE], cwd=REPO, stdout=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_ignored
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(2)]
        assert lines[0].strip() == f"dq console: {NOWHERE}"
        url = lines[1].removeprefix("Open ").strip()
        assert url.startswith(f"http://127.0.0.1:{port}/#token=")
        given = {"Authorization": f"Bearer {url.partition('#token=')[2]}"}
        asked = urllib.request.Request(f"http://127.0.0.1:{port}/api/info", headers=given)
        with urllib.request.urlopen(asked, timeout=10) as answer:
            assert json.load(answer) == {"target": NOWHERE}
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=10)


def test_dq_console_refuses_a_table_target() -> None:
    result = CliRunner().invoke(app, ["--table", "queues", "console"], env={"DQ_ENDPOINT": None, "DQ_TABLE": None})
    assert result.exit_code == 2 and "the console works over the HTTP API" in result.output


def test_dq_local_names_the_console_command_that_reaches_it() -> None:
    assert LocalServer(port=DEFAULT_PORT).console_command() == "dq console"
    assert LocalServer(port=9000).console_command() == "dq --endpoint http://127.0.0.1:9000 console"


def test_the_shell_sends_the_console_to_another_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    shell = Shell(Session(), typer.main.get_command(app), run_line)
    assert shell.run_lines(["console"]) == 2
    assert "dq console runs a web server in the foreground" in capsys.readouterr().err


def test_two_consoles_side_by_side_take_their_own_secret_alone() -> None:
    with ConsoleServer(HttpTarget(NOWHERE)) as first, ConsoleServer(HttpTarget(NOWHERE)) as second:
        for console, other in ((first, second), (second, first)):
            assert request(console, "GET", "/api/info", secret(console))[0] == 200
            assert request(console, "GET", "/api/info", secret(other))[0] == 403


@pytest.mark.parametrize("given", ["%C3%A9", "%C2%B2"])
def test_a_secret_out_of_ascii_is_refused_not_a_crash(console: ConsoleServer, given: str) -> None:
    raw = urllib.parse.unquote(given).encode().decode("latin-1")  # the bytes a client would send
    assert request(console, "GET", "/api/info", {"Authorization": f"Bearer {raw}"})[0] == 403


def test_a_second_host_header_is_refused(console: ConsoleServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", console.port, timeout=10)
    try:
        connection.putrequest("GET", "/api/info", skip_host=True)
        connection.putheader("Host", f"127.0.0.1:{console.port}")
        connection.putheader("Host", "evil.example")
        connection.putheader("Authorization", f"Bearer {console.token}")
        connection.endheaders()
        assert connection.getresponse().status == 421
    finally:
        connection.close()


def test_numbers_out_of_ascii_are_a_clear_refusal(console: ConsoleServer) -> None:
    status, _, body = request(console, "GET", "/api/queues/q/clients/c/messages?limit=%C2%B2", secret(console))
    assert status == 400 and b"limit" in body
    headers = {**secret(console), "Origin": console.origin, "Content-Type": "application/json"}
    assert request(console, "POST", "/api/queues/q", {**headers, "Content-Length": "\u00b2"})[0] in (400, 413)


def test_a_change_without_a_length_is_refused(console: ConsoleServer) -> None:
    """A chunked body is never read: it would stay on the connection and be taken for the next request."""
    headers = {**secret(console), "Origin": console.origin, "Content-Type": "application/json"}
    headers["Transfer-Encoding"] = "chunked"
    status, _, _ = request(console, "POST", "/api/queues/victim", headers)
    assert status == 411


def test_a_cookie_is_no_credential(console: ConsoleServer) -> None:
    """Cookies ignore the port: any server on 127.0.0.1 would receive the console's, so the console takes the
    secret from a header that only its own page sets, and never from a cookie."""
    for name in ("dq_console", f"dq_console_{console.port}", "token"):
        for path in ("/api/info", "/api/queues"):
            assert request(console, "GET", path, {"Cookie": f"{name}={console.token}"})[0] == 403, (name, path)
    status, _, body = request(console, "GET", "/api/info", {"Authorization": f"Bearer {console.token}"})
    assert status == 200 and json.loads(body) == {"target": NOWHERE}


def test_a_browser_that_drops_its_connection_prints_no_traceback(
    console: ConsoleServer, capfd: pytest.CaptureFixture[str]
) -> None:
    """A tab closed or a page left mid-load resets its connections; the console's terminal is for its URL, not for
    a BrokenPipeError's traceback each time."""
    for _ in range(5):
        with socket.create_connection(("127.0.0.1", console.port), timeout=5) as connection:
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
            connection.sendall(f"GET /console.js HTTP/1.1\r\nHost: 127.0.0.1:{console.port}\r\n\r\n".encode())
            connection.recv(1)
    time.sleep(0.5)  # the server's threads meet the reset as they write the rest
    assert request(console, "GET", "/console.css")[0] == 200
    printed = capfd.readouterr()
    assert "Traceback" not in printed.err and "Error" not in printed.err, printed.err


def test_the_archive_and_replay_routes_refuse_bad_numbers_before_asking_the_api(console: ConsoleServer) -> None:
    """A time out of range, or a replay run longer than the console lets one request hold its thread, is a clear
    400 naming the field, and nothing reaches the API (this console's target answers nothing)."""
    for query in ("since=-1", "until=soon", "limit=101"):
        status, _, body = request(console, "GET", f"/api/queues/q/clients/c/archive?{query}", secret(console))
        assert status == 400 and query.split("=")[0].encode() in body, query
    headers = {**secret(console), "Origin": console.origin, "Content-Type": "application/json"}
    for seconds in (30, -1, "5", True):
        raw = json.dumps({"replay_id": "r", "seconds": seconds}).encode()
        status, _, body = request(console, "POST", "/api/queues/q/clients/c/replays/run", headers, raw)
        assert status == 400 and b"seconds" in body, seconds


def _ctrl_c_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
