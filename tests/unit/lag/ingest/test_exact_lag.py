"""Exact time lag, pure parts: seconds behind from the record timestamp at the committed offset,
the bounded cache of those timestamps, and the bounded choice of which records to read in one cycle."""

from __future__ import annotations

import pytest

from lag.evaluate.timelag import exact_lag_seconds
from lag.ingest.exact_lag import choose_lookups
from lag.protocol import Status
from lag.service import LagService
from lag.store.record_times import RecordTimes
from pulse.config import LagConfig


@pytest.mark.parametrize(
    ("ts", "lag", "now", "want"),
    [
        pytest.param(None, 0, 10_000, 0.0, id="caught-up: 0 without reading anything"),
        pytest.param(None, 5, 10_000, None, id="not-read-yet: unknown, not 0"),
        pytest.param(4_000, 5, 10_000, 6.0, id="record written 6 s ago"),
        pytest.param(12_000, 5, 10_000, 0.0, id="producer clock ahead: clamped at 0"),
    ],
)
def test_exact_lag_seconds(ts: int | None, lag: int, now: int, want: float | None) -> None:
    assert exact_lag_seconds(ts, lag, now) == want


def test_record_times_drops_the_least_recently_used() -> None:
    cache = RecordTimes(2)
    cache.put(("c", "t", 0, 1), 100)
    cache.put(("c", "t", 0, 2), 200)
    assert cache.get(("c", "t", 0, 1)) == 100  # now the most recently used
    cache.put(("c", "t", 0, 3), 300)
    assert ("c", "t", 0, 2) not in cache
    assert len(cache) == 2 and cache.get(("c", "t", 0, 1)) == 100


def test_choose_lookups_is_bounded_and_takes_the_largest_lag_first() -> None:
    cache = RecordTimes(10)
    cache.put(("c", "t", 0, 5), 1)
    wanted = {("c", "t", 0, 5): 1000, ("c", "t", 1, 7): 10, ("c", "t", 2, 9): 500, ("c", "u", 0, 1): 20}
    assert choose_lookups(wanted, cache, limit=2) == [("c", "t", 2, 9), ("c", "u", 0, 1)]


def test_the_service_reports_exact_lag_next_to_the_interpolated_one() -> None:
    now = 1_000_000
    service = LagService(LagConfig(mode="enhanced", intervals=2), clock_ms=lambda: now)
    record_times = service.record_times(10)
    with service.locked() as store:
        store.add_hwm("c", "t", 0, 100, now - 20_000)
        store.add_hwm("c", "t", 0, 200, now - 10_000)
        store.add_commit("c", "g", "t", 0, 150, now - 15_000, now - 15_000)
        store.add_commit("c", "g", "t", 0, 150, now - 5_000, now - 5_000)
    record_times.put(("c", "t", 0, 150), now - 3_600_000)  # the record was produced an hour ago
    status = service.group_status("c", "g")
    verdict = status.partitions[0]
    assert verdict.lag_seconds == pytest.approx(15.0)  # interpolated: the log end was at 150 15 s ago
    assert verdict.exact_lag_seconds == pytest.approx(3600.0)
    assert status.exact_lag_seconds == pytest.approx(3600.0)
    assert status.maxlag is not None and status.maxlag.exact_lag_seconds == pytest.approx(3600.0)
    assert status.status is not Status.UNKNOWN
