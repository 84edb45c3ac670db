"""The console's local web server: the page, its script and style, and the JSON routes of `api`, on 127.0.0.1.

What keeps another site, another local user's server or a rebinding DNS name from using it:
- a secret drawn at start, given once in the fragment of the printed URL (a browser sends a fragment to no server);
  the page keeps it in its tab's `sessionStorage`, which only this origin (the port included) reads and a reload
  keeps, and sends it as `Authorization: Bearer` with each API call; every API request without it is refused
  (403). Never a cookie: a browser sends cookies to every server on 127.0.0.1 whatever its port, and to a browser
  another port of 127.0.0.1 is the same site. The page, its script and style hold no secret and need none;
- the `Host` header must be the bound address (`127.0.0.1:PORT`), so a DNS name rebound to 127.0.0.1 gets 421;
- a change is a POST or DELETE whose `Origin` (or, without one, `Referer`) is this server, with a JSON body;
- a Content-Security-Policy that allows only this server's own script and style (no inline script, no eval),
  `Cross-Origin-Resource-Policy` that keeps them from other pages, and the script renders every name and message
  as text.
"""

from __future__ import annotations

import hmac
import json
import mimetypes
import secrets
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from ..metrics import MetricsReader
from ..targets import Target
from . import api, launch

HOST: Final = "127.0.0.1"
BEARER: Final = "Bearer"
MAX_BODY_BYTES: Final = 2 * 1024 * 1024
CHANGES: Final = frozenset({"POST", "DELETE"})
_REFUSALS: Final = frozenset({400, 403, 405, 411, 413, 415, 421})
# The page and its style; its script is ES modules that console.js imports (one file per part of the page).
ASSETS: Final = (
    *("index.html", "console.css", "console.js"),
    *("core.js", "pieces.js", "charts.js", "queues.js", "messages.js", "archive.js"),
)
API: Final = "/api/"
CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS: Final = (
    ("Content-Security-Policy", CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
)


class ConsoleError(Exception):
    """The console cannot start; the message is one line meant for the user."""


def _assets() -> dict[str, tuple[str, bytes]]:
    """The static files by path, read once: the content type and the bytes."""
    folder = resources.files(__package__).joinpath("static")
    found = {}
    for name in ASSETS:
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        found[f"/{name}"] = (f"{kind}; charset=utf-8", folder.joinpath(name).read_bytes())
    found["/"] = found["/index.html"]
    return found


class _QuietServer(ThreadingHTTPServer):
    """Threads that end with the server, and silent about browsers that hang up."""

    daemon_threads = True
    # A page opens its modules and first reads at once: with the standard library's 5, a burst of connections on
    # a busy machine overflows the accept queue, and each one dropped waits for the kernel's retry (1 s, then 2, 4).
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection the browser closed or reset before its answer (a tab closed, a page left while it loaded)
        is no fault of the console: nothing to print. Anything else still prints its traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ConsoleServer:
    """`start()`, then the console is served until `stop()`; `url` hands a browser's tab the secret."""

    def __init__(
        self,
        target: Target,
        port: int = 0,
        token: str | None = None,
        metrics: MetricsReader | None = None,
        no_metrics: str = api.LOCAL_TARGET,
    ) -> None:
        self.target = target
        # The charts' CloudWatch series of a deployed stack; without a reader, why the page's samples stand alone.
        self.metrics = metrics
        self.no_metrics = no_metrics
        self.port = port
        self.token = token or secrets.token_urlsafe(32)
        self._assets = _assets()
        self._http: _QuietServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def origin(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def url(self) -> str:
        """The secret in the fragment: the page takes it from there, and no request ever carries the URL's."""
        return f"{self.origin}/#token={self.token}"

    def start(self) -> ConsoleServer:
        try:
            self._http = _QuietServer((HOST, self.port), _handler_class(self))
        except OSError as error:
            raise ConsoleError(f"cannot listen on {HOST}:{self.port}: {error.strerror}") from None
        self.port = self._http.server_address[1]
        self._thread = threading.Thread(target=self._http.serve_forever, name="dq-console", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ConsoleServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def has_secret(self, authorization: list[str]) -> bool:
        """One `Authorization: Bearer <secret>` header: only the console's own page can set it on a request to the
        console, and a browser never adds it by itself to a request another page makes."""
        if len(authorization) != 1:
            return False
        scheme, _, given = authorization[0].strip().partition(" ")
        return scheme == BEARER and _same(given.strip(), self.token)


def _handler_class(console: ConsoleServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "dq-console"
        # Head and body go out in two writes: without this the body waits about 40 ms for the browser's delayed ACK.
        disable_nagle_algorithm = True

        def _serve(self) -> None:
            split = urlsplit(self.path)
            query = parse_qs(split.query)
            text = "text/plain; charset=utf-8"
            if self.headers.get_all("Host") != [f"{HOST}:{console.port}"]:
                self._send(421, text, f"this console answers only to http://{HOST}:{console.port}\n".encode())
                return
            is_api = split.path.startswith(API)
            if is_api and not console.has_secret(self.headers.get_all("Authorization") or []):
                self._send(403, text, b"open the URL that `dq console` printed: this console needs its secret\n")
                return
            refusal = self._refusal() if is_api else self._asset_refusal()
            if refusal is not None:
                self._send(*refusal)
                return
            if split.path == "/api/metrics" and self.command == "GET":
                status, answer = api.chart_metrics(console.metrics, console.no_metrics, query)
                self._send(status, "application/json", json.dumps(answer).encode())
                return
            if is_api:
                raw = self._read_body()
                if raw is not None:
                    status, answer = api.answer(console.target, self.command, split.path, query, raw)
                    self._send(status, "application/json", json.dumps(answer).encode())
                return
            asset = console._assets.get(split.path)
            if asset is None:
                self._send(404, text, b"not found\n")
                return
            self._send(200, *asset)

        def _refusal(self) -> tuple[int, str, bytes] | None:
            """Why a request that carries the secret is still refused: a change from another origin (CSRF), or
            without a JSON body, or a method the console does not take."""
            text = "text/plain; charset=utf-8"
            if self.command in CHANGES:
                if "Transfer-Encoding" in self.headers:  # never read: it would be taken for the next request
                    return 411, text, b"a change carries a Content-Length\n"
                source = self.headers.get("Origin") or _origin_of(self.headers.get("Referer"))
                if source != console.origin:
                    return 403, text, b"a change must come from the console's own page\n"
                if self.headers.get("Content-Length", "0") != "0" and not self._is_json():
                    return 415, text, b"a change carries a JSON body\n"
            elif self.command not in ("GET", "HEAD"):
                return 405, text, b"the console reads with GET and changes with POST or DELETE\n"
            return None

        def _asset_refusal(self) -> tuple[int, str, bytes] | None:
            """The page, its script and style are only read."""
            if self.command in ("GET", "HEAD"):
                return None
            return 405, "text/plain; charset=utf-8", b"the console's page is read with GET\n"

        def _is_json(self) -> bool:
            return (self.headers.get("Content-Type") or "").split(";")[0].strip() == "application/json"

        def _read_body(self) -> bytes | None:
            length = self.headers.get("Content-Length") or "0"
            if not (length.isascii() and length.isdigit()) or int(length) > MAX_BODY_BYTES:
                self.close_connection = True
                self._send(413, "text/plain; charset=utf-8", b"request body too large\n")
                return None
            return self.rfile.read(int(length)) if int(length) else b""

        def _send(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            if status in _REFUSALS:  # its body may be unread: the connection cannot carry another request
                self.close_connection = True
                self.send_header("Connection", "close")
            self.send_header("Content-Type", kind)
            for name, value in SECURITY_HEADERS:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_HEAD = do_OPTIONS = _serve

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: the operator's terminal shows the URL, not every request."""

    return Handler


def _same(given: str, secret: str) -> bool:
    """In constant time; any text compares (`compare_digest` refuses a `str` out of ASCII)."""
    return hmac.compare_digest(given.encode(), secret.encode())


def _origin_of(referer: str | None) -> str | None:
    if not referer:
        return None
    parts = urlsplit(referer)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None


def serve(
    target: Target,
    port: int = 0,
    open_browser: bool = False,
    metrics: MetricsReader | None = None,
    no_metrics: str = api.LOCAL_TARGET,
) -> None:
    """Serves until Ctrl-C, after printing the URL (with its secret) once. `--open` hands the browser a private
    file that leads to the URL, never the URL itself: a command line is visible to every local user."""
    # Python leaves Ctrl-C ignored when the process started with it ignored (a background job of a shell without
    # job control, a test runner's worker): the console would then never stop on it, as `dq local` would not.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    console = ConsoleServer(target, port, metrics=metrics, no_metrics=no_metrics).start()
    sys.stdout.write(f"dq console: {target.name}\nOpen {console.url}\nCtrl-C stops.\n")
    if metrics is not None:
        sys.stdout.write(f"Charts read CloudWatch: {metrics.namespace} in {metrics.region}\n")
    sys.stdout.flush()
    opened = launch.open_privately(console.url) if open_browser else None
    try:
        if opened is not None:
            opened.show()
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        sys.stdout.write("stopping\n")
    finally:
        if opened is not None:
            opened.remove()
        console.stop()
