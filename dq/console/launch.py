"""`dq console --open` without the secret on any command line.

A browser is started with its address as an argument, and every local user can read a process's arguments (`ps`).
So the browser is given a file instead: a page that sends it on to the console's URL, in a directory only the
caller can enter, readable only by the caller. The file is removed once the browser had time to read it, and at
the latest when the console stops.
"""

from __future__ import annotations

import html
import os
import shutil
import tempfile
import threading
import webbrowser
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

# A browser that is not running yet may take a while to start and read the file.
KEEP_SECONDS: Final = 120.0
PAGE_NAME: Final = "open-console.html"


@dataclass
class Opened:
    """The private file handed to the browser; `remove()` deletes it and its directory (once)."""

    path: Path
    _timer: threading.Timer | None = field(default=None, repr=False)

    def show(self) -> None:
        """Hands the page to the default browser (which may take until the browser process ends)."""
        webbrowser.open(self.path.as_uri())

    def remove(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        shutil.rmtree(self.path.parent, ignore_errors=True)


def private_page(url: str) -> Path:
    """A 0600 page in a fresh 0700 directory that leads the browser to `url` (a refresh, and a link)."""
    folder = Path(tempfile.mkdtemp(prefix="dq-console-"))  # created 0700
    path = folder / PAGE_NAME
    quoted = html.escape(url, quote=True)
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="0;url={quoted}"><title>dq console</title></head>'
        f'<body><p><a href="{quoted}">Open the dq console</a></p></body></html>\n'
    )
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(page)
    return path


def open_privately(url: str, keep_seconds: float = KEEP_SECONDS) -> Opened:
    """The private page that leads to `url`, gone after `keep_seconds`; `show()` hands it to the browser. Two
    steps, so that the caller holds the page before the browser starts: a Ctrl-C while the browser starts (Python's
    `webbrowser` may wait for the browser's process) still finds it and removes it, secret and all."""
    path = private_page(url)
    opened = Opened(path)
    timer = threading.Timer(keep_seconds, opened.remove)
    timer.daemon = True
    opened._timer = timer
    timer.start()
    return opened
