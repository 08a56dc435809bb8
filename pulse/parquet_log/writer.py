"""`ParquetLog`: the writer of a Parquet log. The producing side never waits for the disk: `offer` only puts an
item on a queue bounded in rows (full means the item is dropped and counted); one writer thread turns the queue
into a file per folder every `flush_interval_s` and keeps the directory under `max_bytes`, and a compactor thread
merges the files of closed dates.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Generic, Self, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from pulse.lifecycle import Periodic
from pulse.parquet_log.compaction import chunks, compact, folder_lock, recover
from pulse.parquet_log.files import part_files, remove_oldest
from pulse.private_files import WRITE_NEW, make_private_dir, open_private

_LOG = logging.getLogger(__name__)

R = TypeVar("R")

COMPACTION_INTERVAL_S = 600.0
"""How often the writer looks for closed dates to compact."""


@dataclass
class ParquetLogStats:
    """Running totals of the writer, read by the metrics collector (`snapshot` copies them under the lock)."""

    rows_written: int = 0
    files_written: int = 0
    rows_dropped: dict[str, int] = field(default_factory=lambda: {"queue_full": 0, "write_error": 0})
    """Rows given up: `queue_full` when the producing side outran the writer, `write_error` when a failed write's
    rows no longer fit the retry buffer."""
    write_errors: int = 0
    """Failed attempts to write a file (disk full, read-only, permissions); the rows are retried next flush."""
    files_removed: int = 0
    bytes_removed: int = 0
    """Files and bytes removed to stay under `max_bytes`, oldest first."""
    bytes_on_disk: int = 0
    """Size of the log's part files after the latest flush."""
    pending_rows: int = 0
    """Rows held for the next flush (queued and buffered)."""
    last_flush_unix_s: float | None = None
    """When the latest successful write ended (epoch seconds)."""
    files_compacted: int = 0
    """Part files of closed dates merged into fewer, larger ones (`compaction.py`)."""
    compaction_errors: int = 0


@dataclass
class _Flush:
    """A request to write now; `done` is set once the writer has tried."""

    done: threading.Event = field(default_factory=threading.Event)


_STOP = object()


