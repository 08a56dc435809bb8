"""Partitions under min ISR judged by their eligible leader replicas (KIP-966) on the real 4.x dev cluster (4.4.0 by
default), with a broker killed by PID: `kafka-pulse check` and the collectors' /metrics both call one recoverable
through its ELR and one at risk (ISR and ELR empty), naming the partitions.

The dev cluster runs 3 combined broker+controller nodes, so only one may die without losing the quorum that
records ISR and ELR changes. Hence the shapes: replication 3 under `min.insync.replicas=3` goes under min ISR with
one broker killed (ISR [1, 2], ELR [3]: recoverable), and replication 1 on the killed broker is offline with ELR
[3] until a `min.insync.replicas` change clears its ELR (KIP-966 clears it on any change), which leaves ISR and ELR
empty: at risk. Both states were first seen with kafka-python's DescribeTopicPartitions on this cluster.

The test runs on a cluster of its own: after the at-risk topic was deleted, the 4.3.1 controller could not register
the killed broker again ("Topic ID ... existed in isrMembers, but not in the topics map", in
ReplicationControlManager.handleBrokerShutdown, every controller in turn renouncing leadership), so the shared
cluster could not be healed.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import yaml
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client import CollectorRegistry, generate_latest

from collectors.service import CollectorService
from devstack.topology import Security
from pulse.config import parse_config
from pulse.polling import poll
from tests.fixtures.kafka import KAFKA_VERSION, KafkaHandle, _start
from tests.integration.app.test_check_min_isr import listed, partitions_section, run_check, write_config

pytestmark = pytest.mark.integration

VICTIM = 3


@contextmanager
def kafka_python_admin(kafka: KafkaHandle, brokers: tuple[int, ...]) -> Iterator[Any]:
    """kafka-python's admin client bootstrapped from `brokers` only (never from the killed one)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        from kafka import KafkaAdminClient

        servers = [f"127.0.0.1:{kafka.cluster.node(b).port}" for b in brokers]
        client = KafkaAdminClient(bootstrap_servers=servers, request_timeout_ms=10000)
    try:
        yield client
    finally:
        client.close()


def described(client: Any, topic: str) -> dict[str, Any]:
    """Partition 0 of `topic` as DescribeTopicPartitions gives it."""
    answer = client.describe_topic_partitions([topic])
    return dict(answer["topics"][0]["partitions"][0])


@pytest.fixture(scope="module")
def elr_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaHandle]:
    """A 3-node 4.x cluster for this module alone (see the module's docstring): it is left broken, never healed."""
    yield from _start(tmp_path_factory.mktemp("kafka-elr"), 3, KAFKA_VERSION, Security.PLAINTEXT, "kafka-elr")


def test_under_min_isr_partitions_are_recoverable_through_elr_or_at_risk(elr_kafka: KafkaHandle, tmp_path: Any) -> None:
    kafka = elr_kafka
    admin: AdminClient = kafka.admin()
    suffix = os.urandom(4).hex()
    recoverable, at_risk = f"elr-recoverable-{suffix}", f"elr-at-risk-{suffix}"
    created = [
        NewTopic(recoverable, 1, replica_assignment=[[1, 2, VICTIM]], config={"min.insync.replicas": "3"}),
        NewTopic(at_risk, 1, replica_assignment=[[VICTIM]], config={"min.insync.replicas": "1"}),
    ]
    for future in admin.create_topics(created).values():
        future.result(timeout=30)
    config = write_config(kafka, tmp_path)
    live = tuple(b for b in (1, 2, 3) if b != VICTIM)
    with kafka_python_admin(kafka, live) as client:
        features = client.describe_features()
        assert features["eligible.leader.replicas.version"]["finalized"][1] >= 1, features  # ELR on (4.1+)
        poll(lambda: [described(client, t)["isr_nodes"] for t in (recoverable, at_risk)],
             lambda isrs: isrs == [[1, 2, VICTIM], [VICTIM]], 30, "both topics with a full ISR")  # fmt: skip
    kafka.cluster.kill(VICTIM)
    # kafka-python 3.0.12 leaves a refused connection's socket to the garbage collector (an unraisable warning at the
    # end of the run): its clients only start once the metadata no longer names the dead broker.
    poll(lambda: admin.list_topics(timeout=10).brokers, lambda b: VICTIM not in b, 60, f"broker {VICTIM} fenced")
    with kafka_python_admin(kafka, live) as client:
        poll(lambda: described(client, recoverable), lambda p: p["isr_nodes"] == [1, 2]
             and p["eligible_leader_replicas"] == [VICTIM], 60, f"{recoverable}: ISR [1, 2], ELR [3]")  # fmt: skip
        poll(lambda: described(client, at_risk), lambda p: p["isr_nodes"] == []
             and p["eligible_leader_replicas"] == [VICTIM], 60, f"{at_risk}: offline, ELR [3]")  # fmt: skip
        from kafka.admin import ConfigResource, ConfigResourceType

        client.alter_configs([ConfigResource(ConfigResourceType.TOPIC, at_risk, {"min.insync.replicas": "2"})])
        poll(lambda: described(client, at_risk), lambda p: p["isr_nodes"] == []
             and not p["eligible_leader_replicas"], 60, f"{at_risk}: ISR and ELR empty")  # fmt: skip

    code, report = run_check(config)
    section = partitions_section(report)
    assert code == 2 and section["status"] == "CRIT", section
    rows = listed(section, "under_min_isr")
    assert (rows[recoverable]["elr"], rows[recoverable]["elr_verdict"]) == ([VICTIM], "recoverable"), rows
    assert (rows[at_risk]["isr"], rows[at_risk]["elr"], rows[at_risk]["elr_verdict"]) == ([], [], "at_risk")
    reasons = " | ".join(section["reasons"])
    assert "under min ISR at risk (ISR and ELR empty" in reasons and f"{at_risk}-0" in reasons, reasons
    assert "under min ISR recoverable through ELR" in reasons and f"{recoverable}-0 (elr [{VICTIM}])" in reasons

    exposed = metrics_once(kafka)
    for topic, verdict in ((recoverable, "recoverable"), (at_risk, "at_risk")):
        labels = f'cluster="dev",elr="{verdict}",partition="0",topic="{topic}"'
        assert f"kafka_pulse_cluster_under_min_isr_partition{{{labels}}} 1.0" in exposed, exposed
    counts = {
        line.split('elr="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in exposed.splitlines()
        if line.startswith("kafka_pulse_cluster_under_min_isr_elr_partitions{")
    }
    assert counts == {"recoverable": 1, "isr_only": 0, "unknown": 0, "at_risk": 1}, counts  # a cluster of its own


def metrics_once(kafka: KafkaHandle) -> str:
    """The collectors' /metrics text after one cluster-state read that saw a partition under min ISR."""
    text = yaml.safe_dump({"clusters": [{"name": "dev", "bootstrap_servers": kafka.bootstrap_servers}]})
    config = parse_config(text, "pulse.yaml", {})
    registry = CollectorRegistry()
    service = CollectorService(config.clusters, config.collectors)
    service.register(registry)
    service.start()
    try:
        service.states["dev"].wait_for(lambda r: r.ok and r.value is not None and r.value.under_min_isr > 0, 60)
    finally:
        service.stop()
    return generate_latest(registry).decode()
