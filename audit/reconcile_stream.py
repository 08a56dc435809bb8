"""The reconciliation as a running Spark Structured Streaming query (docs/audit.md, "Reconciliation"): count rows
(audit/reconcile_spark.py; from the SLI sink's topics in `run` and the CLI) keep their totals per (cluster, topic,
minute, group) in Spark's state under a watermark on `minute`; a minute leaves the state once the reports moved
`deadline_s` past it (append mode: once, with every report that came in time), and its findings are judged in the
micro-batch, handed to the findings log and kept for /metrics, the status page and `check`."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql.streaming import StreamingQuery

from audit.findings_log import FindingsLog, findings_table
from audit.reconcile import KINDS, Finding
from audit.reconcile_spark import findings, totals

RECENT_FINDINGS = 1000
"""Findings kept in memory for the status page and `check` (the table holds them all)."""


def totals_stream(rows: DataFrame, deadline_s: int) -> DataFrame:
    """Streaming count rows -> their totals, emitted once per key when the watermark (the newest minute seen minus
    `deadline_s`) passes its minute; copies of a report (same `__id`) counted once, reports of a judged minute left
    out (Spark counts them as dropped by the watermark)."""
    unique = rows.withWatermark("minute", f"{deadline_s} seconds").dropDuplicatesWithinWatermark(["__id"])
    return totals(unique)


@dataclass
class Judged:
    """What the stream has judged since this process started (copied under the lock for readers)."""

    batches: int = 0
    minutes: int = 0
    """(cluster, topic, minute)s judged."""
    findings: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    records: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    """Records astray, by finding: the sum of the findings' counts."""
    newest_minute_ms: int | None = None
    """The newest minute judged."""
    recent: list[Finding] = field(default_factory=list)
    """The latest findings, oldest first (at most `RECENT_FINDINGS`)."""


class ReconcileStream:
    """Starts the query (`start`) and judges each micro-batch's closed minutes (`_batch`, on Spark's thread)."""

    def __init__(
        self,
        deadline_s: int,
        checkpoint: str | Path,
        *,
        counted_groups: frozenset[str] = frozenset(),
        log: FindingsLog | None = None,
        trigger_s: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.deadline_s = deadline_s
        self.checkpoint = checkpoint
        self.counted_groups = counted_groups
        self.log = log
        self.trigger_s = trigger_s
        self.clock = clock
        self._lock = threading.Lock()
        self._judged = Judged()
        self._recent: deque[Finding] = deque(maxlen=RECENT_FINDINGS)

    def start(self, rows: DataFrame, available_now: bool = False) -> StreamingQuery:
        writer = (
            totals_stream(rows, self.deadline_s)
            .writeStream.outputMode("append")
            .option("checkpointLocation", str(self.checkpoint))
            .foreachBatch(self._batch)
            .queryName("kafka-pulse-audit-reconcile")
        )
        if available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{self.trigger_s} seconds")
        return writer.start()

    def _batch(self, frame: DataFrame, batch_id: int) -> None:
        """foreachBatch: the batch's totals are whole minutes (the watermark closes all keys of a minute at once);
        kept in memory for its two reads, so the stateful plan runs once."""
        frame.persist()
        try:
            minutes = [r["minute"] for r in frame.select("cluster", "topic", "minute").distinct().collect()]
            found = sorted(
                Finding(_ms(r["minute"]), r["cluster"], r["topic"], r["group"], r["kind"], int(r["count"]))
                for r in findings(frame, self.counted_groups).collect()
            )
        finally:
            frame.unpersist()
        now_ms = int(self.clock() * 1000)
        if found and self.log is not None:
            self.log.record(findings_table(found, batch_id, now_ms), datetime.fromtimestamp(now_ms / 1000, UTC))
        with self._lock:
            judged = self._judged
            judged.batches += 1
            judged.minutes += len(minutes)
            for f in found:
                judged.findings[f.kind] += 1
                judged.records[f.kind] += f.count
            if minutes:
                newest = max(_ms(m) for m in minutes)
                judged.newest_minute_ms = max(newest, judged.newest_minute_ms or newest)
            self._recent.extend(found)

    def judged(self) -> Judged:
        """A copy of the counters and the recent findings."""
        with self._lock:
            j = self._judged
            return Judged(
                j.batches, j.minutes, dict(j.findings), dict(j.records), j.newest_minute_ms, list(self._recent)
            )


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)
