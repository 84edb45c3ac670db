"""Condition ablation: is every clause of every conditional write needed by some test?

A clause that no test needs is either useless or untested. For each clause of each condition expression in
`queue_core/store/`, one run removes that clause alone and runs the tests that send a condition holding it; the
clause is *killed* when one of them fails, and *survives* when all pass.

* **Clauses.** The conditions are read from the source (`conditions`): each named write of `store/` (a public
  function of any of its modules but `write` and the `Store`'s own) is evaluated over every branch, its
  private helpers and the constructors of `store/write.py` followed, so a condition composed of pieces (`+=`, an
  f-string, `_the_copy`, `_once`) is known whole, in each of its forms. A clause is a conjunct of an AND or an
  alternative of an OR, at the top level or inside a parenthesized group (`Clause`); a clause that two forms of
  one write share is one clause, removed from both.
* **Removal at run time.** The product is not edited: the test process loads `tests.reliability.ablation_plugin`,
  which wraps `Write`'s constructor, names the write by the store function that built it, and drops the clause
  (and the expression values only it used: DynamoDB refuses unused ones) before anything is sent, alone or in a
  transaction.
* **Which tests.** A first run of the whole test set records, for each test, the conditions each named write
  sent; a clause's run takes the tests that passed there and sent a condition holding the clause, the cheapest
  files first, and stops at the first failure (`-x`). A failure kills the clause only when the failing test
  fails again alone with the removal and passes alone without it; otherwise the test is left out (of this
  clause's run, or of every run when it fails without any removal) and the clause's run goes on without it.

`python -m tests.reliability.ablation` runs it all (long: every survivor runs every test that reaches it);
`--list` prints the clauses, `--only TEXT` keeps the clauses whose name holds TEXT, `--jobs N` runs N clauses at
once, `--tests` names another test set, `--record FILE` keeps the first run's recording (and uses it when FILE
exists), `--leave-out TEST` leaves a test out of the recording, so out of every clause's run (the longest tests,
run once with the survivors removed instead: docs/testing.md); `--together` runs all clauses in one test process
per round (`ablate_together`), with `--cap SECONDS` per clause and `--first PATH` (tests run before the others).
The table goes to stdout, the figures to `--out` as JSON. It is not part of `make test`.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "layers" / "queue_core" / "python" / "queue_core" / "store"
# The store's modules that hold no named write: the `Store` itself and the constructors the named writes call.
NOT_WRITES = ("__init__", "write")
# The test set: every suite that drives the core in the test process (the command line and `dq local` included,
# whose server runs on threads). Suites that run the product in another process cannot see a removal.
TEST_SET = (
    "tests/core",
    "tests/functions",
    "tests/sqs",
    "tests/cli",
    "tests/reliability",
    "tests/release/test_layout.py",
    "tests/release/test_migrate.py",
)
PLUGIN = "tests.reliability.ablation_plugin"
# What the plugin reads from the environment of the test process.
ENV_REMOVE = "QUEUE_ABLATION_REMOVE"
ENV_RECORD = "QUEUE_ABLATION_RECORD"
ENV_TESTS = "QUEUE_ABLATION_TESTS"
ENV_RESULT = "QUEUE_ABLATION_RESULT"
ENV_PLAN = "QUEUE_ABLATION_PLAN"
# A file the plugin appends each pair of a plan to as it is done (a long run's progress).
ENV_PROGRESS = "QUEUE_ABLATION_PROGRESS"


# ---- Condition expressions: parse, name the clauses, remove one -------------------------------------------------

_TOKEN = re.compile(r"\s*(\(|\)|,|<>|<=|>=|=|<|>|[^\s(),<>=]+)")


@dataclass(frozen=True)
class Node:
    """A condition as a tree: `kind` is "atom" (`text`), "not", "group" (parentheses), "and" or "or" (`parts`)."""

    kind: str
    parts: tuple[Node, ...] = ()
    text: str = ""

    def render(self) -> str:
        if self.kind == "atom":
            return self.text
        if self.kind == "not":
            return f"NOT {self.parts[0].render()}"
        if self.kind == "group":
            return f"({self.parts[0].render()})"
        return f" {self.kind.upper()} ".join(part.render() for part in self.parts)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, int, int]] = []
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None or not match.group(1):
                break
            self.tokens.append((match.group(1), match.start(1), match.end(1)))
            position = match.end()
        if text[position:].strip():
            raise ValueError(f"cannot read condition {text!r}")
        self.at = 0

    def peek(self) -> str:
        return self.tokens[self.at][0].upper() if self.at < len(self.tokens) else ""

    def take(self) -> tuple[str, int, int]:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def expression(self) -> Node:
        return self._joined("OR", self._conjunction)

    def _conjunction(self) -> Node:
        return self._joined("AND", self._negation)

    def _joined(self, word: str, operand: Any) -> Node:
        parts = [operand()]
        while self.peek() == word:
            self.take()
            parts.append(operand())
        return parts[0] if len(parts) == 1 else Node(word.lower(), tuple(parts))

    def _negation(self) -> Node:
        if self.peek() == "NOT":
            self.take()
            return Node("not", (self._negation(),))
        if self.peek() == "(":
            self.take()
            inner = self.expression()
            if self.peek() != ")":
                raise ValueError(f"unbalanced parentheses in {self.text!r}")
            self.take()
            return Node("group", (inner,))
        return self._atom()

    def _atom(self) -> Node:
        """A comparison or a function call, up to the AND, OR or closing parenthesis that ends it (the AND of a
        BETWEEN belongs to it)."""
        start = self.tokens[self.at][1] if self.at < len(self.tokens) else len(self.text)
        end, depth, between = start, 0, False
        while self.at < len(self.tokens):
            word = self.peek()
            if depth == 0 and (word in ("OR", ")") or (word == "AND" and not between)):
                break
            between = (between and word != "AND") or word == "BETWEEN"
            depth += {"(": 1, ")": -1}.get(word, 0)
            end = self.take()[2]
        if end == start:
            raise ValueError(f"empty clause in {self.text!r}")
        return Node("atom", text=" ".join(self.text[start:end].split()))


def parse(condition: str) -> Node:
    parser = _Parser(condition)
    tree = parser.expression()
    if parser.at != len(parser.tokens):
        raise ValueError(f"cannot read condition {condition!r}")
    return tree


@dataclass(frozen=True, order=True)
class Clause:
    """One clause of a named write's condition: `text`, a conjunct (`joined_by` "AND") or an alternative ("OR"),
    at the top level (`within` "") or inside the parenthesized group `within`."""

    write: str
    text: str
    joined_by: str
    within: str = ""

    @property
    def name(self) -> str:
        place = f" in {self.within}" if self.within else ""
        return f"{self.write}: {self.joined_by} {self.text}{place}"

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Clause:
        return cls(**json.loads(text))


def _places(node: Node, within: str = "") -> Iterator[tuple[Node, str, str]]:
    """(clause, joined by, within) for every conjunct and alternative; nothing under a NOT (its sense flips)."""
    if node.kind in ("and", "or"):
        for part in node.parts:
            yield part, node.kind.upper(), within
            yield from _places(part, within)
    elif node.kind == "group":
        yield from _places(node.parts[0], node.render())


def clauses_of(write: str, condition: str) -> list[Clause]:
    """The clauses of one condition; a condition of one clause is that clause (its removal leaves none)."""
    tree = parse(condition)
    if tree.kind not in ("and", "or"):
        return [Clause(write, tree.render(), "AND")]
    return [Clause(write, part.render(), joined, within) for part, joined, within in _places(tree)]


def holds(condition: str, clause: Clause) -> bool:
    return clause in clauses_of(clause.write, condition)


def without(condition: str, clause: Clause) -> str | None:
    """The condition with `clause` removed (None when nothing is left); unchanged when it has no such clause."""
    tree = parse(condition)
    if tree.kind not in ("and", "or"):
        return None if clause == Clause(clause.write, tree.render(), "AND") else condition
    left = _remove(tree, clause, "")
    return None if left is None else left.render()


def _remove(node: Node, clause: Clause, within: str) -> Node | None:
    if node.kind == "group":
        inner = _remove(node.parts[0], clause, node.render())
        return None if inner is None else Node("group", (inner,))
    if node.kind not in ("and", "or"):
        return node
    matches = node.kind.upper() == clause.joined_by and within == clause.within
    kept = [
        removed
        for part in node.parts
        if not (matches and part.render() == clause.text)
        for removed in [_remove(part, clause, within)]
        if removed is not None
    ]
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else Node(node.kind, tuple(kept))


_PLACEHOLDER = re.compile(r":[A-Za-z0-9_]+")


def placeholders(*expressions: str | None) -> set[str]:
    return {name for expression in expressions if expression for name in _PLACEHOLDER.findall(expression)}


# ---- The conditions in the source -----------------------------------------------------------------------------

_UNKNOWN = None


class _Evaluator:
    """Evaluates the store's functions over strings: each expression is the set of strings it may be (None for
    anything else), each branch of an `if` taken; every `Write(...)` reached records its condition."""

    def __init__(self, store: Path) -> None:
        self.functions: dict[str, dict[str, ast.FunctionDef]] = {}
        self.constants: dict[str, dict[str, set[Any]]] = {}
        self.imports: dict[str, dict[str, tuple[str, str]]] = {}
        for path in sorted(store.glob("*.py")):
            tree = ast.parse(path.read_text())
            module = path.stem
            self.functions[module] = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
            self.imports[module] = {
                alias.asname or alias.name: (node.module, alias.name)
                for node in tree.body
                if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
                for alias in node.names
            }
            self.constants[module] = {}
            for node in tree.body:
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if isinstance(target, ast.Name):
                            self.constants[module][target.id] = self.value(module, node.value, {})
        self.found: set[str] = set()
        self._depth = 0

    def conditions(self, module: str, function: str) -> set[str]:
        self.found = set()
        node = self.functions[module][function]
        self.call(module, node, [], {})
        return self.found

    def call(self, module: str, node: ast.FunctionDef, args: list[set[Any]], kwargs: dict[str, set[Any]]) -> set:
        if self._depth > 10:
            return {_UNKNOWN}
        self._depth += 1
        try:
            parameters = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            defaults = [None] * (len(node.args.posonlyargs + node.args.args) - len(node.args.defaults))
            defaults += list(node.args.defaults) + list(node.args.kw_defaults)
            env: dict[str, set[Any]] = {}
            for index, (parameter, default) in enumerate(zip(parameters, defaults, strict=True)):
                if index < len(args):
                    env[parameter.arg] = args[index]
                elif parameter.arg in kwargs:
                    env[parameter.arg] = kwargs[parameter.arg]
                else:
                    env[parameter.arg] = {_UNKNOWN} if default is None else self.value(module, default, {})
            returns: set[Any] = set()
            self.block(module, node.body, env, returns)
            return returns or {_UNKNOWN}
        finally:
            self._depth -= 1

    def block(self, module: str, statements: list[ast.stmt], env: dict[str, set[Any]], returns: set[Any]) -> None:
        for statement in statements:
            self.statement(module, statement, env, returns)

    def statement(self, module: str, node: ast.stmt, env: dict[str, set[Any]], returns: set[Any]) -> None:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            if node.value is None:
                return
            value = self.value(module, node.value, env)
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                self.assign(target, value, env)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            right = self.value(module, node.value, env)
            left = env.get(node.target.id, {_UNKNOWN})
            env[node.target.id] = _concatenations(left, right) if isinstance(node.op, ast.Add) else {_UNKNOWN}
        elif isinstance(node, ast.Return):
            returns |= self.value(module, node.value, env) if node.value is not None else {_UNKNOWN}
        elif isinstance(node, ast.If | ast.For | ast.While | ast.With | ast.Try):
            for expression in ast.iter_child_nodes(node):
                if isinstance(expression, ast.expr):
                    self.value(module, expression, env)
            branches = [getattr(node, "body", []), getattr(node, "orelse", [])]
            branches += [handler.body for handler in getattr(node, "handlers", [])]
            merged: dict[str, set[Any]] = {}
            for branch in branches:
                taken = {name: set(values) for name, values in env.items()}
                self.block(module, branch, taken, returns)
                for name, values in taken.items():
                    merged.setdefault(name, set()).update(values)
            env.update(merged)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.value(module, child, env)

    @staticmethod
    def assign(target: ast.expr, value: set[Any], env: dict[str, set[Any]]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, ast.Tuple) and all(isinstance(element, ast.Name) for element in target.elts):
            for index, element in enumerate(target.elts):
                env[element.id] = {
                    item[index] if isinstance(item, tuple) and len(item) == len(target.elts) else _UNKNOWN
                    for item in value
                }

    def value(self, module: str, node: ast.expr, env: dict[str, set[Any]]) -> set[Any]:
        if isinstance(node, ast.Constant):
            return {node.value if isinstance(node.value, str) else _UNKNOWN}
        if isinstance(node, ast.Name):
            return env.get(node.id) or self.constants[module].get(node.id) or {_UNKNOWN}
        if isinstance(node, ast.JoinedStr):
            pieces = [
                {part.value}
                if isinstance(part, ast.Constant)
                else self.value(module, part.value, env)
                if isinstance(part, ast.FormattedValue)
                else {_UNKNOWN}
                for part in node.values
            ]
            return {
                "".join(combination) if all(isinstance(piece, str) for piece in combination) else _UNKNOWN
                for combination in itertools.product(*pieces)
            }
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return _concatenations(self.value(module, node.left, env), self.value(module, node.right, env))
        if isinstance(node, ast.Tuple):
            return set(itertools.product(*(self.value(module, element, env) for element in node.elts)))
        if isinstance(node, ast.Call):
            return self.called(module, node, env)
        if isinstance(node, ast.IfExp):
            self.value(module, node.test, env)
            return self.value(module, node.body, env) | self.value(module, node.orelse, env)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.value(module, child, env)
        return {_UNKNOWN}

    def called(self, module: str, node: ast.Call, env: dict[str, set[Any]]) -> set[Any]:
        args = [self.value(module, arg, env) for arg in node.args]
        kwargs = {keyword.arg: self.value(module, keyword.value, env) for keyword in node.keywords if keyword.arg}
        if not isinstance(node.func, ast.Name):
            self.value(module, node.func, env)
            return {_UNKNOWN}
        target_module, name = self.imports[module].get(node.func.id, (module, node.func.id))
        if name == "Write" and target_module == "write":
            condition = kwargs.get("condition") or (args[4] if len(args) > 4 else {_UNKNOWN})
            self.found |= {value for value in condition if isinstance(value, str)}
            return {_UNKNOWN}
        function = self.functions.get(target_module, {}).get(name)
        # Another named write is a write of its own: only private helpers and the constructors are followed.
        if function is None or (target_module != "write" and not name.startswith("_")):
            return {_UNKNOWN}
        return self.call(target_module, function, args, kwargs)


def _concatenations(left: set[Any], right: set[Any]) -> set[Any]:
    return {a + b if isinstance(a, str) and isinstance(b, str) else _UNKNOWN for a, b in itertools.product(left, right)}


def conditions(store: Path = STORE) -> dict[str, set[str]]:
    """Every condition each named write of `store` can send, by write (`module.function`); writes sent without a
    condition are left out."""
    evaluator = _Evaluator(store)
    found: dict[str, set[str]] = {}
    for module in sorted(set(evaluator.functions) - set(NOT_WRITES)):
        for name in evaluator.functions[module]:
            if not name.startswith("_"):
                sent = evaluator.conditions(module, name)
                if sent:
                    found[f"{module}.{name}"] = sent
    return found


def all_clauses(found: dict[str, Iterable[str]]) -> list[Clause]:
    return sorted(
        {clause for write, sent in found.items() for condition in sent for clause in clauses_of(write, condition)}
    )


# ---- Runs -----------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    clause: Clause
    tests: int = 0
    killed_by: str = ""
    reason: str = ""
    removals: int = 0
    # Tests left out of this clause's run: (test, why).
    flaky: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    # With a cap (`--cap`), how many of its tests the clause's runs got to; 0: all of them.
    tried: int = 0

    @property
    def verdict(self) -> str:
        if not self.tests:
            return "no test reaches it"
        if self.killed_by:
            return f"killed by {self.killed_by}"
        if not self.removals:
            return "survived (never removed: check the clause's matching)"
        return f"survived its first {self.tried} of {self.tests} tests" if self.tried else "survived"


@dataclass
class Runner:
    """Runs pytest in a child process with the plugin, from the checkout the ablation is in."""

    work: Path
    timeout: int = 900

    def run(
        self,
        tests: list[str],
        env: dict[str, str],
        budget: float | None = None,
        first_failure: bool = True,
        options: list[str] | None = None,
        shown: bool | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """(what the plugin wrote, whether the run ran out of `budget` seconds). Only `tests` run, in that order;
        all of their files when `tests` are files. `options`: more of pytest's; `shown`: its output on stderr (by
        default only for a run to the end)."""
        listing = self.work / f"tests-{os.getpid()}-{time.monotonic_ns()}.json"
        if any("::" in test for test in tests):
            listing.write_text(json.dumps(tests))
            env = {**env, ENV_TESTS: str(listing)}
        paths = sorted({test.split("::", 1)[0] for test in tests})
        try:
            return _pytest(
                [*(options or []), *paths],
                env,
                self.work,
                budget,
                first_failure,
                self.timeout,
                shown=not first_failure if shown is None else shown,
            )
        finally:
            listing.unlink(missing_ok=True)

    def run_plan(self, plan: list[dict[str, Any]], recorded: dict[str, Any]) -> list[dict[str, Any]]:
        """Runs the pairs of `plan` (test, clause removed or None) in one test process, in that order; once a pair
        of a `group` marked `stop` fails, the group's later pairs are skipped. Each pair comes back with `ran`,
        `failed`, `reason`, `removals` and `seconds`."""
        listing = self.work / f"plan-{os.getpid()}-{time.monotonic_ns()}.json"
        listing.write_text(json.dumps(plan))
        tests = list(dict.fromkeys(pair["test"] for pair in plan))
        budget = 2 * self.timeout + 4 * sum(recorded["tests"][pair["test"]]["duration"] for pair in plan)
        try:
            answer, timed_out = self.run(
                tests, {ENV_PLAN: str(listing)}, budget=budget, first_failure=False, shown=False
            )
        finally:
            listing.unlink(missing_ok=True)
        if timed_out or "plan" not in answer:
            raise SystemExit(f"a run of {len(plan)} pairs {'ran out of time' if timed_out else 'wrote nothing'}")
        return answer["plan"]

    def fails(self, test: str, env: dict[str, str]) -> bool:
        answer, timed_out = self.run([test], env, budget=self.timeout + 600)
        return timed_out or bool(answer.get("failed")) or not answer.get("passed")


def _pytest(
    paths: list[str],
    env: dict[str, str],
    work: Path,
    budget: float | None,
    first_failure: bool,
    timeout: int,
    shown: bool,
) -> tuple[dict[str, Any], bool]:
    result = work / f"result-{os.getpid()}-{time.monotonic_ns()}.json"
    command = [sys.executable, "-m", "pytest", "-p", PLUGIN, "-p", "no:cacheprovider", "-q", "-o", f"timeout={timeout}"]
    command += ["-x"] if first_failure else []
    child_env = {**os.environ, **env, ENV_RESULT: str(result), "PYTHONDONTWRITEBYTECODE": "1"}
    output = sys.stderr if shown else subprocess.DEVNULL
    try:
        subprocess.run([*command, *paths], cwd=ROOT, env=child_env, stdout=output, stderr=output, timeout=budget)
    except subprocess.TimeoutExpired:
        return {}, True
    try:
        return json.loads(result.read_text()), False
    except (OSError, ValueError):
        return {}, False
    finally:
        result.unlink(missing_ok=True)


def record(paths: list[str], runner: Runner, leave_out: Iterable[str] = ()) -> dict[str, Any]:
    """The first run: every test of `paths` but `leave_out` (test ids), its outcome and time, and the conditions
    each named write sent. A test left out here is in no clause's run."""
    options = [f"--deselect={test}" for test in leave_out]
    answer, _ = runner.run(paths, {ENV_RECORD: "1"}, first_failure=False, options=options)
    if not answer:
        raise SystemExit("the recording run wrote nothing: run the test set by hand to see why")
    return answer


