"""What a /metrics scrape reads, as arrays: every group of every cluster evaluated in one columnar pass
(`Evaluator.evaluate_groups`), with the time lags, exact time lags and page-cache hints that `LagService` adds to
the objects of one group, computed for all rows at once. Read under the service's lock; rendered by
`text_families.py` after it is released.

Same values as `LagService.all_statuses` gives (the tests compare the two renderings byte for byte): groups in
cluster then name order, expired groups NOTFOUND, groups of an unreadable cluster UNKNOWN, partitions in topic then
partition order; NaN stands for a value the objects leave None.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lag.evaluate.columnar.block import I64, gather_histories, unique_ints
from lag.evaluate.columnar.timelag import F64, time_lags
from lag.evaluate.evaluator import Evaluator
from lag.evaluate.rules import Rule
from lag.protocol import Bools, ClusterRows, PageCacheEstimate, Status
from lag.store.record_times import RecordTimes


def cluster_rows(
    evaluator: Evaluator,
    cluster: str,
    now_ms: int,
    record_times: RecordTimes | None = None,
    estimate: PageCacheEstimate | None = None,
) -> ClusterRows:
    """One cluster's rows at `now_ms` (call under the service's lock)."""
    store = evaluator.store
    names, ids, expired = store.groups_at(cluster, now_ms)
    health = evaluator.health
    all_expired = expired is not None and bool(expired.all())
    why = health.unavailable_reason(cluster, now_ms) if health is not None and names and not all_expired else None
    # the groups judged, in name order: not expired, and none while the cluster is unreadable
    judged = np.zeros(len(names), dtype=np.bool_) if why is not None else np.ones(len(names), dtype=np.bool_)
    if expired is not None:
        judged &= ~expired
    live = bool(judged.any())
    v = evaluator.evaluate_groups(cluster, ids if bool(judged.all()) else ids[judged], now_ms)
    index = v.index
    # per group, in name order: judged groups take their row of the columnar result, the others -1
    which = np.where(judged, np.cumsum(judged) - 1, -1)
    at = np.where(judged, which, 0)
    status = np.full(len(names), int(Status.UNKNOWN), dtype=np.int64)
    if expired is not None:
        status[expired] = int(Status.NOTFOUND)
    totallag = np.zeros(len(names), dtype=np.int64)
    maxlag = np.zeros(len(names), dtype=np.int64)
    sizes = np.zeros(len(names), dtype=np.int64)
    if live:
        status[judged] = v.group_status[which[judged]]
        totallag[judged] = v.group_totallag[which[judged]]
        sizes[judged] = np.diff(index.starts)[which[judged]]
        maxlag_at = np.where(judged, v.group_maxlag[at], -1)
        maxlag[maxlag_at >= 0] = v.current_lag[maxlag_at[maxlag_at >= 0]]
    # partitions: the live groups' rows are already in name order (live is)
    has_commit = v.rules != Rule.NO_COMMIT
    last_offset = v.last_offset
    if v.histories is not None and v.history is not None:
        histories, history = v.histories, v.history
    else:
        histories, history = gather_histories(store, index.hwm_rows)
    part_lag_s = time_lags(last_offset, has_commit, histories, history, now_ms)
    part_exact = _exact_seconds(record_times, cluster, index.topic_ids, index.partitions, last_offset,
                                v.current_lag, has_commit, now_ms, store.hwms.topic_name)  # fmt: skip
    beyond = _beyond(estimate, index.topic_ids, index.partitions, has_commit, part_exact, part_lag_s,
                     store.hwms.topic_name)  # fmt: skip
    enriched = record_times is not None or estimate is not None
    starts = np.concatenate(([0], np.cumsum(sizes)))
    return ClusterRows(
        cluster=cluster,
        names=names,
        status=status,
        totallag=totallag,
        maxlag=maxlag,
        lag_seconds=_group_max(part_lag_s, starts, sizes),
        exact_seconds=_group_max(part_exact, starts, sizes) if enriched else np.full(len(names), np.nan),
        starts=starts,
        topic_ids=index.topic_ids,
        topic_names={t: store.hwms.topic_name(t) for t in np.flatnonzero(np.bincount(index.topic_ids)).tolist()},
        partitions=index.partitions,
        current_lag=v.current_lag,
        part_status=v.status,
        full=v.complete == 1.0,
        has_commit=has_commit,
        last_offset=last_offset,
        part_lag_seconds=part_lag_s,
        part_exact_seconds=part_exact,
        beyond_page_cache=beyond,
    )


def _group_max(values: F64, starts: I64, sizes: I64) -> F64:
    """Per group, the largest non-NaN value of its partitions (`aggregate`'s max over known ones); NaN if none."""
    out = np.full(len(sizes), np.nan)
    nonempty = sizes > 0
    if nonempty.any():
        out[nonempty] = np.fmax.reduceat(values, starts[:-1][nonempty])
    return out


def _exact_seconds(
    times: RecordTimes | None,
    cluster: str,
    topic_ids: I64,
    partitions: I64,
    last_offset: I64,
    current_lag: I64,
    has_commit: Bools,
    now_ms: int,
    topic_name: Callable[[int], str],
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


def _beyond(
    estimate: PageCacheEstimate | None,
    topic_ids: I64,
    partitions: I64,
    has_commit: Bools,
    exact: F64,
    lag_seconds: F64,
    topic_name: Callable[[int], str],
) -> F64:
    """`is_beyond_page_cache` per row, against the leader's window of each distinct topic-partition."""
    out = np.full(len(topic_ids), np.nan)
    if estimate is None or not len(topic_ids):
        return out
    keys = topic_ids * (int(partitions.max()) + 1) + partitions
    distinct, inverse = unique_ints(keys)
    windows = np.array(
        [
            _window(estimate, topic_name(int(topic_ids[i])), int(partitions[i]))
            for i in _first_rows(inverse, len(distinct))
        ],
        dtype=np.float64,
    )[inverse]
    lag = np.where(np.isnan(exact), lag_seconds, exact)
    known = has_commit & ~np.isnan(lag) & ~np.isnan(windows)
    out[known] = np.where(lag[known] > windows[known], 1.0, 0.0)
    return out


def _first_rows(inverse: I64, distinct: int) -> list[int]:
    first = np.full(distinct, -1, dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(inverse))[::-1]
    return [int(i) for i in first.tolist()]


def _window(estimate: PageCacheEstimate, topic: str, partition: int) -> float:
    window = estimate.window_for(topic, partition)
    return np.nan if window is None else window
