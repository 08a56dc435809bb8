"""The page-cache hint: how many seconds of recent data each broker's page cache holds, and whether a group
reads further back than that (the Kuaishou seed: lagging consumers read from disk and slow the producers down).

The window comes from config (`window_s`, measured by the operator) or is estimated: a broker writes the records
of every partition it holds a replica of, at that partition's produce rate (from the HWM history) times the average
record size, and its page cache of `size_bytes` holds the newest `size_bytes / write rate` seconds. A consumer
reads from the partition's leader, so its lag in seconds is compared with the leader's window.

The functions are pure; `PageCacheEstimator` runs them periodically for one cluster over the HWM history and the
placements of the last HWM round, a task of its own (started by `lag/assembly.py`) so ingestion never reaches into
the diagnosis.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from lag.protocol import PageCacheEstimate, Placement, TopicPartition
from lag.store.access import LagWriter
from pulse.config import PageCacheConfig
from pulse.lifecycle import Periodic


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


class PageCacheEstimator:
    """One cluster's page-cache estimate, remade every `interval_s` (the HWM interval) on a thread of its own."""

    def __init__(
        self,
        cluster: str,
        service: LagWriter,
        page_cache: PageCacheConfig,
        placements: Callable[[], Mapping[TopicPartition, Placement] | None],
        interval_s: float,
    ) -> None:
        """`placements` gives the partitions' placements of the last successful HWM round (None before the first)."""
        self.cluster = cluster
        self.service = service
        self.page_cache = page_cache
        self.placements = placements
        self.interval_s = interval_s
        # A failed estimate is logged and the last one stays until the next succeeds: a hint, never a verdict.
        self.loop = Periodic(
            f"lag-{cluster}-page-cache", interval_s, self.refresh, fixed_rate=False, first_delay_s=interval_s
        )

    def start(self) -> None:
        """A first estimate now (the sources made their first round), then one every `interval_s`."""
        self.refresh()
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop(timeout_s=10)

    def refresh(self) -> None:
        """Per broker, how many seconds of writes its page cache holds (under the service lock, as the HWM rounds
        write the history it reads)."""
        with self.service.locked() as store:
            placements = self.placements()
            if placements is None:
                return  # no HWM round yet: no estimate, as before any round
            rates: dict[tuple[str, int], float] = {}
            if self.page_cache.size_bytes is not None:
                for topic, partition in placements:
                    rate = produce_rate(*store.hwms.history(self.cluster, topic, partition))
                    if rate is not None:
                        rates[(topic, partition)] = rate
            self.service.set_page_cache(
                self.cluster,
                estimate(
                    placements,
                    rates,
                    self.page_cache.size_bytes,
                    self.page_cache.record_bytes,
                    self.page_cache.window_s,
                ),
            )
