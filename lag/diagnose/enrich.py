"""The one enrichment step: what the evaluator's verdicts gain beyond Burrow's rules, applied once per read. Per
partition, the exact time lag (the age of the record at the committed offset, when read), the leader's page-cache
window and whether the group reads beyond it; per group, the noisy neighbours it is named for.

Columnar first (`enrich_partitions`, `noisy_neighbours`: a scrape's rows, all at once); `enrich_status` is the
row-wise entry for one `GroupStatus` (the API's status, the notifier, the status page), a thin wrapper that puts the
group's partitions into the same arrays, so both paths give the same values by construction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from lag.diagnose.noisy_neighbour import DiskRead, diagnose, disk_read, is_hurting
from lag.evaluate.columnar.block import I64, unique_ints
from lag.evaluate.columnar.timelag import F64
from lag.protocol import Bools, GroupStatus, NoisyNeighbour, PageCacheEstimate, PartitionVerdict
from lag.store.record_times import RecordTimes
from pulse.broker_health import BrokerSlowness


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the enrichment of one cluster reads besides the verdicts; each part None while its feature is off."""

    record_times: RecordTimes | None = None
    """Exact time lag on: timestamps of the records at committed offsets."""
    page_cache: PageCacheEstimate | None = None
    """Page-cache hint on: the cluster's windows and partition leaders."""
    brokers: Mapping[int, BrokerSlowness] | None = None
    """The slow-broker detector's verdicts for the cluster's brokers (`run` only)."""

    @property
    def enriches(self) -> bool:
        """Exact lag or the page-cache hint is on: the partitions get values of their own."""
        return self.record_times is not None or self.page_cache is not None

    @property
    def hurting(self) -> bool:
        """Some broker's producers suffer while the page-cache hint is on: noisy neighbours may be named."""
        return self.page_cache is not None and self.brokers is not None and any(map(is_hurting, self.brokers.values()))


@dataclass(frozen=True, slots=True)
class PartitionFacts:
    """Per partition row, what enrichment adds; NaN where the objects leave None."""

    exact_seconds: F64
    window_s: F64
    """The leader's page-cache window (NaN without a commit, an estimate or a known leader)."""
    beyond: F64
    """1.0, 0.0, or NaN when unknown."""


def enrich_partitions(
    evidence: Evidence,
    cluster: str,
    topic_ids: I64,
    topic_name: Callable[[int], str],
    partitions: I64,
    last_offset: I64,
    current_lag: I64,
    has_commit: Bools,
    lag_seconds: F64,
    now_ms: int,
) -> PartitionFacts:
    """Exact lag, page-cache window and beyond-the-cache for every row at once."""
    exact = _exact_seconds(
        evidence.record_times, cluster, topic_ids, topic_name, partitions, last_offset, current_lag, has_commit, now_ms
    )
    windows = _windows(evidence.page_cache, topic_ids, topic_name, partitions, has_commit)
    beyond = np.full(len(topic_ids), np.nan)
    lag = np.where(np.isnan(exact), lag_seconds, exact)
    known = has_commit & ~np.isnan(lag) & ~np.isnan(windows)
    beyond[known] = np.where(lag[known] > windows[known], 1.0, 0.0)
    return PartitionFacts(exact, windows, beyond)


def noisy_neighbours(
    evidence: Evidence,
    names: Sequence[str],
    starts: I64,
    topic_ids: I64,
    topic_name: Callable[[int], str],
    partitions: I64,
    facts: PartitionFacts,
    lag_seconds: F64,
) -> list[NoisyNeighbour]:
    """The (broker, group, topic) triples named for one cluster's rows (group g owns `[starts[g], starts[g+1])`);
    empty at once unless a broker is hurting."""
    if not evidence.hurting or evidence.page_cache is None or evidence.brokers is None:
        return []
    reads = _disk_reads(names, starts, topic_ids, topic_name, partitions, facts, lag_seconds)
    return diagnose(evidence.brokers, reads, evidence.page_cache.leaders)


