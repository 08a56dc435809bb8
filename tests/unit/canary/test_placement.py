"""Monitor topic placement: the planner's goals 1-5 on small clusters, and that a healthy topic
yields an empty plan (no thrashing, Strimzi canary #221)."""

from collections import Counter

import pytest

from canary.placement import (
    TopicLayout,
    default_min_insync,
    default_replication_factor,
    initial_assignment,
    plan,
    rack_order,
    required_partitions,
)

RACKS = {1: "az-a", 2: "az-b", 3: "az-c"}


def healthy(assignment: dict[int, tuple[int, ...]]) -> TopicLayout:
    return TopicLayout(
        replicas=assignment,
        leaders={p: r[0] for p, r in assignment.items()},
        in_sync={p: frozenset(r) for p, r in assignment.items()},
    )


def preferred_leaders(assignment: dict[int, tuple[int, ...]]) -> Counter[int]:
    return Counter(r[0] for r in assignment.values())


@pytest.mark.parametrize(("brokers", "configured", "want"), [(1, None, 1), (2, None, 2), (5, None, 3), (5, 2, 2)])
def test_default_replication_factor(brokers: int, configured: int | None, want: int) -> None:
    assert default_replication_factor(brokers, configured) == want


@pytest.mark.parametrize(("rf", "configured", "want"), [(1, None, 1), (2, None, 1), (3, None, 2), (3, 3, 3)])
def test_default_min_insync(rf: int, configured: int | None, want: int) -> None:
    assert default_min_insync(rf, configured) == want


@pytest.mark.parametrize(("brokers", "ratio", "want"), [(3, 1.0, 3), (3, 1.5, 5), (3, 0.1, 1), (4, 2.0, 8)])
def test_required_partitions(brokers: int, ratio: float, want: int) -> None:
    assert required_partitions(brokers, ratio) == want


def test_rack_order_interleaves_racks() -> None:
    # Strimzi's example: r1{0,5}, r2{3,4}, r3{1,2}
    assert rack_order({0: "r1", 5: "r1", 3: "r2", 4: "r2", 1: "r3", 2: "r3"}) == [0, 3, 1, 5, 4, 2]


def test_rack_order_without_racks_everywhere_is_id_order() -> None:
    assert rack_order({2: "r1", 1: None, 3: "r2"}) == [1, 2, 3]


def test_create_when_missing_every_broker_leads_once_across_racks() -> None:
    p = plan(RACKS, None, replication_factor=3, ratio=1.0)
    assert p.create == {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)}
    assert p.gaps == ("topic does not exist",)


def test_initial_assignment_puts_replicas_on_distinct_racks() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    assignment = initial_assignment(racks, 6, 3)
    assert all(len({racks[b] for b in r}) == 3 for r in assignment.values())
    assert preferred_leaders(assignment) == Counter({b: 1 for b in racks})


def test_a_healthy_topic_needs_nothing() -> None:
    layout = healthy(initial_assignment(RACKS, 3, 3))
    assert plan(RACKS, layout, 3, 1.0).is_empty


def test_brief_absence_changes_nothing_but_names_the_gap() -> None:
    """Broker 3 killed (not gone): its replicas stay; partition 2 runs on another leader until it returns."""
    assignment = initial_assignment(RACKS, 3, 3)
    layout = TopicLayout(
        replicas=assignment,
        leaders={0: 1, 1: 2, 2: 1},
        in_sync={0: frozenset({1, 2}), 1: frozenset({1, 2}), 2: frozenset({1, 2})},
    )
    p = plan({1: "az-a", 2: "az-b"}, layout, 3, 1.0)
    assert not p.changes_placement and p.elect == ()


def test_returned_broker_gets_its_leadership_back_by_election() -> None:
    assignment = initial_assignment(RACKS, 3, 3)
    layout = TopicLayout(
        replicas=assignment,
        leaders={0: 1, 1: 2, 2: 1},
        in_sync={p: frozenset({1, 2, 3}) for p in assignment},
    )
    p = plan(RACKS, layout, 3, 1.0)
    assert (p.elect, p.reassign, p.add) == ((2,), {}, {})


