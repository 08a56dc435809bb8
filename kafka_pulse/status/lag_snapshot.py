"""The lag evaluator's verdicts as the status board reads them, once per refresh: every group's row from one
columnar pass (`LagReader.scrape_rows`, as a /metrics scrape reads them), the groups the page lists picked from
those arrays (every group not OK, and the `lag.status_page_groups` most lagging OK ones), and objects built for
those only (`LagReader.group_statuses`). The lock is held for one scrape and a few groups, whatever the group count;
the page and the in-process check both read the same snapshot, so they give one verdict."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from kafka_pulse.check.judge.lag_verdicts import GroupVerdict, LagVerdicts, from_group_statuses
from kafka_pulse.status.document import GroupCount
from lag import ClusterRows, GroupStatus, LagReader
from lag import Status as LagStatus

DETAIL_CHUNK = 200
"""Listed groups evaluated per lock hold: a cluster whose groups all fail never holds the lock for all of them."""
_OK = int(LagStatus.OK)


def listed_rows(rows: Sequence[ClusterRows], ok_limit: int) -> list[NDArray[np.int64]]:
    """Per cluster, the positions (name order) of the groups listed: every group not OK, and the `ok_limit` OK
    groups of all clusters with the largest time lag, then records of lag, then cluster and name order (pure)."""
    picked = [np.flatnonzero(r.status != _OK) for r in rows]
    ok = [np.flatnonzero(r.status == _OK) for r in rows]
    if ok_limit <= 0 or not any(len(o) for o in ok):
        return picked
    cluster = np.concatenate([np.full(len(o), i, dtype=np.int64) for i, o in enumerate(ok)])
    group = np.concatenate(ok)
    seconds = np.concatenate([np.nan_to_num(r.lag_seconds[o], nan=-np.inf) for r, o in zip(rows, ok, strict=True)])
    records = np.concatenate([r.totallag[o] for r, o in zip(rows, ok, strict=True)])
    top = np.lexsort((group, cluster, -records, -seconds))[:ok_limit]  # the last key sorts first
    for i in range(len(rows)):
        picked[i] = np.union1d(picked[i], group[top][cluster[top] == i])
    return picked


def group_counts(rows: Sequence[ClusterRows], picked: Sequence[NDArray[np.int64]]) -> tuple[GroupCount, ...]:
    """Per cluster and status, how many groups there are and how many of them are listed (pure)."""
    out = []
    for r, at in zip(rows, picked, strict=True):
        every = np.bincount(r.status - int(LagStatus.UNKNOWN), minlength=len(LagStatus))
        shown = np.bincount(r.status[at] - int(LagStatus.UNKNOWN), minlength=len(LagStatus))
        for value, n in enumerate(every.tolist()):
            if n:
                status = LagStatus(value + int(LagStatus.UNKNOWN)).name
                out.append(GroupCount(r.cluster, status, n, int(shown[value])))
    return tuple(out)


@dataclass(frozen=True)
class LagSnapshot:
    """Every group's verdict at `now_ms`: the rows of all, the objects of the listed ones."""

    now_ms: int
    rows: tuple[ClusterRows, ...]
    listed: tuple[GroupStatus, ...]
    """Every group not OK and the most lagging OK ones, in cluster then name order, with reasons and partitions."""
    counts: tuple[GroupCount, ...]
    ok_limit: int
    """`lag.status_page_groups` when taken."""

    def verdicts(self, source: str, cluster: str) -> LagVerdicts:
        """Every group of `cluster` for the check's lag section: the listed ones from their objects (reasons, worst
        partition), the others (all OK, so without a reason) from their rows."""
        detailed = from_group_statuses(source, cluster, self.listed)
        named = {g.group for g in detailed.groups}
        rest = [
            GroupVerdict(group=name, status=LagStatus(status).name, totallag=lag)
            for r in self.rows
            if r.cluster == cluster
            for name, status, lag in zip(r.names, r.status.tolist(), r.totallag.tolist(), strict=True)
            if name not in named
        ]
        return LagVerdicts(source, detailed.groups + tuple(rest))


def take_snapshot(reader: LagReader, ok_limit: int, now_ms: int | None = None) -> LagSnapshot:
    """One scrape's rows of every group, then the objects of the listed groups, at one instant."""
    now = reader.clock_ms() if now_ms is None else now_ms
    rows = reader.scrape_rows(now)
    picked = listed_rows(rows, ok_limit)
    listed: list[GroupStatus] = []
    for r, at in zip(rows, picked, strict=True):
        names = [r.names[i] for i in at.tolist()]
        for lo in range(0, len(names), DETAIL_CHUNK):
            listed += reader.group_statuses(r.cluster, names[lo : lo + DETAIL_CHUNK], now)
    return LagSnapshot(now, tuple(rows), tuple(listed), group_counts(rows, picked), ok_limit)


class LagSnapshots:
    """The latest snapshot of one reader: the board takes one per refresh, the in-process check and the document
    read it (`taken` counts the passes over every group, for tests and the benchmark)."""

    def __init__(self, reader: LagReader, ok_limit: int) -> None:
        self.reader = reader
        self.ok_limit = ok_limit
        self.taken = 0
        self._lock = threading.Lock()
        self._latest: LagSnapshot | None = None

    def take(self) -> LagSnapshot:
        snapshot = take_snapshot(self.reader, self.ok_limit)
        with self._lock:
            self._latest = snapshot
            self.taken += 1
        return snapshot

    def latest(self) -> LagSnapshot:
        """The last one taken; one now if none was yet."""
        with self._lock:
            snapshot = self._latest
        return snapshot if snapshot is not None else self.take()
