"""The page-cache hint, pure: how many seconds of recent data each broker's page cache holds, and whether a group
reads further back than that (the Kuaishou seed: lagging consumers read from disk and slow the producers down).

The window comes from config (`window_s`, measured by the operator) or is estimated: a broker writes the records
of every partition it holds a replica of, at that partition's produce rate (from the HWM history) times the average
record size, and its page cache of `size_bytes` holds the newest `size_bytes / write rate` seconds. A consumer
reads from the partition's leader, so its lag in seconds is compared with the leader's window.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lag.protocol import PageCacheEstimate, TopicPartition


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one partition lives, from the cluster metadata."""

    leader: int
    """Broker id of the leader (-1 when the partition has none)."""
    replicas: tuple[int, ...]


def produce_rate(hwm_offsets: Sequence[int], hwm_times_ms: Sequence[int]) -> float | None:
    """Records per second over the HWM history (oldest to newest sample); None with under two samples in time."""
    if len(hwm_offsets) < 2 or hwm_times_ms[-1] <= hwm_times_ms[0]:
        return None
    return max(0, hwm_offsets[-1] - hwm_offsets[0]) * 1000.0 / (hwm_times_ms[-1] - hwm_times_ms[0])


def broker_write_rates(
    rates: Mapping[TopicPartition, float], placements: Mapping[TopicPartition, Placement], record_bytes: float
) -> dict[int, float]:
    """Bytes per second each broker writes: every replica of a partition writes what the partition receives.

    Partitions without a known rate are left out; a broker none of whose partitions has one is absent (unknown).
    """
    out: dict[int, float] = {}
    for tp, placement in placements.items():
        rate = rates.get(tp)
        if rate is None:
            continue
        for broker in placement.replicas:
            out[broker] = out.get(broker, 0.0) + rate * record_bytes
    return out


def cache_windows_s(size_bytes: int, write_rates: Mapping[int, float]) -> dict[int, float]:
    """Seconds of recent writes each broker's page cache holds; infinite for a broker that writes nothing."""
    return {b: (size_bytes / rate if rate > 0 else math.inf) for b, rate in write_rates.items()}


def is_beyond_page_cache(lag_seconds: float | None, window_s: float | None) -> bool | None:
    """True when the group reads data older than the page cache holds; None when either side is unknown."""
    if lag_seconds is None or window_s is None:
        return None
    return lag_seconds > window_s


def estimate(
    placements: Mapping[TopicPartition, Placement],
    rates: Mapping[TopicPartition, float],
    size_bytes: int | None,
    record_bytes: float,
    fixed_window_s: float | None,
) -> PageCacheEstimate:
    """The windows for one cluster, from the configured window or from size x rates."""
    leaders = {tp: p.leader for tp, p in placements.items() if p.leader >= 0}
    if fixed_window_s is not None or size_bytes is None:
        return PageCacheEstimate({}, leaders, fixed_window_s)
    windows = cache_windows_s(size_bytes, broker_write_rates(rates, placements, record_bytes))
    return PageCacheEstimate(windows, leaders)
