"""Group evaluation: reads a group's windows from the store, applies the mode's rule set to every partition and
aggregates as Burrow's `evaluateConsumerStatus` does. Pure apart from reading the store; the clock is an argument.

Aggregation (research §1.5): status is the worst partition status with STOP/STALL/REWIND reported as ERR; totallag
sums current lags; maxlag is the first partition (topic, then partition order) with the largest current lag;
complete is the fraction of partitions whose window is full; placeholder partitions count in partition_count.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from lag.rules import RULE_SETS, RuleParams, Window
from lag.status import CommitPoint, GroupStatus, PartitionVerdict, Status, not_found
from lag.store import OffsetStore, PartitionSlot
from lag.timelag import time_lag_seconds
from lag.window import NO_LAG


class ClusterHealth(Protocol):
    """Tells the evaluator whether a cluster's offsets can be trusted now (the source is up and fresh)."""

    def unavailable_reason(self, cluster: str, now_ms: int) -> str | None:
        """None when the cluster is readable; otherwise why not (e.g. 'no HWM refresh for 42 s')."""


class Evaluator:
    """Evaluates groups stored in an `OffsetStore` with one rule set."""

    def __init__(self, store: OffsetStore, params: RuleParams, health: ClusterHealth | None = None) -> None:
        self.store = store
        self.params = params
        self.health = health
        self._rule = RULE_SETS[params.mode]

    def evaluate_group(self, cluster: str, group: str, now_ms: int) -> GroupStatus:
        """The group's status at `now_ms`; NOTFOUND when unknown or expired, UNKNOWN while its cluster is down."""
        if not self.store.has_group(cluster, group, now_ms):
            return not_found(cluster, group)
        if self.health is not None:
            why = self.health.unavailable_reason(cluster, now_ms)
            if why is not None:
                return GroupStatus(cluster, group, Status.UNKNOWN, 0.0, (), 0, None, 0, f"cluster {cluster}: {why}")
        verdicts = tuple(self.evaluate_partition(cluster, slot, now_ms) for slot in self.store.slots(cluster, group))
        return aggregate(cluster, group, verdicts)

    def evaluate_cluster(self, cluster: str, now_ms: int) -> Iterator[GroupStatus]:
        for group in self.store.groups(cluster):
            yield self.evaluate_group(cluster, group, now_ms)

    def evaluate_partition(self, cluster: str, slot: PartitionSlot, now_ms: int) -> PartitionVerdict:
        p = self.params
        offsets, timestamps, lags = self.store.commits.read(slot.slot)
        hwm_offsets, hwm_times = self.store.hwms.history(cluster, slot.topic, slot.partition)
        client_id = "" if p.mode == "burrow-1.2" else slot.client_id  # 1.2.1 never copied it into the status
        if not offsets:
            return PartitionVerdict(
                slot.topic, slot.partition, Status.OK, None, None, 0, 0.0, slot.owner, client_id,
                "no commit from this group on this partition",
            )  # fmt: skip
        current_lag = max(0, hwm_offsets[-1] - offsets[-1]) if hwm_offsets else 0
        complete = 1.0 if len(offsets) >= p.intervals else len(offsets) / p.intervals
        if complete < p.minimum_complete:
            status, reason = Status.OK, f"window {complete:.0%} filled < minimum-complete {p.minimum_complete:g}"
        else:
            window = Window(offsets, timestamps, lags, hwm_offsets, hwm_times, current_lag)
            status, reason = self._rule(window, now_ms, p)
        return PartitionVerdict(
            topic=slot.topic,
            partition=slot.partition,
            status=status,
            start=_point(offsets[0], timestamps[0], lags[0]),
            end=_point(offsets[-1], timestamps[-1], lags[-1]),
            current_lag=current_lag,
            complete=complete,
            owner=slot.owner,
            client_id=client_id,
            reason=reason,
            lag_seconds=time_lag_seconds(offsets[-1], hwm_offsets, hwm_times, now_ms),
        )


def _point(offset: int, timestamp_ms: int, lag: int) -> CommitPoint:
    return CommitPoint(offset, timestamp_ms, None if lag == NO_LAG else lag)


def aggregate(cluster: str, group: str, verdicts: tuple[PartitionVerdict, ...]) -> GroupStatus:
    """Burrow's group roll-up of partition verdicts."""
    status = Status.OK
    worst: PartitionVerdict | None = None
    maxlag: PartitionVerdict | None = None
    complete = 0
    lag_seconds: float | None = None
    for v in verdicts:
        if v.status.group_level() > status:
            status = v.status.group_level()
        if worst is None or v.status > worst.status:
            worst = v
        if maxlag is None or v.current_lag > maxlag.current_lag:
            maxlag = v
        if v.complete == 1.0:
            complete += 1
        if v.lag_seconds is not None:
            lag_seconds = v.lag_seconds if lag_seconds is None else max(lag_seconds, v.lag_seconds)
    reason = ""
    if worst is not None and worst.status > Status.OK:
        reason = f"{worst.topic}[{worst.partition}] {worst.status.name}: {worst.reason}"
    return GroupStatus(
        cluster=cluster,
        group=group,
        status=status,
        complete=complete / len(verdicts) if verdicts else 0.0,
        partitions=verdicts,
        partition_count=len(verdicts),
        maxlag=maxlag,
        totallag=sum(v.current_lag for v in verdicts),
        reason=reason,
        lag_seconds=lag_seconds,
    )