def enrich_status(evidence: Evidence, status: GroupStatus, now_ms: int) -> GroupStatus:
    """One group's status with the same values, through the columnar entry (its partitions as one block)."""
    if not evidence.enriches or not status.partitions:
        return status
    verdicts = status.partitions
    topics = sorted({v.topic for v in verdicts})
    topic_ids = np.array([topics.index(v.topic) for v in verdicts], dtype=np.int64)
    has_commit = np.array([v.end is not None for v in verdicts], dtype=np.bool_)
    last_offset = np.array([0 if v.end is None else v.end.offset for v in verdicts], dtype=np.int64)
    lag_seconds = np.array([np.nan if v.lag_seconds is None else v.lag_seconds for v in verdicts], dtype=np.float64)
    partitions = np.array([v.partition for v in verdicts], dtype=np.int64)
    current_lag = np.array([v.current_lag for v in verdicts], dtype=np.int64)
    facts = enrich_partitions(
        evidence,
        status.cluster,
        topic_ids,
        topics.__getitem__,
        partitions,
        last_offset,
        current_lag,
        has_commit,
        lag_seconds,
        now_ms,
    )
    enriched = tuple(_partition(v, facts, i, evidence) for i, v in enumerate(verdicts))
    exact = [v.exact_lag_seconds for v in enriched if v.exact_lag_seconds is not None]
    beyond = [v.beyond_page_cache for v in enriched if v.beyond_page_cache is not None]
    maxlag = status.maxlag
    if maxlag is not None:
        maxlag = next((v for v in enriched if (v.topic, v.partition) == (maxlag.topic, maxlag.partition)), maxlag)
    starts = np.array([0, len(verdicts)], dtype=np.int64)
    found = noisy_neighbours(
        evidence, [status.group], starts, topic_ids, topics.__getitem__, partitions, facts, lag_seconds
    )
    return dataclasses.replace(
        status,
        partitions=enriched,
        maxlag=maxlag,
        exact_lag_seconds=max(exact) if exact else None,
        beyond_page_cache=any(beyond) if beyond else None,
        noisy_neighbours=tuple(found) if found else status.noisy_neighbours,
    )


def _partition(v: PartitionVerdict, facts: PartitionFacts, i: int, evidence: Evidence) -> PartitionVerdict:
    if v.end is None:
        return v
    exact = _value(facts.exact_seconds[i]) if evidence.record_times is not None else None
    window = beyond = None
    if evidence.page_cache is not None:
        window = _value(facts.window_s[i])
        known = _value(facts.beyond[i])
        beyond = None if known is None else known == 1.0
    return dataclasses.replace(v, exact_lag_seconds=exact, page_cache_window_s=window, beyond_page_cache=beyond)


def _value(x: np.float64) -> float | None:
    return None if np.isnan(x) else float(x)


def _exact_seconds(
    times: RecordTimes | None,
    cluster: str,
    topic_ids: I64,
    topic_name: Callable[[int], str],
    partitions: I64,
    last_offset: I64,
    current_lag: I64,
    has_commit: Bools,
    now_ms: int,
) -> F64:
    """`exact_lag_seconds` per row: 0 when caught up, from the record's timestamp when it was read, else NaN."""
    out = np.full(len(topic_ids), np.nan)
    if times is None:
        return out
    out[has_commit & (current_lag <= 0)] = 0.0
    for r in np.flatnonzero(has_commit & (current_lag > 0)).tolist():
        ts = times.get((cluster, topic_name(int(topic_ids[r])), int(partitions[r]), int(last_offset[r])))
        if ts is not None:
            out[r] = max(0.0, (now_ms - ts) / 1000.0)
    return out


def _windows(
    estimate: PageCacheEstimate | None,
    topic_ids: I64,
    topic_name: Callable[[int], str],
    partitions: I64,
    has_commit: Bools,
) -> F64:
    """The leader's page-cache window per row with a commit, read once per distinct topic-partition."""
    if estimate is None or not len(topic_ids):
        return np.full(len(topic_ids), np.nan)
    keys = topic_ids * (int(partitions.max()) + 1) + partitions
    distinct, inverse = unique_ints(keys)
    windows = np.array(
        [
            _window(estimate, topic_name(int(topic_ids[i])), int(partitions[i]))
            for i in _first_rows(inverse, len(distinct))
        ],
        dtype=np.float64,
    )[inverse]
    windows[~has_commit] = np.nan
    return windows


def _first_rows(inverse: I64, distinct: int) -> list[int]:
    first = np.full(distinct, -1, dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(inverse))[::-1]
    return [int(i) for i in first.tolist()]


def _window(estimate: PageCacheEstimate, topic: str, partition: int) -> float:
    window = estimate.window_for(topic, partition)
    return np.nan if window is None else window


def _disk_reads(
    names: Sequence[str],
    starts: I64,
    topic_ids: I64,
    topic_name: Callable[[int], str],
    partitions: I64,
    facts: PartitionFacts,
    lag_seconds: F64,
) -> Iterator[DiskRead]:
    """The rows whose page-cache hint says beyond (1.0), as `DiskRead`s."""
    for r in np.flatnonzero(facts.beyond == 1.0).tolist():
        group = names[int(np.searchsorted(starts, r, side="right")) - 1]
        topic, partition = topic_name(int(topic_ids[r])), int(partitions[r])
        exact, approx, window = float(facts.exact_seconds[r]), float(lag_seconds[r]), float(facts.window_s[r])
        read = disk_read(
            group,
            topic,
            partition,
            None if np.isnan(approx) else approx,
            None if np.isnan(exact) else exact,
            window,
            True,
        )
        if read is not None:
            yield read
