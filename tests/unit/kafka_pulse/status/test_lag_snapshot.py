"""The status page's lag verdicts (issue 23, 11): the body lists every group that is not OK whatever their number,
the `lag.status_page_groups` most lagging OK ones of all clusters, and counts the rest per cluster and status; the
in-process check judges the same snapshot. Selection on hand-made rows, then through a real `LagService`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from kafka_pulse.status.document import GroupCount
from kafka_pulse.status.lag_snapshot import group_counts, listed_rows, take_snapshot
from lag.protocol import ClusterRows
from lag.protocol import Status as LagStatus
from lag.service import LagService
from pulse.config import LagConfig

OK, WARN, ERR, UNKNOWN, NOTFOUND = (int(s) for s in ("1", "2", "3", "-1", "0"))
NAN = float("nan")


def rows(cluster: str, groups: list[tuple[str, int, float, int]]) -> ClusterRows:
    """A cluster's rows from (name, status, lag_seconds, totallag); the partition arrays stay empty."""
    empty_i = np.zeros(0, dtype=np.int64)
    empty_f = np.zeros(0, dtype=np.float64)
    return ClusterRows(
        cluster=cluster,
        names=[g[0] for g in groups],
        status=np.array([g[1] for g in groups], dtype=np.int64),
        totallag=np.array([g[3] for g in groups], dtype=np.int64),
        maxlag=np.zeros(len(groups), dtype=np.int64),
        lag_seconds=np.array([g[2] for g in groups], dtype=np.float64),
        exact_seconds=np.full(len(groups), NAN),
        starts=np.zeros(len(groups) + 1, dtype=np.int64),
        topic_ids=empty_i,
        topic_names={},
        partitions=empty_i,
        current_lag=empty_i,
        part_status=empty_i,
        full=np.zeros(0, dtype=np.bool_),
        has_commit=np.zeros(0, dtype=np.bool_),
        last_offset=empty_i,
        part_lag_seconds=empty_f,
        part_exact_seconds=empty_f,
        beyond_page_cache=empty_f,
    )


EAST = rows(
    "east",
    [
        ("a-ok-slow", OK, 300.0, 10),
        ("b-err", ERR, 5.0, 1),
        ("c-ok-idle", OK, 0.0, 0),
        ("d-ok-unknown-time", OK, NAN, 900),
        ("e-warn", WARN, 50.0, 7),
        ("f-ok-mid", OK, 60.0, 5),
    ],
)
WEST = rows(
    "west",
    [
        ("a-ok-slowest", OK, 400.0, 3),
        ("b-unknown", UNKNOWN, NAN, 0),
        ("c-ok-tie", OK, 60.0, 8),
        ("d-gone", NOTFOUND, NAN, 0),
    ],
)


@dataclass(frozen=True)
class Case:
    ok_limit: int
    want: tuple[list[str], list[str]]
    """The names listed in east, then in west (name order)."""


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(Case(0, (["b-err", "e-warn"], ["b-unknown", "d-gone"])), id="none-ok: every non-OK still listed"),
        pytest.param(
            Case(1, (["b-err", "e-warn"], ["a-ok-slowest", "b-unknown", "d-gone"])),
            id="one: the most lagging OK group of all clusters",
        ),
        pytest.param(
            Case(3, (["a-ok-slow", "b-err", "e-warn"], ["a-ok-slowest", "b-unknown", "c-ok-tie", "d-gone"])),
            id="tie-on-seconds: more records first (west 8 before east 5)",
        ),
        pytest.param(
            Case(5, (["a-ok-slow", "b-err", "c-ok-idle", "e-warn", "f-ok-mid"], WEST.names)),
            id="unknown-time-lag-last: NaN seconds rank below 0 s",
        ),
        pytest.param(Case(100, (EAST.names, WEST.names)), id="limit-above-count: all listed"),
    ],
)
def test_every_non_ok_group_and_the_worst_ok_ones_are_listed(case: Case) -> None:
    picked = listed_rows([EAST, WEST], case.ok_limit)
    got = tuple([r.names[i] for i in at.tolist()] for r, at in zip([EAST, WEST], picked, strict=True))
    assert got == case.want


def test_the_rest_are_counted_per_cluster_and_status() -> None:
    picked = listed_rows([EAST, WEST], 1)
    assert group_counts([EAST, WEST], picked) == (
        GroupCount("east", "OK", 4, 0),
        GroupCount("east", "WARN", 1, 1),
        GroupCount("east", "ERR", 1, 1),
        GroupCount("west", "UNKNOWN", 1, 1),
        GroupCount("west", "NOTFOUND", 1, 1),
        GroupCount("west", "OK", 2, 1),
    )


NOW = 10_000_000


def service(ok_groups: int, stuck_groups: int) -> LagService:
    """`ok_groups` OK groups `ok-NNN` whose lag grows with NNN (their lag decreased within the window), and
    `stuck_groups` groups `stuck-NNN` whose offset stays put while records wait (ERR), on one partition each."""
    lag = LagService(LagConfig(intervals=2), clock_ms=lambda: NOW)
    with lag.locked() as store:
        store.add_hwm("east", "orders", 0, 0, NOW - 200_000)
        store.add_hwm("east", "orders", 0, 2000, NOW)
        for k in range(ok_groups):
            store.add_commit("east", f"ok-{k:03d}", "orders", 0, 500, NOW - 60_000, NOW - 60_000)
            store.add_commit("east", f"ok-{k:03d}", "orders", 0, 2000 - 10 * k, NOW - 1000, NOW - 1000)
        for k in range(stuck_groups):
            for at in (NOW - 120_000, NOW - 60_000):
                store.add_commit("east", f"stuck-{k:03d}", "orders", 0, 500, at, at)
    return lag


def test_a_snapshot_lists_objects_of_the_picked_groups_only() -> None:
    lag = service(ok_groups=50, stuck_groups=3)
    snapshot = take_snapshot(lag, ok_limit=4)
    listed = [(g.group, g.status) for g in snapshot.listed]
    assert listed == [
        ("ok-046", LagStatus.OK),
        ("ok-047", LagStatus.OK),
        ("ok-048", LagStatus.OK),
        ("ok-049", LagStatus.OK),
        ("stuck-000", LagStatus.ERR),
        ("stuck-001", LagStatus.ERR),
        ("stuck-002", LagStatus.ERR),
    ]
    assert all(g.reason for g in snapshot.listed if g.status is LagStatus.ERR)  # the rule that fired
    assert snapshot.counts == (GroupCount("east", "OK", 50, 4), GroupCount("east", "ERR", 3, 3))


def test_the_check_judges_every_group_of_the_same_snapshot() -> None:
    """The in-process check's verdicts: all 53 groups, the listed ones with their reason and worst partition."""
    lag = service(ok_groups=50, stuck_groups=3)
    verdicts = take_snapshot(lag, ok_limit=4).verdicts("this process", "east")
    assert len(verdicts.groups) == 53 and verdicts.source == "this process"
    named = {g.group: g for g in verdicts.groups}
    assert (named["stuck-001"].status, named["stuck-001"].worst_partition) == ("ERR", "STALL")
    assert named["stuck-001"].reason
    assert (named["ok-010"].status, named["ok-010"].totallag, named["ok-010"].reason) == ("OK", 100, "")
    assert take_snapshot(lag, ok_limit=4).verdicts("this process", "west").groups == ()
