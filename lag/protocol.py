"""What the stages of lag exchange (Burrow's `core/protocol`): the evaluator's verdicts, statuses ordered by severity
with Burrow's names, and the frozen messages that carry them from `evaluate` through `diagnose` to `serve` and
`notify`: group and partition verdicts, a scrape's rows as arrays, the page-cache estimate, noisy neighbours.

Burrow's numbering (`core/protocol/evaluator.go`) is kept so that metrics and API values mean the same thing:
a group is NOTFOUND/OK/WARN/ERR, a partition OK/WARN/STOP/STALL/REWIND. UNKNOWN is ours: the group's cluster cannot
be read, so no verdict is given (never a false STOP).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, get_args

import numpy as np
from numpy.typing import NDArray

from pulse.config import LagMode

TopicPartition = tuple[str, int]
Ints = NDArray[np.int64]
Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]

Mode = LagMode
"""Rule set: declared once with the `lag.mode` setting."""

MODES: tuple[Mode, ...] = get_args(LagMode)


class Status(enum.IntEnum):
    """Severity-ordered status; `max()` of partition statuses gives the group's (before the ERR collapse)."""

    UNKNOWN = -1
    """Ours: the source of this group's offsets is unreachable or stale, so no verdict."""
    NOTFOUND = 0
    OK = 1
    WARN = 2
    ERR = 3
    """Group only: any partition in STOP, STALL or REWIND."""
    STOP = 4
    STALL = 5
    REWIND = 6

    def group_level(self) -> Status:
        """Burrow reports partition errors above ERR as ERR at group level (`evaluateConsumerStatus`)."""
        return Status.ERR if self > Status.ERR else self


@dataclass(frozen=True, slots=True)
class CommitPoint:
    """One stored commit of a partition window (Burrow's `ConsumerOffset`)."""

    offset: int
    timestamp_ms: int
    """Commit timestamp from the broker (ms); after a min-distance merge, the timestamp of the bucket's first commit."""
    lag: int | None
    """Lag when the commit was stored, against the newest HWM known then; None when no HWM was known."""


@dataclass(frozen=True, slots=True)
class NoisyNeighbour:
    """One group reading one topic from disk on one broker while that broker's produce latency is up."""

    broker: int
    group: str
    topic: str
    partitions: tuple[int, ...]
    """The topic's partitions led by `broker` that the group reads beyond the page cache, ascending."""
    lag_seconds: float
    """The largest time lag among those partitions."""
    window_s: float
    """The page-cache window those lags exceed (the broker's; the smallest seen if rows disagree)."""
    produce_latency_ms: float | None
    """The broker's produce latency as the detector reported it; None when it had none."""
    broker_slow: bool
    """The broker is flagged slow (not only its produce latency elevated)."""
    broker_reason: str
    """The detector's reason for the broker, as published."""

    def describe(self) -> str:
        """One sentence naming broker, group, topic and the numbers (check's reason line and the lag API's why)."""
        latency = "" if self.produce_latency_ms is None else f" ({self.produce_latency_ms:.0f} ms)"
        state = "slow" if self.broker_slow else "elevated produce latency"
        parts = ",".join(str(p) for p in self.partitions)
        return (
            f"noisy neighbour on broker {self.broker}: group {self.group} reads topic {self.topic} "
            f"(partition {parts}) {self.lag_seconds:.0f} s back, beyond the {self.window_s:.0f} s page cache, "
            f"while the broker shows {state}{latency}"
        )


@dataclass(frozen=True, slots=True)
class PartitionVerdict:
    """The status of one group-partition (Burrow's `PartitionStatus`, plus our `reason` and time lag)."""

    topic: str
    partition: int
    status: Status
    start: CommitPoint | None
    """Oldest commit in the window; None for a partition the group never committed (a placeholder)."""
    end: CommitPoint | None
    """Newest commit in the window."""
    current_lag: int
    """max(0, newest HWM - newest committed offset) at evaluation time."""
    complete: float
    """Fraction of the window filled (1.0 when full; 0 for a placeholder)."""
    owner: str = ""
    client_id: str = ""
    reason: str = ""
    """Which rule decided, on which values: e.g. 'STOP: no commit for 600 s > window span 400 s'."""
    lag_seconds: float | None = None
    """How long ago the log end was where the group is now (interpolated from HWM history); None if unknown."""
    exact_lag_seconds: float | None = None
    """Age of the record at the committed offset (its Kafka timestamp), when exact time lag is on and it was read."""
    page_cache_window_s: float | None = None
    """Seconds of recent data the leader's page cache holds (page-cache hint on); None when unknown."""
    beyond_page_cache: bool | None = None
    """The group reads older data than the leader's page cache holds (its reads go to disk); None when unknown."""