def test_no_election_while_the_preferred_leader_is_out_of_sync() -> None:
    assignment = initial_assignment(RACKS, 3, 3)
    layout = TopicLayout(
        replicas=assignment, leaders={0: 1, 1: 2, 2: 1}, in_sync={p: frozenset({1, 2}) for p in assignment}
    )
    assert plan(RACKS, layout, 3, 1.0).elect == ()


def test_added_broker_gets_a_new_partition_it_leads() -> None:
    layout = healthy(initial_assignment(RACKS, 3, 3))
    p = plan({**RACKS, 4: "az-a"}, layout, 3, 1.0)
    assert list(p.add) == [3] and p.add[3][0] == 4 and len(set(p.add[3])) == 3
    assert p.reassign == {}


def test_broker_without_leadership_takes_one_by_reordering_when_it_holds_a_replica() -> None:
    # Someone moved leadership: broker 1 prefers two partitions, broker 3 none, but 3 is a replica everywhere.
    layout = healthy({0: (1, 2, 3), 1: (2, 3, 1), 2: (1, 2, 3)})
    p = plan(RACKS, layout, 3, 1.0)
    assert p.reassign == {2: (3, 1, 2)}  # same replica set: no data moves
    assert p.add == {}


def test_broker_without_a_replica_replaces_a_follower() -> None:
    racks = {1: "az-a", 2: "az-b", 3: "az-c", 4: "az-a"}
    layout = healthy({0: (1, 2), 1: (2, 3), 2: (3, 1), 3: (1, 2)})
    p = plan(racks, layout, 2, 1.0)
    assert p.reassign == {3: (4, 1)}


def test_gone_broker_replicas_move_to_live_brokers() -> None:
    racks = {1: "az-a", 2: "az-b", 4: "az-c"}
    layout = TopicLayout(
        replicas={0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)},
        leaders={0: 1, 1: 2, 2: 1},
        in_sync={0: frozenset({1, 2}), 1: frozenset({1, 2}), 2: frozenset({1, 2})},
    )
    p = plan(racks, layout, 3, 1.0, gone=frozenset({3}))
    assert p.reassign == {0: (1, 2, 4), 1: (2, 1, 4), 2: (4, 1, 2)}
    assert all(3 not in r for r in p.reassign.values())


def test_replication_factor_is_raised_not_lowered() -> None:
    raised = plan(RACKS, healthy({0: (1,), 1: (2,), 2: (3,)}), 3, 1.0)
    assert {p: len(set(r)) for p, r in raised.reassign.items()} == {0: 3, 1: 3, 2: 3}
    lowered = plan(RACKS, healthy(initial_assignment(RACKS, 3, 3)), 2, 1.0)
    assert not lowered.changes_placement
    assert lowered.gaps[0] == "partition 0 has 3 replicas, more than the configured 2"


def test_partitions_ratio() -> None:
    p = plan(RACKS, healthy(initial_assignment(RACKS, 3, 3)), 3, 2.0)
    assert sorted(p.add) == [3, 4, 5]
    assert preferred_leaders({**initial_assignment(RACKS, 3, 3), **p.add}) == Counter({1: 2, 2: 2, 3: 2})


def test_planning_twice_converges() -> None:
    """Applying a plan and planning again yields nothing: the manager cannot loop."""
    racks = {**RACKS, 4: "az-a", 5: "az-b"}
    assignment = dict(initial_assignment(RACKS, 3, 3))
    first = plan(racks, healthy(assignment), 3, 1.0)
    assignment.update(first.add)
    assignment.update(first.reassign)
    second = plan(racks, healthy(assignment), 3, 1.0)
    assert second.is_empty, second
    assert set(preferred_leaders(assignment)) == set(racks)


def test_no_live_brokers() -> None:
    assert plan({}, None, 3, 1.0).gaps == ("no live brokers",)
