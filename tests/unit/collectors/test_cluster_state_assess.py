"""`assess` in one pass gives what the plain derivation (cluster_state_reference.py) gives, on random clusters with
every state the chapter counts (offline, under-replicated, under min ISR by ELR verdict, missing brokers, racks
unset), and
`partition_states` reads librdkafka's metadata shape in topic and partition order."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from collectors.cluster_state import UNDER_MIN_ISR_EXAMPLES, ClusterSnapshot, assess, partition_states
from pulse.kafka.partitions import ElrVerdict, PartitionState
from tests.unit.collectors.cluster_state_reference import assess_reference


def random_snapshot(seed: int, partitions: int, brokers: int) -> tuple[ClusterSnapshot, list[int]]:
    rng = random.Random(seed)
    ids = list(range(1, brokers + 1))
    racks = {b: rng.choice(["az-a", "az-b", "az-c", None]) for b in ids}
    gone = set(rng.sample(ids, k=min(len(ids), rng.randint(0, 2))))
    states = []
    for p in range(partitions):
        rf = rng.randint(0, min(3, brokers))
        replicas = tuple(rng.sample(ids, k=rf))
        isr = tuple(b for b in replicas if b not in gone and rng.random() > 0.1)
        leader = rng.choice(isr) if isr and rng.random() > 0.05 else -1
        out_of_sync = [b for b in replicas if b not in isr]
        elr = None if rng.random() < 0.2 else tuple(b for b in out_of_sync if rng.random() > 0.5)
        states.append(PartitionState(f"t{p % 7}", p, leader, replicas, isr, rng.randint(1, 3), elr))
    live = {b: r for b, r in racks.items() if b not in gone}
    controller = rng.choice([*live, None]) if live else None
    extra = [brokers + 1] if rng.random() > 0.5 else []  # expected by config, never seen
    return ClusterSnapshot(live, controller, tuple(states)), [*ids, *extra]


@pytest.mark.parametrize("seed", range(40))
def test_assess_equals_the_reference_on_random_clusters(seed: int) -> None:
    sizes = [(0, 3), (1, 1), (5, 3), (60, 5), (400, 12), (2000, 30)]
    partitions, brokers = sizes[seed % len(sizes)]
    snapshot, expected = random_snapshot(seed, partitions, brokers)
    assert assess(snapshot, expected) == assess_reference(snapshot, expected)


def test_the_random_clusters_reach_every_state() -> None:
    """The differential test is only as good as the states its inputs reach."""
    health = assess(*random_snapshot(7, 2000, 30))
    assert health.offline and health.under_replicated and health.under_min_isr and health.same_rack
    assert health.missing and health.diagnosis.scope.value == "cluster-wide"
    assert set(health.under_min_isr_by_elr) == set(ElrVerdict)
    assert len(health.under_min_isr_examples) == UNDER_MIN_ISR_EXAMPLES
    assert health.under_min_isr_examples[0].elr_verdict is ElrVerdict.AT_RISK


def test_partition_states_sorts_topics_and_partitions_and_applies_min_isr() -> None:
    def partition(pid: int, leader: int) -> SimpleNamespace:
        return SimpleNamespace(id=pid, leader=leader, replicas=[leader, 3], isrs=[leader])

    topics = {
        "b": SimpleNamespace(partitions={1: partition(1, 2), 0: partition(0, 1)}),
        "a": SimpleNamespace(partitions={0: partition(0, 2)}),
    }
    states = partition_states(topics, {"b": 2})
    assert [(s.topic, s.partition, s.leader, s.replicas, s.isr, s.min_isr) for s in states] == [
        ("a", 0, 2, (2, 3), (2,), 1),
        ("b", 0, 1, (1, 3), (1,), 2),
        ("b", 1, 2, (2, 3), (2,), 2),
    ]