def _selected(recorded: dict[str, Any], clause: Clause, left_out: set[str], first: tuple[str, ...] = ()) -> list[str]:
    """The passing tests that sent a condition holding the clause: those under the paths `first` (in that order)
    before the others, then the files cheapest first, each in its order."""
    tests = [
        test
        for test, outcome in recorded["tests"].items()
        if outcome["outcome"] == "passed"
        and test not in left_out
        and any(write == clause.write and holds(sent, clause) for write, sent in recorded["writes"].get(test, []))
    ]
    cost: dict[str, float] = {}
    for test in tests:
        path = test.split("::", 1)[0]
        cost[path] = cost.get(path, 0.0) + recorded["tests"][test]["duration"]
    position = {test: index for index, test in enumerate(recorded["tests"])}

    def rank(test: str) -> int:
        return next((index for index, path in enumerate(first) if test.startswith(path)), len(first))

    return sorted(
        tests, key=lambda test: (rank(test), cost[test.split("::", 1)[0]], test.split("::", 1)[0], position[test])
    )


def ablate(clause: Clause, recorded: dict[str, Any], runner: Runner, failing: set[str]) -> Outcome:
    """A failure kills the clause when its test fails again alone with the removal and passes alone without it.
    A test that passes alone with the removal is left out of this clause's run (a failure it owes to the load or
    to the tests before it); one that fails without the removal too is left out of every later run (`failing`)."""
    started = time.monotonic()
    outcome = Outcome(clause)
    removing = {ENV_REMOVE: clause.to_json()}
    left_out: set[str] = set()
    while True:
        tests = _selected(recorded, clause, left_out | failing)
        outcome.tests = max(outcome.tests, len(tests))
        if not tests:
            break
        budget = 2 * runner.timeout + 3 * sum(recorded["tests"][test]["duration"] for test in tests)
        answer, timed_out = runner.run(tests, removing, budget=budget)
        outcome.removals = max(outcome.removals, answer.get("removals", 0))
        if timed_out:
            outcome.killed_by, outcome.reason = "(the run)", f"ran out of its {budget:.0f} s"
            break
        failed = answer.get("failed", [])
        if not failed and not answer.get("passed"):
            outcome.killed_by, outcome.reason = "(the run)", "pytest ran nothing: an error before the tests"
            break
        if not failed:
            break
        test, reason = failed[0]
        if not runner.fails(test, removing):
            left_out.add(test)
            outcome.flaky.append((test, f"failed with the removal ({reason}), then passed alone with it"))
        elif runner.fails(test, {}):
            failing.add(test)
            outcome.flaky.append((test, "fails without the removal too"))
        else:
            outcome.killed_by, outcome.reason = test, reason
            break
    outcome.seconds = time.monotonic() - started
    return outcome


