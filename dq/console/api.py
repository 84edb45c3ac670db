"""The console's JSON routes: each is one or a few calls of the `dq` target, with the target's answer passed on.

The browser reads with GET and changes with POST or DELETE only (the server checks their origin). Nothing here
reads the table: the figures of many queues are the API's own `GET /queues/{q}` for each, asked in parallel and
only for the queues the page shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote

from ..metrics import DEFAULT_MINUTES, MAX_MINUTES, MIN_MINUTES, MetricsReader, MetricsUnavailable, Window
from ..targets import Target, TargetError

Json = dict[str, Any]
Handler = Callable[[Target, Mapping[str, str], Mapping[str, list[str]], Json], Json]

# The most queues one figures request may name: a page of the queues table.
MAX_FIGURES: Final = 100
# Parallel calls to the target for one console request; the API answers each on its own.
FAN_OUT: Final = 8
MAX_LIMIT: Final = 100
# The latest time the archive's bounds take (epoch ms), as the API's.
MAX_EPOCH_MS: Final = 10**13 - 1
# The longest run of a replay one console request makes: the page asks again while the replay runs, so a request
# never holds the console's thread (or the browser's wait) for the API's longest run.
REPLAY_RUN_SECONDS: Final = 5


class ConsoleError(Exception):
    """A request the console refuses before asking the API (400)."""


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler


def _int(query: Mapping[str, list[str]], name: str, default: int, low: int, high: int) -> int:
    raw = (query.get(name) or [str(default)])[0]
    if not (raw.isascii() and raw.isdigit()) or not low <= int(raw) <= high:
        raise ConsoleError(f"{name} must be a whole number from {low} to {high}")
    return int(raw)


def _fan_out(calls: Mapping[str, Callable[[], Any]]) -> dict[str, Any]:
    """Each call's answer, or its error as the API's error shape: one queue's failure never hides the others."""

    def run(call: Callable[[], Any]) -> Any:
        try:
            return call()
        except TargetError as error:
            return {"error": {"code": error.code, "message": error.message}}

    with ThreadPoolExecutor(max_workers=FAN_OUT) as pool:
        answers = pool.map(run, calls.values())
        return dict(zip(calls, answers, strict=True))


def info(target: Target, _p: Mapping[str, str], _q: Mapping[str, list[str]], _b: Json) -> Json:
    return {"target": target.name}


def list_queues(target: Target, _p: Mapping[str, str], _q: Mapping[str, list[str]], _b: Json) -> Json:
    return target.list_queues()


def figures(target: Target, _p: Mapping[str, str], query: Mapping[str, list[str]], _b: Json) -> Json:
    """The figures of the named queues (`?q=a&q=b`): each queue's description, its stats summed over its clients
    and its number of clients (asked separately of an API that does not count them)."""
    names = list(dict.fromkeys(query.get("q", [])))
    if len(names) > MAX_FIGURES:
        raise ConsoleError(f"at most {MAX_FIGURES} queues at a time")

    def one(name: str) -> Json:
        described = target.get_queue(name)
        count = described.get("client_count")
        return {"stats": described.get("stats", {}), "clients": len(target.clients(name)) if count is None else count}

    return {"figures": _fan_out({name: (lambda name=name: one(name)) for name in names})}


def get_queue(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], _b: Json) -> Json:
    """The queue, its clients and each client's figures."""
    queue = params["q"]
    described = target.get_queue(queue)
    clients = target.clients(queue)
    stats = _fan_out({client: (lambda client=client: target.stats(queue, client)) for client in clients})
    return {"queue": described, "clients": [{"client": client, "stats": stats[client]} for client in clients]}


def create_queue(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], body: Json) -> Json:
    settings, created = target.create_queue(params["q"], body)
    return {"queue": settings, "created": created}


def update_queue(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], body: Json) -> Json:
    return target.update_queue(params["q"], body)


def delete_queue(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], _b: Json) -> Json:
    return target.delete_queue(params["q"])


def stats(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], _b: Json) -> Json:
    return target.stats(params["q"], params["c"])


def peek(target: Target, params: Mapping[str, str], query: Mapping[str, list[str]], _b: Json) -> Json:
    return target.peek(params["q"], params["c"], _int(query, "limit", 10, 1, MAX_LIMIT))


