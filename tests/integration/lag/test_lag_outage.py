"""Kafka unreachable for 60 s: the only broker of a dedicated 1-node cluster is frozen
with SIGSTOP, so sockets stay open and nothing answers (the worst case: every request times out). Throughout the
outage no group is judged STOP or ERR (they are OK until the HWMs go stale, then UNKNOWN), and afterwards
evaluation resumes: new commits are read and the groups are OK again. Both the enhanced and the Burrow rules run.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from devstack.cluster import DevCluster
from devstack.topology import Security
from lag.assembly import KafkaLagSource
from lag.protocol import Mode, Status
from lag.service import LagService
from lag.store.freshness import SourceHealth
from pulse.config import LagConfig
from pulse.paths import cache_dir
from pulse.polling import poll
from tests.fixtures.kafka import KAFKA_VERSION, KafkaHandle, commit_offsets
from tests.fixtures.logs import register_log
from tests.integration.devstack.test_dev_cluster import produce

pytestmark = pytest.mark.integration

CLUSTER = "outage"
OUTAGE_S = 60.0
MODES: tuple[Mode, ...] = ("enhanced", "burrow", "burrow-1.2")
GROUPS = ("out-live", "out-idle")
ALLOWED_DURING_OUTAGE = {Status.OK, Status.UNKNOWN}


@pytest.fixture(scope="module")
def lone_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaHandle]:
    """A 1-node Kafka 4.x of this module's own, so freezing it leaves the shared clusters alone."""
    home: Path = tmp_path_factory.mktemp("kafka-outage")
    cluster = DevCluster.plan(home, 1, KAFKA_VERSION, Security.PLAINTEXT)
    register_log("kafka-outage node 1", cluster.log_path(1))
    started = time.monotonic()
    try:
        cluster.up(cache_dir())
        yield KafkaHandle(cluster, time.monotonic() - started)
    finally:
        if cluster.is_running(1):
            cluster.resume(1)  # a frozen JVM ignores SIGTERM until continued
        cluster.down(keep_data=True)


def commit(consumer: Consumer, topic: str, offset: int) -> None:
    commit_offsets(consumer, [TopicPartition(topic, 0, offset)])


def test_an_unreachable_cluster_is_unknown_never_stopped(lone_kafka: KafkaHandle) -> None:
    kafka = lone_kafka
    busy = kafka.create_topic("outage-busy", partitions=1, replication_factor=1)
    quiet = kafka.create_topic("outage-quiet", partitions=1, replication_factor=1)
    produce(kafka, quiet, 10, "q")
    consumers = {g: kafka.consumer(g) for g in GROUPS}
    commit(consumers["out-idle"], quiet, 10)

    services: dict[Mode, LagService] = {}
    sources: list[KafkaLagSource] = []
    for mode in MODES:
        health = SourceHealth(stale_after_s=3.0, recovery_s=5.0)
        service = services[mode] = LagService(LagConfig(mode=mode, intervals=5, offset_refresh_s=1.0), health)
        sources.append(KafkaLagSource(CLUSTER, kafka.client_config(), service, health))
    seen: dict[tuple[Mode, str], list[Status]] = defaultdict(list)
    hwm = 0

    def live_round(tag: str) -> None:
        """The live group keeps up: produce 10 records and commit the new end of the log."""
        nonlocal hwm
        produce(kafka, busy, 10, tag)
        hwm += 10
        commit(consumers["out-live"], busy, hwm)

    def statuses() -> dict[tuple[Mode, str], Status]:
        return {(m, g): s.group_status(CLUSTER, g).status for m, s in services.items() for g in GROUPS}

    def await_all_ok(phase: str, timeout_s: float) -> None:
        rounds = itertools.count(1)

        def one_round() -> tuple[int, dict[tuple[Mode, str], Status]]:
            rnd = next(rounds)
            live_round(f"{phase}{rnd - 1}")
            now = statuses()
            for key, status in now.items():
                seen[key].append(status)
            return rnd, now

        def all_ok(result: tuple[int, dict[tuple[Mode, str], Status]]) -> bool:
            rnd, now = result
            return rnd > 5 and all(s is Status.OK for s in now.values())

        poll(one_round, all_ok, timeout_s, f"{phase}: all OK", 1.0)  # the interval: the consumer's commit cadence

    try:
        for source in sources:
            source.start()
        await_all_ok("before", timeout_s=30)

        seen.clear()
        kafka.cluster.pause(1)
        frozen_at = time.monotonic()
        try:
            while time.monotonic() - frozen_at < OUTAGE_S:
                for key, status in statuses().items():
                    seen[key].append(status)
                time.sleep(0.5)  # sampling the evaluator through the outage
        finally:
            kafka.cluster.resume(1)
        during = {k: sorted({s.name for s in v}) for k, v in seen.items()}
        assert all(set(v) <= ALLOWED_DURING_OUTAGE for v in seen.values()), during
        assert all(Status.UNKNOWN in v for v in seen.values()), f"staleness was never detected: {during}"

        hwm_before = hwm
        seen.clear()
        await_all_ok("after", timeout_s=60)
        after = {k: sorted({s.name for s in v}) for k, v in seen.items()}
        assert all(set(v) <= ALLOWED_DURING_OUTAGE for v in seen.values()), f"after the outage: {after}"
        for mode, service in services.items():
            verdict = service.group_status(CLUSTER, "out-live").partitions[0]
            assert verdict.end is not None and verdict.end.offset > hwm_before, (mode, verdict)
    finally:
        for c in consumers.values():
            c.close()
        for source in sources:
            source.stop()
