"""Bounds on group ids from Kafka (lag/store/group_index.py's `GroupAdmission`, applied by the store): a name past
`max_group_name_bytes` or a new group past `max_groups` is never stored and is counted by cluster and reason; the
allow/deny regexes run once per name, not once per commit."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest

from lag.serve.metrics import LagCollector
from lag.service import LagService
from lag.store.group_index import GroupAdmission
from lag.store.offsets import Ingest, OffsetStore
from pulse.config import LagConfig

NOW = 1_700_000_000_000


def store_with_topic(**bounds: int | str) -> OffsetStore:
    store = OffsetStore(intervals=3, **bounds)  # type: ignore[arg-type]
    store.add_hwm("c", "t", 0, 100, NOW - 1000)
    store.add_hwm("d", "t", 0, 100, NOW - 1000)
    return store


@dataclass(frozen=True)
class Row:
    bounds: dict[str, int]
    groups: list[tuple[str, str]]
    """(cluster, group) committed in this order."""
    stored: dict[str, list[str]]
    dropped: dict[tuple[str, str], int]
    results: list[Ingest]


ROWS = [
    pytest.param(
        Row({"max_group_name_bytes": 8}, [("c", "a" * 8), ("c", "a" * 9)], {"c": ["a" * 8]},
            {("c", "name_too_long"): 1}, [Ingest.STORED, Ingest.NAME_TOO_LONG]),
        id="name-one-byte-past",
    ),
    pytest.param(
        Row({"max_group_name_bytes": 8}, [("c", "é" * 4), ("c", "é" * 5)], {"c": ["é" * 4]},
            {("c", "name_too_long"): 1}, [Ingest.STORED, Ingest.NAME_TOO_LONG]),
        id="name-counted-in-utf8-bytes",
    ),
    pytest.param(
        Row({}, [("c", "g" * 1024), ("c", "g" * 2000), ("c", "g" * 32_767)], {"c": ["g" * 1024]},
            {("c", "name_too_long"): 2}, [Ingest.STORED, Ingest.NAME_TOO_LONG, Ingest.NAME_TOO_LONG]),
        id="default-is-a-kib",
    ),
    pytest.param(
        Row({"max_groups": 2}, [("c", "a"), ("c", "b"), ("c", "c"), ("d", "a"), ("c", "a")],
            {"c": ["a", "b"], "d": ["a"]}, {("c", "too_many_groups"): 1},
            [Ingest.STORED, Ingest.STORED, Ingest.TOO_MANY_GROUPS, Ingest.STORED, Ingest.MERGED]),
        id="count-per-cluster-stored-groups-kept",
    ),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS)
def test_groups_past_a_bound_are_never_stored_and_are_counted(row: Row) -> None:
    store = store_with_topic(min_distance_ms=10_000, **row.bounds)
    results = [store.add_commit(c, g, "t", 0, 50, NOW - 500, NOW) for c, g in row.groups]
    assert results == row.results
    assert {c: store.groups(c) for c in ("c", "d") if store.groups(c)} == row.stored
    assert dict(store.admission.dropped) == row.dropped


def test_a_long_name_leaves_no_trace_in_membership_either() -> None:
    store = store_with_topic(max_group_name_bytes=8)
    long = "m" * 9
    store.set_owner("c", long, "t", 0, "host", "client")
    store.set_members("c", long, 3)
    store.set_share_group("c", long, True)
    store.add_commit("c", long, "t", 0, 50, NOW - 500, NOW)
    assert (store.members("c", long), store.member_counts("c"), store.share_groups("c")) == (None, [], [])
    assert store.groups("c") == []


def test_the_filter_runs_once_per_name() -> None:
    """2,000 commits of 4 names (two of them filtered out, committing again and again) run the regexes 4 times."""
    store = store_with_topic(group_allow="^app-", group_deny="-test$")
    names = ["app-a", "app-b-test", "other", "app-c"]
    results: Counter[Ingest] = Counter()
    for i in range(500):
        for name in names:
            results[store.add_commit("c", name, "t", 0, 50 + i, NOW - 500 + i, NOW)] += 1
            store.set_members("c", name, 1)
    assert store.admission.judged == 4
    assert results[Ingest.FILTERED] == 1000
    assert store.groups("c") == ["app-a", "app-c"]


def test_the_decisions_kept_are_bounded() -> None:
    admission = GroupAdmission(allow="^a", decisions_kept=2)
    for name in ("a1", "a2", "a3", "a1"):
        assert admission.accepts(name)
    assert admission.judged == 4  # a1 was forgotten when a3 came: the cache holds two names, not every name seen


def test_no_filter_runs_no_regex() -> None:
    admission = GroupAdmission()
    assert admission.accepts("anything") and admission.judged == 0


def test_drops_are_on_metrics_by_cluster_and_reason() -> None:
    service = LagService(LagConfig(max_group_name_bytes=8, max_groups=1), clock_ms=lambda: NOW, clusters=["c", "e"])
    with service.locked() as store:
        store.add_hwm("c", "t", 0, 100, NOW - 1000)
        for group in ("ok", "o" * 9, "second", "o" * 9):
            store.add_commit("c", group, "t", 0, 50, NOW - 500, NOW)
    samples = {
        (s.labels["cluster"], s.labels["reason"]): s.value
        for family in LagCollector(service).collect()
        if family.name == "kafka_pulse_lag_groups_dropped"
        for s in family.samples
    }
    assert samples == {
        ("c", "name_too_long"): 2,
        ("c", "too_many_groups"): 1,
        ("e", "name_too_long"): 0,
        ("e", "too_many_groups"): 0,
    }
    assert service.dropped_groups() == {"c": {"name_too_long": 2, "too_many_groups": 1}}


def test_admin_listings_go_through_the_bound_and_count_it() -> None:
    """Admin ingestion lists groups and reads only those `admits` lets through: a long id is neither described nor
    fetched, and is counted; a filtered one is refused without being counted as a drop."""
    store = store_with_topic(max_group_name_bytes=8, group_allow="^a")
    assert [store.admits("c", g) for g in ("a1", "a" * 9, "b1")] == [True, False, False]
    assert dict(store.admission.dropped) == {("c", "name_too_long"): 1}
