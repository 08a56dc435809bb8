"""Exact time lag on the real Kafka 4.3 cluster: records carry known timestamps (CreateTime set
by the producer, an hour in the past), a real group commits in the middle of them, and the service reports how long
ago the record at the committed offset was written, next to the interpolated value (which needs the log end to move
while it watches, and here it does not). Reading is bounded: one record per cycle when so configured.
"""

from __future__ import annotations

import time

import httpx
import pytest
from confluent_kafka import TopicPartition

from lag.assembly import KafkaLagSource
from lag.ingest.exact_lag import ExactLagFetcher
from lag.service import LagService
from lag.store.freshness import SourceHealth
from pulse.config import ExactTimeLagConfig, LagConfig
from pulse.ports import wait_until
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.support.lag_api import serve_lag_api

pytestmark = pytest.mark.integration

CLUSTER = "local"
STEP_MS = 60_000
"""The produced records are one minute apart in CreateTime."""


def test_exact_lag_is_the_age_of_the_record_at_the_committed_offset(kafka: KafkaHandle) -> None:
    topic = kafka.create_topic("lag-exact", partitions=1)
    base_ms = time.time_ns() // 1_000_000 - 3_600_000  # record i was "written" an hour ago plus i minutes
    producer = kafka.producer()
    for i in range(20):
        producer.produce(topic, value=f"r{i}".encode(), partition=0, timestamp=base_ms + i * STEP_MS)
    assert producer.flush(30) == 0
    groups = {"x-behind-5": 5, "x-behind-12": 12, "x-caught-up": 20}
    for group, offset in groups.items():
        consumer = kafka.consumer(group)
        commit_offsets(consumer, [TopicPartition(topic, 0, offset)])
        consumer.close()

    health = SourceHealth(stale_after_s=10.0, recovery_s=0.0)
    # Only this test's groups: the session cluster holds other tests' lagging groups too.
    service = LagService(LagConfig(mode="enhanced", intervals=3, offset_refresh_s=1.0, group_allow="^x-"), health)
    source = KafkaLagSource(CLUSTER, kafka.client_config(), service, health)
    fetcher = ExactLagFetcher(
        CLUSTER, kafka.client_config(), service, ExactTimeLagConfig(enabled=True, max_fetches_per_cycle=1)
    )
    api = serve_lag_api(service)
    source.start()
    try:
        assert wait_until(lambda: all(g in service.store.groups(CLUSTER) for g in groups), 60), "commits not read"
        # Bounded work: one record per cycle, the largest lag first; then nothing is left to read.
        assert [fetcher.run_cycle(), fetcher.run_cycle(), fetcher.run_cycle()] == [1, 1, 0]
        # Judged once a HWM round has passed since: a round that failed on another test's topic leaves the cluster
        # UNKNOWN (no partitions) until the next one.
        assert wait_until(lambda: all(service.group_status(CLUSTER, g).partitions for g in groups), 60), [
            service.group_status(CLUSTER, g).status for g in groups
        ]

        for group, offset in groups.items():
            before_ms = time.time_ns() // 1_000_000
            verdict = service.group_status(CLUSTER, group).partitions[0]
            after_ms = time.time_ns() // 1_000_000
            assert verdict.exact_lag_seconds is not None, group
            if offset == 20:
                assert verdict.exact_lag_seconds == 0.0
                continue
            written_ms = base_ms + offset * STEP_MS
            assert (before_ms - written_ms) / 1000 <= verdict.exact_lag_seconds <= (after_ms - written_ms) / 1000
            # The interpolation cannot tell: the log end never moved while the service watched it.
            assert verdict.lag_seconds is None

        with httpx.Client(base_url=api.url, timeout=5, trust_env=False) as http:
            body = http.get(f"/v3/kafka/{CLUSTER}/consumer/x-behind-5/lag").json()["status"]
        assert body["partitions"][0]["exact_lag_seconds"] > 3000 and body["exact_lag_seconds"] > 3000
        assert fetcher.read_total == 2
    finally:
        api.stop()
        fetcher.stop()
        source.stop()
