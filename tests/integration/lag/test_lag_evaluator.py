"""The lag evaluator on the real 3-node Kafka 4.3 cluster: `__consumer_offsets` (offset value v4) and ListOffsets
feed the enhanced rules, and the Burrow v3 API reports caught-up, slow, stalled, stopped, rewound, idle and
transactional groups. Commits are made by real consumers of real groups.
"""

from __future__ import annotations

import itertools
import uuid
from collections import defaultdict

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition
from prometheus_client import CollectorRegistry

from lag.assembly import KafkaLagSource
from lag.serve.burrow_json import BurrowModules
from lag.serve.metrics import LagCollector
from lag.service import LagService
from lag.store.freshness import SourceHealth
from pulse.config import LagConfig
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.integration.devstack.test_dev_cluster import produce
from tests.support.lag_api import serve_lag_api

pytestmark = pytest.mark.integration

CLUSTER = "local"


def commit(consumer: Consumer, topic: str, offset: int) -> None:
    commit_offsets(consumer, [TopicPartition(topic, 0, offset)])


def hwm(kafka: KafkaHandle, consumer: Consumer, topic: str) -> int:
    return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])


def transactional_group(kafka: KafkaHandle, topic: str, group: str) -> None:
    """Write one transaction of 5 records, read them read_committed and commit the position (HWM - 1: the marker)."""
    producer = kafka.producer(**{"transactional.id": f"txn-{uuid.uuid4().hex[:6]}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, value=f"t{i}".encode())
    producer.commit_transaction(30)
    consumer = kafka.consumer(group, **{"isolation.level": "read_committed"})
    consumer.subscribe([topic])
    read: list[object] = []

    def records_read() -> int:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            read.append(msg)
        return len(read)

    assert poll(records_read, lambda n: n >= 5, 30, "the 5 committed transactional records read", 0) == 5
    consumer.commit(asynchronous=False)
    consumer.close()


def test_groups_on_a_real_cluster_get_the_right_status(kafka: KafkaHandle) -> None:
    busy = kafka.create_topic("lag-busy", partitions=1)
    quiet = kafka.create_topic("lag-quiet", partitions=1)
    txn = kafka.create_topic("lag-txn", partitions=1)
    produce(kafka, busy, 100, "b")
    produce(kafka, quiet, 10, "q")
    transactional_group(kafka, txn, "g-txn")

    settings = LagConfig(mode="enhanced", intervals=5, offset_refresh_s=1.0)
    health = SourceHealth(stale_after_s=5.0, recovery_s=2.0)
    service = LagService(settings, health)
    modules = BurrowModules(clusters={CLUSTER: {"class-name": "kafka", "servers": kafka.bootstrap_servers.split(",")}})
    source = KafkaLagSource(CLUSTER, kafka.client_config(), service, health)
    registry = CollectorRegistry()
    registry.register(LagCollector(service))
    writes = True  # the DELETE below
    api = serve_lag_api(service, registry=registry, allow_unauthenticated_writes=writes, modules=modules)
    source.start()
    groups = ["g-caught-up", "g-slow", "g-stalled", "g-stopped", "g-rewind", "g-idle"]
    consumers = {g: kafka.consumer(g) for g in groups}
    seen: dict[str, set[str]] = defaultdict(set)
    notes: list[str] = []
    want = {
        "g-caught-up": "OK", "g-slow": "WARN", "g-stalled": "STALL", "g-stopped": "STOP", "g-rewind": "REWIND",
        "g-idle": "OK", "g-txn": "OK",
    }  # fmt: skip
    try:
        commit(consumers["g-idle"], quiet, 10)
        rewinds = [10, 20, 30, 40, 15, 16, 17, 18]
        rounds = itertools.count()
        with httpx.Client(base_url=api.url, timeout=5) as http:

            def one_round() -> tuple[bool, dict[str, set[str]]]:
                """One commit per group (the commit cadence under test, a second apart); whether every group
                was seen with its wanted status, and every status seen so far."""
                rnd = next(rounds)
                produce(kafka, busy, 10, f"r{rnd}")
                commit(consumers["g-caught-up"], busy, hwm(kafka, consumers["g-caught-up"], busy))
                commit(consumers["g-slow"], busy, 50 + 3 * rnd)
                commit(consumers["g-stalled"], busy, 5)
                if rnd < 3:
                    commit(consumers["g-stopped"], busy, 10 * (rnd + 1))
                if rnd < len(rewinds):
                    commit(consumers["g-rewind"], busy, rewinds[rnd])
                for group in want:
                    body = http.get(f"/v3/kafka/{CLUSTER}/consumer/{group}/lag").json()
                    partitions = [p for p in (body.get("status") or {}).get("partitions", []) if p["end"]]
                    if partitions:
                        seen[group].add(partitions[0]["status"])
                        if partitions[0]["status"] != want[group]:
                            notes.append(
                                f"{group} round {rnd + 1}: {partitions[0]['status']} {partitions[0]['reason']}"
                            )
                return all(want[g] in seen[g] for g in want) and rnd + 1 > 5, dict(seen)

            # the interval is the commit cadence under test: one commit per group per second
            poll(one_round, lambda result: result[0], 60, "every group seen with its wanted status", 1.0)

            assert {g: want[g] in seen[g] for g in want} == dict.fromkeys(want, True), dict(seen)
            # groups that were fine were never judged otherwise
            for group in ("g-caught-up", "g-idle", "g-txn"):
                assert seen[group] == {"OK"}, [n for n in notes if n.startswith(group)]

            # Burrow's other endpoints answer with the same shapes
            assert set(want) <= set(http.get(f"/v3/kafka/{CLUSTER}/consumer").json()["consumers"])
            assert http.get("/v3/kafka").json()["clusters"] == [CLUSTER]
            assert busy in http.get(f"/v3/kafka/{CLUSTER}/topic").json()["topics"]
            assert http.get(f"/v3/kafka/{CLUSTER}/topic/{busy}").json()["offsets"][0] >= 100
            status = http.get(f"/v3/kafka/{CLUSTER}/consumer/g-stalled/status")
            assert status.json()["status"]["status"] == "ERR"
            assert http.get(f"/v3/kafka/{CLUSTER}/consumer/nobody/status").status_code == 404
            detail = http.get(f"/v3/kafka/{CLUSTER}/consumer/g-slow").json()["topics"][busy][0]
            assert len(detail["offsets"]) == 5 and "current-lag" in detail
            assert http.get("/burrow/admin").text == "GOOD"
            metrics = http.get("/metrics").text
            assert f'burrow_kafka_consumer_status{{cluster="{CLUSTER}",consumer_group="g-stalled"}} 3.0' in metrics
            assert "kafka_consumergroup_group_lag_seconds{" in metrics
            assert http.delete(f"/v3/kafka/{CLUSTER}/consumer/g-stopped").status_code == 200
            assert http.get(f"/v3/kafka/{CLUSTER}/consumer/g-stopped/lag").status_code == 404
        assert source.decoded.get("OffsetCommit", 0) > 0
        assert source.decoded.get("Undecodable", 0) == 0, source.decoded
    finally:
        for c in consumers.values():
            c.close()
        api.stop()
        source.stop()
