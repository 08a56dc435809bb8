"""The canary's commit probe on the real cluster: it commits the monitor topic's high watermark, so the lag evaluator
never sees kafka-pulse's own probe group as a consumer falling behind (it showed WARN on a healthy idle cluster)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import TopicPartition

from canary.commit_probe import CommitProbe
from pulse.config import ClusterConfig
from tests.fixtures.kafka import KafkaHandle

pytestmark = pytest.mark.integration


def test_commits_follow_the_high_watermark(kafka: KafkaHandle) -> None:
    topic = kafka.create_topic("commit-probe", partitions=1)
    producer = kafka.producer()
    for n in range(25):
        producer.produce(topic, value=str(n).encode(), partition=0)
    assert producer.flush(30) == 0
    cluster = ClusterConfig.model_validate({"name": "dev", "bootstrap_servers": kafka.bootstrap_servers.split(",")})
    group = f"commit-probe-{uuid.uuid4().hex[:8]}"
    probe = CommitProbe(cluster, topic, group, timeout_s=10)
    try:
        results = [probe.commit_once() for _ in range(3)]
    finally:
        probe.close()

    assert all(r is not None and r.ok for r in results), results
    reader = kafka.consumer(group)
    try:
        [committed] = reader.committed([TopicPartition(topic, 0)], timeout=30)
    finally:
        reader.close()
    assert committed.offset == 25  # the end of the log: lag 0, not 3 commits crawling from offset 1