def browse(target: Target, params: Mapping[str, str], query: Mapping[str, list[str]], _b: Json) -> Json:
    """A page of the sub-queue's waiting messages in every state; the API checks the filters (its 400s pass on)."""
    filters: dict[str, Any] = {name: (query.get(name) or [None])[0] or None for name in ("state", "group", "cursor")}
    if query.get("priority", [""])[0]:
        filters["priority"] = _int(query, "priority", 0, 0, 9)
    return target.browse(params["q"], params["c"], _int(query, "limit", 10, 1, MAX_LIMIT), filters)


def get_message(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], _b: Json) -> Json:
    return target.get(params["q"], params["c"], params["id"])


def cancel(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], _b: Json) -> Json:
    return target.cancel(params["q"], params["c"], params["id"])


def move_to_dlq(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], _b: Json) -> Json:
    return target.move_to_dlq(params["q"], params["c"], params["id"])


def send(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], body: Json) -> Json:
    return target.send(params["q"], params["c"], body)


def receive(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], body: Json) -> Json:
    return target.receive(params["q"], params["c"], body)


def delete(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], body: Json) -> Json:
    handles = body.get("receipt_handles")
    if not isinstance(handles, list):
        raise ConsoleError("receipt_handles must be a list of receipt handles")
    return target.delete(params["q"], params["c"], handles)


def release(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], body: Json) -> Json:
    return target.release(params["q"], params["c"], str(body.get("receipt_handle", "")), body.get("delay_seconds"))


def purge(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], _b: Json) -> Json:
    return target.purge(params["q"], params["c"])


def dlq_list(target: Target, params: Mapping[str, str], query: Mapping[str, list[str]], _b: Json) -> Json:
    return target.dlq_list(params["q"], params["c"], _int(query, "limit", 10, 1, MAX_LIMIT))


def redrive(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], body: Json) -> Json:
    """All, the oldest, by id, or (`reason`) the dead letters whose last reason contains the text, as `dq`."""
    reason = body.get("reason")
    return target.redrive(params["q"], params["c"], body.get("max_messages"), body.get("message_ids"), reason)


def dlq_reasons(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], _b: Json) -> Json:
    return target.dlq_reasons(params["q"], params["c"])


def archive_list(target: Target, params: Mapping[str, str], query: Mapping[str, list[str]], _b: Json) -> Json:
    """A page of the sub-queue's archive by time range (epoch ms), newest first unless `order=oldest`; the API
    checks the order and the cursor (its 400s pass on)."""
    given: dict[str, Any] = {name: (query.get(name) or [None])[0] or None for name in ("order", "cursor")}
    for bound in ("since", "until"):
        if query.get(bound, [""])[0]:
            given[bound] = _int(query, bound, 0, 0, MAX_EPOCH_MS)
    given["limit"] = _int(query, "limit", 10, 1, MAX_LIMIT)
    return target.archive_list(params["q"], params["c"], given)


def archive_get(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], _b: Json) -> Json:
    return target.archive_get(params["q"], params["c"], params["id"])


def replay_start(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], body: Json) -> Json:
    """A new replay (the API's `ReplayRequest`, checked by the API), run for its `run_seconds` before it answers;
    the page then runs it on a call at a time, as `dq archive replay` does."""
    return target.replay_start(params["q"], params["c"], body)


def replay_list(target: Target, params: Mapping[str, str], query: Mapping[str, list[str]], _b: Json) -> Json:
    replay_id = (query.get("replay_id") or [None])[0] or None
    return target.replay_list(params["q"], params["c"], replay_id, _int(query, "limit", 10, 1, MAX_LIMIT))


def replay_run(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], body: Json) -> Json:
    seconds = body.get("seconds", REPLAY_RUN_SECONDS)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= REPLAY_RUN_SECONDS:
        raise ConsoleError(f"seconds must be a number from 0 to {REPLAY_RUN_SECONDS}")
    return target.replay_run(params["q"], params["c"], str(body.get("replay_id", "")), seconds)


def replay_cancel(target: Target, params: Mapping[str, str], _q: Mapping[str, list[str]], body: Json) -> Json:
    return target.replay_cancel(params["q"], params["c"], str(body.get("replay_id", "")))


