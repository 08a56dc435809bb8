"""The SLI event log: every settled probe becomes one Parquet row under `date=YYYY-MM-DD/`, which the SLO engine
reads (DESIGN "SLI event log"; schema and units in docs/sli-log.md).

Probing never waits for the disk: `record` only puts the result on a bounded queue (full means the row is dropped
and counted); one writer thread turns the queue into a file per date every `flush_interval_s`, and keeps the
directory under `max_bytes` by removing the oldest files first.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import queue
import re
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import pyarrow as pa
import pyarrow.parquet as pq
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from canary.events import ProbeResult
from pulse.config import SliLogConfig

_LOG = logging.getLogger(__name__)

SCHEMA = pa.schema(
    [
        pa.field("time", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("cluster", pa.string(), nullable=False),
        pa.field("target_cluster", pa.string()),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("broker", pa.int32()),
        pa.field("rack", pa.string()),
        pa.field("client_rack", pa.string()),
        pa.field("producer_id", pa.string(), nullable=False),
        pa.field("sequence", pa.int64(), nullable=False),
        pa.field("produce_ok", pa.bool_(), nullable=False),
        pa.field("produce_latency_s", pa.float64()),
        pa.field("consume_ok", pa.bool_()),
        pa.field("e2e_latency_s", pa.float64()),
        pa.field("lost", pa.bool_(), nullable=False),
        pa.field("duplicate", pa.bool_(), nullable=False),
        pa.field("out_of_order", pa.bool_(), nullable=False),
        pa.field("error", pa.string()),
        pa.field("offset", pa.int64()),
    ]
)
"""The columns of every file, in order; `date` is not stored in the files but is their directory (hive style)."""

PARTITIONING = pa.schema([pa.field("date", pa.string())])
"""The hive partition column: pass `partitioning=pa.dataset.partitioning(PARTITIONING, flavor="hive")` so
pyarrow does not guess its type."""

_PART_FILE = re.compile(r"part-\d{8}T\d{12}Z-[0-9a-f]+-\d+\.parquet")
_DATE_DIR = re.compile(r"date=\d{4}-\d{2}-\d{2}")


@dataclass
class SliLogStats:
    """Running totals of the writer, read by the metrics collector (`snapshot` copies them under the lock)."""

    rows_written: int = 0
    files_written: int = 0
    rows_dropped: dict[str, int] = field(default_factory=lambda: {"queue_full": 0, "write_error": 0})
    """Rows given up: `queue_full` when probes outran the writer, `write_error` when a failed write's rows no
    longer fit the retry buffer."""
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


@dataclass(frozen=True)
class _Row:
    event: ProbeResult
    target_cluster: str | None


@dataclass
class _Flush:
    """A request to write now; `done` is set once the writer has tried."""

    done: threading.Event = field(default_factory=threading.Event)


_STOP = object()


def table_of(rows: Sequence[tuple[ProbeResult, str | None]]) -> pa.Table:
    """The rows as an Arrow table with SCHEMA (pure): results with their target cluster (mirror mode) or None."""
    names = [f.name for f in SCHEMA if f.name != "target_cluster"]
    columns: dict[str, list[Any]] = {name: [getattr(e, name) for e, _ in rows] for name in names}
    columns["target_cluster"] = [t for _, t in rows]
    return pa.Table.from_pydict(columns, schema=SCHEMA)


def date_of(event: ProbeResult) -> str:
    """The partition a result belongs to: the UTC date of its send time."""
    return event.time.astimezone(UTC).strftime("%Y-%m-%d")


def files_to_remove(files: Sequence[tuple[str, int]], max_bytes: int) -> list[str]:
    """Which part files (name, size) to delete, oldest first, so that the rest fit in `max_bytes` (pure).
    Names start with their UTC write time, so name order is write order."""
    total = sum(size for _, size in files)
    doomed: list[str] = []
    for name, size in sorted(files):
        if total <= max_bytes:
            break
        doomed.append(name)
        total -= size
    return doomed


class SliLog:
    """One writer thread and its queue; a `ProbeSink`. `start`, then `record` from the probe loop, then `stop`."""

    def __init__(
        self,
        directory: Path,
        flush_interval_s: float = 60.0,
        max_bytes: int = 1 << 30,
        queue_size: int = 100_000,
        max_rows_per_file: int = 100_000,
    ) -> None:
        if flush_interval_s <= 0 or max_bytes <= 0 or queue_size <= 0 or max_rows_per_file <= 0:
            raise ValueError("flush_interval_s, max_bytes, queue_size and max_rows_per_file must be positive")
        self.directory = directory
        self.flush_interval_s = flush_interval_s
        self.max_bytes = max_bytes
        self.queue_size = queue_size
        self.max_rows_per_file = max_rows_per_file
        self.writer_id = uuid.uuid4().hex[:8]
        """In every file name, so several writers (processes or canaries) can share one directory."""
        self._queue: queue.Queue[object] = queue.Queue(maxsize=queue_size)
        self._buffer: list[_Row] = []
        self._stats = SliLogStats()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._seq = itertools.count()
        self._failing = False

    @classmethod
    def from_config(cls, config: SliLogConfig, default_dir: Path) -> SliLog:
        """The writer `canary.sli_log` describes; `default_dir` applies when the config names no directory."""
        return cls(
            config.dir if config.dir is not None else default_dir,
            flush_interval_s=config.flush_interval_s,
            max_bytes=config.max_bytes,
            queue_size=config.queue_size,
        )

    # ---- the probe side: never blocks ------------------------------------------------------------

    def record(self, event: ProbeResult) -> None:
        """Queue one settled probe; when the queue is full the row is dropped and counted, never waited for."""
        self.record_mirrored(event, None)

    def record_mirrored(self, event: ProbeResult, target_cluster: str | None) -> None:
        """Queue a result of mirror mode, whose copy was read on `target_cluster`."""
        try:
            self._queue.put_nowait(_Row(event, target_cluster))
        except queue.Full:
            with self._lock:
                self._stats.rows_dropped["queue_full"] += 1

    # ---- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Self:
        """Start the writer thread; the directory is created by the first write, so a bad one only counts errors."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="sli-log-writer", daemon=True)
            self._thread.start()
        return self

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Write everything queued so far now; True once the writer has tried (see `stats` for the outcome)."""
        if self._thread is None or not self._thread.is_alive():
            return False
        request = _Flush()
        try:
            self._queue.put(request, timeout=timeout_s)
        except queue.Full:
            return False
        return request.done.wait(timeout_s)

    def stop(self, timeout_s: float = 30.0) -> None:
        """Write what is queued and end the thread; safe to call twice."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        try:
            self._queue.put(_STOP, timeout=timeout_s)
        except queue.Full:
            _LOG.error("SLI log writer did not take the stop request within %.0f s", timeout_s)
        thread.join(timeout_s)

    def stats(self) -> SliLogStats:
        with self._lock:
            snapshot = SliLogStats(**{**self._stats.__dict__, "rows_dropped": dict(self._stats.rows_dropped)})
        snapshot.pending_rows = self._queue.qsize() + len(self._buffer)
        return snapshot

    # ---- the writer thread ------------------------------------------------------------------------

    def _run(self) -> None:
        self._update_disk_usage()
        next_flush = time.monotonic() + self.flush_interval_s
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, next_flush - time.monotonic()))
            except queue.Empty:
                item = None
            if isinstance(item, _Row):
                self._buffer.append(item)
                if len(self._buffer) >= self.max_rows_per_file:
                    self._write_buffer()
            elif isinstance(item, _Flush):
                self._write_buffer()
                item.done.set()
            elif item is _STOP:
                self._drain()
                self._write_buffer()
                return
            if time.monotonic() >= next_flush:
                self._write_buffer()
                next_flush = time.monotonic() + self.flush_interval_s

    def _drain(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Row):
                self._buffer.append(item)
            elif isinstance(item, _Flush):
                item.done.set()

    def _write_buffer(self) -> None:
        """Write the buffer as one file per date; on failure keep the rows (up to the queue size) for next time."""
        if not self._buffer:
            return
        by_date: dict[str, list[_Row]] = {}
        for row in self._buffer:
            by_date.setdefault(date_of(row.event), []).append(row)
        kept: list[_Row] = []
        for date, rows in sorted(by_date.items()):
            try:
                self._write_file(date, rows)
            except (OSError, pa.ArrowException) as exc:
                kept += rows
                with self._lock:
                    self._stats.write_errors += 1
                if not self._failing:  # one line per failure streak, not one a minute
                    _LOG.error("SLI log: cannot write to %s: %s; rows are kept and retried", self.directory, exc)
                self._failing = True
            else:
                with self._lock:
                    self._stats.rows_written += len(rows)
                    self._stats.files_written += 1
                    self._stats.last_flush_unix_s = time.time()
        if len(kept) > self.queue_size:
            with self._lock:
                self._stats.rows_dropped["write_error"] += len(kept) - self.queue_size
            kept = kept[-self.queue_size :]  # keep the newest: the oldest are the likeliest to be stale anyway
        if not kept and self._failing:
            _LOG.info("SLI log: writing to %s works again", self.directory)
            self._failing = False
        self._buffer = kept
        self._enforce_bound()

    def _write_file(self, date: str, rows: list[_Row]) -> None:
        """Write to a dot-file first and rename it, so a reader (pyarrow, Spark) never sees half a file."""
        folder = self.directory / f"date={date}"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        name = f"part-{stamp}-{self.writer_id}-{next(self._seq)}.parquet"
        tmp = folder / f".{name}.tmp"
        try:
            pq.write_table(table_of([(r.event, r.target_cluster) for r in rows]), tmp, compression="zstd")
            os.replace(tmp, folder / name)
        finally:
            tmp.unlink(missing_ok=True)

    def _part_files(self) -> Iterator[tuple[str, Path, int]]:
        try:
            folders = [d for d in os.scandir(self.directory) if d.is_dir() and _DATE_DIR.fullmatch(d.name)]
        except OSError:
            return
        for folder in folders:
            try:
                entries = list(os.scandir(folder.path))
            except OSError:
                continue
            for entry in entries:
                if _PART_FILE.fullmatch(entry.name):
                    try:
                        yield entry.name, Path(entry.path), entry.stat().st_size
                    except FileNotFoundError:  # removed by another writer sharing the directory
                        continue

    def _enforce_bound(self) -> None:
        """Delete the oldest part files until the log fits `max_bytes`; count what went."""
        files = {name: (path, size) for name, path, size in self._part_files()}
        removed = removed_bytes = 0
        for name in files_to_remove([(n, s) for n, (_, s) in files.items()], self.max_bytes):
            path, size = files.pop(name)
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                _LOG.warning("SLI log: cannot remove %s to stay under max_bytes: %s", path, exc)
                continue
            removed, removed_bytes = removed + 1, removed_bytes + size
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # only succeeds once the date holds nothing else
        with self._lock:
            self._stats.files_removed += removed
            self._stats.bytes_removed += removed_bytes
            self._stats.bytes_on_disk = sum(size for _, size in files.values())

    def _update_disk_usage(self) -> None:
        self._enforce_bound()  # files left by an earlier run count against the bound too