@dataclass(frozen=True, slots=True)
class GroupStatus:
    """The status of one consumer group (Burrow's `ConsumerGroupStatus`)."""

    cluster: str
    group: str
    status: Status
    """NOTFOUND, OK, WARN or ERR (or UNKNOWN while the cluster cannot be read)."""
    complete: float
    """Fraction of partitions whose window is full."""
    partitions: tuple[PartitionVerdict, ...]
    partition_count: int
    maxlag: PartitionVerdict | None
    """The partition with the largest current lag (first in topic/partition order on ties)."""
    totallag: int
    reason: str = ""
    lag_seconds: float | None = None
    """Largest partition time lag, when any is known."""
    exact_lag_seconds: float | None = None
    """Largest exact partition time lag, when any is known."""
    beyond_page_cache: bool | None = None
    """Some partition reads older data than its leader's page cache holds; None when unknown for all."""
    noisy_neighbours: tuple[NoisyNeighbour, ...] = ()
    """Brokers whose produce latency is up while this group reads their partitions from disk (lag/diagnose)."""


def not_found(cluster: str, group: str, reason: str = "group not found") -> GroupStatus:
    """Burrow answers 404 for an unknown group; the status object we print for it."""
    return GroupStatus(cluster, group, Status.NOTFOUND, 0.0, (), 0, None, 0, reason)


class SourceFreshness(Protocol):
    """Tells the evaluator whether a cluster's offsets can be trusted now (its sources are up and fresh)."""

    def unavailable_reason(self, cluster: str, now_ms: int) -> str | None:
        """None when the cluster is readable; otherwise why not (e.g. 'no HWM refresh for 42 s')."""


@dataclass(frozen=True, slots=True)
class PageCacheEstimate:
    """One cluster's page-cache windows, recomputed every HWM interval; read at evaluation time."""

    windows_s: Mapping[int, float]
    """Broker id -> seconds of recent data its page cache holds."""
    leaders: Mapping[TopicPartition, int]
    """Partition -> leader broker id."""
    fixed_window_s: float | None = None
    """The configured window, the same for every broker, when the operator gave one."""

    def window_for(self, topic: str, partition: int) -> float | None:
        """The page-cache window of the partition's leader; None when the leader or its rate is unknown."""
        if self.fixed_window_s is not None:
            return self.fixed_window_s
        leader = self.leaders.get((topic, partition))
        return None if leader is None else self.windows_s.get(leader)


@dataclass(frozen=True, slots=True)
class ClusterRows:
    """One cluster's groups (`names`, per-group arrays) and the partitions of its judged groups (per-partition
    arrays; group g owns `[starts[g], starts[g+1])`, empty for NOTFOUND and UNKNOWN groups)."""

    cluster: str
    names: list[str]
    status: Ints
    totallag: Ints
    maxlag: Ints
    """Current lag of the group's maxlag partition; 0 without one."""
    lag_seconds: Floats
    exact_seconds: Floats
    starts: Ints
    topic_ids: Ints
    topic_names: dict[int, str]
    """Topic id -> name, for the ids in `topic_ids`."""
    partitions: Ints
    current_lag: Ints
    part_status: Ints
    full: Bools
    """The window is complete (Burrow exports the partition status only then)."""
    has_commit: Bools
    last_offset: Ints
    part_lag_seconds: Floats
    part_exact_seconds: Floats
    beyond_page_cache: Floats
    """1.0, 0.0, or NaN when unknown."""
    noisy_neighbours: tuple[NoisyNeighbour, ...] = ()
    """The cluster's noisy neighbours (groups reading from disk on a hurting broker); empty while none is hurting."""


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one partition lives, from the cluster metadata: the HWM rounds read it, the page-cache estimate uses it."""

    leader: int
    """Broker id of the leader (-1 when the partition has none)."""
    replicas: tuple[int, ...]
    isr: tuple[int, ...] = ()
    """The in-sync replicas the metadata named (the same tuple as `replicas` when all are in sync)."""


@dataclass(frozen=True, slots=True)
class MetadataReading:
    """What one cluster's last HWM round that got its metadata read: the registered brokers, every non-internal
    partition's placement, and whether every leader answered its ListOffsets (`offsets_error`). The status page
    judges brokers and partitions from it, so `kafka-pulse lag` opens no client of its own for them."""

    cluster: str
    read_at_ms: int
    """Wall-clock time the round ended."""
    brokers: Mapping[int, tuple[str, int]]
    """Registered brokers: id -> (host, port), as the metadata lists them."""
    controller: int | None
    """The metadata response's controller id (a random broker under KRaft: not the active controller)."""
    placements: Mapping[tuple[str, int], Placement]
    """(topic, partition) -> placement, for every partition the round asked (replaced whole by the next round)."""
    round_s: float
    """Seconds the round took, metadata to the last ListOffsets answer."""
    offsets_error: str | None = None
    """Why the round's ListOffsets failed after its metadata came (a leader did not answer in time, or refused);
    None when every leader answered."""
