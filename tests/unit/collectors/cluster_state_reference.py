"""Test oracle for `collectors.cluster_state.assess`: the plain one-partition-at-a-time derivation it replaced,
kept apart from the product path so the single-pass version is checked against it (differential tests) and
benchmarked beside it (bench/cluster_state_bench.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from collectors.cluster_state import (
    UNDER_MIN_ISR_EXAMPLES,
    BrokerBalance,
    ClusterHealth,
    ClusterSnapshot,
)
from pulse.kafka.partitions import ElrVerdict, diagnose_under_replicated


def _skew(count: int, mean: float) -> float:
    return (count - mean) / mean if mean else 0.0


def assess_reference(snapshot: ClusterSnapshot, expected: Iterable[int] = ()) -> ClusterHealth:
    """What `assess` must return: every partition visited once per question, nothing shared between them."""
    expected_ids = tuple(sorted(set(expected) | set(snapshot.brokers)))
    hosted: Counter[int] = Counter()
    leading: Counter[int] = Counter()
    preferred: Counter[int] = Counter()
    not_leading: Counter[int] = Counter()
    same_rack = 0
    for state in snapshot.partitions:
        hosted.update(state.replicas)
        if not state.is_offline:
            leading[state.leader] += 1
        if state.replicas:
            preferred[state.replicas[0]] += 1
            if state.leader != state.replicas[0]:
                not_leading[state.replicas[0]] += 1
        racks = {snapshot.brokers.get(b) for b in state.replicas}
        if len(state.replicas) > 1 and len(racks) == 1 and None not in racks:
            same_rack += 1
    count = max(len(expected_ids), 1)
    mean_partitions = sum(hosted[b] for b in expected_ids) / count
    mean_leaders = sum(leading[b] for b in expected_ids) / count
    balance = tuple(
        BrokerBalance(
            broker=b,
            rack=snapshot.brokers.get(b),
            present=b in snapshot.brokers,
            partitions=hosted[b],
            leaders=leading[b],
            preferred=preferred[b],
            not_leading_preferred=not_leading[b],
            partition_skew=_skew(hosted[b], mean_partitions),
            leader_skew=_skew(leading[b], mean_leaders),
        )
        for b in expected_ids
    )
    by_elr: Counter[ElrVerdict] = Counter()
    worry = {v: rank for rank, v in enumerate(ElrVerdict)}  # declared in order of growing worry
    examples = []
    for state in snapshot.partitions:
        if len(state.isr) < min(state.min_isr, len(state.replicas)):
            verdict = (
                ElrVerdict.RECOVERABLE
                if state.elr
                else ElrVerdict.UNKNOWN
                if state.elr is None
                else ElrVerdict.ISR_ONLY
                if state.isr
                else ElrVerdict.AT_RISK
            )
            by_elr[verdict] += 1
            examples.append((-worry[verdict], state.topic, state.partition, state))
    examples.sort(key=lambda row: row[:3])
    return ClusterHealth(
        expected=expected_ids,
        missing=tuple(b for b in expected_ids if b not in snapshot.brokers),
        controller=snapshot.controller,
        partitions=len(snapshot.partitions),
        offline=sum(p.is_offline for p in snapshot.partitions),
        under_replicated=sum(p.is_under_replicated for p in snapshot.partitions),
        under_min_isr=sum(by_elr.values()),
        same_rack=same_rack,
        balance=balance,
        diagnosis=diagnose_under_replicated(snapshot.partitions),
        under_min_isr_by_elr=by_elr,
        under_min_isr_examples=tuple(row[3] for row in examples[:UNDER_MIN_ISR_EXAMPLES]),
        quorum=snapshot.quorum,
        quorum_up=snapshot.quorum_up,
    )
