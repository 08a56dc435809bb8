"""A slow log directory on a real broker (`dev up --slow-disk NODE:MS`, devstack/slow_disk.py): the node's data
directory is a FUSE pass-through, formatted and written through it, and raising its write delay while the broker
runs raises that broker's produce latency. The bound asserted is the injected sleep itself (every acknowledged
append waits for it), never the machine's speed; the latency before is only required to be lower than after."""

from __future__ import annotations

import statistics
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from devstack.cluster import DevCluster
from devstack.slow_disk import is_mounted
from devstack.topology import Security
from pulse.paths import cache_dir
from pulse.polling import poll
from tests.fixtures.kafka import KAFKA_VERSION
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration

DELAY_MS = 200


def produce_ms(producer: Producer, topic: str) -> float:
    """One acknowledged record's round trip (acks=all; on one broker, its own append)."""
    started = time.monotonic()
    producer.produce(topic, b"x" * 100)
    assert producer.flush(30) == 0
    return (time.monotonic() - started) * 1000.0


def median_ms(producer: Producer, topic: str, n: int) -> float:
    return statistics.median(produce_ms(producer, topic) for _ in range(n))


def test_a_slow_log_directory_raises_its_broker_s_produce_latency(tmp_path: Path) -> None:
    home = tmp_path / "slow-disk"
    cluster = DevCluster.plan(home, 1, KAFKA_VERSION, Security.PLAINTEXT, slow_disks={1: 0})
    register_log("slow-disk node 1", cluster.log_path(1))
    data = cluster.node_dir(1) / "data"
    try:
        cluster.up(cache_dir(), timeout_s=120)
        assert is_mounted(data)
        assert (cluster.node_dir(1) / "data-backing" / "meta.properties").exists()  # formatted through the mount
        assert DevCluster.load(home).spec.nodes[0].slow_disk_ms == 0  # another process (`dev slow-disk`) finds it
        topic = f"slow-disk-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap_servers})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=60)
        producer = Producer({"bootstrap.servers": cluster.spec.bootstrap_servers, "acks": "all", "linger.ms": 0})
        poll(lambda: produce_ms(producer, topic), lambda _: True, 30, "a first acknowledged record")
        before = median_ms(producer, topic, 15)

        DevCluster.load(home).slow_disk(1, write_ms=DELAY_MS, fsync_ms=DELAY_MS)
        poll(lambda: produce_ms(producer, topic), lambda ms: ms >= DELAY_MS, 30, f"a produce slower than {DELAY_MS} ms")
        slowed = median_ms(producer, topic, 5)
        assert slowed >= DELAY_MS > before or slowed > before >= DELAY_MS, (before, slowed)

        cluster.slow_disk(1, write_ms=0, fsync_ms=0)
        poll(lambda: produce_ms(producer, topic), lambda ms: ms < DELAY_MS, 30, "produce back under the delay")
        producer.flush(10)
    finally:
        cluster.down(keep_data=True)
    assert not is_mounted(data)
    assert not (cluster.node_dir(1) / "slow-disk.pid").exists()
