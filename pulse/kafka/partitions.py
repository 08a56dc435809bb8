"""A partition as the metadata describes it, with the derived facts both the cluster-state collector and
`kafka-pulse check` judge by (offline, under-replicated, under min ISR, what can recover it, which replicas it
waits for; pure). The one home of the under-min-ISR rule and of the ELR verdict (KIP-966)."""

from __future__ import annotations

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
