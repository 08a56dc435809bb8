"""`kafka-pulse run` with an `audit:` section on the shared Kafka cluster (issue #26; docs/audit.md, "In `kafka-pulse
run`"): a real consumer group subscribes, reads three minutes of records and commits; the process's audit, reading
back 10 minutes at start, writes a row per minute of that group to its Parquet log with the counts written by hand,
and its cycles (and its self-health) are on /metrics. Record timestamps are minutes in the past, so no test waits
for a minute to end."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow.dataset as pads
import pytest
from confluent_kafka import TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from audit import BROKER_ROWS
from audit.minutes import MINUTE_MS, minute_of
from kafka_pulse.clusters import dev_cluster_config
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.fixtures.pulse_process import PulseProcesses

pytestmark = pytest.mark.integration

PER_MINUTE = {0: {0: 3, 1: 3}, 1: {0: 4}, 2: {1: 5}}
"""Minute (from the first) -> partition -> records written, by hand: 6, 4 and 5."""


def rows_of(directory: Path, group: str) -> list[dict[str, Any]]:
    """The group's rows in the audit log so far (none while no file is written)."""
    if not any(directory.rglob("*.parquet")):
        return []
    table = pads.dataset(directory, format="parquet", partitioning="hive").to_table()
    return [r for r in table.to_pylist() if r["group"] == group]


def samples(text: str, family: str) -> dict[str, float]:
    """The samples of one family, by their `result`/`complete` label value."""
    found: dict[str, float] = {}
    for metric in text_string_to_metric_families(text):
        if metric.name == family:
            for sample in metric.samples:
                if sample.name.endswith("_total"):
                    found[next(iter(sample.labels.values()))] = sample.value
    return found


def test_run_audits_a_real_group(kafka: KafkaHandle, pulse_process: PulseProcesses, tmp_path: Path) -> None:
    topic = kafka.create_topic("audit-run", partitions=2)
    group = f"billing-{uuid.uuid4().hex[:6]}"
    base = minute_of(int(time.time() * 1000)) - 5 * MINUTE_MS
    producer = kafka.producer()
    for minute, partitions in PER_MINUTE.items():
        for partition, count in partitions.items():
            for i in range(count):
                producer.produce(topic, b"order", partition=partition, timestamp=base + minute * MINUTE_MS + i)
    assert producer.flush(30) == 0

    consumer = kafka.consumer(group)
    consumer.subscribe([topic])
    read: list[Any] = []

    def more() -> int:
        read.extend(m for m in consumer.consume(100, timeout=0.5) if m.error() is None)
        return len(read)

    try:
        poll(more, lambda n: n >= 15, 60, "15 records read by the group", interval_s=0)
        commit_offsets(consumer, [TopicPartition(topic, p, o) for p, o in {0: 7, 1: 8}.items()])
    finally:
        consumer.close()

    log_dir = tmp_path / "audit-log"
    config = {
        "clusters": [dev_cluster_config(kafka.cluster).model_dump(mode="json")],
        "collectors": {"enabled": False},
        "canary": {"enabled": False},
        "lag": {"enabled": False},
        "audit": {
            "enabled": True,
            "topics": [topic],
            "groups": [group],
            "interval_s": 2,
            "grace_s": 1,
            "max_wait_s": 60,
            "lookback_s": 600,
            "log": {"dir": str(log_dir), "flush_interval_s": 1},
        },
    }
    with pulse_process.start("run", config) as run:
        found = poll(
            lambda: rows_of(log_dir / BROKER_ROWS, group),
            lambda rows: {r["minute"].timestamp() * 1000 for r in rows} >= {base + m * MINUTE_MS for m in PER_MINUTE},
            120,
            f"the audit's rows of {group}",
        )
        metrics = run.client.get(run.url + "/metrics").text
        assert run.stop() == 0
    by_minute = {(int(r["minute"].timestamp() * 1000) - base) // MINUTE_MS: r for r in found}
    for minute, partitions in PER_MINUTE.items():
        row = by_minute[minute]
        written = sum(partitions.values())
        assert (row["records_written"], row["records_passed"], row["complete"]) == (written, written, True)
        assert (row["cluster"], row["topic"]) == (dev_cluster_config(kafka.cluster).name, topic)
    assert all(r["records_written"] == 0 for m, r in by_minute.items() if m not in PER_MINUTE)
    cycles = samples(metrics, "kafka_pulse_audit_cycles")
    assert cycles.get("ok", 0) >= 1, metrics
    assert samples(metrics, "kafka_pulse_audit_minutes_settled").get("true", 0) >= len(PER_MINUTE)
    assert "kafka_pulse_audit_log_rows_written_total" in metrics
    assert 'kafka_pulse_component_last_success_timestamp_seconds{component="audit"}' in metrics  # self-health
