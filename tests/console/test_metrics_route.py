"""The console's charts route over plain HTTP: the secret, a bounded window, and the page's own samples (with why)
when there is nothing to read. The charts themselves are drawn in the browser tests (test_browser.py)."""

from __future__ import annotations

import json

from dq.console import ConsoleServer
from dq.console.api import LOCAL_TARGET
from dq.targets import HttpTarget
from tests.console.test_security import NOWHERE, request, secret


def test_the_metrics_route_takes_the_secret_and_a_bounded_window() -> None:
    with ConsoleServer(HttpTarget(NOWHERE)) as console:
        path = "/api/metrics?queue=orders&minutes="
        assert request(console, "GET", path + "60")[0] == 403
        status, _, body = request(console, "GET", path + "60", secret(console))
        assert status == 200 and json.loads(body) == {"source": "page", "reason": LOCAL_TARGET}
        for refused in (path + "2", path + "1441", "/api/metrics?minutes=60"):
            status, _, body = request(console, "GET", refused, secret(console))
            assert status == 400 and json.loads(body)["error"]["code"] == "ValidationError", refused
