"""`dq send --batch FILE.jsonl`: many messages, 25 to a request, with each failure traced to its line.

A bad line costs only itself: a line that is not a message object fails on its own, and a batch the HTTP API
refuses as a whole (it validates the whole body) is sent again one message at a time, so its good lines still go
through, as they do through the core. An error that no line caused (the queue does not exist, throttling, the
target is unreachable) stops the run, and the report says where. The report names lines, not batch indexes,
because the file is what the user can fix.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from queue_core.limits import MAX_BATCH

from .targets import Target, TargetError

BATCH_SIZE: Final = MAX_BATCH
# Per-entry codes that say nothing about the line: every later batch would fail the same way.
_NOT_THE_LINES: Final = frozenset({"QueueNotFound"})


@dataclass
class BatchReport:
    sent: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    # The error that stopped the run, and the first line it left unsent.
    stopped: TargetError | None = None
    stopped_at: int | None = None

    def fail(self, line: int, code: str, message: str) -> None:
        self.failed.append({"line": line, "code": code, "message": message})

    def to_dict(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"sent": self.sent, "failed": sorted(self.failed, key=lambda f: f["line"])}
        if self.stopped is not None:
            answer["stopped"] = {
                "line": self.stopped_at,
                "code": self.stopped.code,
                "message": self.stopped.message,
            }
        return answer


def numbered_lines(lines: Iterable[str]) -> list[tuple[int, str]]:
    """The non-blank lines with their 1-based line numbers."""
    return [(number, text) for number, text in enumerate(lines, start=1) if text.strip()]


def _parsed(lines: list[tuple[int, str]], report: BatchReport) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, text in lines:
        try:
            message = json.loads(text)
        except json.JSONDecodeError as error:
            report.fail(number, "ValidationError", f"not JSON: {error.msg}")
            continue
        if not isinstance(message, dict):
            report.fail(number, "ValidationError", 'a message object is expected, like {"body": "…"}')
            continue
        yield number, message


def send_lines(
    target: Target,
    queue: str,
    client: str,
    lines: list[tuple[int, str]],
    advance: Callable[[int], None] = lambda _count: None,
) -> BatchReport:
    """Sends every message line in batches of 25; `advance(n)` is told after each batch how many lines it
    settled, for a progress bar."""
    report = BatchReport()
    batch: list[tuple[int, dict[str, Any]]] = []
    settled = 0

    def flush() -> None:
        nonlocal settled
        if batch:
            _send(target, queue, client, batch, report)
            batch.clear()
        done = report.sent + len(report.failed)
        advance(done - settled)
        settled = done

    try:
        for number, message in _parsed(lines, report):
            batch.append((number, message))
            if len(batch) == BATCH_SIZE:
                flush()
        flush()
    except _Stopped as stop:
        report.stopped, report.stopped_at = stop.error, stop.line
    return report


class _Stopped(Exception):
    """An error no line caused, at the first line it left unsent."""

    def __init__(self, error: TargetError, line: int) -> None:
        super().__init__(error.message)
        self.error = error
        self.line = line


def _refused_for_its_content(error: TargetError) -> bool:
    return error.status in (400, 413)


def _send(
    target: Target, queue: str, client: str, batch: list[tuple[int, dict[str, Any]]], report: BatchReport
) -> None:
    try:
        answer = target.send_batch(queue, client, [message for _, message in batch])
    except TargetError as error:
        if not _refused_for_its_content(error):
            raise _Stopped(error, batch[0][0]) from None
        for number, message in batch:
            _send_one(target, queue, client, number, message, report)
        return
    failed = answer.get("failed", [])
    if len(failed) == len(batch) and all(failure.get("code") in _NOT_THE_LINES for failure in failed):
        raise _Stopped(TargetError(str(failed[0]["code"]), str(failed[0].get("message")), 404), batch[0][0])
    report.sent += len(answer.get("successful", []))
    for failure in failed:
        report.fail(batch[failure["index"]][0], str(failure.get("code")), str(failure.get("message")))


def _send_one(
    target: Target, queue: str, client: str, number: int, message: dict[str, Any], report: BatchReport
) -> None:
    try:
        target.send(queue, client, message)
    except TargetError as error:
        if not _refused_for_its_content(error):
            raise _Stopped(error, number) from None
        report.fail(number, error.code, error.message)
    else:
        report.sent += 1
