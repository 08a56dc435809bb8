"""The canary's view of the monitor topic: who leads, who is in sync, who just left (canary/view.py)."""

from canary.placement import TopicLayout
from canary.view import ClusterView, PartitionLeader

RACKS = {1: "az-a", 2: "az-b", 3: "az-c"}
ALL = frozenset({1, 2, 3})


def layout(leaders: dict[int, int | None], in_sync: dict[int, frozenset[int]]) -> TopicLayout:
    return TopicLayout(replicas={p: (1, 2, 3) for p in leaders}, leaders=leaders, in_sync=in_sync)


def test_leader_rack_and_in_sync() -> None:
    view = ClusterView()
    view.update(layout({0: 1, 1: 2}, {0: ALL, 1: ALL}), RACKS, now=0.0)
    assert view.leader(1, now=0.0, recent_s=2.0) == PartitionLeader(2, "az-b", ALL)
    assert view.partitions() == [0, 1]
    assert view.partitions_led() == {1: 1, 2: 1, 3: 0}


def test_a_broker_leaving_the_isr_or_the_leadership_is_departed_within_the_grace() -> None:
    """kill -9 broker 3: the fence drops it from every ISR and moves partition 2 to broker 1 (rule 3b)."""
    view = ClusterView()
    view.update(layout({0: 1, 2: 3}, {0: ALL, 2: ALL}), RACKS, now=0.0)
    view.update(layout({0: 1, 2: 1}, {0: frozenset({1, 2}), 2: frozenset({1, 2})}), {1: "az-a", 2: "az-b"}, now=10.0)
    assert view.leader(0, now=11.0, recent_s=2.0).departed == {3}
    assert view.leader(2, now=11.0, recent_s=2.0) == PartitionLeader(1, "az-a", frozenset({1, 2}), frozenset({3}))
    assert view.leader(0, now=12.5, recent_s=2.0).departed == frozenset()
    assert view.rack(3) == "az-c", "a broker that went away keeps its rack label"


def test_leadership_returning_to_a_broker_does_not_mark_it_departed() -> None:
    view = ClusterView()
    view.update(layout({0: 3}, {0: ALL}), RACKS, now=0.0)
    view.update(layout({0: 1}, {0: frozenset({1, 2})}), RACKS, now=1.0)
    view.update(layout({0: 3}, {0: ALL}), RACKS, now=1.5)
    assert view.leader(0, now=1.6, recent_s=2.0).departed == {1}


def test_no_topic_no_leader() -> None:
    assert ClusterView().leader(0) == PartitionLeader(None, None, frozenset())
