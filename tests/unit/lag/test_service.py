"""SourceHealth: a cluster is judged only while its HWMs are fresh, and not again until `recovery_s` after it came
back (while a cluster is unreachable its groups are unknown, never STOP). The clock is injected."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lag.evaluate.evaluator import Evaluator
from lag.ingest.offsets_topic import unread_partitions
from lag.protocol import Status
from lag.service import rule_params
from lag.store.freshness import SourceHealth
from lag.store.offsets import OffsetStore
from pulse.config import LagConfig


@dataclass
class FakeClock:
    now_ms: int = 0

    def __call__(self) -> int:
        return self.now_ms


def health(clock: FakeClock) -> SourceHealth:
    return SourceHealth(stale_after_s=5.0, recovery_s=10.0, clock_ms=clock)


@dataclass(frozen=True)
class Case:
    events: tuple[tuple[int, str], ...]
    """(time ms, "ok" | "error") in order: HWM rounds that succeeded or failed."""
    now_ms: int
    want: str | None
    """A substring of the reason, or None when the cluster is readable."""


CASES = [
    pytest.param(Case((), 0, "no HWM read yet"), id="never-read: unknown, not OK"),
    pytest.param(Case(((0, "error"),), 1000, "no HWM read yet (boom)"), id="never-read-with-error: says why"),
    pytest.param(Case(((0, "ok"),), 5000, None), id="fresh: exactly stale_after is still fresh"),
    pytest.param(Case(((0, "ok"),), 5001, "no HWM refresh for 5 s"), id="stale: HWMs older than stale_after"),
    pytest.param(
        Case(((0, "ok"), (2000, "error")), 6000, "no HWM refresh for 6 s (boom)"), id="stale-with-error: says why"
    ),
    pytest.param(Case(((0, "ok"), (2000, "error")), 3000, None), id="one-failed-round: still fresh, still judged"),
    pytest.param(
        Case(((0, "ok"), (60_000, "ok")), 65_000, "reachable again 5 s ago; waiting 10 s"),
        id="recovering: no verdict right after an outage (commits must catch up first)",
    ),
    pytest.param(
        Case(((0, "ok"), (60_000, "ok"), (64_000, "ok"), (68_000, "ok")), 70_000, None),
        id="recovered: judged after recovery_s",
    ),
    pytest.param(
        Case(((0, "ok"), (4000, "ok"), (8000, "ok")), 8000, None),
        id="steady: refreshes within stale_after never recover",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_unavailable_reason(case: Case) -> None:
    clock = FakeClock()
    h = health(clock)
    for at_ms, kind in case.events:
        clock.now_ms = at_ms
        if kind == "ok":
            h.mark_ok("c")
        else:
            h.mark_error("c", "boom")
    reason = h.unavailable_reason("c", case.now_ms)
    if case.want is None:
        assert reason is None
    else:
        assert reason is not None and case.want in reason, reason


def test_clusters_are_independent() -> None:
    clock = FakeClock()
    h = health(clock)
    h.mark_ok("a")
    h.mark_ok("b")
    clock.now_ms = 4000
    h.mark_ok("b")
    assert h.unavailable_reason("a", 9000) is not None
    assert h.unavailable_reason("b", 9000) is None


def test_a_success_clears_the_error() -> None:
    clock = FakeClock()
    h = health(clock)
    h.mark_ok("c")
    h.mark_error("c", "boom")
    h.mark_ok("c")
    assert h.unavailable_reason("c", 6000) == "no HWM refresh for 6 s"


def test_evaluator_reports_unknown_instead_of_stop_while_stale() -> None:
    """A group that Burrow's rules would call STOP (lag, no commit for longer than the window) is UNKNOWN while
    its cluster's HWMs are stale, and STOP again once the cluster is fresh and recovered."""
    clock = FakeClock()
    h = health(clock)
    store = OffsetStore(intervals=3)
    store.add_hwm("c", "t", 0, 100, 0)
    for ts in (0, 1000, 2000):
        store.add_commit("c", "g", "t", 0, 10 + ts // 100, ts, ts)
    h.mark_ok("c")
    evaluator = Evaluator(store, rule_params(LagConfig(mode="burrow", intervals=3)), h)
    assert evaluator.evaluate_group("c", "g", 5000).status is Status.ERR  # 3 s silent > 2 s span; fresh: judged
    stale = evaluator.evaluate_group("c", "g", 60_000)
    assert stale.status is Status.UNKNOWN
    assert "no HWM refresh for 60 s" in stale.reason
    clock.now_ms = 60_000
    h.mark_ok("c")
    assert evaluator.evaluate_group("c", "g", 61_000).status is Status.UNKNOWN
    for at_ms in (64_000, 68_000):  # refreshes keep coming after the outage
        clock.now_ms = at_ms
        h.mark_ok("c")
    assert evaluator.evaluate_group("c", "g", 71_000).status is Status.ERR


def test_every_expected_feed_must_be_fresh() -> None:
    """Admin ingestion adds a `group-offsets` feed: HWMs alone do not make a cluster judgeable, since a live
    group whose commits cannot be read would look silent (a false STOP)."""
    clock = FakeClock()
    h = health(clock)
    h.expect("c", "group-offsets")
    h.mark_ok("c")
    assert h.unavailable_reason("c", 1000) == "no group-offsets read yet"
    h.mark_error("c", "timed out", "group-offsets")
    assert h.unavailable_reason("c", 1000) == "no group-offsets read yet (timed out)"
    h.mark_ok("c", "group-offsets")
    assert h.unavailable_reason("c", 1000) is None
    clock.now_ms = 4000
    h.mark_ok("c")  # HWMs keep coming, group offsets do not
    assert h.unavailable_reason("c", 7000) == "no group-offsets refresh for 7 s"


def test_the_page_cache_hint_marks_partitions_read_from_disk() -> None:
    from lag.protocol import PageCacheEstimate
    from lag.service import LagService

    now = 1_000_000
    service = LagService(LagConfig(mode="enhanced", intervals=2), clock_ms=lambda: now)
    with service.locked() as store:
        for p in (0, 1):
            store.add_hwm("c", "t", p, 0, now - 200_000)
            store.add_hwm("c", "t", p, 2000, now)  # 10 records/s
        store.add_commit("c", "g", "t", 0, 1990, now - 1000, now - 1000)  # 1 s behind
        store.add_commit("c", "g", "t", 1, 500, now - 1000, now - 1000)  # 150 s behind
    service.set_page_cache("c", PageCacheEstimate({1: 60.0, 2: 600.0}, {("t", 0): 1, ("t", 1): 1}))
    status = service.group_status("c", "g")
    assert [(v.partition, v.beyond_page_cache, v.page_cache_window_s) for v in status.partitions] == [
        (0, False, 60.0),
        (1, True, 60.0),
    ]
    assert status.beyond_page_cache is True
    service.set_page_cache("c", PageCacheEstimate({1: 600.0}, {("t", 0): 1, ("t", 1): 1}))
    assert service.group_status("c", "g").beyond_page_cache is False


@pytest.mark.parametrize(
    ("ends", "starts", "positions", "want"),
    [
        ({0: 10, 1: 5}, {0: 0, 1: 0}, {0: 10, 1: 5}, []),  # read to the end
        ({0: 10, 1: 5}, {0: 0, 1: 0}, {0: 9, 1: 6}, [0]),  # one record to go on 0; 1 moved on since
        ({0: 10}, {0: 0}, {0: -1001}, [0]),  # nothing read yet (librdkafka's invalid position)
        ({0: 0, 1: 7}, {0: 0, 1: 7}, {0: -1001, 1: -1001}, []),  # empty partitions, also after compaction
        ({0: 6}, {0: 0}, {0: 6}, []),  # a control record last: the consumer's position moves past it
    ],
)
def test_the_offsets_reader_is_behind_until_it_reaches_the_backlogs_end(
    ends: dict[int, int], starts: dict[int, int], positions: dict[int, int], want: list[int]
) -> None:
    assert unread_partitions(ends, starts, positions) == want


def test_group_statuses_are_each_group_status_in_one_pass() -> None:
    """The status page lists a few groups picked from the scrape's rows: their objects must be exactly what the
    Burrow status route gives each (unknown and expired groups NOTFOUND), in the order asked, under one lock hold."""
    from lag.service import LagService

    now = 10_000_000
    service = LagService(LagConfig(intervals=2, expire_group_s=600), clock_ms=lambda: now)
    with service.locked() as store:
        store.add_hwm("east", "orders", 0, 0, now - 200_000)
        store.add_hwm("east", "orders", 0, 2000, now)
        store.add_commit("east", "stuck", "orders", 0, 500, now - 120_000, now - 120_000)
        store.add_commit("east", "stuck", "orders", 0, 500, now - 60_000, now - 60_000)
        store.add_commit("east", "fine", "orders", 0, 2000, now - 1000, now - 1000)
        store.add_commit("east", "gone", "orders", 0, 10, now - 2_000_000, now - 2_000_000)
    names = ["stuck", "nobody", "fine", "gone"]
    got = service.group_statuses("east", names, now)
    assert got == [service.group_status("east", n, now) for n in names]
    assert [g.status for g in got] == [Status.ERR, Status.NOTFOUND, Status.OK, Status.NOTFOUND]
    assert got[0].reason  # the rule that fired, as the route gives it
