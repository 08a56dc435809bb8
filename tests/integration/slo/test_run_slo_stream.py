"""`kafka-pulse run` with `slo.engine: stream`: the canary publishes its probes through the SLI sink to Kafka, the
run's SLO schedule reads them back with Spark Structured Streaming (Spark's Kafka source) and evaluates the SLO from
the stream's minute buckets; its gauges, its late-event counter and its status line come from the same process."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from confluent_kafka.admin import NewTopic

from canary.sli_log import SCHEMA
from kafka_pulse.clusters import dev_cluster_config
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle
from tests.fixtures.pulse_process import PulseProcesses
from tests.integration.canary.canary_support import FAST

pytestmark = pytest.mark.integration

EVENTS = re.compile(r'^kafka_pulse_slo_events\{[^}]*slo="produce"[^}]*\} ([0-9.e+]+)$', re.M)


def old_row() -> dict[str, object]:
    """One probe older than the window: the spec check needs a Parquet file in the source; the batch job would count
    nothing from it, and the stream never reads it."""
    return {name: None for name in SCHEMA.names} | {
        "time": datetime.now(UTC) - timedelta(days=40), "cluster": "dev", "topic": "t", "partition": 0,
        "producer_id": "p", "sequence": 0, "produce_ok": True, "lost": False, "duplicate": False,
        "out_of_order": False,
    }  # fmt: skip


def test_run_evaluates_its_slo_from_the_sli_topics(
    kafka: KafkaHandle, pulse_process: PulseProcesses, tmp_path: Path
) -> None:
    prefix = f"kp-sli-{uuid.uuid4().hex[:8]}-"
    admin = kafka.admin()
    admin.create_topics([NewTopic(prefix + "canary", 3, 3)])[prefix + "canary"].result(timeout=30)
    (tmp_path / "sli").mkdir()
    pq.write_table(pa.Table.from_pylist([old_row()], schema=SCHEMA), tmp_path / "sli" / "part-0.parquet")
    cluster = dev_cluster_config(kafka.cluster).model_dump(mode="json")
    config = {
        "clusters": [cluster],
        "collectors": {"enabled": False},
        "lag": {"enabled": False},
        "canary": {**FAST, "topic": f"canary-{uuid.uuid4().hex[:8]}"},
        "sli_sink": {"enabled": True, "cluster": cluster["name"], "topic_prefix": prefix},
        "slo": {"engine": "stream", "spark_master": "local[1]", "driver_memory": "512m", "schedule_s": 10},
        "slos": [{"name": "produce", "source": {"type": "events", "path": str(tmp_path / "sli")},
                  "good": "produce_ok", "total": "NOT duplicate", "objective": 99.0, "window": "30d"}],
    }  # fmt: skip
    with pulse_process.start("run", config, home=tmp_path) as run:
        # Every event counted came through the sink and the stream: the one Parquet row is outside the window.
        body = poll(
            lambda: run.client.get(run.url + "/metrics").text,
            lambda text: (m := EVENTS.search(text)) is not None and float(m.group(1)) > 0,
            300,
            "the SLO evaluated from streamed events",
            interval_s=2.0,
        )
        assert "kafka_pulse_slo_stream_late_events_total 0.0" in body
        assert "kafka_pulse_slo_stream_restarts_total 0.0" in body
        assert f"streamed from {prefix}*" in run.log()
