"""Chapter 13's diagnoses as tables: each row a cluster shape, the expected verdict, and why."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from collectors.cluster_state import ClusterHealth, ClusterSnapshot, assess
from collectors.collector import ClusterStateCollector
from collectors.scrapers import PeriodicScraper
from pulse.kafka.partitions import Diagnosis, ElrVerdict, PartitionState, Scope, diagnose_under_replicated
from pulse.kafka.quorum import QuorumState, VoterState
from pulse.kafka.remote_tier import TieredTopic

RACKS = {1: "az-a", 2: "az-b", 3: "az-c"}


def part(p: int, leader: int, replicas: tuple[int, ...], isr: tuple[int, ...], min_isr: int = 2) -> PartitionState:
    return PartitionState("t", p, leader, replicas, isr, min_isr)


@pytest.mark.parametrize(
    ("partitions", "want"),
    [
        pytest.param([part(0, 1, (1, 2, 3), (1, 2, 3))], Diagnosis(Scope.NONE), id="healthy"),
        pytest.param(
            [part(0, 1, (1, 2, 3), (1, 2)), part(1, 2, (2, 3, 1), (2, 1)), part(2, 1, (3, 1, 2), (1, 2))],
            Diagnosis(Scope.BROKER, (3,)),
            id="dead-broker-3-lags-everywhere",  # kill -9 of one broker: it leaves every ISR
        ),
        pytest.param(
            [part(0, 1, (1, 2, 3), (1, 2)), part(1, 2, (2, 3, 1), (2, 3))],
            Diagnosis(Scope.CLUSTER_WIDE),
            id="different-laggards-cluster-wide",  # no one broker explains both
        ),
        pytest.param(
            [part(0, 1, (1, 2, 3), (1,)), part(1, 1, (1, 2, 3), (1,))],
            Diagnosis(Scope.BROKER, (2, 3)),
            id="two-brokers-common-to-all",
        ),
        pytest.param(
            [part(0, 1, (1, 2, 3), (1, 2, 3)), part(1, 2, (1, 2), (2,))],
            Diagnosis(Scope.BROKER, (1,)),
            id="healthy-partitions-do-not-vote",
        ),
    ],
)
def test_diagnosis(partitions: list[PartitionState], want: Diagnosis) -> None:
    assert diagnose_under_replicated(partitions) == want


def test_assess_counts_the_states_of_the_chapter() -> None:
    snapshot = ClusterSnapshot(
        brokers={1: "az-a", 2: "az-b"},  # broker 3 is gone
        controller=1,
        partitions=(
            part(0, 1, (1, 2, 3), (1, 2)),  # under-replicated, at min ISR
            part(1, 2, (3, 1, 2), (2,)),  # under min ISR; preferred leader 3 not leading
            part(2, -1, (3,), (), min_isr=1),  # offline
            part(3, 1, (1, 2), (1, 2), min_isr=1),
        ),
    )
    health = assess(snapshot, expected=[1, 2, 3])
    assert health.missing == (3,)
    assert (health.partitions, health.offline, health.under_replicated, health.under_min_isr) == (4, 1, 3, 2)
    rows = {b.broker: b for b in health.balance}
    assert [rows[b].partitions for b in (1, 2, 3)] == [3, 3, 3]
    assert [rows[b].leaders for b in (1, 2, 3)] == [2, 1, 0]
    assert rows[3].not_leading_preferred == 2 and rows[3].present is False
    assert rows[1].leader_skew == pytest.approx(1.0)  # 2 leaders against a mean of 1
    assert health.diagnosis == Diagnosis(Scope.BROKER, (3,))


def test_same_rack_replicas_are_counted() -> None:
    snapshot = ClusterSnapshot(
        brokers={1: "az-a", 2: "az-a", 3: "az-b"},
        controller=1,
        partitions=(part(0, 1, (1, 2), (1, 2)), part(1, 1, (1, 3), (1, 3)), part(2, 1, (1,), (1,), 1)),
    )
    assert assess(snapshot).same_rack == 1  # RF 1 is not "sharing" a rack


def test_no_partitions_means_no_skew() -> None:
    health = assess(ClusterSnapshot(RACKS, None, ()))
    assert all(b.partition_skew == 0 and b.leader_skew == 0 for b in health.balance)
    assert health.controller is None


def test_assess_uses_the_leaders_min_isr_rule_and_counts_each_elr_verdict() -> None:
    """The naive `isr < min.insync.replicas` counted a full ISR of replication 2 under min.insync.replicas=3; the
    leader requires min(3, 2) since Kafka 3.7, as `check` judges it (pulse/kafka/partitions.py)."""
    snapshot = ClusterSnapshot(
        brokers=RACKS,
        controller=1,
        partitions=(
            PartitionState("narrow", 0, 1, (1, 2), (1, 2), 3),  # full ISR: writable, not under min ISR
            PartitionState("t", 1, 1, (1, 2, 3), (1, 2), 3, elr=(3,)),  # recoverable
            PartitionState("t", 2, -1, (3,), (), 2, elr=()),  # at risk
            PartitionState("t", 3, 1, (1, 2, 3), (1,), 2),  # ELR not read
        ),
    )
    health = assess(snapshot)
    assert health.under_min_isr == 3
    assert health.under_min_isr_by_elr == {
        ElrVerdict.RECOVERABLE: 1,
        ElrVerdict.AT_RISK: 1,
        ElrVerdict.UNKNOWN: 1,
    }
    assert [s.label for s in health.under_min_isr_examples] == ["t-2", "t-3", "t-1"]  # at risk first


def test_the_cluster_families_name_the_elr_verdicts_and_the_partitions() -> None:
    health = assess(
        ClusterSnapshot(RACKS, 1, (PartitionState("orders", 0, -1, (3,), (), 2, elr=(), last_known_elr=(3,)),))
    )
    exposed = exposition(health)
    assert 'kafka_pulse_cluster_under_min_isr_elr_partitions{cluster="dev",elr="at_risk"} 1.0' in exposed
    assert 'kafka_pulse_cluster_under_min_isr_elr_partitions{cluster="dev",elr="recoverable"} 0.0' in exposed
    assert (
        'kafka_pulse_cluster_under_min_isr_partition{cluster="dev",elr="at_risk",partition="0",topic="orders"} 1.0'
        in exposed
    )


def exposition(health: ClusterHealth) -> str:
    scraper = PeriodicScraper("state", lambda: health, 60)
    scraper.scrape_once()
    registry = CollectorRegistry()
    registry.register(ClusterStateCollector({"dev": scraper}))
    return generate_latest(registry).decode()


def test_the_kraft_families_carry_the_leader_its_epoch_and_each_voters_lag() -> None:
    quorum = QuorumState(2, 7, 500, (VoterState(1, 0, 0.5), VoterState(2, 0, 0.0), VoterState(3, 120, None)))
    exposed = exposition(assess(ClusterSnapshot(RACKS, 1, (), quorum, True)))
    for line in (
        'kafka_pulse_kraft_quorum_up{cluster="dev"} 1.0',
        'kafka_pulse_kraft_leader{cluster="dev",node="2"} 1.0',
        'kafka_pulse_kraft_leader_epoch{cluster="dev"} 7.0',
        'kafka_pulse_kraft_voters{cluster="dev"} 3.0',
        'kafka_pulse_kraft_voter_lag_records{cluster="dev",node="3"} 120.0',
        'kafka_pulse_kraft_voter_caught_up_age_seconds{cluster="dev",node="1"} 0.5',
    ):
        assert line in exposed, exposed
    assert 'kafka_pulse_kraft_voter_caught_up_age_seconds{cluster="dev",node="3"}' not in exposed  # never seen


def test_the_kraft_families_count_the_observers_a_voter_change_moves_a_node_to() -> None:
    """A removed voter keeps replicating as an observer: the voter count drops and the observer count rises."""
    quorum = QuorumState(1, 9, 800, (VoterState(1, 0, 0.0), VoterState(2, 0, 0.1)), observers=(3,))
    exposed = exposition(assess(ClusterSnapshot(RACKS, 1, (), quorum, True)))
    assert 'kafka_pulse_kraft_voters{cluster="dev"} 2.0' in exposed
    assert 'kafka_pulse_kraft_observers{cluster="dev"} 1.0' in exposed
    assert 'kafka_pulse_kraft_high_watermark{cluster="dev"} 800.0' in exposed


def test_a_failed_quorum_read_is_down_and_zookeeper_has_no_kraft_families() -> None:
    failed = exposition(assess(ClusterSnapshot(RACKS, 1, (), None, False)))
    assert 'kafka_pulse_kraft_quorum_up{cluster="dev"} 0.0' in failed and "kafka_pulse_kraft_leader" not in failed
    assert "kafka_pulse_kraft_" not in exposition(assess(ClusterSnapshot(RACKS, 1, ())))


def test_tiered_topics_export_their_allowance_and_earliest_local_offsets() -> None:
    tiered = (TieredTopic("orders", 2, 100.0, "local.retention.bytes"), TieredTopic("forever", 1, None, "none"))
    snapshot = ClusterSnapshot(RACKS, 1, (), tiered=tiered, earliest_local={("orders", 1): 30, ("orders", 0): 7})
    exposed = exposition(assess(snapshot))
    assert (
        'kafka_pulse_cluster_topic_remote_copy_lag_allowed_bytes{basis="local.retention.bytes",cluster="dev",'
        'topic="orders"} 200.0' in exposed
    ), exposed
    assert 'topic="forever"' not in exposed  # nothing bounds its copy lag: no allowance to judge against
    assert (
        'kafka_pulse_cluster_partition_earliest_local_offset{cluster="dev",partition="0",topic="orders"} 7.0' in exposed
    )
    assert "kafka_pulse_cluster_topic_remote" not in exposition(assess(ClusterSnapshot(RACKS, 1, ())))
