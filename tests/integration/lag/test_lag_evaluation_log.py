"""The lag evaluation log end to end (for SLOs such as "99 % of minutes with lag < 30 s"): the lag service on the
real 3-node cluster writes a caught-up group and a stopped group every second; the log reads back with the
documented schema; `kafka-pulse slo evaluate` runs a per-group timeslice SLO over it in Spark and finds the
caught-up group's SLI 1.0 and the stopped group's below it.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
import yaml
from click.testing import CliRunner
from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import SparkSession

from kafka_pulse.cli.main import cli
from lag.assembly import LagRunner
from lag.notify.evaluation_log import GROUP_SCHEMA, GROUPS, PARTITION_SCHEMA, PARTITIONING, PARTITIONS
from lag.protocol import Status
from pulse.config import parse_config
from tests.fixtures.kafka import KafkaHandle, commit_offsets

pytestmark = pytest.mark.integration

CLUSTER = "dev"


def commit(consumer: Consumer, topic: str, offset: int) -> None:
    commit_offsets(consumer, [TopicPartition(topic, 0, offset)])


def dataset(directory: Path) -> ds.Dataset:
    return ds.dataset(directory, format="parquet", partitioning=ds.partitioning(PARTITIONING, flavor="hive"))


def stored_schema(directory: Path) -> pa.Schema:
    """The files' columns, without the hive `date` directory."""
    schema = dataset(directory).schema
    return schema.remove(schema.get_field_index("date"))


def read(directory: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = dataset(directory).to_table().to_pylist()
    return rows


def test_the_lag_log_feeds_a_per_group_timeslice_slo(kafka: KafkaHandle, spark: SparkSession, tmp_path: Path) -> None:
    topic = kafka.create_topic("evlog", partitions=1)
    prefix = f"evlog-{uuid.uuid4().hex[:6]}"
    caught_up, stopped = f"{prefix}-caught-up", f"{prefix}-stopped"
    log_dir = tmp_path / "lag-log"
    settings = {
        "clusters": [{"name": CLUSTER, "bootstrap_servers": kafka.bootstrap_servers.split(",")}],
        "lag": {
            "intervals": 5, "offset_refresh_s": 1, "stale_after_s": 10, "group_allow": f"^{prefix}-",  # not others'
            "evaluation_log": {"dir": str(log_dir), "interval_s": 1, "flush_interval_s": 1, "partitions": True},
        },
    }  # fmt: skip
    config = parse_config(yaml.safe_dump(settings), "pulse.yaml", {})
    runner = LagRunner(config, config.clusters, state=tmp_path / "state")
    consumers = {g: kafka.consumer(g) for g in (caught_up, stopped)}
    producer = kafka.producer()
    produced = 0
    runner.start()
    try:
        for rnd in range(90):
            for i in range(10):
                producer.produce(topic, value=f"r{rnd}-{i}".encode())
            assert producer.flush(30) == 0
            produced += 10
            commit(consumers[caught_up], topic, produced)
            if rnd < 3:
                commit(consumers[stopped], topic, produced)
            if runner.service.group_status(CLUSTER, stopped).status is Status.ERR and rnd >= 10:
                break
            time.sleep(1.0)  # the groups' commit cadence under test: one commit a second
        assert runner.service.group_status(CLUSTER, stopped).status is Status.ERR
    finally:
        runner.stop()  # writes what is queued
        producer.close()
        for consumer in consumers.values():
            consumer.close()
    assert runner.evaluation_log is not None
    assert runner.evaluation_log.log.stats().rows_dropped == {"queue_full": 0, "write_error": 0}
    assert runner.evaluation_log.cycles["failed"] == 0
    assert not (tmp_path / "state").exists()  # lag.evaluation_log.dir was honoured

    # The log reads back with the documented schema.
    assert stored_schema(log_dir / GROUPS) == GROUP_SCHEMA
    rows = read(log_dir / GROUPS)
    by_group = {g: [r for r in rows if r["group"] == g] for g in (caught_up, stopped)}
    assert {r["group"] for r in rows} == {caught_up, stopped}
    judged = {g: [r for r in by_group[g] if not r["unknown"]] for g in by_group}  # a slow HWM round: no verdict
    assert all(r["status"] == "UNKNOWN" and not r["ok"] for g in by_group for r in by_group[g] if r["unknown"])
    assert len(judged[caught_up]) >= 5
    assert {(r["status"], r["ok"]) for r in judged[caught_up]} == {("OK", True)}
    assert all(r["lag_seconds"] is not None and r["lag_seconds"] < 30 for r in judged[caught_up])
    errors = [r for r in by_group[stopped] if r["status"] == "ERR"]
    assert errors and all(not r["ok"] and r["totallag"] > 0 for r in errors), by_group[stopped]
    assert all(r["date"] == r["time"].strftime("%Y-%m-%d") for r in rows)
    assert stored_schema(log_dir / PARTITIONS) == PARTITION_SCHEMA
    partitions = read(log_dir / PARTITIONS)
    assert {(r["group"], r["topic"], r["partition"]) for r in partitions} == {(g, topic, 0) for g in by_group}
    assert any(r["status"] == "STOP" for r in partitions if r["group"] == stopped)

    # "Minutes where the group's lag is below 30 s and its status OK", per group, over that log.
    slo = {
        "name": "consumer-lag-minutes",
        "source": {"type": "lag", "path": str(log_dir / GROUPS)},
        "good": "ok AND coalesce(lag_seconds, 0) < 30",
        "total": "NOT unknown",
        "objective": 99,
        "budgeting": {"method": "timeslices", "slice": "1m", "slice_target": 100},
        "group_by": ["group"],
    }
    spec = tmp_path / "slo.yaml"
    spec.write_text(yaml.safe_dump({"slos": [slo]}))
    last: datetime = max(r["time"] for r in rows)
    at = (last.replace(second=0, microsecond=0) + timedelta(minutes=1)).astimezone(UTC)
    result = CliRunner().invoke(cli, ["slo", "evaluate", "--config", str(spec), "--at", at.isoformat(), "--json"])
    assert result.exit_code == 0, result.output
    sli = {r["labels"]["group"]: r for r in json.loads(result.output)["slos"]}
    assert set(sli) == {caught_up, stopped}
    assert sli[caught_up]["sli"] == 1.0 and sli[caught_up]["budgeting"] == "timeslices"
    assert sli[stopped]["sli"] < 1.0
    minutes = {r["time"].replace(second=0, microsecond=0) for r in judged[stopped]}
    assert sli[stopped]["total"] == len(minutes)  # one slice per minute with rows, however many rows it holds
    assert all(not any(r["skipped_rows"].values()) for r in sli.values()), sli
