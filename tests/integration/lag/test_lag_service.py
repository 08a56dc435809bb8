"""`kafka-pulse lag --config F` as a service over two real clusters in one process: the Kafka 4.3
cluster and the Kafka 3.9 one. The 3.9 broker is frozen (SIGSTOP, the worst case: sockets open, nothing answers);
its group turns UNKNOWN and never STOP or ERR, while the 4.3 cluster's group keeps being evaluated with new
commits. The broker comes back, its group is OK again, and SIGTERM stops the process cleanly (exit 0).
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition

from pulse.polling import PollTimeout, poll
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.fixtures.pulse_process import PulseProcesses
from tests.integration.devstack.test_dev_cluster import produce

pytestmark = pytest.mark.integration

FROZEN_S = 12.0
"""Longer than stale_after_s (4 s) plus a failing HWM round (5 s timeout)."""


def commit(consumer: Consumer, topic: str, offset: int) -> None:
    commit_offsets(consumer, [TopicPartition(topic, 0, offset)])


def status_of(http: httpx.Client, cluster: str, group: str) -> dict[str, Any]:
    body = http.get(f"/v3/kafka/{cluster}/consumer/{group}/lag").json()
    return body.get("status") or {"status": "NOTFOUND", "partitions": []}


def test_two_clusters_in_one_process_and_one_frozen(
    kafka: KafkaHandle, kafka39: KafkaHandle, pulse_process: PulseProcesses, tmp_path: Path
) -> None:
    t4 = kafka.create_topic("svc4", partitions=1)
    t39 = kafka39.create_topic("svc39", partitions=1, replication_factor=1)
    c4, c39 = kafka.consumer("svc-g4"), kafka39.consumer("svc-g39")
    config = {
        "clusters": [
            {"name": "k4", "bootstrap_servers": kafka.bootstrap_servers},
            {"name": "k39", "bootstrap_servers": kafka39.bootstrap_servers},
        ],
        "lag": {
            "mode": "enhanced", "intervals": 5, "offset_refresh_s": 1, "stale_after_s": 4, "recovery_s": 3,
            "group_allow": "^svc-",
        },
    }  # fmt: skip
    env = {"KAFKA_PULSE_HOME": str(tmp_path / "home")}
    process = pulse_process.start(
        "lag", config, home=tmp_path, env=env, listen="lag.listen", ready="/burrow/admin/ready", timeout_s=90
    )
    hwm = {"k4": 0, "k39": 0}
    seen: dict[str, list[str]] = defaultdict(list)
    try:
        with httpx.Client(base_url=process.url, timeout=10, trust_env=False) as http:

            def round_on(cluster: str) -> None:
                handle, topic, consumer = (kafka, t4, c4) if cluster == "k4" else (kafka39, t39, c39)
                produce(handle, topic, 10, f"{cluster}-{hwm[cluster]}")
                hwm[cluster] += 10
                commit(consumer, topic, hwm[cluster])

            def sample(clusters: tuple[str, ...]) -> dict[str, str]:
                now = {c: status_of(http, c, f"svc-g{c[1:]}")["status"] for c in clusters}
                for c, s in now.items():
                    seen[c].append(s)
                return now

            def await_ok(clusters: tuple[str, ...], timeout_s: float) -> None:
                def one_round() -> dict[str, str]:
                    for c in clusters:
                        round_on(c)
                    time.sleep(1.0)  # the groups' commit cadence
                    return sample(clusters)

                try:
                    poll(one_round, lambda now: all(s == "OK" for s in now.values()), timeout_s, "all OK", 0)
                except PollTimeout as exc:
                    raise AssertionError(dict(seen)) from exc

            await_ok(("k4", "k39"), 60)
            assert http.get("/v3/kafka").json()["clusters"] == ["k39", "k4"]
            assert http.get("/v3/config/cluster").json()["modules"] == ["k39", "k4"]
            assert http.get("/v3/kafka/k39").json()["module"]["servers"] == kafka39.bootstrap_servers.split(",")
            assert 'kafka_pulse_lag_source_up{cluster="k39"} 1.0' in http.get("/metrics").text

            seen.clear()
            kafka39.cluster.pause(1)
            try:
                frozen_at = time.monotonic()
                ends_k4: list[int] = []
                while time.monotonic() - frozen_at < FROZEN_S:
                    round_on("k4")  # only the live cluster's group commits
                    time.sleep(1.0)
                    sample(("k4", "k39"))
                    ends_k4.append(status_of(http, "k4", "svc-g4")["partitions"][0]["end"]["offset"])
                metrics = http.get("/metrics").text
            finally:
                kafka39.cluster.resume(1)
            assert set(seen["k39"]) <= {"OK", "UNKNOWN"} and "UNKNOWN" in seen["k39"], seen["k39"]
            assert set(seen["k4"]) == {"OK"}, seen["k4"]
            assert ends_k4 == sorted(ends_k4) and ends_k4[-1] > ends_k4[0]  # new commits were evaluated
            assert 'kafka_pulse_lag_source_up{cluster="k39"} 0.0' in metrics
            assert 'kafka_pulse_lag_source_up{cluster="k4"} 1.0' in metrics

            seen.clear()
            await_ok(("k4", "k39"), 90)
            assert set(seen["k39"]) <= {"OK", "UNKNOWN"}, seen["k39"]

        assert process.stop() == 0, process.log()[-3000:]
        assert "lag: stopped" in process.log()
    finally:
        process.stop(grace_s=0)
        c4.close()
        c39.close()
