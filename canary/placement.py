"""Where the monitor topic's replicas should be, given the live brokers: what to create, add, move or elect (pure).

Goals, in order:
  1. Replicas on brokers that are gone for good (the manager decides when a missing broker counts as gone) move to
     live brokers; a broker that is only briefly missing keeps its replicas (a rolling restart is not a removal).
  2. The replication factor reaches the configured one (never lowered: that is reported, not done).
  3. At least ceil(brokers x ratio) partitions; new partitions are led first by brokers that lead nothing.
  4. Every live broker is the preferred leader (first replica) of at least one partition, by reordering a replica
     list when it already holds a replica (no data moves), else by replacing one follower.
  5. Where the preferred leader is live and in sync but does not lead, a preferred leader election.
Replica lists interleave racks (as Strimzi's canary does) so that one AZ down never takes every replica.
A plan that changes nothing is empty: the manager acts only when something is actually wrong (Strimzi #221).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TopicLayout:
    """The monitor topic as the cluster describes it."""

    replicas: Mapping[int, tuple[int, ...]]
    """Partition -> replica list, preferred leader first."""
    leaders: Mapping[int, int | None]
    """Partition -> current leader; None when offline."""
    in_sync: Mapping[int, frozenset[int]]


@dataclass(frozen=True)
class Plan:
    """Changes to bring the topic in line; every field empty means nothing to do."""

    create: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """The whole assignment of a topic that does not exist yet."""
    add: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """New partitions and their replicas."""
    reassign: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Existing partitions whose replica list changes."""
    elect: tuple[int, ...] = ()
    """Partitions whose preferred leader should be elected."""
    gaps: tuple[str, ...] = ()
    """What is wrong, in words, whether or not the plan fixes it (for the log and `manage_topic: false`)."""

    @property
    def changes_placement(self) -> bool:
        """Creation, new partitions or moved replicas: the changes that are rate-limited."""
        return bool(self.create or self.add or self.reassign)

    @property
    def is_empty(self) -> bool:
        return not (self.changes_placement or self.elect or self.gaps)


def default_replication_factor(brokers: int, configured: int | None) -> int:
    """The configured replication factor, or min(3, brokers)."""
    return configured if configured is not None else max(1, min(3, brokers))


def default_min_insync(replication_factor: int, configured: int | None) -> int:
    """The configured min.insync.replicas, or RF - 1 (at least 1): one replica down still takes acks=all."""
    return configured if configured is not None else max(1, replication_factor - 1)


def required_partitions(brokers: int, ratio: float) -> int:
    return max(1, math.ceil(brokers * ratio - 1e-9))


def rack_order(racks: Mapping[int, str | None]) -> list[int]:
    """Broker ids interleaved by rack (a1, b1, c1, a2, ...); plain id order unless every broker has a rack."""
    ids = sorted(racks)
    if not ids or any(racks[b] is None for b in ids):
        return ids
    by_rack: dict[str, list[int]] = {}
    for broker in ids:
        by_rack.setdefault(str(racks[broker]), []).append(broker)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    return [col[i] for i in range(max(len(c) for c in columns)) for col in columns if i < len(col)]


def initial_assignment(racks: Mapping[int, str | None], partitions: int, rf: int) -> dict[int, tuple[int, ...]]:
    """Partition p's replicas are order[(p + r) % n]: each broker leads one partition per round of n."""
    order = rack_order(racks)
    n = len(order)
    return {p: tuple(order[(p + r) % n] for r in range(min(rf, n))) for p in range(partitions)}


def plan(
    racks: Mapping[int, str | None],
    layout: TopicLayout | None,
    replication_factor: int,
    ratio: float,
    gone: frozenset[int] = frozenset(),
) -> Plan:
    """What to change so that goals 1-5 hold for the live brokers in `racks` (broker id -> rack)."""
    live = set(racks)
    if not live:
        return Plan(gaps=("no live brokers",))
    if layout is None:
        count = required_partitions(len(live), ratio)
        return Plan(
            create=initial_assignment(racks, count, replication_factor),
            gaps=("topic does not exist",),
        )
    current = {p: tuple(r) for p, r in layout.replicas.items()}
    draft = _Draft(racks, live, replication_factor, dict(current))
    _move_off_gone(draft, gone)
    _raise_replication(draft)
    _add_partitions(draft, ratio, gone)
    unpreferred = _prefer_every_broker(draft)
    reassign = {p: r for p, r in draft.target.items() if r != current[p]}
    elect = _elections(layout, current, live, reassign)
    for p in elect:
        draft.gaps.append(f"partition {p} is led by {layout.leaders.get(p)}, not its preferred leader {current[p][0]}")
    for broker in sorted(live - unpreferred):  # one gap per broker: goal 4 already named those
        if not any(layout.leaders.get(p) == broker for p in current):
            draft.gaps.append(f"broker {broker} leads no partition")
    return Plan(add=draft.add, reassign=reassign, elect=elect, gaps=tuple(draft.gaps))


@dataclass
class _Draft:
    """The assignment `plan` works towards, goal by goal, and what it found wrong on the way."""

    racks: Mapping[int, str | None]
    live: set[int]
    replication_factor: int
    target: dict[int, tuple[int, ...]]
    """Existing partitions -> their replica lists as planned."""
    add: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """New partitions -> their replicas."""
    gaps: list[str] = field(default_factory=list)

    def new_replicas(self, leader: int, assignment: Mapping[int, tuple[int, ...]]) -> tuple[int, ...]:
        """A new partition's replicas, `leader` first, followers picked against `assignment`'s load."""
        followers = _pick(self.racks, [leader], min(self.replication_factor, len(self.live)) - 1, assignment)
        return (leader, *followers)


