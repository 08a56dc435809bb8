"""The page-cache hint (after Kuaishou's trillion-scale Kafka write-up): how many seconds of writes a broker's page
cache holds, from the configured window or from produce rates x record size x replicas, and which partitions read beyond
it."""

from __future__ import annotations

import math

import pytest

from lag.diagnose.page_cache import (
    PageCacheEstimator,
    broker_write_rates,
    cache_windows_s,
    estimate,
    is_beyond_page_cache,
    produce_rate,
)
from lag.protocol import Placement
from lag.service import LagService
from pulse.config import LagConfig, PageCacheConfig


@pytest.mark.parametrize(
    ("offsets", "times", "want"),
    [
        pytest.param((), (), None, id="no-samples: unknown"),
        pytest.param((100,), (0,), None, id="one-sample: unknown"),
        pytest.param((100, 100), (5000, 5000), None, id="same-time: no span, unknown"),
        pytest.param((0, 1000), (0, 10_000), 100.0, id="1000 records in 10 s"),
        pytest.param((0, 500, 500, 1000), (0, 1000, 2000, 10_000), 100.0, id="uses oldest and newest"),
        pytest.param((10, 10), (0, 60_000), 0.0, id="quiet-topic: zero, known"),
    ],
)
def test_produce_rate(offsets: tuple[int, ...], times: tuple[int, ...], want: float | None) -> None:
    assert produce_rate(offsets, times) == want


def test_every_replica_writes_what_its_partition_receives() -> None:
    placements = {
        ("t", 0): Placement(leader=1, replicas=(1, 2)),
        ("t", 1): Placement(leader=2, replicas=(2, 3)),
        ("u", 0): Placement(leader=3, replicas=(3,)),  # no rate known yet: left out
    }
    rates = {("t", 0): 100.0, ("t", 1): 50.0}
    assert broker_write_rates(rates, placements, record_bytes=1000) == {1: 100_000.0, 2: 150_000.0, 3: 50_000.0}


def test_window_is_cache_size_over_write_rate() -> None:
    assert cache_windows_s(1_000_000_000, {1: 1_000_000.0, 2: 0.0}) == {1: 1000.0, 2: math.inf}


@pytest.mark.parametrize(
    ("lag_s", "window_s", "want"),
    [
        pytest.param(None, 100.0, None, id="lag-unknown"),
        pytest.param(50.0, None, None, id="window-unknown"),
        pytest.param(100.0, 100.0, False, id="at-the-edge: still cached"),
        pytest.param(100.5, 100.0, True, id="beyond: reads go to disk"),
        pytest.param(1e9, math.inf, False, id="broker-writes-nothing: everything cached"),
    ],
)
def test_is_beyond_page_cache(lag_s: float | None, window_s: float | None, want: bool | None) -> None:
    assert is_beyond_page_cache(lag_s, window_s) is want


def test_estimate_from_size_uses_the_leaders_window() -> None:
    placements = {("t", 0): Placement(1, (1, 2)), ("t", 1): Placement(2, (2, 1)), ("t", 2): Placement(-1, (3,))}
    rates = {("t", 0): 1000.0, ("t", 1): 3000.0, ("t", 2): 0.0}
    est = estimate(placements, rates, size_bytes=4_000_000_000, record_bytes=1000, fixed_window_s=None)
    # brokers 1 and 2 each write (1000 + 3000) records/s x 1000 B = 4 MB/s; 4 GB holds 1000 s
    assert est.window_for("t", 0) == pytest.approx(1000.0)
    assert est.window_for("t", 1) == pytest.approx(1000.0)
    assert est.window_for("t", 2) is None  # no leader: unknown
    assert est.window_for("other", 0) is None


def test_estimate_from_a_configured_window_is_the_same_everywhere() -> None:
    est = estimate({}, {}, size_bytes=None, record_bytes=1000, fixed_window_s=600.0)
    assert est.window_for("anything", 7) == 600.0


def test_the_estimator_reads_the_hwm_history_of_the_last_rounds_placements() -> None:
    """The periodic task (started by the assembly, fed by the HWM rounds): nothing before a round, then each
    broker's window from the produce rates in the HWM history of the partitions the last round placed."""
    service = LagService(LagConfig(intervals=3), None)
    config = PageCacheConfig(enabled=True, size_bytes=4_000_000_000, record_bytes=1000)
    placements: dict[tuple[str, int], Placement] | None = None
    estimator = PageCacheEstimator("c", service, config, lambda: placements, interval_s=60.0)
    estimator.refresh()
    assert "c" not in service.page_caches()  # no HWM round yet
    with service.locked() as store:
        for partition, per_second in ((0, 1000), (1, 3000)):
            store.add_hwm("c", "t", partition, 0, 0)
            store.add_hwm("c", "t", partition, per_second * 10, 10_000)
    placements = {("t", 0): Placement(1, (1, 2)), ("t", 1): Placement(2, (2, 1))}
    estimator.refresh()
    est = service.page_caches()["c"]
    assert est.window_for("t", 0) == pytest.approx(1000.0)  # 4 MB/s on each broker, 4 GB of cache
    assert est.window_for("t", 1) == pytest.approx(1000.0)
    placements = {("t", 0): Placement(1, (1,))}  # the next round: t-1 gone, broker 2 writes nothing known
    estimator.refresh()
    assert service.page_caches()["c"].window_for("t", 0) == pytest.approx(4000.0)
    assert service.page_caches()["c"].window_for("t", 1) is None
