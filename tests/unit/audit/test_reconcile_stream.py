"""The reconciliation's streaming query (local Spark, micro-batches from files in order) judges the same minutes
with the same findings as the Python `Reconciler` fed the same batches: late reports within the deadline counted,
one past it left out and counted late, a copy of a report counted once."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from prometheus_client.registry import CollectorRegistry
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from audit.reconcile import CountRow, Reconciler, describe
from audit.reconcile_stream import ReconcileStream
from kafka_pulse.runner.audit_reconcile import ReconcileCollector, ReconcileRunner
from slo import dropped_as_late
from tests.unit.audit.test_reconcile import done, found, log, minute, sent
from tests.unit.audit.test_reconcile_spark import ROWS, rows_table

pytestmark = pytest.mark.usefixtures("spark")

DEADLINE_S = 120

BATCHES: list[list[CountRow]] = [
    [sent(100, 90), log("billing", 100), done("billing", 100)],
    [sent(10, 10, at=1), log("billing", 10, at=1), done("billing", 7, at=1), sent(0, 10)],  # minute 0's late acks
    [sent(5, 5, at=2), log("billing", 5, at=2), done("billing", 8, at=2)],  # closes minute 0
    [sent(5, 0), sent(1, 1, at=3), log("billing", 1, at=3), done("billing", 1, at=3)],  # judges minute 0
    [sent(7, 0), sent(1, 1, at=10)],  # minute 0's too late; the watermark passes minute 3
    [],  # the last trigger (availableNow ends with one without data) judges minutes 1 to 3
]
COPY = (3, 1)
"""Batch 3's second row goes to Spark twice, with one `__id`, as a redelivered SLI record would."""


def test_the_stream_judges_as_the_python_reconciler(spark: SparkSession, tmp_path: Path) -> None:
    source = tmp_path / "rows"
    source.mkdir()
    for index, batch in enumerate(BATCHES[:-1]):
        ids = [f"b{index}:{i}" for i in range(len(batch))]
        rows = list(batch)
        if index == COPY[0]:
            rows.append(batch[COPY[1]])
            ids.append(ids[COPY[1]])
        path = source / f"batch-{index}.parquet"
        pq.write_table(rows_table(rows, ids), path)
        os.utime(path, (1_000_000 + index, 1_000_000 + index))  # the file source takes files oldest first

    python = Reconciler(DEADLINE_S * 1000)
    want = sorted(f for batch in BATCHES for f in python.batch(batch))
    assert want == [
        found("unacknowledged", 5),
        found("skipped", 3, "billing", at=1),
        found("duplicated", 3, "billing", at=2),
    ]
    assert python.late == 1

    stream = ReconcileStream(DEADLINE_S, tmp_path / "checkpoint")
    reader = spark.readStream.schema(from_arrow_schema(ROWS))
    query = stream.start(reader.option("maxFilesPerTrigger", 1).parquet(str(source)), available_now=True)
    query.awaitTermination()
    judged = stream.judged()
    assert sorted(judged.recent) == want
    assert judged.minutes == 4
    assert judged.batches == len(BATCHES)
    late, _ = dropped_as_late([json.loads(p.json) for p in query.recentProgress], -1)
    assert late == python.late
    assert describe(want[1]) == "3 records skipped on prod/orders, group billing, minute 2027-01-15T08:01Z"

    # What `run` exports of it (docs/metrics.md, "Data-flow audit").
    registry = CollectorRegistry()
    runner = ReconcileRunner(stream, lambda _s: reader.parquet(str(source)), lambda: spark, 60.0, owns_session=False)
    registry.register(ReconcileCollector(runner))
    value = registry.get_sample_value
    assert value("kafka_pulse_audit_findings_total", {"kind": "skipped"}) == 1
    assert value("kafka_pulse_audit_records_astray_total", {"kind": "duplicated"}) == 3
    assert value("kafka_pulse_audit_records_astray_total", {"kind": "missing"}) == 0
    assert value("kafka_pulse_audit_minutes_judged_total") == 4
    assert value("kafka_pulse_audit_judged_minute_timestamp_seconds") == minute(3) / 1000