def _move_off_gone(draft: _Draft, gone: frozenset[int]) -> None:
    """Goal 1: replicas on brokers gone for good move to live brokers."""
    for p, replicas in sorted(draft.target.items()):
        lost = [b for b in replicas if b in gone]
        if lost:
            draft.gaps.append(f"partition {p} has replicas on removed brokers {lost}")
            kept = [b for b in replicas if b not in gone]
            draft.target[p] = tuple(kept + _pick(draft.racks, kept, len(lost), draft.target))


def _raise_replication(draft: _Draft) -> None:
    """Goal 2: raise the replication factor (a higher one is reported, never lowered)."""
    rf = draft.replication_factor
    for p, replicas in sorted(draft.target.items()):
        if len(replicas) < rf:
            want = min(rf, len(draft.live | set(replicas)))
            if len(replicas) < want:
                draft.gaps.append(f"partition {p} has {len(replicas)} replicas, configured {rf}")
                draft.target[p] = replicas + tuple(
                    _pick(draft.racks, list(replicas), want - len(replicas), draft.target)
                )
        elif len(replicas) > rf:
            draft.gaps.append(f"partition {p} has {len(replicas)} replicas, more than the configured {rf}")


def _add_partitions(draft: _Draft, ratio: float, gone: frozenset[int]) -> None:
    """Goal 3: enough partitions; new ones led by brokers that lead nothing first."""
    known = draft.live | {b for r in draft.target.values() for b in r}
    needed = required_partitions(len(known - gone), ratio)
    next_partition = max(draft.target, default=-1) + 1
    while len(draft.target) + len(draft.add) < needed:
        assignment = {**draft.target, **draft.add}
        draft.add[next_partition] = draft.new_replicas(_least_preferred(draft.racks, assignment), assignment)
        next_partition += 1
    if draft.add:
        draft.gaps.append(f"topic has {len(draft.target)} partitions, needs {needed} for {len(known - gone)} brokers")


def _prefer_every_broker(draft: _Draft) -> set[int]:
    """Goal 4: every live broker is the preferred leader of some partition; returns the brokers that were not."""
    combined = {**draft.target, **draft.add}
    unpreferred: set[int] = set()
    for broker in sorted(draft.live):
        if any(r and r[0] == broker for r in combined.values()):
            continue
        unpreferred.add(broker)
        draft.gaps.append(f"broker {broker} is the preferred leader of no partition")
        donor = _donor(combined, draft.live)
        if donor is None:  # every live broker leads exactly one: a partition of its own
            donor = max(combined) + 1
            draft.add[donor] = combined[donor] = draft.new_replicas(broker, combined)
            continue
        others = list(combined[donor])
        if broker in others:
            others.remove(broker)
        elif len(others) > 1:
            counts = Counter(b for r in combined.values() for b in r)
            others.remove(max(others[1:], key=lambda b: (b not in draft.live, counts[b], b)))
        else:
            others = []
        combined[donor] = (broker, *others)
        if donor in draft.add:
            draft.add[donor] = combined[donor]
        else:
            draft.target[donor] = combined[donor]
    return unpreferred


def _elections(
    layout: TopicLayout, current: Mapping[int, tuple[int, ...]], live: set[int], reassign: Mapping[int, object]
) -> tuple[int, ...]:
    """Goal 5: partitions not moved whose preferred leader is live and in sync but does not lead."""
    return tuple(
        p
        for p, replicas in sorted(current.items())
        if p not in reassign
        and replicas
        and replicas[0] in live
        and replicas[0] in layout.in_sync.get(p, frozenset())
        and layout.leaders.get(p) != replicas[0]
    )


def _pick(
    racks: Mapping[int, str | None], taken: list[int], count: int, assignment: Mapping[int, tuple[int, ...]]
) -> list[int]:
    """`count` live brokers not in `taken`: new racks first, then the fewest replicas, then the lowest id."""
    load = Counter(b for r in assignment.values() for b in r)
    chosen: list[int] = []
    for _ in range(count):
        used_racks = {racks.get(b) for b in taken + chosen}
        candidates = [b for b in racks if b not in taken and b not in chosen]
        if not candidates:
            break
        chosen.append(min(candidates, key=lambda b: (racks[b] in used_racks, load[b], b)))
    return chosen


def _least_preferred(racks: Mapping[int, str | None], assignment: Mapping[int, tuple[int, ...]]) -> int:
    counts = Counter(r[0] for r in assignment.values() if r)
    return min(racks, key=lambda b: (counts[b], b))


def _donor(assignment: Mapping[int, tuple[int, ...]], live: set[int]) -> int | None:
    """A partition whose live preferred leader prefer-leads others too (a missing broker keeps its partitions)."""
    counts = Counter(r[0] for r in assignment.values() if r)
    candidates = [p for p, r in assignment.items() if r and r[0] in live and counts[r[0]] > 1]
    # The broker preferred for the most partitions gives one up; its highest-numbered partition.
    return max(candidates, key=lambda p: (counts[assignment[p][0]], p), default=None)
