"""Mirror mode across two local clusters with a real MirrorMaker 2 between them."""

from __future__ import annotations

from pathlib import Path

import pyarrow.dataset as ds
import pytest
from confluent_kafka import TopicPartition
from prometheus_client import CollectorRegistry

from canary.mirror import MirrorCanary
from canary.sli_log import PARTITIONING, SCHEMA, SliLog
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import CanaryConfig
from pulse.polling import poll
from pulse.ports import is_listening
from tests.fixtures.mirror import MONITOR_TOPIC, PARTITIONS, MirrorHandle

pytestmark = pytest.mark.integration

DEADLINE_S = 5.0
"""Mirror loss deadline: short, so an outage shows as loss within seconds."""
LABELS = {"source_cluster": "source", "target_cluster": "target", "topic": MONITOR_TOPIC}


def test_mirrormaker_copies_each_record_to_the_same_partition_with_its_timestamp(mirror: MirrorHandle) -> None:
    """What mirror mode relies on: a copy keeps its partition and its source timestamp."""
    producer = mirror.source.producer()
    sent = {p: f"smoke-{p}".encode() for p in range(PARTITIONS)}
    for partition, value in sent.items():
        producer.produce(mirror.topic, value, partition=partition, timestamp=1_700_000_000_000 + partition)
    assert producer.flush(30) == 0
    consumer = mirror.target.consumer("smoke")
    consumer.assign([TopicPartition(mirror.mirrored_topic, p, 0) for p in range(PARTITIONS)])
    seen: dict[int, tuple[bytes, int]] = {}

    def read() -> dict[int, tuple[bytes, int]]:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None and msg.value() in sent.values():
            partition, value = msg.partition(), msg.value()
            assert partition is not None and value is not None  # set on every consumed record
            seen[partition] = (value, msg.timestamp()[1])
        return seen

    poll(read, lambda s: len(s) == PARTITIONS, 60, "a copy of every smoke record", interval_s=0)
    consumer.close()
    assert seen == {p: (sent[p], 1_700_000_000_000 + p) for p in range(PARTITIONS)}
    assert mirror.mirrormaker.jmx_port is not None and is_listening(mirror.mirrormaker.jmx_port)  # for collectors


def test_mirror_mode_reports_replication_latency_and_an_outage_of_mirrormaker(
    mirror: MirrorHandle, tmp_path: Path
) -> None:
    """Healthy: every source partition reports replication latency and loses nothing. MirrorMaker stopped: the
    lag and the losses grow. Restarted: the late copies arrive, the lag falls back and nothing more is lost."""
    canary = CanaryConfig.model_validate(
        {
            "interval_s": 0.5,
            "latency_slo_s": 2.0,
            "loss_deadline_s": 5.0,
            "metadata_refresh_s": 1.0,
            "mirror": {
                "enabled": True,
                "source": "source",
                "target": "target",
                "topic": mirror.topic,
                "target_topic": mirror.mirrored_topic,
                "loss_deadline_s": DEADLINE_S,
            },
        }
    )
    source = dev_cluster_config(mirror.source.cluster, "source")
    target = dev_cluster_config(mirror.target.cluster, "target")
    registry = CollectorRegistry()
    sli_log = SliLog(tmp_path / "sli", flush_interval_s=1.0).start()
    runner = MirrorCanary(source, target, canary, registry, sli_log=sli_log).start()

    def per_partition(name: str) -> dict[int, float]:
        return {
            p: registry.get_sample_value(f"kafka_pulse_canary_mirror_{name}", {**LABELS, "partition": str(p)}) or 0.0
            for p in range(PARTITIONS)
        }

    try:
        counts = poll(
            lambda: per_partition("replication_latency_seconds_count"),
            lambda c: all(n >= 3 for n in c.values()),
            120,
            "replication latency observed on every source partition",
        )
        assert per_partition("lost_total") == dict.fromkeys(range(PARTITIONS), 0.0), counts
        assert all(v < 2.0 for v in per_partition("lag_seconds").values())

        mirror.mirrormaker.stop()
        poll(
            lambda: (per_partition("lag_seconds"), per_partition("lost_total")),
            lambda s: all(lag > DEADLINE_S for lag in s[0].values()) and all(n > 0 for n in s[1].values()),
            120,
            "lag past the loss deadline and a loss on every partition while MirrorMaker is stopped",
        )

        mirror.restart_mirrormaker()
        poll(
            lambda: per_partition("lag_seconds"),
            lambda lags: all(lag < 2.0 for lag in lags.values()),
            120,
            "the lag falling back once MirrorMaker copies again",
        )
        lost = per_partition("lost_total")
        assert per_partition("late_total") == lost  # MirrorMaker lost nothing: every "lost" probe's copy came late
        mirrored = per_partition("mirrored_total")
        poll(
            lambda: per_partition("mirrored_total"),
            lambda m: all(m[p] >= mirrored[p] + 6 for p in range(PARTITIONS)),
            60,
            "probes mirrored again after the restart",
        )
        assert per_partition("lost_total") == lost
    finally:
        runner.stop()
        sli_log.stop()
        mirror.restart_mirrormaker()

    rows = ds.dataset(tmp_path / "sli", format="parquet", partitioning=ds.partitioning(PARTITIONING, flavor="hive"))
    table = rows.to_table()
    assert table.schema.remove(table.schema.get_field_index("date")) == SCHEMA
    assert set(table.column("cluster").to_pylist()) == {"source"}
    assert set(table.column("target_cluster").to_pylist()) == {"target"}
    mirrored_rows = [r for r in table.to_pylist() if r["consume_ok"] and not r["duplicate"]]
    assert mirrored_rows and all(r["e2e_latency_s"] > 0 for r in mirrored_rows)
    assert any(r["lost"] for r in table.to_pylist())
