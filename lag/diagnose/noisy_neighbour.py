"""Noisy-neighbour diagnosis, pure: which consumer groups read from disk on a broker whose produce latency is up.

The Kuaishou seed: a consumer reading further back than the page cache holds makes its leader read from disk, and
on a shared disk that raises produce latency for every other topic there. The join is three facts, each from its
own owner: the broker's verdict (`pulse.broker_health`, published by the collectors' slow-broker detector), the
group-partitions reading beyond the page cache (`lag/diagnose/page_cache.py`'s hint) and who leads each partition (the
page-cache estimate's leaders). A group is named for a broker only when all three hold; any unknown means no name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lag.protocol import NoisyNeighbour
from pulse.broker_health import BrokerSlowness

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class DiskRead:
    """One group-partition whose consumer reads older data than its leader's page cache holds."""

    group: str
    topic: str
    partition: int
    lag_seconds: float
    """How far back the group reads (exact time lag when known, else the interpolated one)."""
    window_s: float
    """Seconds of recent data the leader's page cache holds, as the page-cache hint used it."""


def is_hurting(verdict: BrokerSlowness) -> bool:
    """The broker's producers suffer: flagged slow, or its produce latency is above its history or its peers."""
    return verdict.slow or verdict.produce_latency_elevated


def diagnose(
    brokers: Mapping[int, BrokerSlowness], reads: Iterable[DiskRead], leaders: Mapping[TopicPartition, int]
) -> list[NoisyNeighbour]:
    """Every (broker, group, topic) where a hurting broker leads partitions the group reads from disk, sorted by
    broker, group and topic. A partition without a known leader, or whose leader has no verdict, names nobody."""
    hurting = {b: v for b, v in brokers.items() if is_hurting(v)}
    if not hurting:
        return []
    found: dict[tuple[int, str, str], list[DiskRead]] = {}
    for read in reads:
        leader = leaders.get((read.topic, read.partition))
        if leader is not None and leader in hurting:
            found.setdefault((leader, read.group, read.topic), []).append(read)
    out = []
    for (broker, group, topic), rows in sorted(found.items()):
        verdict = hurting[broker]
        out.append(
            NoisyNeighbour(
                broker=broker,
                group=group,
                topic=topic,
                partitions=tuple(sorted({r.partition for r in rows})),
                lag_seconds=max(r.lag_seconds for r in rows),
                window_s=min(r.window_s for r in rows),
                produce_latency_ms=verdict.produce_latency_ms,
                broker_slow=verdict.slow,
                broker_reason=verdict.reason,
            )
        )
    return out


def disk_read(
    group: str,
    topic: str,
    partition: int,
    lag_seconds: float | None,
    exact_lag_seconds: float | None,
    window_s: float | None,
    beyond: bool | None,
) -> DiskRead | None:
    """A `DiskRead` from one partition's page-cache hint; None unless it reads beyond a known, finite window."""
    lag = exact_lag_seconds if exact_lag_seconds is not None else lag_seconds
    if not beyond or lag is None or window_s is None or window_s == float("inf"):
        return None
    return DiskRead(group, topic, partition, lag, window_s)
