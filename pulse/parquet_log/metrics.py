"""A Parquet log writer's health as Prometheus families `<prefix>_*` (docs/metrics.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pulse.parquet_log.writer import ParquetLog

R = TypeVar("R")


class ParquetLogCollector(Collector):
    """A writer's health as Prometheus families `<prefix>_*` (docs/metrics.md), read from `stats()` at scrape."""

    def __init__(self, log: ParquetLog[R], prefix: str) -> None:
        self.log: ParquetLog[Any] = log
        self.prefix = prefix

    def collect(self) -> Iterator[Metric]:
        s = self.log.stats()
        prefix = self.prefix
        yield CounterMetricFamily(f"{prefix}_rows_written", "Rows written to Parquet files.", value=s.rows_written)
        yield CounterMetricFamily(f"{prefix}_files_written", "Parquet files written.", value=s.files_written)
        dropped = CounterMetricFamily(
            f"{prefix}_rows_dropped",
            "Rows given up: queue_full (the writer fell behind) or write_error.",
            labels=["reason"],
        )
        for reason, count in sorted(s.rows_dropped.items()):
            dropped.add_metric([reason], count)
        yield dropped
        yield CounterMetricFamily(f"{prefix}_write_errors", "Failed file writes (rows kept for retry).", s.write_errors)
        yield CounterMetricFamily(
            f"{prefix}_files_removed", "Oldest files removed to stay under max_bytes.", value=s.files_removed
        )
        yield CounterMetricFamily(
            f"{prefix}_removed_bytes", "Bytes removed to stay under max_bytes.", value=s.bytes_removed
        )
        yield CounterMetricFamily(
            f"{prefix}_files_compacted", "Files of closed dates merged into larger ones.", value=s.files_compacted
        )
        yield CounterMetricFamily(
            f"{prefix}_compaction_errors", "Compactions that failed (files left as written).", value=s.compaction_errors
        )
        yield GaugeMetricFamily(f"{prefix}_bytes", "Size of the log's files after the latest flush.", s.bytes_on_disk)
        yield GaugeMetricFamily(
            f"{prefix}_pending_rows", "Rows queued or buffered for the next flush.", value=s.pending_rows
        )
        if s.last_flush_unix_s is not None:
            yield GaugeMetricFamily(
                f"{prefix}_last_flush_timestamp_seconds", "When the latest write ended.", value=s.last_flush_unix_s
            )
