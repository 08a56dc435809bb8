"""The audit tests' shared pieces: the SLI topics of the audit's streams on the shared cluster, an SLI sink
publishing to them, a reader of what arrived, and the reconciliation run over them as an operator runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml
from confluent_kafka import Consumer, Message, TopicPartition
from confluent_kafka.admin import NewTopic

from audit import BROKER_STREAM, CLIENT_STREAM, ClientCounts, ConsumerAudit
from kafka_pulse.clusters import dev_cluster_config
from pulse.polling import poll
from pulse.sli_sink import KafkaDelivery, SliSink, decode_rows, header_map
from pulse.sli_sink.encode import Stream
from tests.fixtures.kafka import KafkaHandle, commit_offsets


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


REPO = Path(__file__).resolve().parents[3]
RECONCILE_TIMEOUT_S = 600.0
"""The command starts its own JVM with Spark's Kafka source (from the Ivy cache after the first run)."""


def reconcile_once(kafka: KafkaHandle, prefix: str, state: Path, deadline: str, *counted: str) -> dict[str, Any]:
    """`python -m kafka_pulse.cli.audit reconcile --once --json` over the SLI topics `prefix` names on `kafka`
    (local Spark, its own JVM), `counted` as `audit.reconcile.counted_groups`: its JSON answer."""
    config = state / "pulse.yaml"
    cluster = dev_cluster_config(kafka.cluster).model_dump(mode="json")
    sli_sink = {"cluster": cluster["name"], "topic_prefix": prefix}
    body: dict[str, Any] = {"clusters": [cluster], "sli_sink": sli_sink}
    if counted:
        body["audit"] = {"reconcile": {"counted_groups": list(counted)}}
    config.write_text(yaml.safe_dump(body))
    argv = [sys.executable, "-m", "kafka_pulse.cli.audit", "reconcile", "--config", str(config)]
    argv += ["--state-dir", str(state / "reconcile"), "--deadline", deadline, "--once", "--json"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "KAFKA_PULSE_HOME": str(state / "home")}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=RECONCILE_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    answer: dict[str, Any] = json.loads(done.stdout[done.stdout.index("{") :])
    return answer


def consume_group(
    kafka: KafkaHandle, topic: str, group: str, stop_at: dict[int, int], skip: tuple[int, int, int] | None = None
) -> ClientCounts:
    """A consumer group's application on the partitions of `stop_at`, counted by `ConsumerAudit`: processes every
    record from offset 0 until `stop_at`, then commits where it got to. With `skip` (partition, at, count), on
    reaching offset `at` of that partition it seeks `count` records ahead instead, as after an offset reset."""
    counts = ClientCounts()
    audit = ConsumerAudit(counts)
    consumer: Consumer = kafka.consumer(group)
    consumer.assign([TopicPartition(topic, p, 0) for p in stop_at])
    position = dict.fromkeys(stop_at, 0)

    def handle(message: Message) -> None:
        p, offset = message.partition(), message.offset()
        assert p is not None and offset is not None
        if offset != position[p] or offset >= stop_at[p]:
            return  # fetched before the seek, or past where this application stops
        if skip is not None and (p, offset) == skip[:2]:
            consumer.seek(TopicPartition(topic, p, offset + skip[2]))
            position[p] = offset + skip[2]
            return
        audit.received(message)
        audit.processed(message)
        position[p] = offset + 1

    def more() -> dict[int, int]:
        for message in consumer.consume(500, timeout=0.5):
            if message.error() is None:
                handle(message)
        return position

    try:
        poll(more, lambda at: all(at[p] >= stop_at[p] for p in stop_at), 60, f"{group} at {stop_at}", interval_s=0)
        commit_offsets(consumer, [TopicPartition(topic, p, at) for p, at in position.items()])
    finally:
        consumer.close()
    return counts