def configure_sli_log(config: SliLogConfig, registry: CollectorRegistry, state: Path) -> SliLog | None:
    """The writer `canary.sli_log` describes (default directory `<state>/sli/canary`), its families registered on
    `registry`, not started yet; None when the log is disabled. The caller starts it, and stops it after the
    probes."""
    if not config.enabled:
        return None
    log = SliLog.from_config(config, state / "sli" / "canary")
    registry.register(SliLogCollector(log))
    return log


class TargetTagged:
    """A `ProbeSink` for mirror mode: every result goes to `log` marked with the cluster its copy was read on."""

    def __init__(self, log: SliLog, target_cluster: str) -> None:
        self.log = log
        self.target_cluster = target_cluster

    def record(self, event: ProbeResult) -> None:
        self.log.record_mirrored(event, self.target_cluster)


class SliLogCollector(Collector):
    """The writer's health as Prometheus families (`kafka_pulse_canary_sli_log_*`, docs/metrics.md)."""

    def __init__(self, log: SliLog) -> None:
        self.log = log

    def collect(self) -> Iterator[Metric]:
        s = self.log.stats()
        prefix = "kafka_pulse_canary_sli_log"
        yield CounterMetricFamily(f"{prefix}_rows_written", "Rows written to Parquet files.", value=s.rows_written)
        yield CounterMetricFamily(f"{prefix}_files_written", "Parquet files written.", value=s.files_written)
        dropped = CounterMetricFamily(
            f"{prefix}_rows_dropped", "Rows given up: queue_full (probes outran the writer) or write_error.",
            labels=["reason"],
        )  # fmt: skip
        for reason, count in sorted(s.rows_dropped.items()):
            dropped.add_metric([reason], count)
        yield dropped
        yield CounterMetricFamily(f"{prefix}_write_errors", "Failed file writes (rows kept for retry).", s.write_errors)
        yield CounterMetricFamily(f"{prefix}_files_removed", "Oldest files removed to stay under max_bytes.",
                                  value=s.files_removed)  # fmt: skip
        yield CounterMetricFamily(f"{prefix}_removed_bytes", "Bytes removed to stay under max_bytes.",
                                  value=s.bytes_removed)  # fmt: skip
        yield GaugeMetricFamily(f"{prefix}_bytes", "Size of the log's files after the latest flush.", s.bytes_on_disk)
        yield GaugeMetricFamily(f"{prefix}_pending_rows", "Rows queued or buffered for the next flush.",
                                value=s.pending_rows)  # fmt: skip
        if s.last_flush_unix_s is not None:
            yield GaugeMetricFamily(f"{prefix}_last_flush_timestamp_seconds", "When the latest write ended.",
                                    value=s.last_flush_unix_s)  # fmt: skip
