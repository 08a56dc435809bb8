"""What the health check's probes found, as small frozen records: the input of the pure verdicts
(judge/verdict.py).

Probes (probe/kafka_probes.py, round_trip.py, slo_budgets.py) fill these from Kafka and files; nothing here does
I/O, so every verdict can be tested from hand-made facts. A probe that could not finish gives `ProbeFailed` instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from pulse.kafka.partitions import PartitionState
from pulse.kafka.quorum import VoterState as VoterState  # declared beside the reader check and collectors share


class FailureKind(StrEnum):
    """Why a probe has no answer; the verdicts treat a cluster that does not answer differently from a check
    that cannot ask."""

    TIMEOUT = "timeout"
    """No answer before the deadline: a hung or overloaded broker, or a check budget too small."""
    UNREACHABLE = "unreachable"
    """Connections refused or broken: nothing serves Kafka there."""
    REFUSED = "refused"
    """The cluster answered but refused us (authentication, authorization, an unsupported request)."""
    ERROR = "error"
    """Anything else (a client library error, a file that cannot be read)."""


@dataclass(frozen=True)
class ProbeFailed:
    """A probe that produced no facts; `reason` says what happened in words an operator can act on."""

    kind: FailureKind
    reason: str


@dataclass(frozen=True)
class BrokerAddress:
    """A broker as registered in the cluster metadata."""

    id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class MetadataFacts:
    """The cluster as one metadata read described it (Metadata, DescribeCluster, DescribeConfigs)."""

    brokers: Mapping[int, BrokerAddress]
    """Registered, unfenced brokers: what clients can be sent to."""
    expected: tuple[int, ...]
    """Brokers that should exist: the registered ones, every replica of every partition, and the brokers of the
    config's `jmx.brokers`. A dead broker stays in its partitions' replica lists, so it is still expected."""
    partitions: int
    offline: tuple[PartitionState, ...]
    under_replicated: tuple[PartitionState, ...]
    under_min_isr: tuple[PartitionState, ...]
    diagnosis_scope: str
    """collectors' `Scope` value: `none`, `broker` or `cluster-wide` (the chapter's first question about URP)."""
    diagnosis_brokers: tuple[int, ...] = ()
    """With scope `broker`: the broker(s) missing from the ISR of every under-replicated partition."""
    metadata_controller: int | None = None
    """The controller id of the metadata response: the real one under ZooKeeper, a random broker under KRaft."""
    answered_by: str = ""
    """The bootstrap server whose answer this is."""
    min_isr_unread: tuple[str, ...] = ()
    """Topics whose min.insync.replicas was not read: their partitions are not judged for min ISR."""
    min_isr_unread_reason: str = ""
    elr_unread_reason: str = ""
    """Why partitions under min ISR have no ELR (their `elr_verdict` is UNKNOWN): not supported, failed, bounded."""


@dataclass(frozen=True)
class BrokerProbe:
    """One broker asked for its API versions on a connection of its own (pulse/kafka/broker_probe.py)."""

    broker: int
    ok: bool
    latency_s: float
    error: str | None = None
    """`timeout`, `refused`, `tls`, `protocol` or an OS error name."""


@dataclass(frozen=True)
class QuorumFacts:
    """Who controls the cluster: the KRaft quorum (DescribeQuorum), or the ZooKeeper-era controller id."""

    mode: str
    """`kraft` or `zookeeper`."""
    leader: int | None
    """The active controller; None when there is none."""
    epoch: int | None = None
    voters: tuple[VoterState, ...] = ()
    observers: tuple[int, ...] = ()
    """Node ids replicating the metadata log without a vote (pulse.kafka.quorum.QuorumState.observers)."""


@dataclass(frozen=True)
class PartitionTrip:
    """One record produced to one partition of the monitor topic and read back."""

    partition: int
    leader: int
    """The leader when the record was sent: the broker this round trip goes through."""
    in_sync: tuple[int, ...]
    sent: bool
    """The produce was acknowledged (acks=all)."""
    read_back: bool
    error: str | None = None
    """librdkafka's error name (`_MSG_TIMED_OUT`, `NOT_ENOUGH_REPLICAS`) or `not read back in time`."""
    latency_s: float | None = None
    """Produce to read back, when both happened."""
    judged: bool = True
    """False when the record neither failed nor arrived before the deadline and the deadline left it less than
    `canary.latency_slo_s`: the check ran out of time, the cluster was not shown slow."""


@dataclass(frozen=True)
class RoundTripFacts:
    """The canary round trip: one record per partition of the monitor topic."""

    topic: str
    trips: tuple[PartitionTrip, ...]
    created: bool = False
    """The check created the monitor topic (with the canary's placement) because it did not exist."""


@dataclass(frozen=True)
class GroupLag:
    """One consumer group's committed offsets against the high watermarks, from one snapshot."""

    group: str
    state: str
    """The coordinator's group state (`Stable`, `Empty`, ...)."""
    total_lag: int
    max_lag: int
    max_lag_partition: str | None
    """`topic-partition` of the largest lag."""
    partitions: int
    """Partitions with a committed offset and a known high watermark."""
    unknown_partitions: int = 0
    """Partitions whose high watermark could not be read in time (their lag is not counted)."""


@dataclass(frozen=True)
class LagFacts:
    """Lag of the consumer groups read within the deadline."""

    groups_listed: int
    groups: tuple[GroupLag, ...]
    """Every group read (ordered as read); the verdict picks the worst."""
    unread: tuple[str, ...] = ()
    """Groups listed but not read in time, or whose coordinator failed."""
    errors: tuple[str, ...] = ()
    """Brokers that failed the group listing, and similar partial failures."""


@dataclass(frozen=True)
class SloBudget:
    """One SLO instance's latest evaluation."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    budget_remaining: float | None = None
    """Fraction of the error budget left (negative: overspent); None without events."""
    page_firing: bool = False
    ticket_firing: bool = False
    exhaustion_at: datetime | None = None


@dataclass(frozen=True)
class SloFacts:
    """The SLO job's latest results, where the check found them."""

    source: str
    """`parquet:<file>` or `pushgateway:<url>`."""
    evaluated_at: datetime | None
    budgets: tuple[SloBudget, ...]


@dataclass(frozen=True)
class NotAvailable:
    """A part of the check that has nothing to read here (no SLOs, no results configured); never changes the exit
    code."""

    reason: str
