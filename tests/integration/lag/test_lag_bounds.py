"""Bounds on Kafka data, end to end: `kafka-pulse lag` on the real dev cluster while a client commits offsets for a
group whose id (2,000 bytes) is past `lag.max_group_name_bytes` (1,024 by default) beside a normal group. The long
group is dropped at ingestion and counted on /metrics; it is on no route and no series, and the normal group is
judged as usual."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest
from confluent_kafka import TopicPartition

from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.fixtures.pulse_process import PulseProcesses
from tests.integration.devstack.test_dev_cluster import produce

pytestmark = pytest.mark.integration


def dropped_for_length(metrics: str) -> float:
    prefix = 'kafka_pulse_lag_groups_dropped_total{cluster="dev",reason="name_too_long"} '
    line = next((line for line in metrics.splitlines() if line.startswith(prefix)), None)
    return float(line.removeprefix(prefix)) if line is not None else -1.0


def test_a_group_id_past_the_bound_is_dropped_and_counted(
    kafka: KafkaHandle, pulse_process: PulseProcesses, tmp_path: Path
) -> None:
    prefix = f"bnd{uuid.uuid4().hex[:6]}"
    topic = kafka.create_topic(f"{prefix}-t", partitions=1)
    produce(kafka, topic, 10, prefix)
    normal, long = f"{prefix}-ok", f"{prefix}-" + "x" * 2000
    assert len(long.encode()) > 1024
    config = {
        "clusters": [{"name": "dev", "bootstrap_servers": kafka.bootstrap_servers}],
        "lag": {
            "mode": "enhanced", "intervals": 3, "offset_refresh_s": 1, "group_allow": f"^{prefix}-",
            "evaluation_log": {"enabled": False},
        },
    }  # fmt: skip
    process = pulse_process.start(
        "lag", config, home=tmp_path, listen="lag.listen", ready="/burrow/admin/ready", timeout_s=90
    )
    consumers = [kafka.consumer(group) for group in (normal, long)]
    try:
        with httpx.Client(base_url=process.url, timeout=10, trust_env=False) as http:

            def commit_both() -> str:
                for consumer in consumers:
                    commit_offsets(consumer, [TopicPartition(topic, 0, 10)])
                return http.get("/metrics").text

            metrics = poll(
                commit_both,
                lambda text: dropped_for_length(text) >= 1 and f'group="{normal}"' in text,
                60,
                "the long group counted as dropped and the normal group served",
            )
            groups = http.get("/v3/kafka/dev/consumer").json()["consumers"]
            assert groups == [normal]
            assert long not in metrics and "x" * 1025 not in metrics
            assert 'kafka_pulse_lag_groups_dropped_total{cluster="dev",reason="too_many_groups"} 0.0' in metrics
            assert 'kafka_pulse_lag_commits_total{result="name_too_long"}' in metrics
            # First seen on /metrics, the group may still be UNKNOWN (its feed not yet fresh): await its verdict.
            status = poll(
                lambda: http.get(f"/v3/kafka/dev/consumer/{normal}/status").json()["status"],
                lambda s: s["status"] != "UNKNOWN",
                30,
                "the normal group judged",
            )
            assert status["status"] == "OK" and status["partition_count"] == 1
            assert http.get(f"/v3/kafka/dev/consumer/{long}/status").status_code == 404
        assert process.stop() == 0, process.log()[-3000:]
    finally:
        process.stop(grace_s=0)
        for consumer in consumers:
            consumer.close()