def _capped(tests: list[str], recorded: dict[str, Any], cap: float | None) -> list[str]:
    """The first of `tests` (cheapest first) whose recorded times add up to `cap` seconds; at least one."""
    if cap is None:
        return tests
    kept: list[str] = []
    spent = 0.0
    for test in tests:
        spent += recorded["tests"][test]["duration"]
        if kept and spent > cap:
            break
        kept.append(test)
    return kept


def ablate_together(
    clauses: list[Clause],
    recorded: dict[str, Any],
    runner: Runner,
    failing: set[str],
    cap: float | None = None,
    first: tuple[str, ...] = (),
) -> list[Outcome]:
    """The same verdicts as `ablate`, every clause in one test process per round instead of several processes
    per clause (a test process's start costs more than most tests): a round runs each pending clause's tests,
    cheapest first, up to its first failure; a second process runs each failing test again with the removal and
    without it, one after the other. Confirmed, the clause is killed; otherwise the test is left out as in
    `ablate` and the clause's next round goes on from the test after it. With `cap`, a clause runs only its
    cheapest tests up to `cap` recorded seconds (the verdict says how many)."""
    outcomes = {clause: Outcome(clause) for clause in clauses}
    queue: dict[Clause, list[str]] = {}
    for clause in clauses:
        tests = _selected(recorded, clause, failing, first)
        queue[clause] = _capped(tests, recorded, cap)
        outcomes[clause].tests = len(tests)
        outcomes[clause].tried = len(queue[clause]) if len(queue[clause]) < len(tests) else 0
    pending = [clause for clause in clauses if queue[clause]]
    while pending:
        plan = [
            {"group": index, "clause": clause.to_json(), "test": test, "stop": True}
            for index, clause in enumerate(pending)
            for test in queue[clause]
        ]
        ran = runner.run_plan(plan, recorded)
        suspects: list[tuple[Clause, str, str]] = []
        for index, clause in enumerate(pending):
            pairs = [pair for pair in ran if pair["group"] == index and pair.get("ran")]
            outcomes[clause].removals += sum(pair["removals"] for pair in pairs)
            outcomes[clause].seconds += sum(pair["seconds"] for pair in pairs)
            failed = next((pair for pair in pairs if pair["failed"]), None)
            if failed is None:
                queue[clause] = []
                continue
            queue[clause] = queue[clause][queue[clause].index(failed["test"]) + 1 :]
            suspects.append((clause, failed["test"], failed["reason"]))
        confirm = [
            {"group": 2 * index + alone, "clause": clause.to_json() if not alone else None, "test": test}
            for index, (clause, test, _) in enumerate(suspects)
            for alone in (0, 1)
        ]
        again = {pair["group"]: pair for pair in runner.run_plan(confirm, recorded)} if confirm else {}
        for index, (clause, test, reason) in enumerate(suspects):
            with_removal, without = again[2 * index], again[2 * index + 1]
            outcomes[clause].seconds += with_removal["seconds"] + without["seconds"]
            if with_removal["failed"] and not without["failed"]:
                outcomes[clause].killed_by, outcomes[clause].reason = test, reason
                queue[clause] = []
            elif not with_removal["failed"]:
                outcomes[clause].flaky.append((test, f"failed with the removal ({reason}), then passed with it"))
            else:
                failing.add(test)
                outcomes[clause].flaky.append((test, "fails without the removal too"))
        pending = [clause for clause in pending if queue[clause]]
        for clause in pending:
            queue[clause] = [test for test in queue[clause] if test not in failing]
    return [outcomes[clause] for clause in clauses]


