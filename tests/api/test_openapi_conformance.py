"""The OpenAPI document says exactly what `dq local` accepts: a short, seeded Schemathesis run with every check.

Schemathesis generates requests from `GET /openapi.json` (valid ones, which must be accepted, and invalid ones,
which must be refused with a documented status), sends undeclared methods to every path (405 with `Allow`), and
checks every answer's status, content type, headers and body against the document. The run is seeded, so it sends
the same requests every time; `--stress` runs a longer one. The one departure from Schemathesis' own checks is in
`schemathesis_hooks`: a 400 for a rule the document can state only in words (the queue's own settings).
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dq.local_server import LocalServer
from infra.paths import CORE_SOURCE_ROOT, REPO_ROOT

logger = logging.getLogger("tests.api")

SEED = 35
# The coverage phase (every operation's boundary values, valid and not, and undeclared methods) and a few generated
# requests per operation; `--stress` generates many more and adds the stateful phase (sequences of calls).
EXAMPLES = 3
STRESS_EXAMPLES = 100


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer(port=0, table="conformance", sweep_interval=0, log=io.StringIO()) as running:
        yield running


def test_schemathesis_finds_nothing_against_dq_local(
    server: LocalServer, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    stress = request.config.getoption("--stress")
    phases = "coverage,fuzzing,stateful" if stress else "coverage,fuzzing"
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", f"{server.url}/openapi.json",
        "--checks", "all", "--exclude-checks", "positive_data_acceptance",
        "--phases", phases, "--seed", str(SEED), "--max-examples", str(STRESS_EXAMPLES if stress else EXAMPLES),
        "--workers", "1", "--request-timeout", "60", "--generation-database", "none", "--no-color",
        "--suppress-health-check", "all",
    ]  # fmt: skip
    environ = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.api.schemathesis_hooks",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(CORE_SOURCE_ROOT)]),
    }
    started = time.monotonic()
    # From a folder of its own: Schemathesis keeps state in `.schemathesis/` where it runs.
    run = subprocess.run(command, capture_output=True, text=True, env=environ, cwd=tmp_path, timeout=900)
    elapsed = time.monotonic() - started
    summary = run.stdout[run.stdout.find("SUMMARY") :] if "SUMMARY" in run.stdout else run.stdout[-3000:]
    assert run.returncode == 0, f"Schemathesis found something ({elapsed:.0f} s):\n{run.stdout[-12000:]}{run.stderr}"
    logger.info("schemathesis: %.0f s\n%s", elapsed, summary)