class ParquetLog(Generic[R]):
    """One writer thread and its queue. `start`, then `offer` items from the producing side, then `stop`."""

    def __init__(
        self,
        directory: Path,
        *,
        table_of: Callable[[Sequence[R]], pa.Table],
        folder_of: Callable[[R], str],
        size_of: Callable[[R], int] = lambda _: 1,
        subdirs: Sequence[str] = ("",),
        name: str = "Parquet log",
        flush_interval_s: float = 60.0,
        max_bytes: int = 1 << 30,
        queue_size: int = 100_000,
        max_rows_per_file: int = 100_000,
        compact_after_s: float | None = 900.0,
    ) -> None:
        if flush_interval_s <= 0 or max_bytes <= 0 or queue_size <= 0 or max_rows_per_file <= 0:
            raise ValueError("flush_interval_s, max_bytes, queue_size and max_rows_per_file must be positive")
        self.directory = directory
        self.table_of = table_of
        """Items -> one Arrow table (all of one folder); the file's schema."""
        self.folder_of = folder_of
        """Item -> its folder relative to `directory`, e.g. `date=2026-11-21` or `groups/date=2026-11-21`."""
        self.size_of = size_of
        """Item -> rows it holds, for the queue bound and the counters."""
        self.subdirs = tuple(subdirs)
        """Where below `directory` the `date=` folders are (`""`: directly); only files there count and are removed
        for the bound, so a log never touches another's files."""
        self.name = name
        """How log lines name this log."""
        self.flush_interval_s = flush_interval_s
        self.max_bytes = max_bytes
        self.queue_size = queue_size
        """Rows waiting for the writer at most (and rows kept for retry while writes fail)."""
        self.max_rows_per_file = max_rows_per_file
        self.compact_after_s = compact_after_s
        """A date's folder is compacted this long after the date ended (late rows still land in it before);
        None leaves every file as written."""
        self.compaction_target_bytes = max(1 << 20, min(128 << 20, max_bytes // 16))
        """Merged files stay about this size, so the size bound still removes the oldest data in small steps."""
        self.compaction_delay_s = 60.0
        """The compactor's first pass waits this long after `start`: a starting service has more urgent work."""
        self._compactor: Periodic | None = None
        self.writer_id = uuid.uuid4().hex[:8]
        """In every file name, so several writers (processes or components) can share one directory."""
        self._queue: queue.Queue[object] = queue.Queue()
        self._queued_rows = 0
        self._buffer: list[R] = []
        self._buffered_rows = 0
        self._stats = ParquetLogStats()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._seq = itertools.count()
        self._failing = False

    # ---- the producing side: never blocks --------------------------------------------------------

    def offer(self, item: R) -> bool:
        """Queue an item; when its rows do not fit the queue it is dropped and counted, never waited for."""
        rows = self.size_of(item)
        with self._lock:
            if self._queued_rows + rows > self.queue_size:
                self._stats.rows_dropped["queue_full"] += rows
                return False
            self._queued_rows += rows
        self._queue.put_nowait(item)
        return True

    # ---- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Self:
        """Start the writer thread; the directory is created by the first write, so a bad one only counts errors."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"{self.name} writer", daemon=True)
            self._thread.start()
            if self.compact_after_s is not None:  # its own thread: a long merge never holds up the writes
                self._compactor = Periodic(
                    f"{self.name} compactor",
                    COMPACTION_INTERVAL_S,
                    self._compact_pass,
                    fixed_rate=False,
                    first_delay_s=self.compaction_delay_s,
                )
                self._compactor.start()
        return self

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Write everything queued so far now; True once the writer has tried (see `stats` for the outcome)."""
        if self._thread is None or not self._thread.is_alive():
            return False
        request = _Flush()
        self._queue.put_nowait(request)
        return request.done.wait(timeout_s)

    def stop(self, timeout_s: float = 30.0) -> None:
        """Write what is queued and end the thread; safe to call twice."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        compactor, self._compactor = self._compactor, None
        if compactor is not None:
            compactor.stop(timeout_s)
        self._queue.put_nowait(_STOP)
        thread.join(timeout_s)
        if thread.is_alive():
            _LOG.error("%s: the writer did not finish within %.0f s; unwritten rows are lost", self.name, timeout_s)

    def stats(self) -> ParquetLogStats:
        with self._lock:
            snapshot = ParquetLogStats(**{**self._stats.__dict__, "rows_dropped": dict(self._stats.rows_dropped)})
            snapshot.pending_rows = self._queued_rows + self._buffered_rows
        return snapshot

    # ---- the writer thread ------------------------------------------------------------------------

    def _run(self) -> None:
        self._enforce_bound()  # files left by an earlier run count against the bound too
        next_flush = time.monotonic() + self.flush_interval_s
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, next_flush - time.monotonic()))
            except queue.Empty:
                item = None
            if isinstance(item, _Flush):
                self._write_buffer()
                item.done.set()
            elif item is _STOP:
                self._drain()
                self._write_buffer()
                return
            elif item is not None:
                self._take(item)  # type: ignore[arg-type]  # only `offer` puts anything else
                if self._buffered_rows >= self.max_rows_per_file:
                    self._write_buffer()
            if time.monotonic() >= next_flush:
                self._write_buffer()
                next_flush = time.monotonic() + self.flush_interval_s

    def _take(self, item: R) -> None:
        rows = self.size_of(item)
        with self._lock:
            self._queued_rows -= rows
            self._buffered_rows += rows
        self._buffer.append(item)

    def _drain(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Flush):
                item.done.set()
            elif item is not _STOP:
                self._take(item)  # type: ignore[arg-type]

    def _write_buffer(self) -> None:
        """Write the buffer as one file per folder; on failure keep the rows (up to the queue size) for next time."""
        if not self._buffer:
            return
        by_folder: dict[str, list[R]] = {}
        for item in self._buffer:
            by_folder.setdefault(self.folder_of(item), []).append(item)
        kept: list[R] = []
        for folder, items in sorted(by_folder.items()):
            rows = sum(self.size_of(i) for i in items)
            try:
                self._write_file(folder, items)
            except (OSError, pa.ArrowException) as exc:
                kept += items
                with self._lock:
                    self._stats.write_errors += 1
                if not self._failing:  # one line per failure streak, not one a minute
                    _LOG.error("%s: cannot write to %s: %s; rows are kept and retried", self.name, self.directory, exc)
                self._failing = True
            else:
                with self._lock:
                    self._stats.rows_written += rows
                    self._stats.files_written += 1
                    self._stats.last_flush_unix_s = time.time()
        kept_rows = sum(self.size_of(i) for i in kept)
        dropped = 0
        while kept and kept_rows > self.queue_size:  # keep the newest: the oldest are the likeliest to be stale
            size = self.size_of(kept.pop(0))
            kept_rows -= size
            dropped += size
        if not kept and self._failing:
            _LOG.info("%s: writing to %s works again", self.name, self.directory)
            self._failing = False
        self._buffer = kept
        with self._lock:
            self._stats.rows_dropped["write_error"] += dropped
            self._buffered_rows = kept_rows
        self._enforce_bound()

    def _write_file(self, folder: str, items: list[R]) -> None:
        """Write to a dot-file first and rename it, so a reader (pyarrow, Spark) never sees half a file; folders
        0700 and files 0600, opened without following symlinks (pulse/private_files.py)."""
        path = self.directory / folder
        make_private_dir(path, top=self.directory)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        name = f"part-{stamp}-{self.writer_id}-{next(self._seq)}.parquet"
        tmp = path / f".{name}.tmp"
        try:
            with os.fdopen(open_private(tmp, WRITE_NEW), "wb") as sink:
                pq.write_table(self.table_of(items), sink, compression="zstd")
            os.replace(tmp, path / name)
        finally:
            tmp.unlink(missing_ok=True)

    def _compact_pass(self) -> None:
        """Soon after start (dates an earlier run left) and every COMPACTION_INTERVAL_S, until `stop`; a failing
        pass is logged by the loop and the next one runs (it never reaches the writer)."""
        self.compact_closed_dates(datetime.now(UTC))

    def compact_closed_dates(self, now: datetime) -> int:
        """Merge the part files of every date that ended `compact_after_s` before `now`; returns the files merged.
        Runs on the log's compactor thread; a failure is logged and counted, the files stay as they are."""
        assert self.compact_after_s is not None
        closed_before = (now.astimezone(UTC) - timedelta(seconds=self.compact_after_s)).strftime("date=%Y-%m-%d")
        merged = 0
        folders: dict[Path, list[tuple[str, int]]] = {}
        for name, path, size in part_files(self.directory, self.subdirs):
            if path.parent.name < closed_before:
                folders.setdefault(path.parent, []).append((name, size))
        for folder, files in sorted(folders.items()):
            try:
                with folder_lock(folder) as mine:
                    if not mine:
                        continue
                    if not recover(folder):  # a malformed manifest: logged; the folder stays as it is
                        with self._lock:
                            self._stats.compaction_errors += 1
                        continue
                    for run in chunks(files, self.compaction_target_bytes):
                        stamp = run[0].split("-")[1]  # the oldest input's: the size bound's order is kept
                        done = compact(folder, run, f"part-{stamp}-{self.writer_id}-{next(self._seq)}.parquet")
                        merged += done.inputs if done is not None else 0
            except (OSError, pa.ArrowException) as exc:
                _LOG.warning("%s: cannot compact %s: %s; its files stay as they are", self.name, folder, exc)
                with self._lock:
                    self._stats.compaction_errors += 1
        if merged:
            _LOG.info("%s: merged %d files of closed dates", self.name, merged)
        with self._lock:
            self._stats.files_compacted += merged
        return merged

    def _enforce_bound(self) -> None:
        """Delete the oldest part files until the log fits `max_bytes`; count what went."""
        removed, removed_bytes, on_disk = remove_oldest(
            part_files(self.directory, self.subdirs), self.max_bytes, self.name
        )
        with self._lock:
            self._stats.files_removed += removed
            self._stats.bytes_removed += removed_bytes
            self._stats.bytes_on_disk = on_disk
