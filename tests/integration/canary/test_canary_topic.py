"""The canary's monitor topic on the shared 3-node cluster: placement fixed when the canary may
change the topic, reported and left alone when it may not, and no thrashing once it is right.

Each test creates its monitor topic badly on purpose before the canary starts; nothing here faults a broker.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from canary.service import CanaryService
from canary.topic import read_layout
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle
from tests.integration.canary.canary_support import running_canary, sample

pytestmark = pytest.mark.integration

BROKERS = {1, 2, 3}
SETTLE_ROUNDS = 8
"""Probe rounds (0.5 s) to watch a settled topic for changes: four reconciliations at the tests' 1 s interval."""


def create_badly(admin: AdminClient, assignment: list[list[int]]) -> str:
    """A monitor topic with exactly this replica assignment (first replica = preferred leader)."""
    topic = f"canary-topic-{uuid.uuid4().hex[:8]}"
    new = NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)
    admin.create_topics([new])[topic].result(timeout=30)
    poll(
        lambda: read_layout(admin, topic, 5.0),
        lambda layout: layout is not None and all(leader is not None for leader in layout.leaders.values()),
        30,
        f"a leader for every partition of {topic}",
    )
    return topic


def replicas(admin: AdminClient, topic: str) -> Mapping[int, tuple[int, ...]]:
    layout = read_layout(admin, topic, 5.0)
    assert layout is not None
    return dict(layout.replicas)


def changes(canary: CanaryService) -> dict[str, float]:
    return {
        action: sample(canary, "kafka_pulse_canary_topic_changes_total", action=action)
        for action in ("create", "add_partitions", "reassign", "elect")
    }


def settle(canary: CanaryService) -> None:
    """Let the canary run a few more reconciliations (counted in its own rounds, not wall time)."""
    target = canary.rounds + SETTLE_ROUNDS
    poll(lambda: canary.rounds, lambda rounds: rounds >= target, 60, f"{SETTLE_ROUNDS} more probe rounds")


def test_manage_topic_false_reports_the_gap_and_changes_nothing(kafka: KafkaHandle) -> None:
    """Two partitions, broker 3 the preferred leader of neither: the canary may not touch the topic, so it probes
    what is there and reports both gaps (too few partitions, a broker leading nothing)."""
    admin = kafka.admin()
    assignment = [[1, 2, 3], [2, 3, 1]]
    topic = create_badly(admin, assignment)
    with running_canary(kafka, topic=topic, manage_topic=False) as (canary, _sink):
        assert canary.topic_manager is not None
        report = poll(
            lambda: canary.topic_manager.report if canary.topic_manager is not None else None,
            lambda r: r is not None and r.partitions == 2 and len(r.gaps) >= 2,
            60,
            "the placement gaps reported",
        )
        assert report is not None
        gaps = " | ".join(report.gaps)
        assert "topic has 2 partitions, needs 3 for 3 brokers" in gaps
        assert "broker 3 " in gaps
        poll(lambda: canary.availability(), lambda a: a.get(1) == 1.0 and a.get(2) == 1.0, 60, "probes on 1 and 2")
        settle(canary)
        assert sample(canary, "kafka_pulse_canary_topic_placement_gaps") >= 2
        assert sample(canary, "kafka_pulse_canary_partitions_led", broker="3") == 0
        assert changes(canary) == {"create": 0, "add_partitions": 0, "reassign": 0, "elect": 0}
    assert replicas(admin, topic) == {0: (1, 2, 3), 1: (2, 3, 1)}, "the canary changed a topic it may not manage"


def test_a_broker_leading_nothing_gets_a_partition_once_and_the_topic_stays_put(kafka: KafkaHandle) -> None:
    """Broker 1 is the preferred leader of all three partitions. The canary reorders two replica lists
    (AlterPartitionReassignments through kafka-python: brokers 2 and 3 already hold replicas, so no data moves),
    elects the preferred leaders, and then every broker leads one partition; after that it changes nothing more
    (Strimzi canary #221: no thrashing)."""
    admin = kafka.admin()
    topic = create_badly(admin, [[1, 2, 3], [1, 3, 2], [1, 2, 3]])
    with running_canary(kafka, topic=topic) as (canary, _sink):
        poll(
            lambda: canary.view.partitions_led(),
            lambda led: all(led.get(b, 0) >= 1 for b in BROKERS),
            90,
            "every broker leading a monitor partition",
        )
        done = changes(canary)
        assert done["reassign"] == 1 and done["elect"] >= 1 and done["create"] == 0, done
        settle(canary)
        assert changes(canary) == done, "the canary kept changing a topic that was already right"
        assert canary.topic_manager is not None and canary.topic_manager.report.gaps == ()
        assert sample(canary, "kafka_pulse_canary_topic_placement_gaps") == 0
    placed = replicas(admin, topic)
    assert {r[0] for r in placed.values()} == BROKERS, placed
    assert all(sorted(r) == [1, 2, 3] for r in placed.values()), "replicas moved when a reorder was enough"
