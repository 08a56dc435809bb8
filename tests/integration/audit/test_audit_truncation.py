"""Acknowledged records lost in an unclean election, found by the audit (issue #26 point 4; docs/audit.md, "Shown
end to end"), on a 3-node cluster of this module's own, driven as test_canary_faults.py drives its truncation: a
one-partition topic on brokers A (leader) and B with min.insync.replicas=1; the producer (through the library)
sends minute 0 to both, B hangs and leaves the ISR, minute 1 is acknowledged by A alone, A dies, and an unclean
election makes B leader with the log it had. Group `billing` (through the library) reads what is left, the
broker-side audit counts the log, and `audit reconcile --once` on local Spark finds minute 1's records missing,
all of them, and nothing for `billing`. The counts travel through the SLI sink of the shared cluster (the audit
cluster), as an operator would keep them away from the cluster they watch."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from audit import BROKER_STREAM, CLIENT_STREAM, AuditedProducer, AuditReporter, BrokerAudit, ClientCounts, ClientOrigin
from audit.minutes import MINUTE_MS, MinuteAudit, minute_of
from pulse.paths import cache_dir
from pulse.polling import poll
from pulse.sli_sink import SliSink
from tests.fixtures.faults import elect_unclean, fast_fencing_cluster, quorum_leader
from tests.fixtures.kafka import KafkaHandle
from tests.integration.audit.conftest import consume_group, read_stream, reconcile_once

pytestmark = pytest.mark.integration

BROKERS = {1, 2, 3}
KEPT, LOST, HEAD = 40, 25, 5
"""Records of minute 0 (on both replicas), of minute 1 (acknowledged by A alone), and sent now."""


@pytest.fixture(scope="module")
def faulty_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaHandle]:
    yield from fast_fencing_cluster(tmp_path_factory.mktemp("kafka-audit-truncation"), "kafka-audit-truncation")


def partition_state(admin: AdminClient, topic: str) -> tuple[int, frozenset[int]] | None:
    """Partition 0's leader (-1 for none) and ISR as the metadata says; None while it cannot be had (a hung
    broker may be asked first)."""
    try:
        meta = admin.list_topics(topic, timeout=5).topics.get(topic)
    except KafkaException:
        return None
    if meta is None or meta.error is not None or 0 not in meta.partitions:
        return None
    part = meta.partitions[0]
    return part.leader, frozenset(part.isrs)


def test_acknowledged_records_lost_in_an_unclean_election_are_found_missing(
    faulty_kafka: KafkaHandle, kafka: KafkaHandle, sink: SliSink, sink_prefix: str, tmp_path: Path
) -> None:
    cluster = faulty_kafka.cluster
    a, b = sorted(BROKERS - {quorum_leader(faulty_kafka)})  # the metadata quorum keeps two voters throughout
    topic = f"audit-trunc-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(faulty_kafka.client_config(**{"socket.timeout.ms": 3000}))  # B will hang
    new = NewTopic(topic, num_partitions=1, replica_assignment=[[a, b]], config={"min.insync.replicas": "1"})
    admin.create_topics([new])[topic].result(timeout=30)

    def state() -> tuple[int, frozenset[int]] | None:
        return partition_state(admin, topic)

    poll(state, lambda s: s == (a, frozenset({a, b})), 60, f"{topic} led by {a}, {b} in sync")
    kept = minute_of(int(time.time() * 1000)) - 10 * MINUTE_MS
    lost = kept + MINUTE_MS

    sent = ClientCounts()
    producer = AuditedProducer(faulty_kafka.producer(**{"socket.timeout.ms": 3000}), sent)
    for n in range(KEPT):
        producer.produce(topic, b"order", partition=0, timestamp=kept + n)
    assert producer.flush(30) == 0  # acks=all: on A and B
    cluster.pause(b)
    try:
        poll(state, lambda s: s == (a, frozenset({a})), 60, f"broker {b} out of the ISR")
        for n in range(LOST):
            producer.produce(topic, b"order", partition=0, timestamp=lost + n)
        assert producer.flush(30) == 0  # acknowledged by A alone
        cluster.kill(a)
    finally:
        cluster.resume(b)
    try:
        poll(state, lambda s: s is not None and s[0] == -1, 60, "the partition offline")
        poll(
            lambda: elect_unclean(faulty_kafka, TopicPartition(topic, 0), BROKERS - {a}),
            lambda error: error is None,
            60,
            f"an unclean election of broker {b}",
            interval_s=1.0,
        )
    finally:
        cluster.restart(a, cache_dir())
    for _ in range(HEAD):
        producer.produce(topic, b"order", partition=0)  # the current minute, after the election
    assert producer.flush(60) == 0
    billing = consume_group(faulty_kafka, topic, "billing", {0: KEPT + HEAD})

    broker = BrokerAudit(
        "faulty", faulty_kafka.consumer("kp-audit"), admin, faulty_kafka.group_offsets(), [topic], ["billing"], sink,
        grace_s=1, max_wait_s=60, since_ms=kept,
    )  # fmt: skip

    def cycle() -> list[MinuteAudit] | None:
        try:
            return broker.cycle(int(time.time() * 1000))
        except (KafkaException, TimeoutError):
            return None  # A rejoining; the next cycle goes on from what this one read

    try:
        settled = poll(cycle, lambda found: bool(found), 60, "the broker-side audit's minutes")
    finally:
        broker.close()
    assert settled is not None
    assert [(x.minute_ms, x.written, x.passed) for x in settled if x.minute_ms <= lost] == [
        (kept, KEPT, KEPT),
        (lost, 0, 0),
    ]

    reporters = [
        AuditReporter(sent, sink, ClientOrigin("faulty", "shop", "producer")),
        AuditReporter(billing, sink, ClientOrigin("faulty", "billing", "consumer", "billing")),
    ]
    client_rows = sum(r.report() for r in reporters)
    read_stream(kafka, sink_prefix, CLIENT_STREAM, client_rows)
    read_stream(kafka, sink_prefix, BROKER_STREAM, len(settled))

    got = reconcile_once(kafka, sink_prefix, tmp_path, "1m", "billing")
    minute = datetime.fromtimestamp(lost / 1000, UTC).isoformat().replace("+00:00", "Z")
    assert got["findings"] == [
        {"cluster": "faulty", "topic": topic, "group": None, "minute": minute, "kind": "missing", "count": LOST}
    ]
    assert got["late_reports"] == 0
