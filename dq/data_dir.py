"""Where `dq local` keeps its embedded DynamoDB's and S3's data between runs: a snapshot and a journal in one folder.

Every request that changes DynamoDB or S3 and that moto answers with success is appended to the journal before its
answer leaves, inside the lock that serializes moto (`dq.embedded_dynamodb`), so the journal's order is the order
in which the requests were applied. moto applies each request deterministically (a condition carries its own
values; a transaction token is judged at the time recorded with it), so replaying the journal into an empty moto
rebuilds the same state. The record is written before the lock is released and synced before the answer leaves:
a killed process loses no acknowledged write, and neither does a crash of the machine. A read may see a write
whose `fsync` is still running, as a read in DynamoDB may see a write whose answer is still on its way.

A start replays the snapshot, then the journal since it, into an empty moto, drops an unfinished last record (a
process killed while writing it: it was never acknowledged), and writes a new snapshot, the state as the requests
that rebuild it (`dq.moto_state`), so that the next start replays the state, not its history. While serving, a
journal that grows past the size of the snapshot (and at least `COMPACT_BYTES`) is folded into a new snapshot the
same way. The snapshot is written beside the old one, synced, and renamed over it; it names the journal that
follows it, so a crash at any point leaves one consistent pair.

Cost: one `write` per state-changing request under moto's lock and one `fsync` (a few ms) shared by the requests
that wait on it together; reads cost nothing. A failed write to the journal stops the server's DynamoDB: every
later request is answered with an error, since moto then holds a change that a restart would not find.

The folder holds `lock` (held by the running server, so that a second one refuses the folder), `snapshot`,
`journal-N` and a `.gitignore` that keeps the folder out of a repository.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from . import journal, moto_state
from .embedded_dynamodb import _LOCK, applied_at
from .journal import Journal

FORMAT: Final = 1
# A journal is folded into a snapshot once it is larger than this and than the snapshot.
COMPACT_BYTES: Final = 64 * 1024 * 1024
SNAPSHOT: Final = "snapshot"
LOCK: Final = "lock"
GITIGNORE_NOTE: Final = "dq local's data: a snapshot and a journal of its embedded DynamoDB and S3"
App = Callable[..., Any]


class DataDirError(Exception):
    """The folder cannot be used; the message is one line meant for the user."""


@dataclass
class Recovery:
    """What a start found in the folder and kept."""

    replayed: int = 0
    torn_bytes: int = 0
    failed: int = 0
    counts: moto_state.Counts = field(default_factory=moto_state.Counts)


class DataDir:
    """One server's folder: `open()` takes it (or refuses it when another server holds it), `attach(app)`
    rebuilds moto from it and answers the app that keeps every change, `close()` lets it go."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path).absolute()
        self.recovery = Recovery()
        self._lock_file: io.TextIOWrapper | None = None
        self._generation = 0
        self._journal: Journal | None = None
        self._app: App | None = None
        self._regions: set[str] = set()
        self._compact_at = COMPACT_BYTES
        self._failure: str | None = None

    def open(self, reset: bool = False) -> DataDir:
        """Creates the folder if missing and locks it; `reset` then empties it (a start with nothing kept). A
        folder that holds other files and no data of a `dq local` is refused: it was named by mistake."""
        try:
            if not self.path.exists():
                self.path.mkdir(mode=0o700, parents=True)
                (self.path / ".gitignore").write_text(f"# {GITIGNORE_NOTE}\n*\n")
            elif not any((self.path / name).exists() for name in (LOCK, SNAPSHOT)) and any(self.path.iterdir()):
                raise DataDirError(
                    f"{self.path} holds other files and no data of dq local: give --data-dir a new or empty folder"
                )
            lock_file = (self.path / LOCK).open("a+")
        except OSError as error:
            raise DataDirError(f"cannot use {self.path} for data: {error.strerror or error}") from None
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            lock_file.seek(0)
            holder = lock_file.read().strip()
            lock_file.close()
            raise DataDirError(
                f"{self.path} is in use by another dq local{f' (pid {holder})' if holder else ''}: stop it, or give "
                "this one another --data-dir (or --in-memory)"
            ) from None
        lock_file.seek(0)
        lock_file.truncate()
        lock_file.write(f"{os.getpid()}\n")
        lock_file.flush()
        self._lock_file = lock_file
        if reset:
            for path in self._state_files():
                path.unlink()
        return self

    def _state_files(self) -> list[Path]:
        return [path for path in self.path.iterdir() if path.name.startswith((SNAPSHOT, "journal-"))]

    def close(self) -> None:
        """Syncs and closes the journal and lets the folder go. A request that arrives later is refused: the
        server is stopping."""
        with _LOCK:
            self._failure = "dq local is stopping"
            last, self._journal = self._journal, None
        try:
            if last is not None:
                try:
                    last.sync(last.size)
                finally:
                    last.retire()
        finally:
            if self._lock_file is not None:
                self._lock_file.close()
                self._lock_file = None

    def attach(self, app: App) -> App:
        """Rebuilds moto's state from the folder through `app` (moto's own WSGI app, in a process whose moto holds
        nothing yet), writes it as a new snapshot, and answers the app that serves requests while keeping them."""
        if self._lock_file is None:
            raise DataDirError(f"{self.path} is not open")
        _require_empty_moto()
        self._app = app
        with _LOCK:
            snapshot = journal.read(self.path / SNAPSHOT)
            header = snapshot.records[0] if snapshot.records else {"format": FORMAT, "journal": 0}
            if snapshot.torn_bytes or header.get("format") != FORMAT or not isinstance(header.get("journal"), int):
                raise DataDirError(
                    f"{self.path / SNAPSHOT} is damaged or from another dq version: move the folder away to keep it, "
                    "or start with --reset"
                )
            self._generation = header["journal"]
            since = journal.read(self._journal_path(self._generation))
            self._replay(snapshot.records[1:])
            self._replay(since.records)
            self.recovery.torn_bytes = since.torn_bytes
            try:
                self._compact()
            except (OSError, moto_state.MotoError) as error:
                raise DataDirError(f"cannot write a snapshot in {self.path}: {error}") from None
        return self._serve

    def _journal_path(self, generation: int) -> Path:
        return self.path / f"journal-{generation}"

    def _replay(self, records: Iterable[dict[str, Any]]) -> None:
        assert self._app is not None
        for entry in records:
            self.recovery.replayed += 1
            try:
                self._regions.add(entry["region"])
                with applied_at(entry.get("time")):
                    answer = moto_state.replay(self._app, entry)
            except (KeyError, TypeError, ValueError):
                self.recovery.failed += 1
                continue
            if not answer.ok:
                self.recovery.failed += 1
        self._regions.discard("")

    def _compact(self) -> None:
        """Under `_LOCK`: writes the state as a new snapshot that names a new, empty journal, then retires the old
        journal. The new journal exists before the snapshot that names it, and once the snapshot is renamed into
        place the new journal takes every later record. An error before the rename leaves the old pair as it
        was, and raises."""
        assert self._app is not None
        generation = self._generation + 1
        new_journal = Journal(self._journal_path(generation))
        counts = moto_state.Counts()
        temporary = self.path / f"{SNAPSHOT}.new"
        try:
            header = {"format": FORMAT, "journal": generation, "written": time.time()}
            records = moto_state.state_records(self._app, self._regions, counts)
            journal.write_file(temporary, _chain([header], records))
            os.replace(temporary, self.path / SNAPSHOT)
        except BaseException:
            new_journal.retire()
            for path in (temporary, new_journal.path):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            raise
        previous, self._journal, self._generation = self._journal, new_journal, generation
        try:
            journal.sync_directory(self.path)
        finally:
            # Only now: a request waiting on the old journal returns once it is retired, and its record is in
            # the snapshot, on disk once the rename is.
            if previous is not None:
                previous.retire()
        self.recovery.counts = counts
        self._regions |= counts.regions
        self._compact_at = max(COMPACT_BYTES, (self.path / SNAPSHOT).stat().st_size)
        for path in self._state_files():
            if path.name.startswith("journal-") and path != new_journal.path:
                path.unlink()

    def _serve(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """moto's app, one request at a time, each change journaled before its answer leaves."""
        assert self._app is not None
        body = _read_body(environ)
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        received = dict(environ)
        written: tuple[Journal, int] | None = None
        with _LOCK:
            if self._failure is not None:
                return _refuse(environ, start_response, self._failure)
            moment = time.time()
            with applied_at(moment):
                answer = moto_state.call(self._app, environ)
            if answer.ok and moto_state.changes_state(received):
                try:
                    written = self._append(moto_state.record(received, body, moment))
                except Exception as error:
                    self._failure = f"the data in {self.path} could not be written ({error}): restart dq local"
                    return _refuse(environ, start_response, self._failure)
        if written is not None:
            try:
                written[0].sync(written[1])
            except OSError as error:
                with _LOCK:
                    self._failure = f"the data in {self.path} could not be synced ({error}): restart dq local"
                return _refuse(environ, start_response, self._failure)
        start_response(f"{answer.status} {_reason(answer.status)}", answer.headers)
        return [answer.body]

    def _append(self, entry: dict[str, Any]) -> tuple[Journal, int]:
        """Under `_LOCK`: the journal and the position `entry` ends at, folding the journal into a snapshot when
        it has grown past `_compact_at` (the entry is then in the snapshot, and already on disk)."""
        assert self._journal is not None
        written = self._journal, self._journal.append(entry)
        if entry["region"]:
            self._regions.add(entry["region"])
        if self._journal.size >= self._compact_at:
            generation = self._generation
            try:
                self._compact()
            except (OSError, moto_state.MotoError):
                if self._generation != generation:
                    raise
                # The old snapshot and journal still hold everything: try again once the journal has doubled.
                self._compact_at = 2 * self._journal.size
        return written


def _chain(*parts: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for part in parts:
        yield from part


def _require_empty_moto() -> None:
    """A folder is replayed into a moto that holds nothing: moto's state is one per process, and the snapshot
    is all of it, so a second server in the same process would mix its tables and buckets into this one's."""
    from moto.dynamodb.models import dynamodb_backends
    from moto.s3.models import s3_backends

    if len(dynamodb_backends) or len(s3_backends):
        raise DataDirError(
            "a data dir needs a process whose moto holds nothing yet: run this dq local in a process of its own"
        )


def _read_body(environ: dict[str, Any]) -> bytes:
    """The whole request body, read before moto's lock is taken (a slow client holds no one up)."""
    stream = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH")
    if length and length.isdigit():
        return bytes(stream.read(int(length)))
    if environ.get("wsgi.input_terminated"):
        return bytes(stream.read())
    return b""


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _refuse(environ: dict[str, Any], start_response: Callable[..., Any], message: str) -> Iterable[bytes]:
    """A 500 in the protocol of the caller's service, which its SDK reports (after its retries) as an error."""
    if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
        content_type = "application/x-amz-json-1.0"
        body = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": message})
    else:
        content_type = "application/xml"
        body = f"<Error><Code>InternalError</Code><Message>{_xml_text(message)}</Message></Error>"
    start_response("500 Internal Server Error", [("Content-Type", content_type)])
    return [body.encode()]


def _xml_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
