"""A data-freshness SLO over the broker-side audit's rows (issue #26; docs/audit.md, "A data-freshness SLO"): a
real `BrokerAudit` on the shared Kafka cluster writes its settled minutes to its Parquet log and to the SLI sink;
`slo evaluate` (Spark local mode) over an `audit` source gives, per group, the SLI computed by hand from the rows:
100 % for the group that read everything, less for the one that fell behind; `slo stream --once` over the topic
`<prefix>audit-broker` answers the same. Record timestamps are minutes in the past, so every boundary is due at
once and no test waits for a minute to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.dataset as pads
import pytest
import yaml
from click.testing import CliRunner
from confluent_kafka import TopicPartition
from pyspark.sql import SparkSession

from audit import BROKER_ROWS, BROKER_STREAM, BrokerAudit, BrokerLog
from audit.minutes import MINUTE_MS, minute_of
from kafka_pulse.cli.main import cli
from kafka_pulse.clusters import dev_cluster_config
from pulse.sli_sink import SliSink
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.integration.audit.conftest import read_stream

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
STREAM_TIMEOUT_S = 600.0
"""`slo stream --once` starts its own JVM with Spark's Kafka source (from the Ivy cache after the first run)."""

PER_MINUTE = {0: {0: 3, 1: 3}, 1: {0: 4}, 2: {1: 5}}
"""Minute (from the first) -> partition -> records written, by hand: 6, 4 and 5."""
FRESH_S = 600
"""A minute's records are good when the group passed its end within this long (the test's minutes are 2-6
minutes old when the audit first looks, so a group that has read them is fresh)."""
GOOD = f"CASE WHEN latency_s <= {FRESH_S} THEN records_written ELSE 0 END"


def hand_sli(rows: list[dict[str, object]], group: str) -> float:
    """sum(good) / sum(total) of one group's rows, as the spec's expressions read them."""
    mine = [r for r in rows if r["group"] == group]
    total = sum(int(r["records_written"]) for r in mine)  # type: ignore[call-overload]
    good = sum(
        int(r["records_written"])  # type: ignore[call-overload]
        for r in mine
        if r["latency_s"] is not None and float(r["latency_s"]) <= FRESH_S  # type: ignore[arg-type]
    )
    return good / total


def test_a_freshness_slo_over_the_audit_rows(
    kafka: KafkaHandle, sink: SliSink, sink_prefix: str, spark: SparkSession, tmp_path: Path
) -> None:
    topic = kafka.create_topic("audit-fresh", partitions=2)
    suffix = uuid.uuid4().hex[:6]
    healthy, behind = f"billing-{suffix}", f"fraud-{suffix}"
    base = minute_of(int(time.time() * 1000)) - 5 * MINUTE_MS
    producer = kafka.producer()
    for minute, partitions in PER_MINUTE.items():
        for partition, count in partitions.items():
            for i in range(count):
                producer.produce(topic, b"order", partition=partition, timestamp=base + minute * MINUTE_MS + i)
    assert producer.flush(30) == 0

    # `healthy` committed everything; `behind` only minute 0 (3 records on each partition): minutes 1 and 2 stay
    # unpassed until max_wait_s runs out, so their 9 records are bad.
    for group, offsets in ((healthy, {0: 7, 1: 8}), (behind, {0: 3, 1: 3})):
        consumer = kafka.consumer(group)
        commit_offsets(consumer, [TopicPartition(topic, p, o) for p, o in offsets.items()])
        consumer.close()

    log = BrokerLog(tmp_path / "audit", flush_interval_s=60).start()
    audit = BrokerAudit(
        "dev", kafka.consumer("kp-audit"), kafka.admin(), kafka.group_offsets(), [topic], [healthy, behind], sink,
        log=log, grace_s=1, max_wait_s=60, since_ms=base,
    )  # fmt: skip
    settled = audit.cycle(int(time.time() * 1000))
    log.stop()
    rows = pads.dataset(tmp_path / "audit" / BROKER_ROWS, format="parquet", partitioning="hive").to_table()
    rows = rows.drop_columns(["date"]).sort_by([("group", "ascending"), ("minute", "ascending")])
    assert rows.num_rows == len(settled) >= 2 * 3

    # The same rows went to Kafka: one writer per destination, one table per cycle.
    published, _ = read_stream(kafka, sink_prefix, BROKER_STREAM, len(settled))
    assert published.sort_by([("group", "ascending"), ("minute", "ascending")]).equals(rows)

    listed = rows.to_pylist()
    by_group = {(r["group"], (r["minute"].timestamp() * 1000 - base) // MINUTE_MS): r for r in listed}
    assert [by_group[(behind, m)]["complete"] for m in PER_MINUTE] == [True, False, False]
    assert all(by_group[(healthy, m)]["complete"] for m in PER_MINUTE)
    want = {healthy: hand_sli(listed, healthy), behind: hand_sli(listed, behind)}
    assert want == {healthy: 1.0, behind: pytest.approx(6 / 15)}

    spec = {
        "name": "orders-freshness",
        "source": {"type": "audit", "path": str(tmp_path / "audit" / BROKER_ROWS), "filter": f"topic = '{topic}'"},
        "good": GOOD,
        "total": "records_written",
        "objective": 99.9,
        "group_by": ["group"],
    }
    config = tmp_path / "pulse.yaml"
    cluster = dev_cluster_config(kafka.cluster).model_dump(mode="json")
    sli_sink = {"cluster": cluster["name"], "topic_prefix": sink_prefix}
    config.write_text(yaml.safe_dump({"clusters": [cluster], "sli_sink": sli_sink, "slos": [spec]}))
    at = datetime.fromtimestamp((minute_of(int(time.time() * 1000)) + 2 * MINUTE_MS) / 1000, UTC)
    args = ["slo", "evaluate", "--config", str(config), "--at", at.isoformat().replace("+00:00", "Z"), "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    got = {s["labels"]["group"]: s for s in json.loads(result.output)["slos"]}
    assert {g: s["sli"] for g, s in got.items()} == {g: pytest.approx(v) for g, v in want.items()}
    assert (got[behind]["good"], got[behind]["total"]) == (6, 15)

    # The stream reads the same rows from `<prefix>audit-broker` and answers as the batch job.
    argv = [sys.executable, "-m", "kafka_pulse.cli.main", "slo", "stream", "--config", str(config)]
    argv += ["--state-dir", str(tmp_path / "stream"), "--json", "--once", "--at", args[-2]]
    env = {**os.environ, "PYTHONPATH": str(REPO), "KAFKA_PULSE_HOME": str(tmp_path / "home")}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=STREAM_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert json.loads(done.stdout[done.stdout.index("{") :]) == json.loads(result.output)

    # The spec check reads the audit rows' schema: a column they do not have is refused before Spark.
    config.write_text(yaml.safe_dump({"slos": [spec | {"good": "latency_ms <= 300"}]}))
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 2, refused.output
    assert "slos[0].good: unknown column(s) latency_ms in" in refused.output
    assert "records_written" in refused.output