_NAME: Final = r"[^/]+"
_SUB: Final = rf"/api/queues/(?P<q>{_NAME})/clients/(?P<c>{_NAME})"
ROUTES: Final = tuple(
    Route(method, re.compile(f"^{path}$"), handler)
    for method, path, handler in (
        ("GET", "/api/info", info),
        ("GET", "/api/queues", list_queues),
        ("GET", "/api/figures", figures),
        ("GET", rf"/api/queues/(?P<q>{_NAME})", get_queue),
        ("POST", rf"/api/queues/(?P<q>{_NAME})", create_queue),
        ("POST", rf"/api/queues/(?P<q>{_NAME})/settings", update_queue),
        ("DELETE", rf"/api/queues/(?P<q>{_NAME})", delete_queue),
        ("GET", f"{_SUB}/stats", stats),
        ("GET", f"{_SUB}/messages", peek),
        ("GET", f"{_SUB}/browse", browse),
        ("POST", f"{_SUB}/messages", send),
        ("DELETE", f"{_SUB}/messages", purge),
        ("GET", rf"{_SUB}/messages/(?P<id>{_NAME})", get_message),
        ("DELETE", rf"{_SUB}/messages/(?P<id>{_NAME})", cancel),
        ("POST", rf"{_SUB}/messages/(?P<id>{_NAME})/dlq", move_to_dlq),
        ("POST", f"{_SUB}/receive", receive),
        ("POST", f"{_SUB}/delete", delete),
        ("POST", f"{_SUB}/release", release),
        ("GET", f"{_SUB}/dlq", dlq_list),
        ("POST", f"{_SUB}/dlq/redrive", redrive),
        ("GET", f"{_SUB}/dlq/reasons", dlq_reasons),
        ("GET", f"{_SUB}/archive", archive_list),
        ("GET", rf"{_SUB}/archive/(?P<id>{_NAME})", archive_get),
        ("GET", f"{_SUB}/replays", replay_list),
        ("POST", f"{_SUB}/replays", replay_start),
        ("POST", f"{_SUB}/replays/run", replay_run),
        ("POST", f"{_SUB}/replays/cancel", replay_cancel),
    )
)


def answer(target: Target, method: str, path: str, query: Mapping[str, list[str]], raw: bytes) -> tuple[int, Json]:
    """The status and JSON answer of one console request; the API's errors keep their status, code and message."""
    allowed = False
    for route in ROUTES:
        found = route.pattern.match(path)
        if found is None:
            continue
        allowed = True
        if route.method != method:
            continue
        params = {name: unquote(value) for name, value in found.groupdict().items()}
        try:
            body = _body(raw)
            return 200, route.handler(target, params, query, body)
        except ConsoleError as error:
            return 400, _error("ValidationError", str(error))
        except TargetError as error:
            return error.status or 502, _error(error.code, error.message)
    if allowed:
        return 405, _error("MethodNotAllowed", f"{method} is not allowed on {path}")
    return 404, _error("NotFound", f"no console route {path}")


def _body(raw: bytes) -> Json:
    if not raw:
        return {}
    try:
        body = json.loads(raw)
    except ValueError:
        raise ConsoleError("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise ConsoleError("the request body must be a JSON object")
    return body


def _error(code: str, message: str) -> Json:
    return {"error": {"code": code, "message": message}}


# ---- charts from CloudWatch --------------------------------------------------------------------------------

LOCAL_TARGET: Final = "the local server publishes no CloudWatch metric"


def chart_metrics(reader: MetricsReader | None, no_metrics: str, query: Mapping[str, list[str]]) -> tuple[int, Json]:
    """A queue's or a client's published series (`?queue=&client=&minutes=`) read by the console's own reader with
    the operator's credentials; without one, or when CloudWatch refuses them, `source: page` and why, so the page
    charts its own samples and says so."""
    queue = (query.get("queue") or [""])[0]
    client = (query.get("client") or [""])[0] or None
    if not queue:
        return 400, _error("ValidationError", "queue is required")
    try:
        minutes = _int(query, "minutes", DEFAULT_MINUTES, MIN_MINUTES, MAX_MINUTES)
    except ConsoleError as error:
        return 400, _error("ValidationError", str(error))
    if reader is None:
        return 200, {"source": "page", "reason": no_metrics}
    try:
        return 200, reader.read(queue, client, Window(minutes))
    except MetricsUnavailable as error:
        return 200, {"source": "page", "reason": f"{error.code}: {error.message}"}
