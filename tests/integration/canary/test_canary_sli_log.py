"""The Parquet SLI log written by the real canary on the 3-node cluster reads back with the documented schema:
one row per probe, attributed to the leader and its rack, flushed while running."""

from __future__ import annotations

import uuid
from datetime import UTC
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from prometheus_client import CollectorRegistry

from canary.service import CanaryService
from canary.sli_log import PARTITIONING, SCHEMA, configure_sli_log
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import CanaryConfig
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle

pytestmark = pytest.mark.integration

RACKS = {1: "az-a", 2: "az-b", 3: "az-c"}


def read_log(directory: Path) -> ds.Dataset:
    return ds.dataset(directory, format="parquet", partitioning=ds.partitioning(PARTITIONING, flavor="hive"))


def test_the_canarys_sli_log_reads_back_with_the_documented_schema(kafka: KafkaHandle, tmp_path: Path) -> None:
    settings = CanaryConfig.model_validate(
        {
            "topic": f"canary-sli-{uuid.uuid4().hex[:8]}",
            "interval_s": 0.5,
            "client_rack": "az-a",
            "metadata_refresh_s": 0.5,
            "sli_log": {"dir": str(tmp_path / "sli"), "flush_interval_s": 1.0},
        }
    )
    registry = CollectorRegistry()
    sli_log = configure_sli_log(settings.sli_log, registry, tmp_path / "unused-state")
    assert sli_log is not None
    sli_log.start()
    service = CanaryService(dev_cluster_config(kafka.cluster), settings, [sli_log], registry)
    service.start()
    try:
        # Read while the canary runs: the flush interval, not the stop, puts rows on disk.
        def consumed_per_broker() -> dict[int, int]:
            if not (tmp_path / "sli").exists():
                return {}
            # The explicit schema lets a date directory whose first file is still being written read as empty.
            schema = SCHEMA.append(PARTITIONING.field("date"))
            dataset = ds.dataset(tmp_path / "sli", schema=schema, format="parquet", partitioning="hive")
            rows = dataset.to_table(columns=["broker", "consume_ok"]).to_pylist()
            counts: dict[int, int] = {}
            for row in rows:
                if row["consume_ok"]:
                    counts[row["broker"]] = counts.get(row["broker"], 0) + 1
            return counts

        poll(consumed_per_broker, lambda c: all(c.get(b, 0) >= 3 for b in RACKS), 120, "3 read-back rows per broker")
    finally:
        service.stop()
        sli_log.stop()

    table = read_log(tmp_path / "sli").to_table()
    assert table.schema.remove(table.schema.get_field_index("date")) == SCHEMA
    rows = table.to_pylist()
    assert len(rows) == sli_log.stats().rows_written
    assert sli_log.stats().rows_dropped == {"queue_full": 0, "write_error": 0}
    assert not (tmp_path / "unused-state").exists()  # canary.sli_log.dir was honoured
    for row in rows:
        assert row["date"] == row["time"].astimezone(UTC).strftime("%Y-%m-%d")
        assert (row["cluster"], row["topic"], row["client_rack"]) == ("dev", settings.topic, "az-a")
        assert row["target_cluster"] is None
    read_back = [r for r in rows if r["consume_ok"] and not r["duplicate"]]
    assert {(r["broker"], r["rack"]) for r in read_back} == set(RACKS.items())
    assert all(r["produce_latency_s"] > 0 and r["e2e_latency_s"] > 0 and r["offset"] is not None for r in read_back)
    # produce_ok and error agree; on a loaded machine an ack may come later than the SLO, and says so.
    assert all((r["error"] is None) == r["produce_ok"] for r in rows)
    assert {r["error"] for r in read_back} <= {None, "_SLO_EXCEEDED"}
    assert not any(r["lost"] or r["duplicate"] for r in rows)  # a healthy cluster
    sequences = {(r["partition"], r["sequence"]) for r in read_back}
    assert len(sequences) == len(read_back)  # one row per probe
