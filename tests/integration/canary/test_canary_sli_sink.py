"""The canary wired to the SLI sink (`sli_sink.enabled`): every settled probe is on the Kafka topic
`<prefix>canary`, with the canary's schema and version, and the topic holds the same rows as the Parquet log."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic
from prometheus_client import CollectorRegistry

from canary import build_canary
from canary.sli_log import CANARY_STREAM, PARTITIONING, SCHEMA
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import PulseConfig
from pulse.lifecycle import Parts
from pulse.polling import poll
from pulse.sli_sink import HEADER_SCHEMA, HEADER_VERSION, SliSink, SliSinkCollector, decode_rows, header_map
from tests.fixtures.kafka import KafkaHandle
from tests.integration.canary.canary_support import FAST

pytestmark = pytest.mark.integration


def create_exact_topic(kafka: KafkaHandle, name: str) -> None:
    admin = kafka.admin()
    admin.create_topics([NewTopic(name, 1, 3)])[name].result(timeout=30)
    poll(
        lambda: admin.list_topics(topic=name, timeout=5).topics.get(name),
        lambda md: md is not None and md.error is None and all(p.leader >= 0 for p in md.partitions.values()),
        30,
        f"a leader for {name}",
        interval_s=0.1,
    )


def read_all(kafka: KafkaHandle, topic: str, count: int) -> list[Any]:
    consumer = kafka.consumer(f"reader-{topic}")
    consumer.assign([TopicPartition(topic, 0, 0)])
    records: list[Any] = []

    def more() -> int:
        records.extend(r for r in consumer.consume(500, timeout=0.5) if r.error() is None)
        return len(records)

    try:
        poll(more, lambda n: n >= count, 60, f"{count} records on {topic}", interval_s=0)
        more()
    finally:
        consumer.close()
    return records


def test_every_probe_is_on_the_topic_as_in_the_parquet_log(kafka: KafkaHandle, tmp_path: Path) -> None:
    prefix = f"kp-sli-{uuid.uuid4().hex[:8]}-"
    create_exact_topic(kafka, f"{prefix}canary")
    cluster = dev_cluster_config(kafka.cluster)
    config = PulseConfig.model_validate(
        {
            "canary": {
                **FAST,
                "topic": f"canary-sink-{uuid.uuid4().hex[:8]}",
                "sli_log": {"dir": str(tmp_path / "sli"), "flush_interval_s": 1.0},
            },
            "sli_sink": {"enabled": True, "topic_prefix": prefix, "retry_after_s": 1.0},
        }
    )
    registry = CollectorRegistry()
    sink = SliSink.from_config(config.sli_sink, cluster, tmp_path / "spool")
    registry.register(SliSinkCollector(sink))
    parts = Parts(build_canary(config, cluster, registry, tmp_path / "state", sink))
    sink.start()
    try:
        parts.start()
        try:
            poll(sink.stats, lambda s: s.delivered >= 20, 120, "20 probes delivered to Kafka", interval_s=0.2)
        finally:
            parts.stop()  # the canary stops first: its last rows are handed over before the sink stops
    finally:
        sink.stop()
    stats = sink.stats()
    assert stats.spool_events == 0 and sum(stats.dropped.values()) == 0
    assert registry.get_sample_value("kafka_pulse_sli_sink_events_delivered_total") == stats.delivered

    records = read_all(kafka, f"{prefix}canary", stats.delivered)
    assert len(records) == stats.delivered
    assert {(header_map(r.headers())[HEADER_SCHEMA], header_map(r.headers())[HEADER_VERSION]) for r in records} == {
        ("canary", "1")
    }
    on_kafka = decode_rows(CANARY_STREAM, [r.value() for r in records])
    parquet = ds.dataset(
        tmp_path / "sli", format="parquet", partitioning=ds.partitioning(PARTITIONING, flavor="hive")
    ).to_table()
    parquet = parquet.drop_columns(["date"]).cast(SCHEMA)

    def keyed(rows: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
        return Counter(tuple(r.values()) for r in rows)

    assert keyed(on_kafka.to_pylist()) == keyed(parquet.to_pylist()), "the same rows on Kafka and in Parquet"
