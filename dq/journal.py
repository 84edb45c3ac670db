"""The local server's write-ahead journal: records appended in the order they were applied, durable before the
answer to the request that made them leaves.

A record is framed as its length and its CRC-32, then its JSON. A process killed while it writes leaves at most
its last record unfinished; reading stops at the first frame that is short or does not match its checksum, so an
unfinished tail is dropped, never replayed half. Records that were acknowledged precede it: each was written
whole and synced before its answer was sent.

Appending is `append` (under the caller's lock, so that journal order is apply order) and then `sync` outside it:
`os.write` alone already survives the death of the process; `sync` makes the record survive the machine too. One
`fsync` covers every record written before it, so requests that wait on it together share one (group commit) and
the lock is not held for the disk's latency.
"""

from __future__ import annotations

import json
import os
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

_FRAME: Final = struct.Struct(">II")
# Far above any real record (a 10 MB body, base64-encoded, with its headers): a length beyond it is a torn frame.
MAX_RECORD_BYTES: Final = 256 * 1024 * 1024


def encode(record: dict[str, Any]) -> bytes:
    payload = json.dumps(record, separators=(",", ":")).encode()
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


@dataclass(frozen=True)
class Contents:
    """A file's whole records, in order, and the bytes after the last of them that form no whole record."""

    records: list[dict[str, Any]]
    torn_bytes: int


def read(path: Path) -> Contents:
    """Every whole record of `path` (none when it is missing), up to the first frame that is not whole."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Contents([], 0)
    records = list(_frames(data))
    end = sum(_FRAME.size + size for size, _ in records)
    return Contents([record for _, record in records], len(data) - end)


def _frames(data: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    offset = 0
    while offset + _FRAME.size <= len(data):
        size, checksum = _FRAME.unpack_from(data, offset)
        payload = data[offset + _FRAME.size : offset + _FRAME.size + size]
        if size > MAX_RECORD_BYTES or len(payload) < size or zlib.crc32(payload) != checksum:
            return
        try:
            record = json.loads(payload)
        except ValueError:
            return
        yield size, record
        offset += _FRAME.size + size


def write_file(path: Path, records: Iterator[dict[str, Any]]) -> None:
    """Writes `records` to `path` (readable by its owner alone) and syncs it; the caller renames it into place."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as file:
        for record in records:
            file.write(encode(record))
        file.flush()
        os.fsync(file.fileno())


def sync_directory(path: Path) -> None:
    """Makes a file created, renamed or removed in `path` survive a crash of the machine."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class Journal:
    """A new, empty journal file (readable by its owner alone). `append` is called under the lock that orders the
    writes it records; `sync(position)` returns once everything up to `position` is on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o600)
        self._written = 0
        self._synced = 0
        self._sync_lock = threading.Lock()
        self._retired = False

    @property
    def size(self) -> int:
        return self._written

    def append(self, record: dict[str, Any]) -> int:
        """Writes `record` whole; its end position, for `sync`. Raises `OSError` when the disk refuses it."""
        frame = encode(record)
        data = memoryview(frame)
        while data:
            data = data[os.write(self._descriptor, data) :]
        self._written += len(frame)
        return self._written

    def sync(self, position: int) -> None:
        """Returns once the journal is on disk up to `position`. A journal retired by a snapshot that holds its
        records has nothing left to sync."""
        with self._sync_lock:
            if self._retired or self._synced >= position:
                return
            target = self._written
            os.fsync(self._descriptor)
            self._synced = target

    def retire(self) -> None:
        """Closes the file once no `sync` is running: its records are in a snapshot that is on disk."""
        with self._sync_lock:
            if not self._retired:
                self._retired = True
                os.close(self._descriptor)
