"""The package as a team installs it: the wheel in a fresh virtualenv with only its declared dependencies, the
library against DynamoDB (moto's server, run by this test), then the `[cli]` extra and the `dq` command.

One virtualenv for both, built once: the base install is checked first, then the extra is added to it. The
versions installed are the pins of requirements*.txt (given to pip as constraints), so pip's cache serves them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from moto.server import ThreadedMotoServer
from queue_core.version import __version__

from infra.paths import REPO_ROOT

# What the wheel is built from: the package's sources and metadata, copied, so the build writes nothing here.
SOURCES = ("pyproject.toml", "README.md", "dq", "layers/queue_core/python")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")

LIBRARY_CHECK = textwrap.dedent(
    """
    import importlib.util
    from queue_core import QueueClient

    for extra in ("typer", "rich", "moto", "aws_cdk"):
        assert importlib.util.find_spec(extra) is None, f"{extra} installed without being asked for"
    client = QueueClient("package-check")
    client.create_table()
    client.create_queue("orders")
    sub = client.queue("orders", "tenant-a")
    sent = sub.send("from the wheel", attributes={"k": "v"})
    [received] = sub.receive(wait_seconds=1)
    assert (received.message_id, received.body, received.attributes) == (sent.message_id, "from the wheel", {"k": "v"})
    sub.delete(received.receipt_handle)
    assert sub.receive() == [] and sub.stats().in_flight == 0
    print("ok")
    """
)


def _pins() -> str:
    """requirements*.txt as constraints: `name==version` lines (pip takes no extras in a constraint)."""
    lines = []
    for name in ("requirements.txt", "requirements-dev.txt"):
        for line in (REPO_ROOT / name).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith("-"):
                lines.append(re.sub(r"\[[^]]*\]", "", line))
    return "\n".join(lines) + "\n"


def _run(*command: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    result = subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        path = REPO_ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=IGNORED)
        else:
            shutil.copy2(path, source / name)
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", out, source)
    [built] = out.glob("*.whl")
    assert built.name == f"dynamo_queue-{__version__}-py3-none-any.whl"
    return built


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv without pip of its own: this venv's pip installs into it (`pip --python`)."""
    venv = tmp_path_factory.mktemp("venv")
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    return venv


@pytest.fixture(scope="module")
def dynamodb_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _install(venv: Path, constraints: Path, requirement: str) -> None:
    pip = (sys.executable, "-m", "pip", "--python", venv / "bin" / "python")
    _run(*pip, "install", "--quiet", "-c", constraints, requirement)


def test_the_wheel_alone_sends_receives_and_deletes_then_its_cli_extra_runs_dq(
    wheel: Path, fresh_venv: Path, dynamodb_endpoint: str, tmp_path: Path
) -> None:
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(_pins())
    python = fresh_venv / "bin" / "python"
    env = {
        "PATH": os.environ["PATH"],
        "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }

    _install(fresh_venv, constraints, str(wheel))
    assert _run(python, "-c", LIBRARY_CHECK, env=env).strip() == "ok"
    metadata = _run(python, "-c", "import importlib.metadata as m; print('\\n'.join(m.requires('dynamo-queue')))")
    base = sorted(line for line in metadata.splitlines() if "extra ==" not in line)
    assert base == ["aws-lambda-powertools[tracer]<4,>=3.37", "boto3<2,>=1.35", "pydantic<3,>=2.14"]

    _install(fresh_venv, constraints, f"{wheel}[cli]")
    dq = fresh_venv / "bin" / "dq"
    assert "migrate" in _run(dq, "--help", env=env)
    assert _run(dq, "--version", env=env) == f"dq {__version__} (table layout 2)\n"
    listed = _run(dq, "--table", "package-check", "--dynamodb-endpoint", dynamodb_endpoint, "queues", "ls", env=env)
    assert "orders" in listed


def _site_packages(python: str | Path) -> str:
    return _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()


def test_the_wheels_local_extra_runs_dq_local_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    """`pip install 'dynamo-queue[local]'` gives a `dq local` that serves the API from anywhere: the handlers it
    runs ship in the wheel. Offline: the extra's dependencies are this venv's own (a `.pth` line lends its
    site-packages to the new venv, where only the wheel is installed), and each is checked against what the
    wheel's `[local]` extra asks for."""
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    (Path(_site_packages(python)) / "lent.pth").write_text(_site_packages(sys.executable) + "\n")
    pip = (sys.executable, "-m", "pip", "--python", python)
    _run(*pip, "install", "--quiet", "--no-index", "--no-deps", "--ignore-installed", wheel)
    _run(python, "-c", EXTRA_SATISFIED, "local")

    work = tmp_path / "elsewhere"
    work.mkdir()
    port, dynamodb_port = _free_port(), _free_port()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    log = tmp_path / "dq-local.log"
    command = [venv / "bin" / "dq", "local", "--port", port, "--dynamodb-port", dynamodb_port, "--sweep-interval", 0]
    with log.open("wb") as out:
        server = subprocess.Popen([str(part) for part in command], cwd=work, env=env, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while "Ctrl-C stops." not in log.read_text(errors="replace"):
            assert server.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.1)
        request = urllib.request.Request(f"http://127.0.0.1:{port}/queues/from-the-wheel", method="PUT")
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 201 and json.loads(answer.read())["name"] == "from-the-wheel"
        # The request's line is written once its answer is sent: the client can hold the answer first.
        while "PUT /queues/from-the-wheel 201" not in log.read_text(errors="replace"):
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.05)
    finally:
        server.terminate()
        server.wait(timeout=10)
    served = log.read_text()
    assert "PUT /queues/from-the-wheel 201" in served
    assert '"_aws"' not in served, "the request log has no CloudWatch EMF line (a ColdStart metric per function)"
    where = _run(
        python, "-c", "import dq.environments as e, queue_api; print(e.FUNCTIONS_DIR, queue_api.__file__)", cwd=work
    )
    assert str(REPO_ROOT) not in where and all(path.startswith(str(venv)) for path in where.split()), where


# Run in the new venv with the extra's name: each requirement of the extra (and of the extras it names) is met
# by an installed distribution, at a version in the range the wheel declares.
EXTRA_SATISFIED = textwrap.dedent(
    """
    import importlib.metadata as metadata
    import sys

    from packaging.requirements import Requirement

    def met(extra, seen=()):
        for line in metadata.requires("dynamo-queue"):
            requirement = Requirement(line)
            if requirement.marker is None or not requirement.marker.evaluate({"extra": extra}):
                continue
            if requirement.name == "dynamo-queue":
                for inner in requirement.extras - set(seen):
                    met(inner, (*seen, extra))
                continue
            installed = metadata.version(requirement.name)
            assert requirement.specifier.contains(installed, prereleases=True), (line, installed)

    met(sys.argv[1])
    """
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
