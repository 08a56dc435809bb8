"""The `__consumer_offsets` reader has a health of its own (a dependency going away never gives a
false verdict). Here the reader dies (an exception from our own decoding step, the kind of bug a new record version
could bring) while a real group on the real cluster keeps consuming and committing: the HWM feed stays fresh, so
without its own health the group's commits would freeze and it would be judged stopped. It must turn UNKNOWN, with
the reason named, and never STOP, STALL or ERR."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import TopicPartition

from lag.assembly import KafkaLagSource
from lag.ingest.offsets_topic import OFFSETS_TOPIC
from lag.protocol import Status
from lag.service import LagService
from lag.store.freshness import SourceHealth
from pulse.config import LagConfig
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.integration.devstack.test_dev_cluster import produce

pytestmark = pytest.mark.integration

CLUSTER = "local"
GROUP = "reader-health"


def test_a_dead_commits_reader_makes_the_cluster_unknown_never_stopped(kafka: KafkaHandle) -> None:
    topic = kafka.create_topic("reader-health", partitions=1)
    health = SourceHealth(stale_after_s=5.0, recovery_s=0.0)
    service = LagService(LagConfig(mode="burrow", intervals=3, offset_refresh_s=1.0), health)
    source = KafkaLagSource(CLUSTER, kafka.client_config(), service, health)
    consumer = kafka.consumer(GROUP)
    end = 0

    def keep_up(tag: str) -> Status:
        """One round of a healthy group: 5 records produced, the new end committed; then its verdict."""
        nonlocal end
        produce(kafka, topic, 5, tag)
        end += 5
        commit_offsets(consumer, [TopicPartition(topic, 0, end)])
        return service.group_status(CLUSTER, GROUP).status

    try:
        source.start()
        rounds = iter(range(10_000))
        poll(lambda: keep_up(f"a{next(rounds)}"), lambda s: s is Status.OK, 60, f"group {GROUP} OK")

        def broken(records: list[tuple[bytes | None, bytes | None]]) -> None:
            raise ValueError("cannot decode this record")

        source.offsets.ingest = broken  # type: ignore[method-assign]  # the next batch of commits kills the reader
        seen: list[Status] = []

        def unknown() -> Status:
            seen.append(keep_up(f"b{next(rounds)}"))
            return seen[-1]

        poll(unknown, lambda s: s is Status.UNKNOWN, 60, "the group unknown once its commits cannot be read")
        reason = health.unavailable_reason(CLUSTER, service.clock_ms())
        assert reason is not None and f"the {OFFSETS_TOPIC} reader stopped" in reason, reason
        assert "ValueError: cannot decode this record" in reason
        # The HWMs keep moving and no commit is read any more: that must stay unknown, never a verdict.
        deadline = time.monotonic() + 8  # longer than the 3 commit intervals a STOP needs
        while time.monotonic() < deadline:
            seen.append(keep_up(f"c{next(rounds)}"))
            time.sleep(1.0)  # the consumer's commit cadence
        assert set(seen) <= {Status.OK, Status.UNKNOWN}, seen
        assert seen[-1] is Status.UNKNOWN
    finally:
        consumer.close()
        source.stop()