def _row(outcome: Outcome) -> str:
    clause = outcome.clause
    place = f" (in `{clause.within}`)" if clause.within else ""
    flaky = "".join(f"; left out: {test}, {why}" for test, why in outcome.flaky)
    return (
        f"| `{clause.write}` | {clause.joined_by} `{clause.text}`{place} | {outcome.tests} | "
        f"{outcome.verdict}{flaky} | {outcome.seconds:.0f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reliability.ablation", description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", default=[], help="clauses whose name holds this text (repeatable)")
    parser.add_argument("--list", action="store_true", help="print the clauses and stop")
    parser.add_argument("--jobs", type=int, default=1, help="clauses run at once (default 1)")
    parser.add_argument(
        "--together", action="store_true", help="all clauses in one test process per round (see ablate_together)"
    )
    parser.add_argument("--cap", type=float, help="with --together: each clause's tests up to these recorded seconds")
    parser.add_argument(
        "--first", action="append", default=[], help="with --together: tests under this path first (repeatable)"
    )
    parser.add_argument("--tests", nargs="*", default=list(TEST_SET), help="the test set (default: %(default)s)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds a test may take (default 900)")
    parser.add_argument("--record", type=Path, help="a recording to use (written there when missing)")
    parser.add_argument(
        "--leave-out", action="append", default=[], help="a test id the recording leaves out (repeatable)"
    )
    parser.add_argument("--out", type=Path, help="the outcomes as JSON, rewritten after each clause")
    options = parser.parse_args(argv)

    clauses = all_clauses(conditions())
    if options.only:
        clauses = [clause for clause in clauses if any(text in clause.name for text in options.only)]
    if options.list:
        for clause in clauses:
            print(clause.name)
        print(f"{len(clauses)} clauses", file=sys.stderr)
        return 0

    with tempfile.TemporaryDirectory(prefix="queue-ablation-") as directory:
        runner = Runner(Path(directory), options.timeout)
        started = time.monotonic()
        if options.record is not None and options.record.exists():
            recorded = json.loads(options.record.read_text())
        else:
            print(f"recording the conditions sent by {' '.join(options.tests)}", file=sys.stderr, flush=True)
            recorded = record(options.tests, runner, options.leave_out)
            if options.record is not None:
                options.record.write_text(json.dumps(recorded))
        failing = {test for test, seen in recorded["tests"].items() if seen["outcome"] == "failed"}
        for test in sorted(failing):
            print(f"left out, failing without any removal: {test}", file=sys.stderr)
        clauses += _unseen(recorded, clauses, options.only)
        print(f"{len(clauses)} clauses, recorded in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)

        outcomes: list[Outcome] = []

        def run(clause: Clause) -> Outcome:
            outcome = ablate(clause, recorded, runner, failing)
            notes = "".join(f"\n  left out: {test}: {why}" for test, why in outcome.flaky)
            print(f"{clause.name}: {outcome.verdict} ({outcome.seconds:.0f} s){notes}", file=sys.stderr, flush=True)
            outcomes.append(outcome)
            if options.out is not None:
                _write(options.out, outcomes, time.monotonic() - started)
            return outcome

        if options.together:
            ordered = ablate_together(clauses, recorded, runner, failing, options.cap, tuple(options.first))
            for outcome in ordered:
                print(f"{outcome.clause.name}: {outcome.verdict}", file=sys.stderr, flush=True)
        else:
            with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
                ordered = list(pool.map(run, clauses))
        elapsed = time.monotonic() - started

    killed = sum(1 for outcome in ordered if outcome.killed_by)
    print("| write | clause | tests | outcome | s |")
    print("| --- | --- | --- | --- | --- |")
    for outcome in ordered:
        print(_row(outcome))
    print(f"\n{len(ordered)} clauses, {killed} killed, {len(ordered) - killed} not; {elapsed:.0f} s in all")
    if options.out is not None:
        _write(options.out, ordered, elapsed)
    return 0


def _unseen(recorded: dict[str, Any], clauses: list[Clause], only: list[str]) -> list[Clause]:
    """Clauses of conditions sent at run time that the reading of the source missed (reported, and run too)."""
    unseen = sorted(
        {
            clause
            for sent in recorded["writes"].values()
            for write, condition in sent
            for clause in clauses_of(write, condition)
            if not only or any(text in clause.name for text in only)
        }
        - set(clauses)
    )
    for clause in unseen:
        print(f"sent at run time but not found in the source: {clause.name}", file=sys.stderr)
    return unseen


def _write(path: Path, outcomes: list[Outcome], elapsed: float) -> None:
    killed = sum(1 for outcome in outcomes if outcome.killed_by)
    listed = [{**asdict(outcome), "verdict": outcome.verdict} for outcome in outcomes]
    summary = {"clauses": len(outcomes), "killed": killed, "seconds": round(elapsed), "outcomes": listed}
    path.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    sys.exit(main())
