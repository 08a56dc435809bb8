"""The reconciliation's results on disk: each judged batch's findings as Parquet rows under
`findings/date=YYYY-MM-DD/`, written by the shared Parquet log (`pulse.parquet_log`) as the broker-side rows are: the
stream only hands its table over, never waits for the disk (docs/audit.md, "Reconciliation")."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from audit.reconcile import PRODUCERS, Finding
from pulse.parquet_log import FiledTable, ParquetLogCollector, TableLog, date_folder

FINDINGS_ROWS = "findings"
"""The folder of the findings below the log's root."""

_TIME = pa.timestamp("us", tz="UTC")

FINDINGS_SCHEMA = pa.schema(
    [
        pa.field("time", _TIME, nullable=False),
        pa.field("batch", pa.int64(), nullable=False),
        pa.field("cluster", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("group", pa.string()),
        pa.field("minute", _TIME, nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("count", pa.int64(), nullable=False),
    ]
)
"""One row per finding; columns in docs/audit.md, "Findings table"."""


def _utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def findings_table(found: Sequence[Finding], batch: int, now_ms: int) -> pa.Table:
    """Findings as rows, stamped with the judging batch and `now_ms`; the producers' have no group (null)."""
    return pa.Table.from_pylist(
        [
            {
                "time": _utc(now_ms),
                "batch": batch,
                "cluster": f.cluster,
                "topic": f.topic,
                "group": None if f.group == PRODUCERS else f.group,
                "minute": _utc(f.minute_ms),
                "kind": f.kind,
                "count": f.count,
            }
            for f in found
        ],
        schema=FINDINGS_SCHEMA,
    )


class FindingsLog(TableLog):
    """The Parquet appender of findings under `directory` (`findings/date=.../part-*.parquet`)."""

    def __init__(
        self, directory: Path, flush_interval_s: float = 60.0, max_bytes: int = 1 << 30, queue_size: int = 100_000
    ) -> None:
        super().__init__(
            directory,
            subdirs=(FINDINGS_ROWS,),
            name="audit findings log",
            schema=FINDINGS_SCHEMA,
            flush_interval_s=flush_interval_s,
            max_bytes=max_bytes,
            queue_size=queue_size,
        )

    def record(self, table: pa.Table, now: datetime) -> bool:
        """Queue one batch's findings (filed under the UTC date of `now`); False when they do not fit the queue."""
        return bool(table.num_rows) and self.offer(FiledTable(f"{FINDINGS_ROWS}/{date_folder(now)}", table))


class FindingsLogCollector(ParquetLogCollector):
    """The writer's health as Prometheus families (`kafka_pulse_audit_findings_log_*`, docs/metrics.md)."""

    def __init__(self, log: FindingsLog) -> None:
        super().__init__(log, "kafka_pulse_audit_findings_log")
