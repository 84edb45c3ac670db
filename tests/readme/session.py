"""A new user's terminal for the README test: a fresh directory, a `dq local` of its own, one bash session.

The working directory holds only a `.venv` link to the project's virtual environment, HOME is empty, no AWS_*
variable is set and PATH is the system's: the README's own set-up lines must make `dq`, `aws`, `celery` and the
library reachable. The server's ports replace the README's defaults (8080 for the API, 8081 for its DynamoDB) in
every block and every shown output, and that is the only change made to what the README prints.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.readme.blocks import SHELL_LANGUAGES, Block, output_matches

ROOT = Path(__file__).resolve().parents[2]
API_PORT = 8080
DYNAMODB_PORT = 8081
BLOCK_TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class BlockFailed(AssertionError):
    """A block did not run as printed, or printed something else than the README shows."""


class Terminal:
    """The server, the bash session and the background blocks; `close()` stops them all."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.work = directory / "work"
        self.scratch = directory / "scratch"
        home = directory / "home"
        for path in (self.work, self.scratch, home):
            path.mkdir(parents=True)
        (self.work / ".venv").symlink_to(ROOT / ".venv")
        self.api_port, self.dynamodb_port = free_port(), free_port()
        self.environ = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("AWS_", "DQ_", "VIRTUAL_ENV", "PYTHON", "PYTEST", "CELERY"))
        }
        system_path = [part for part in os.environ.get("PATH", "").split(":") if not part.startswith(str(ROOT))]
        self.environ.update(
            HOME=str(home),
            PATH=":".join(system_path) or "/usr/local/bin:/usr/bin:/bin",
            NO_COLOR="1",
            TERM="dumb",
            COLUMNS="80",
            PYTHONDONTWRITEBYTECODE="1",
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            # dq's own default target is http://127.0.0.1:8080: the same substitution, made where dq reads it.
            DQ_ENDPOINT=f"http://127.0.0.1:{self.api_port}",
        )
        self.server: subprocess.Popen[bytes] | None = None
        self.shell: subprocess.Popen[bytes] | None = None
        self.background: list[tuple[int, Path]] = []
        self.counter = 0

    # ---- the server and the shell ----

    def start(self) -> None:
        self.server_log = self.directory / "dq-local.log"
        self.server = subprocess.Popen(
            [
                str(ROOT / ".venv/bin/dq"),
                "local",
                "--port",
                str(self.api_port),
                "--dynamodb-port",
                str(self.dynamodb_port),
            ],
            cwd=self.work,
            env=self.environ,
            stdout=self.server_log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while "Ctrl-C stops." not in self.server_log.read_text(errors="replace"):
            if self.server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dq local did not start:\n{self.server_log.read_text(errors='replace')}")
            time.sleep(0.1)
        self.shell = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=self.work,
            env=self.environ,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def close(self) -> None:
        for pid, _log in self.background:
            _stop_group(pid)
        if self.shell is not None:
            self.shell.stdin.close()  # type: ignore[union-attr]
            _stop_group(self.shell.pid)
            self.shell.wait(timeout=10)
        if self.server is not None:
            _stop_group(self.server.pid)  # SIGTERM ends it at once; nothing of it needs to be kept
            self.server.wait(timeout=10)

    def substitute(self, text: str) -> str:
        """The README's default ports become this server's (and nothing else changes)."""
        return text.replace(f":{API_PORT}", f":{self.api_port}").replace(f":{DYNAMODB_PORT}", f":{self.dynamodb_port}")

    def _unit(self, text: str, suffix: str) -> Path:
        self.counter += 1
        path = self.scratch / f"unit{self.counter:03d}{suffix}"
        path.write_text(text, encoding="utf-8")
        return path

    def run_in_shell(self, body: str, timeout: float = BLOCK_TIMEOUT) -> tuple[int, str]:
        """Runs `body` (shell text) in a subshell of the session, then carries its exported variables and its
        working directory back to the session, as if it had run in the session itself; (status, output)."""
        assert self.shell is not None and self.shell.stdin is not None and self.shell.stdout is not None
        unit = self._unit(body, ".sh")
        out, env, pwd = unit.with_suffix(".out"), unit.with_suffix(".env"), unit.with_suffix(".pwd")
        done = f"__readme_done_{self.counter}__"
        script = (
            f"( source {unit}; status=$?; export -p > {env}; pwd > {pwd}; exit $status ) > {out} 2>&1 < /dev/null; "
            f'status=$?; if [ -s {env} ]; then source {env}; cd "$(cat {pwd})"; fi; echo "{done} $status"\n'
        )
        self.shell.stdin.write(script.encode())
        self.shell.stdin.flush()
        deadline = time.monotonic() + timeout
        answer = b""
        while done.encode() not in answer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BlockFailed(f"still running after {timeout:.0f} s; output so far:\n{_read(out)}")
            ready, _, _ = select.select([self.shell.stdout], [], [], remaining)
            if ready:
                chunk = os.read(self.shell.stdout.fileno(), 65536)
                if not chunk:
                    raise BlockFailed(f"the shell session ended; output:\n{_read(out)}")
                answer += chunk
        status = int(answer.decode().rsplit(done, 1)[1].split()[0])
        return status, _read(out)

    # ---- blocks ----

    def run(self, block: Block, again: bool = False) -> None:
        """Runs one block as the convention says; raises `BlockFailed` when it does not run as printed.

        `again`: the block's second run, right after its first, as a reader who runs it twice does. It must
        succeed as well (no error, no hang); its output is not compared, since the first run changed what it shows
        (a second message in flight, say). A background block is not started twice."""
        if block.marker == "file":
            self._save(block)
        elif block.marker == "background":
            if not again:
                self._background(block)
        elif block.language == "console":
            # Every command runs (later ones may need earlier ones' effects); all failures are reported.
            failures = []
            for command, expected in block.commands:
                status, output = self.run_in_shell(self.substitute(command) + "\n")
                try:
                    # A command shown with no output must print nothing (an unexpected warning is a difference).
                    _check(command, status, output, None if again else self.substitute(expected))
                except BlockFailed as failure:
                    failures.append(str(failure))
            if failures:
                raise BlockFailed("\n\n".join(failures))
        elif block.language in SHELL_LANGUAGES:
            status, output = self.run_in_shell("set -e -o pipefail\n" + self.substitute(block.text))
            _check(block.text, status, output, self._shown(block, again))
        elif block.language == "python":
            program = self._unit(self.substitute(block.text), ".py")
            status, output = self.run_in_shell(f"python3 {program}\n")
            _check(block.text, status, output, self._shown(block, again))
        else:
            raise BlockFailed(f"a {block.language} block is not run")

    def _shown(self, block: Block, again: bool) -> str | None:
        return None if again or block.output is None else self.substitute(block.output)

    def _save(self, block: Block) -> None:
        source = self._unit(self.substitute(block.text), ".txt")
        target = block.argument
        status, output = self.run_in_shell(f'mkdir -p "$(dirname {target})" && cp {source} {target}\n')
        if status:
            raise BlockFailed(f"cannot save the block as {target}: {output}")

    def _background(self, block: Block) -> None:
        if block.language not in SHELL_LANGUAGES:
            raise BlockFailed("only a shell block can run in the background")
        unit = self._unit(self.substitute(block.text), ".sh")
        log = unit.with_suffix(".out")
        status, output = self.run_in_shell(
            f"setsid bash {unit} > {log} 2>&1 < /dev/null & echo $! > {unit.with_suffix('.pid')}\n"
        )
        if status:
            raise BlockFailed(f"cannot start in the background: {output}")
        self.background.append((int(unit.with_suffix(".pid").read_text()), log))

    def background_logs(self) -> str:
        return "\n".join(f"--- {log.name}\n{_read(log)[-3000:]}" for _pid, log in self.background)


def _check(shown: str, status: int, output: str, expected: str | None) -> None:
    if status != 0:
        raise BlockFailed(f"exit status {status} from:\n{shown}\noutput:\n{output}")
    if expected is not None and not output_matches(expected, output):
        raise BlockFailed(
            f"printed something else than the README shows.\nran:\n{shown}\nREADME shows:\n"
            f"{expected}\nprinted:\n{output}"
        )


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _stop_group(pid: int, first: int = signal.SIGTERM) -> None:
    """Signals the process group `pid` leads, and SIGKILLs it when a live member is left after 5 s."""
    try:
        os.killpg(pid, first)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not _live_members(pid):
            return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return


def _live_members(group: int) -> bool:
    """Whether a process of `group` is still running (zombies waiting to be reaped do not count)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False
