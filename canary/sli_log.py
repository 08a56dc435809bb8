"""The SLI event log: every settled probe becomes one Parquet row under `date=YYYY-MM-DD/`, which the SLO engine
reads (DESIGN "SLI event log"; schema and units in docs/sli-log.md).

Probing never waits for the disk: `record` only puts the result on a bounded queue (full means the row is dropped
and counted); one writer thread (`pulse.parquet_log`, shared with the lag evaluation log) turns the queue into a
file per date every `flush_interval_s`, and keeps the directory under `max_bytes` by removing the oldest files first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

import pyarrow as pa
from prometheus_client.registry import CollectorRegistry

from canary.events import ProbeResult
from pulse.config import SliLogConfig
from pulse.parquet_log import ParquetLog, ParquetLogCollector, ParquetLogStats, files_to_remove
from pulse.sli_sink import SliPublisher, Stream

__all__ = [
    "CANARY_STREAM",
    "PARTITIONING",
    "SCHEMA",
    "PublishedProbes",
    "SliLog",
    "SliLogCollector",
    "SliLogStats",
    "TargetTagged",
    "configure_sli_log",
    "date_of",
    "files_to_remove",
    "table_of",
]

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

CANARY_STREAM = Stream("canary", 1, SCHEMA)
"""The same rows on Kafka (`sli_sink`; docs/sli-log.md, "Kafka sink"): topic `<prefix>canary`, schema version 1."""

PARTITIONING = pa.schema([pa.field("date", pa.string())])
"""The hive partition column: pass `partitioning=pa.dataset.partitioning(PARTITIONING, flavor="hive")` so
pyarrow does not guess its type."""

SliLogStats = ParquetLogStats
"""The writer's running totals (`SliLog.stats()`); the generic writer's, under the canary's name."""


@dataclass(frozen=True)
class _Row:
    event: ProbeResult
    target_cluster: str | None


def table_of(rows: Sequence[tuple[ProbeResult, str | None]]) -> pa.Table:
    """The rows as an Arrow table with SCHEMA (pure): results with their target cluster (mirror mode) or None."""
    names = [f.name for f in SCHEMA if f.name != "target_cluster"]
    columns: dict[str, list[Any]] = {name: [getattr(e, name) for e, _ in rows] for name in names}
    columns["target_cluster"] = [t for _, t in rows]
    return pa.Table.from_pydict(columns, schema=SCHEMA)


def date_of(event: ProbeResult) -> str:
    """The partition a result belongs to: the UTC date of its send time."""
    return event.time.astimezone(UTC).strftime("%Y-%m-%d")


def _table_of_rows(rows: Sequence[_Row]) -> pa.Table:
    return table_of([(r.event, r.target_cluster) for r in rows])


def _folder_of(row: _Row) -> str:
    return f"date={date_of(row.event)}"


class SliLog(ParquetLog[_Row]):
    """One writer thread and its queue (`pulse.parquet_log`); a `ProbeSink`. `start`, then `record` from the probe
    loop, then `stop`."""

    def __init__(
        self,
        directory: Path,
        flush_interval_s: float = 60.0,
        max_bytes: int = 1 << 30,
        queue_size: int = 100_000,
        max_rows_per_file: int = 100_000,
    ) -> None:
        super().__init__(
            directory,
            table_of=_table_of_rows,
            folder_of=_folder_of,
            name="SLI log",
            flush_interval_s=flush_interval_s,
            max_bytes=max_bytes,
            queue_size=queue_size,
            max_rows_per_file=max_rows_per_file,
        )

    @classmethod
    def from_config(cls, config: SliLogConfig, default_dir: Path) -> SliLog:
        """The writer `canary.sli_log` describes; `default_dir` applies when the config names no directory."""
        return cls(
            config.dir if config.dir is not None else default_dir,
            flush_interval_s=config.flush_interval_s,
            max_bytes=config.max_bytes,
            queue_size=config.queue_size,
        )

    def record(self, event: ProbeResult) -> None:
        """Queue one settled probe; when the queue is full the row is dropped and counted, never waited for."""
        self.offer(_Row(event, None))

    def record_mirrored(self, event: ProbeResult, target_cluster: str | None) -> None:
        """Queue a result of mirror mode, whose copy was read on `target_cluster`."""
        self.offer(_Row(event, target_cluster))


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


class PublishedProbes:
    """A `ProbeSink` publishing each settled probe to Kafka through the SLI sink: a one-row table handed over,
    never waited for (full means dropped and counted by the sink). `target_cluster` tags mirror-mode results."""

    def __init__(self, sink: SliPublisher, target_cluster: str | None = None) -> None:
        self.sink = sink
        self.target_cluster = target_cluster

    def record(self, event: ProbeResult) -> None:
        self.sink.offer(CANARY_STREAM, table_of([(event, self.target_cluster)]))


class SliLogCollector(ParquetLogCollector):
    """The writer's health as Prometheus families (`kafka_pulse_canary_sli_log_*`, docs/metrics.md)."""

    def __init__(self, log: SliLog) -> None:
        super().__init__(log, "kafka_pulse_canary_sli_log")
