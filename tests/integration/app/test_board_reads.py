"""`kafka-pulse lag`'s status page judges the cluster from what lag already reads: after several board refreshes
against the real 3-node cluster, no broker has served a Produce request and the check's monitor topic was never
created, while the page shows the brokers and partitions sections judged from the lag source's HWM rounds."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import TopicPartition

from collectors.catalogue import BeanQuery
from collectors.transport import JpypeTransport
from kafka_pulse.clusters import dev_cluster_config
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.fixtures.pulse_process import PulseProcesses

pytestmark = pytest.mark.integration

REFRESHES = 4
"""Board refreshes (5 s apart) the test awaits: the old board produced and created its topic at every one."""
PRODUCE_REQUESTS = BeanQuery(
    "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,version=*", ("Count",)
)
"""Produce requests a broker has served, from any client (commits and coordinator writes are not Produce)."""


def produce_requests(kafka: KafkaHandle) -> float:
    """Produce requests served by every broker of the cluster, summed over the request versions."""
    jmx = dev_cluster_config(kafka.cluster).jmx
    assert jmx is not None
    served = 0.0
    for broker in jmx.brokers:
        transport = JpypeTransport(broker, 20)
        try:
            served += sum(float(r.value) for r in transport.read([PRODUCE_REQUESTS]))
        finally:
            transport.close()
    return served


def test_lag_board_neither_produces_nor_creates_topics(
    kafka: KafkaHandle, pulse_process: PulseProcesses, tmp_path: Path
) -> None:
    monitor = f"board-monitor-{uuid.uuid4().hex[:8]}"  # the check's round trip would create it at the first refresh
    topic = kafka.create_topic("board-reads")
    config = {
        "clusters": [dev_cluster_config(kafka.cluster).model_dump(mode="json")],
        "lag": {"offset_refresh_s": 1},
        "canary": {"topic": monitor},
    }
    before = produce_requests(kafka)
    lag = pulse_process.start("lag", config, home=tmp_path, name="kafka-pulse lag (board reads)")
    consumer = kafka.consumer("board-reads")
    checked: set[str] = set()
    try:

        def refreshed() -> dict[str, Any]:
            commit_offsets(consumer, [TopicPartition(topic, 0, 0)])  # until a HWM round has seen the topic
            doc: dict[str, Any] = httpx.get(lag.url + "/api/status", timeout=10).json()
            if doc["checked_at"] is not None:
                checked.add(doc["checked_at"])
            return doc

        doc = poll(
            refreshed,
            lambda d: len(checked) >= REFRESHES and "board-reads" in [g["group"] for g in d["groups"] or []],
            120,
            f"{REFRESHES} board refreshes and the group board-reads listed",
            interval_s=1.0,
        )
        assert lag.alive(), lag.log()[-3000:]
    finally:
        consumer.close()
        assert lag.stop() == 0, lag.log()[-3000:]
    assert monitor not in kafka.admin().list_topics(timeout=10).topics  # the old board created it
    assert produce_requests(kafka) == before  # the old board produced 3 records a refresh
    (cluster,) = doc["clusters"]
    sections = {s["name"]: s for s in cluster["checks"]}
    assert sections["brokers"]["status"] == "OK", sections["brokers"]
    assert sections["brokers"]["summary"].startswith("3/3 brokers answer"), sections["brokers"]
    assert sections["partitions"]["status"] == "OK", sections["partitions"]
    assert (sections["round_trip"]["status"], sections["controller"]["status"]) == ("INFO", "INFO")
    assert "produces nothing" in sections["round_trip"]["reasons"][0]
    assert len(doc["brokers"]) == 3
