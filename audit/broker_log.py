"""The broker-side audit's rows on disk: every settled (group, topic, minute) becomes a Parquet row under
`broker/date=YYYY-MM-DD/`, which the SLO engine reads as an `audit` source (docs/audit.md, "A data-freshness
SLO"). The writer is the shared Parquet log (`pulse.parquet_log`), as for the canary's and lag's logs: a cycle only
hands its table over, never waits for the disk; a table that does not fit the queue is dropped and counted."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from audit.streams import BROKER_SCHEMA
from pulse.parquet_log import FiledTable, ParquetLogCollector, TableLog, date_folder

BROKER_ROWS = "broker"
"""The folder of the broker-side rows below the log's root: the path an SLO's `audit` source names."""


def settled_of(table: pa.Table) -> FiledTable:
    """A cycle's `audit-broker` table filed under `broker/date=YYYY-MM-DD` of its `time` (one value per cycle; the
    rows' `time` is what the SLO engine buckets by)."""
    newest = pc.max(table.column("time")).as_py() if table.num_rows else datetime.now(UTC)
    return FiledTable(f"{BROKER_ROWS}/{date_folder(newest)}", table)


class BrokerLog(TableLog):
    """The Parquet appender of `audit-broker` rows under `directory` (`broker/date=.../part-*.parquet`)."""

    def __init__(
        self, directory: Path, flush_interval_s: float = 60.0, max_bytes: int = 1 << 30, queue_size: int = 100_000
    ) -> None:
        super().__init__(
            directory,
            subdirs=(BROKER_ROWS,),
            name="audit log",
            schema=BROKER_SCHEMA,
            flush_interval_s=flush_interval_s,
            max_bytes=max_bytes,
            queue_size=queue_size,
        )

    def record(self, table: pa.Table) -> bool:
        """Queue one cycle's rows; False when they do not fit the queue (dropped and counted, never waited for)."""
        return bool(table.num_rows) and self.offer(settled_of(table))


class BrokerLogCollector(ParquetLogCollector):
    """The writer's health as Prometheus families (`kafka_pulse_audit_log_*`, docs/metrics.md)."""

    def __init__(self, log: BrokerLog) -> None:
        super().__init__(log, "kafka_pulse_audit_log")
