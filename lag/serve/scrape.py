"""What a /metrics scrape reads, as arrays: every group of every cluster evaluated in one columnar pass
(`Evaluator.evaluate_groups`), with the time lags and the one enrichment step (`lag/diagnose/enrich.py`: exact
time lag, page-cache hint, noisy neighbours) for all rows at once. Read under the service's lock; rendered by
`text_families.py` after it is released.

Same values as `LagService.all_statuses` gives (the tests compare the two renderings byte for byte): groups in
cluster then name order, expired groups NOTFOUND, groups of an unreadable cluster UNKNOWN, partitions in topic then
partition order; NaN stands for a value the objects leave None.
"""

from __future__ import annotations

import numpy as np

from lag.diagnose.enrich import Evidence, enrich_partitions, noisy_neighbours
from lag.evaluate.columnar.block import I64, gather_histories
from lag.evaluate.columnar.timelag import F64, time_lags
from lag.evaluate.evaluator import Evaluator
from lag.evaluate.rules import Rule
from lag.protocol import ClusterRows, Status


def cluster_rows(
    evaluator: Evaluator,
    cluster: str,
    now_ms: int,
    evidence: Evidence | None = None,
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
    evidence = evidence if evidence is not None else Evidence()
    topic_name = store.hwms.topic_name
    facts = enrich_partitions(
        evidence,
        cluster,
        index.topic_ids,
        topic_name,
        index.partitions,
        last_offset,
        v.current_lag,
        has_commit,
        part_lag_s,
        now_ms,
    )
    part_exact = facts.exact_seconds
    starts = np.concatenate(([0], np.cumsum(sizes)))
    return ClusterRows(
        cluster=cluster,
        names=names,
        status=status,
        totallag=totallag,
        maxlag=maxlag,
        lag_seconds=_group_max(part_lag_s, starts, sizes),
        exact_seconds=_group_max(part_exact, starts, sizes) if evidence.enriches else np.full(len(names), np.nan),
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
        beyond_page_cache=facts.beyond,
        noisy_neighbours=tuple(
            noisy_neighbours(evidence, names, starts, index.topic_ids, topic_name, index.partitions, facts, part_lag_s)
        ),
    )


def _group_max(values: F64, starts: I64, sizes: I64) -> F64:
    """Per group, the largest non-NaN value of its partitions (`aggregate`'s max over known ones); NaN if none."""
    out = np.full(len(sizes), np.nan)
    nonempty = sizes > 0
    if nonempty.any():
        out[nonempty] = np.fmax.reduceat(values, starts[:-1][nonempty])
    return out
