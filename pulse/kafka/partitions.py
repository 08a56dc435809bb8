"""A partition as the metadata describes it, with the derived facts both the cluster-state collector and
`kafka-pulse check` judge by (offline, under-replicated, under min ISR, which replicas it waits for; pure)."""

from __future__ import annotations

from dataclasses import dataclass


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
    """The topic's effective min.insync.replicas."""

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
        return len(self.isr) < self.min_isr

    @property
    def lagging_replicas(self) -> frozenset[int]:
        """Replicas that are assigned but not in sync: the brokers this partition waits for."""
        return frozenset(self.replicas) - frozenset(self.isr)
