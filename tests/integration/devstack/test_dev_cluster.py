"""The dev cluster is a real KRaft cluster: racks, replication, JMX, and survival of a kill -9."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient
from jmxquery import JMXConnection, JMXQuery

from pulse.paths import cache_dir
from pulse.polling import PollTimeout, poll
from tests.fixtures.kafka import KafkaHandle

pytestmark = pytest.mark.integration


def produce(handle: KafkaHandle, topic: str, count: int, tag: str) -> None:
    """Produce `count` records with acks=all and fail on the first delivery error."""
    errors: list[str] = []
    producer = handle.producer()
    for i in range(count):
        producer.produce(
            topic, key=str(i).encode(), value=f"{tag}-{i}".encode(),
            on_delivery=lambda err, _msg: errors.append(str(err)) if err else None,
        )  # fmt: skip
    assert producer.flush(30) == 0, "records still in flight after 30 s"
    assert errors == []


def consume_values(handle: KafkaHandle, topic: str, expected: int, timeout_s: float = 30) -> list[str]:
    """Read from the beginning until `expected` records arrive or time runs out."""
    consumer = handle.consumer(f"test-{uuid.uuid4().hex[:6]}")
    consumer.subscribe([topic])
    values: list[str] = []

    def read_one() -> list[str]:
        msg = consumer.poll(0.5)
        if msg is not None:
            assert msg.error() is None, msg.error()
            values.append((msg.value() or b"").decode())
        return values

    try:
        poll(read_one, lambda read: len(read) >= expected, timeout_s, f"{expected} records of {topic}", interval_s=0)
    except PollTimeout:
        pass  # the caller compares what arrived with what it expected
    finally:
        consumer.close()
    return values


def broker_ids(admin: AdminClient) -> set[int]:
    return set(admin.list_topics(timeout=10).brokers)


def test_three_brokers_with_one_rack_each(kafka: KafkaHandle) -> None:
    admin = kafka.admin()  # the client must outlive its futures
    described = admin.describe_cluster().result(timeout=10)
    racks = {node.id: node.rack for node in described.nodes}
    assert racks == {1: "az-a", 2: "az-b", 3: "az-c"}
    assert described.controller is not None


def test_status_document_matches_contract(kafka: KafkaHandle) -> None:
    status = kafka.cluster.status()
    assert status["bootstrap_servers"] == ",".join(f"127.0.0.1:{b['port']}" for b in status["brokers"])
    assert status["kafka_version"].startswith("4.")
    for broker in status["brokers"]:
        assert set(broker) >= {"id", "rack", "port", "jmx_port", "pid", "running"}
        assert broker["running"] is True


def test_rf3_topic_takes_and_serves_records(kafka: KafkaHandle) -> None:
    topic = kafka.create_topic("rf3", partitions=3, replication_factor=3)
    md = kafka.admin().list_topics(topic=topic, timeout=10).topics[topic]
    assert all(sorted(p.replicas) == [1, 2, 3] for p in md.partitions.values())
    produce(kafka, topic, 60, "hello")
    assert sorted(consume_values(kafka, topic, 60)) == sorted(f"hello-{i}" for i in range(60))


def test_every_broker_answers_jmx_through_jmxquery(kafka: KafkaHandle) -> None:
    for node in kafka.cluster.spec.nodes:
        conn = JMXConnection(f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{node.jmx_port}/jmxrmi")
        results = conn.query(
            [JMXQuery("kafka.server:type=KafkaServer,name=BrokerState", attribute="Value")], timeout=30
        )
        assert [int(r.value) for r in results] == [3], f"node {node.node_id}: BrokerState is not RUNNING (3)"


def test_kill9_leaves_two_serving_and_restart_rejoins(kafka: KafkaHandle) -> None:
    topic = kafka.create_topic("survive", partitions=3, replication_factor=3, **{"min.insync.replicas": "2"})
    victim = 3
    kafka.cluster.kill(victim)
    try:
        assert not kafka.cluster.is_running(victim)
        admin = kafka.admin()
        poll(lambda: broker_ids(admin), lambda ids: ids == {1, 2}, 30, f"metadata without node {victim}")
        produce(kafka, topic, 30, "degraded")
        assert len(consume_values(kafka, topic, 30)) == 30
    finally:
        kafka.cluster.restart(victim, cache_dir())
    assert broker_ids(kafka.admin()) == {1, 2, 3}
    # The restarted node catches up and returns to every partition's ISR.
    admin = kafka.admin()
    poll(
        lambda: [sorted(p.isrs) for p in admin.list_topics(topic=topic, timeout=10).topics[topic].partitions.values()],
        lambda isrs: all(victim in isr for isr in isrs),
        60,
        f"node {victim} back in every ISR of {topic}",
    )
