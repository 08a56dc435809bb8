"""A partition as the metadata describes it, with the derived facts both the cluster-state collector and
`kafka-pulse check` judge by (offline, under-replicated, under min ISR, what can recover it, which replicas it
waits for; pure). The one home of the under-min-ISR rule, of the ELR verdict (KIP-966) and of the
under-replication diagnosis (here, not in the collector, so `check` does not import the collector to use it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class ElrVerdict(StrEnum):
    """For a partition under min ISR: what can bring it back without losing an acknowledged record (KIP-966's
    eligible leader replicas, read with DescribeTopicPartitions). Ordered as an operator's worry grows."""

    RECOVERABLE = "recoverable"
    """ELR non-empty: replicas that left the ISR while it was below min ISR still hold every acknowledged record and
    may be elected leader cleanly."""
    ISR_ONLY = "isr_only"
    """ELR empty, ISR not: the in-sync replicas left hold every acknowledged record, with nothing behind them (a
    cluster without ELR, or an ELR cleared by a min.insync.replicas change or unclean shutdowns)."""
    UNKNOWN = "unknown"
    """The ELR was not read (a broker before 3.7, or the read failed): durability not judged."""
    AT_RISK = "at_risk"
    """ISR and ELR both empty: no replica is known to hold every acknowledged record; only an unclean election (or
    the last known ELR coming back) brings it online, and records may be lost."""


@dataclass(frozen=True)
class PartitionState:
    """One partition as the metadata describes it."""

    topic: str
    partition: int
    leader: int
    """Broker id of the leader; -1 when the partition is offline (no leader)."""
    replicas: tuple[int, ...]
    """The assignment in order: the first replica is the preferred leader."""
    isr: tuple[int, ...]
    min_isr: int = 1
    """The topic's min.insync.replicas as DescribeConfigs gives it."""
    elr: tuple[int, ...] | None = None
    """Eligible leader replicas (KIP-966, DescribeTopicPartitions); None when not read: only partitions under min
    ISR are asked, and brokers before 3.7 do not answer."""
    last_known_elr: tuple[int, ...] | None = None
    """ELR members removed after an unclean shutdown: the replicas to bring back first when ISR and ELR are empty."""

    @property
    def label(self) -> str:
        """`topic-partition`, as Kafka's tools name a partition."""
        return f"{self.topic}-{self.partition}"

    @property
    def is_offline(self) -> bool:
        return self.leader < 0

    @property
    def is_under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def is_under_min_isr(self) -> bool:
        """Fewer in-sync replicas than an acks=all write needs. Since Kafka 3.7 (apache/kafka#14594) the leader
        requires min(min.insync.replicas, replicas), so a full ISR is never short: replication 2 under
        min.insync.replicas=3 takes acks=all writes with both replicas in sync (tests/integration/app/
        test_check_min_isr.py). Older brokers compare with min.insync.replicas alone; a full ISR below it is not
        caught there."""
        return len(self.isr) < min(self.min_isr, len(self.replicas))

    @property
    def elr_verdict(self) -> ElrVerdict | None:
        """What can recover this partition when it is under min ISR (`ElrVerdict`); None when it is not."""
        if not self.is_under_min_isr:
            return None
        if self.elr:
            return ElrVerdict.RECOVERABLE
        if self.elr is None:
            return ElrVerdict.UNKNOWN
        return ElrVerdict.ISR_ONLY if self.isr else ElrVerdict.AT_RISK

    @property
    def lagging_replicas(self) -> frozenset[int]:
        """Replicas that are assigned but not in sync: the brokers this partition waits for."""
        return frozenset(self.replicas) - frozenset(self.isr)


class Scope(StrEnum):
    """Where the under-replication comes from (the chapter's first question about URP)."""

    NONE = "none"
    """No partition is under-replicated."""
    BROKER = "broker"
    """One broker is missing from the ISR of every under-replicated partition: look at that broker."""
    CLUSTER_WIDE = "cluster-wide"
    """No single broker explains it: look at load, the network or the controller."""


@dataclass(frozen=True)
class Diagnosis:
    scope: Scope
    brokers: tuple[int, ...] = ()
    """With scope BROKER, the broker(s) common to all under-replicated partitions (usually exactly one)."""


def diagnose_under_replicated(partitions: Iterable[PartitionState]) -> Diagnosis:
    """The broker(s) absent from the ISR of every under-replicated partition, else cluster-wide.

    A dead or slow broker drops out of the ISR of all its partitions, so it is the one lagging replica they share.
    Intersecting lagging replicas (not whole assignments) keeps the answer right when every partition is
    assigned to every broker, as with RF 3 on 3 brokers.
    """
    common: frozenset[int] | None = None
    for state in partitions:
        if state.is_under_replicated:
            common = state.lagging_replicas if common is None else common & state.lagging_replicas
    if common is None:
        return Diagnosis(Scope.NONE)
    if common:
        return Diagnosis(Scope.BROKER, tuple(sorted(common)))
    return Diagnosis(Scope.CLUSTER_WIDE)
