"""The audit tests' shared pieces: the SLI topics of the audit's streams on the shared cluster, an SLI sink
publishing to them, and a reader of what arrived."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic

from audit import BROKER_STREAM, CLIENT_STREAM
from pulse.polling import poll
from pulse.sli_sink import KafkaDelivery, SliSink, decode_rows, header_map
from pulse.sli_sink.encode import Stream
from tests.fixtures.kafka import KafkaHandle


@pytest.fixture(scope="module")
def sink_prefix(kafka: KafkaHandle) -> str:
    """The SLI topics `<prefix>audit-broker` and `<prefix>audit-client`, created as an operator would."""
    prefix = f"kp-sli-{uuid.uuid4().hex[:8]}-"
    admin = kafka.admin()
    names = [f"{prefix}{s.name}" for s in (BROKER_STREAM, CLIENT_STREAM)]
    for future in admin.create_topics([NewTopic(n, 1, kafka.cluster.spec.replication_factor) for n in names]).values():
        future.result(timeout=30)
    return prefix


@pytest.fixture
def sink(kafka: KafkaHandle, sink_prefix: str, tmp_path: Path) -> Iterator[SliSink]:
    delivery = KafkaDelivery(kafka.client_config(), sink_prefix, 10.0)
    sink = SliSink(tmp_path / "spool", delivery, retry_after_s=0.5, spool_interval_s=0.05).start()
    try:
        yield sink
    finally:
        sink.stop()


def read_stream(kafka: KafkaHandle, prefix: str, stream: Stream, count: int) -> tuple[pa.Table, list[dict[str, str]]]:
    """The first `count` events of a stream's topic, decoded, and their headers."""
    consumer = kafka.consumer(f"reader-{uuid.uuid4().hex[:8]}")
    consumer.assign([TopicPartition(f"{prefix}{stream.name}", 0, 0)])
    records: list[Any] = []

    def more() -> int:
        records.extend(r for r in consumer.consume(500, timeout=0.5) if r.error() is None)
        return len(records)

    try:
        poll(more, lambda n: n >= count, 60, f"{count} {stream.name} events", interval_s=0)
    finally:
        consumer.close()
    return decode_rows(stream, [r.value() for r in records]), [header_map(r.headers()) for r in records]
