"""The on-disk spool of the alert sink (pulse/alerts/sink.py) and the SLI sink (pulse/sli_sink/): what the
destination could not take yet, as lines in `<directory>/<file>`, bounded in bytes, private to our user, and true
to itself when the disk fails.

Generic over what it holds (a `SpoolCodec` encodes, decodes and names the incident of an item), so this base
module does not import the alert model; `pulse.alerts.sink.AlertSpool` is the spool of `Alert`s.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from pydantic import ValidationError

from pulse.private_files import APPEND, LOCK, READ, WRITE_NEW, Opener, make_private_dir, open_private

T = TypeVar("T")

SPOOL_FILE = "alerts.jsonl"
LOCK_FILE = "spool.lock"
TMP_SUFFIX = ".tmp"


class SpoolCodec(Protocol[T]):
    """How a spool turns its items into lines and back, and which items are states of the same incident."""

    def encode(self, item: T, spooled_at: datetime) -> bytes:
        """One line, newline included."""
        ...

    def decode(self, line: bytes) -> T:
        """Raises ValueError (or pydantic's ValidationError) for a line that is not an item."""
        ...

    def incident(self, item: T) -> Hashable:
        """Items with the same key are states of one incident: only the last one needs delivering."""
        ...


@dataclass(frozen=True)
class CorruptLine:
    """A spool line that could not be read back; it is reported, counted and removed at the next rewrite."""

    line_no: int
    """1-based."""
    reason: str


@dataclass(frozen=True)
class SpoolContents(Generic[T]):
    alerts: list[T]
    corrupt: list[CorruptLine]


@dataclass(frozen=True)
class Trimmed:
    """What a bounded write removed from the spool."""

    superseded: int = 0
    """Older states of an incident whose newer state is kept (nothing a receiver would see is lost)."""
    overflow: int = 0
    """Oldest entries dropped because the spool would exceed its byte bound."""
    corrupt: tuple[CorruptLine, ...] = ()
    """Unreadable lines found while rewriting; they are gone from the rewritten spool."""


def latest_indexes(keys: Sequence[Hashable]) -> list[int]:
    """Indexes of the last item per key, ascending (pure)."""
    last = {key: index for index, key in enumerate(keys)}
    return sorted(last.values())


class Spool(Generic[T]):
    """JSON lines appended and fsync'd, never larger than `max_bytes`, rewritten atomically (temp file, fsync,
    rename) when delivered entries are removed.

    When a write would pass the bound, older states of the same incident go first, then the oldest entries,
    counted as overflow: the newest state of the world is what an operator needs after an outage. Callers hold
    `locked()` around every read-modify-write; it excludes other threads and processes. Every write either
    completes or leaves the file and `entries` as they were (a failed append is cut back, a failed rewrite's temp
    file removed); the directory is re-created (0700) at the next write when it went away.
    """

    def __init__(
        self,
        directory: Path,
        max_bytes: int,
        codec: SpoolCodec[T],
        opener: Opener = os.open,
        file_name: str = SPOOL_FILE,
    ) -> None:
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be > 0, got {max_bytes!r}")
        self.directory = directory
        self.max_bytes = max_bytes
        self.codec = codec
        self.path = directory / file_name
        """`alerts.jsonl` for the alert sink; the SLI sink (pulse/sli_sink/) names its own."""
        self._opener = opener
        self._thread_lock = threading.Lock()
        self._read_lines: dict[int, bytes] = {}
        """id(item) -> its line, for the items of the last `read`: a rewrite keeps their `spooled_at`."""
        self.entries = 0
        """Entries after this object's last read or write (another process may have appended since)."""
        with contextlib.suppress(OSError):  # a directory that cannot be made now is retried at each use
            make_private_dir(directory)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive access: a thread lock, then `flock` on `spool.lock` for other processes on the same dir.
        Raises OSError (thread lock released) when the directory cannot be made or the lock file opened."""
        with self._thread_lock:
            make_private_dir(self.directory)
            fd = open_private(self.directory / LOCK_FILE, LOCK, self._opener)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def size_bytes(self) -> int:
        try:
            return os.lstat(self.path).st_size
        except OSError:
            return 0

    def read(self) -> SpoolContents[T]:
        """Every readable entry in order; unreadable lines (including a last line cut off by a crash, or one
        nested too deep to parse) are listed."""
        try:
            fd = open_private(self.path, READ, self._opener)
        except FileNotFoundError:
            self.entries = 0
            return SpoolContents([], [])
        try:
            data = _read_all(fd)
        finally:
            os.close(fd)
        alerts: list[T] = []
        corrupt: list[CorruptLine] = []
        self._read_lines = {}
        lines = data.split(b"\n")
        for index, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            if index == len(lines):  # no trailing newline: the write was cut off
                corrupt.append(CorruptLine(index, "incomplete line (no newline): a write was cut off"))
                continue
            try:
                alerts.append(self.codec.decode(line))
                self._read_lines[id(alerts[-1])] = line + b"\n"
            except (ValueError, ValidationError, RecursionError) as exc:
                reason = str(exc).replace("\n", "; ")
                corrupt.append(CorruptLine(index, f"{type(exc).__name__}: {reason}"[:500]))
        self.entries = len(alerts)
        return SpoolContents(alerts, corrupt)

    def append(self, items: Sequence[T], now: datetime) -> Trimmed:
        """Add items at the end; if the bound would be passed, rewrite the whole spool trimmed to fit."""
        lines = [self.codec.encode(a, now) for a in items]
        size = self.size_bytes()
        if size + sum(map(len, lines)) > self.max_bytes:
            held = self.read()
            trimmed = self._write([(self._line(a, now), a) for a in held.alerts] + list(zip(lines, items, strict=True)))
            return Trimmed(trimmed.superseded, trimmed.overflow, tuple(held.corrupt))
        if not lines:
            return Trimmed()
        make_private_dir(self.directory)
        fd = open_private(self.path, APPEND, self._opener)
        try:
            start = os.fstat(fd).st_size
            try:
                seal = b"\n" if start and self._ends_without_newline(fd, start) else b""
                # seal: a torn last line must not swallow the next entry
                _write_all(fd, seal + b"".join(lines))
                os.fsync(fd)
            except OSError:
                with contextlib.suppress(OSError):  # cut back what got written: no half entry stays behind
                    os.ftruncate(fd, start)
                raise
        finally:
            os.close(fd)
        self.entries += len(lines)
        return Trimmed()

    def replace(self, items: Sequence[T], now: datetime) -> Trimmed:
        """Make the spool hold exactly `items` (trimmed to the bound), atomically."""
        return self._write([(self._line(a, now), a) for a in items])

    def _line(self, item: T, now: datetime) -> bytes:
        """The line an item read back came from, else a new one spooled `now`."""
        return self._read_lines.get(id(item)) or self.codec.encode(item, now)

    @staticmethod
    def _ends_without_newline(fd: int, size: int) -> bool:
        return os.pread(fd, 1, size - 1) != b"\n"

    def _write(self, entries: list[tuple[bytes, T]]) -> Trimmed:
        lines = [entries[i][0] for i in latest_indexes([self.codec.incident(a) for _, a in entries])]
        superseded = len(entries) - len(lines)
        total = sum(map(len, lines))
        overflow = 0
        while lines and total > self.max_bytes:
            total -= len(lines[overflow])
            overflow += 1
            if overflow == len(lines):
                break
        lines = lines[overflow:]
        if not lines:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            self.entries = 0
            return Trimmed(superseded, overflow)
        make_private_dir(self.directory)
        tmp = self.path.with_suffix(TMP_SUFFIX)
        try:
            fd = open_private(tmp, WRITE_NEW, self._opener)
            try:
                _write_all(fd, b"".join(lines))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self.entries = len(lines)  # only now: a failed rewrite leaves the old file, and its count, in place
        directory = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        return Trimmed(superseded, overflow)


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:  # pragma: no cover - os.write raises rather than returning 0 on a regular file
            raise OSError(errno.EIO, "short write")
        view = view[written:]
