"""The test process's side of the condition ablation (`tests.reliability.ablation`), loaded with `-p`.

Inert unless the environment asks: `QUEUE_ABLATION_REMOVE` (a clause as JSON, or a list) drops it from every
condition its write builds, with the expression values only the clause used; `QUEUE_ABLATION_RECORD` records which
named write sent which condition in which test; `QUEUE_ABLATION_TESTS` (a JSON file of test ids) runs those tests
alone, in that order; `QUEUE_ABLATION_PLAN` (a JSON file of pairs: a test, a clause or none) runs each test once
per pair with that clause removed (`ablate_together`), appending each pair done to the file
`QUEUE_ABLATION_PROGRESS` when set; `QUEUE_ABLATION_RESULT` is where the outcome goes. A write
is named by the function of `queue_core.store` that built its `Write` (`messages.claim`, `groups.ack`): what was
built, not what was sent, so a write of a transaction is named as well as one sent alone.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from types import FrameType
from typing import Any

import pytest
from queue_core.store.write import Write

from tests.reliability.ablation import (
    ENV_PLAN,
    ENV_PROGRESS,
    ENV_RECORD,
    ENV_REMOVE,
    ENV_RESULT,
    ENV_TESTS,
    Clause,
    holds,
    placeholders,
    without,
)

_STORE = "queue_core.store."
_CONSTRUCTORS = "queue_core.store.write"
# What a condition check of a transaction is left with when its only clause goes (DynamoDB requires one): true
# of every item, and of no item.
_ALWAYS = "attribute_not_exists(condition_removed)"


class _Ablation:
    def __init__(self) -> None:
        self.removing: list[Clause] = _clauses(os.environ.get(ENV_REMOVE, ""))
        self.recording = bool(os.environ.get(ENV_RECORD))
        self.current = ""
        self.removals = 0
        self.sent: dict[str, set[tuple[str, str]]] = {}
        self.tests: dict[str, dict[str, Any]] = {}
        self.failed: list[tuple[str, str]] = []
        self.plan: list[dict[str, Any]] | None = None
        self.pair_failure: str | None = None
        self._lock = threading.Lock()
        self._original = Write.__init__

    def install(self) -> None:
        original = self._original

        def built(write: Write, *args: Any, **kwargs: Any) -> None:
            original(write, *args, **kwargs)
            if write.condition:
                self.built(write, sys._getframe(1))

        Write.__init__ = built  # type: ignore[method-assign]

    def uninstall(self) -> None:
        Write.__init__ = self._original  # type: ignore[method-assign]

    def built(self, write: Write, frame: FrameType | None) -> None:
        name = _writer(frame)
        if name is None or write.condition is None:
            return
        if self.recording:
            with self._lock:
                self.sent.setdefault(self.current, set()).add((name, write.condition))
        left: str | None = write.condition
        removed = 0
        for clause in self.removing:
            if left is not None and clause.write == name and holds(left, clause):
                left = without(left, clause)
                removed += 1
        if not removed:
            return
        if left is None and write.kind == "ConditionCheck":
            left = _ALWAYS
        used = placeholders(write.update, left)
        object.__setattr__(write, "condition", left)
        object.__setattr__(write, "values", {key: value for key, value in write.values.items() if key in used})
        with self._lock:
            self.removals += removed

    def result(self) -> dict[str, Any]:
        passed = sum(1 for test in self.tests.values() if test["outcome"] == "passed")
        answer: dict[str, Any] = {"passed": passed, "failed": self.failed, "removals": self.removals}
        if self.plan is not None:
            answer["plan"] = self.plan
        if self.recording:
            answer["tests"] = self.tests
            answer["writes"] = {test: sorted(sent) for test, sent in self.sent.items()}
        return answer


def _clauses(text: str) -> list[Clause]:
    """A clause as JSON, or a JSON list of them (removed together: one run for the longest tests)."""
    if not text:
        return []
    found = json.loads(text)
    return [Clause(**clause) for clause in (found if isinstance(found, list) else [found])]


def _writer(frame: FrameType | None) -> str | None:
    """The named write that built a `Write`: the nearest public function of a store module on the stack."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        function = frame.f_code.co_name
        if module.startswith(_STORE) and module != _CONSTRUCTORS and not function.startswith("_"):
            return f"{module.removeprefix(_STORE)}.{function}"
        frame = frame.f_back
    return None


_ablation: _Ablation | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _ablation
    if os.environ.get(ENV_RESULT):
        _ablation = _Ablation()
        _ablation.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    if _ablation is not None:
        _ablation.uninstall()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    listing = os.environ.get(ENV_TESTS)
    if not listing:
        return
    with open(listing) as tests:
        order = {test: position for position, test in enumerate(json.load(tests))}
    kept = sorted((item for item in items if item.nodeid in order), key=lambda item: order[item.nodeid])
    dropped = [item for item in items if item.nodeid not in order]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """With a plan, each of its pairs runs its test once, its clause removed; the pairs of a group marked `stop`
    end at the group's first failure. The test's fixtures are set up and torn down for each pair."""
    plan_file = os.environ.get(ENV_PLAN)
    if _ablation is None or not plan_file or session.testsfailed or session.config.option.collectonly:
        return None
    with open(plan_file) as listing:
        plan: list[dict[str, Any]] = json.load(listing)
    items = {item.nodeid: item for item in session.items}
    stopped: set[int] = set()
    for pair in plan:
        item = items.get(pair["test"])
        if item is None or pair["group"] in stopped:
            pair.update(ran=False)
            continue
        _ablation.removing = _clauses(pair["clause"] or "")
        _ablation.pair_failure = None
        removals, started = _ablation.removals, time.monotonic()
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=None)
        failed = _ablation.pair_failure is not None
        pair.update(
            ran=True,
            failed=failed,
            reason=_ablation.pair_failure or "",
            removals=_ablation.removals - removals,
            seconds=time.monotonic() - started,
        )
        if failed and pair.get("stop"):
            stopped.add(pair["group"])
        if os.environ.get(ENV_PROGRESS):
            with open(os.environ[ENV_PROGRESS], "a") as progress:
                progress.write(json.dumps(pair) + "\n")
    _ablation.removing = []
    _ablation.plan = plan
    return True


def pytest_runtest_logstart(nodeid: str) -> None:
    if _ablation is not None:
        _ablation.current = nodeid


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _ablation is None:
        return
    seen = _ablation.tests.setdefault(report.nodeid, {"outcome": "passed", "duration": 0.0})
    seen["duration"] += report.duration
    if report.failed:
        if _ablation.pair_failure is None:
            lines = [line for line in report.longreprtext.splitlines() if line.strip()]
            _ablation.pair_failure = lines[-1][:300] if lines else report.when
        if seen["outcome"] != "failed":
            lines = [line for line in report.longreprtext.splitlines() if line.strip()]
            _ablation.failed.append((report.nodeid, lines[-1][:300] if lines else report.when))
        seen["outcome"] = "failed"
    elif report.skipped and seen["outcome"] == "passed":
        seen["outcome"] = "skipped"


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get(ENV_RESULT)
    if _ablation is not None and path:
        with open(path, "w") as out:
            json.dump(_ablation.result(), out)
