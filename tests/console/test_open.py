"""`dq console --open`: the browser is handed a private file that leads to the console, never the URL with its
secret (a process's arguments are visible to every local user); the file is the caller's alone and is gone when
the console stops. The browser here is a recorder named by `$BROWSER`, which Python's `webbrowser` runs first; a
real browser given such a page lands on the console signed in (test_browser.py)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

RECORDER = """#!/bin/sh
page=$(printf '%s' "$1" | sed 's|^file://||')
{
  printf 'argv %s\\n' "$*"
  printf 'modes %s %s\\n' "$(stat -c %a "$page")" "$(stat -c %a "$(dirname "$page")")"
  cat "$page"
} > "$RECORD.part" && mv "$RECORD.part" "$RECORD"
sleep 2  # a browser runs on after reading the page, and `webbrowser` waits for it: a Ctrl-C comes meanwhile
"""


def test_open_hands_the_browser_a_private_page_not_the_secret(tmp_path: Path) -> None:
    recorder = tmp_path / "browser"
    recorder.write_text(RECORDER)
    recorder.chmod(0o700)
    record = tmp_path / "record"
    env = {**os.environ, "BROWSER": str(recorder), "RECORD": str(record), "DQ_ENDPOINT": "http://127.0.0.1:9"}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    console = subprocess.Popen(
        [sys.executable, "-m", "dq.cli", "console", "--open"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert console.stdout is not None
        printed = ""
        while "Ctrl-C stops." not in printed:
            line = console.stdout.readline()
            assert line, console.stderr.read() if console.stderr else "no output"
            printed += line
        url = re.search(r"Open (http://127\.0\.0\.1:\d+/#token=\S+)", printed)
        assert url, printed
        token = url.group(1).split("token=")[1]
        deadline = time.monotonic() + 20
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        argv, modes, *page = record.read_text().splitlines()
        assert token not in argv and argv.startswith("argv file:///")
        assert modes == "modes 600 700"
        assert f'content="0;url={url.group(1)}"' in "".join(page)
        handed = Path(unquote(urlsplit(argv.removeprefix("argv ")).path))
        assert handed.exists() and handed.parent.name.startswith("dq-console-")
    finally:
        console.send_signal(signal.SIGINT)
        console.wait(timeout=20)
    assert console.returncode == 0
    assert not handed.exists() and not handed.parent.exists()
