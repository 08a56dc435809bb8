"""Latency quantiles from histogram buckets: Prometheus' histogram_quantile arithmetic on hand-computed cases, and
the window delta that turns cumulative counts into recent ones."""

from __future__ import annotations

import math

import pytest

from kafka_pulse.status.quantiles import bucket_delta, merge, quantile

INF = math.inf


@pytest.mark.parametrize(
    ("q", "buckets", "want"),
    [
        # 10 observations, all in (0.001, 0.002]: the median is the middle of that bucket.
        pytest.param(0.5, {0.001: 0, 0.002: 10, INF: 10}, 0.0015, id="middle-of-one-bucket"),
        # 4 in (0, 0.001], 4 in (0.001, 0.002], 2 in (0.002, 0.005]: rank 9.9 is 1.9/2 of the way into the third.
        pytest.param(0.99, {0.001: 4, 0.002: 8, 0.005: 10, INF: 10}, 0.002 + 0.003 * 1.9 / 2, id="p99-interpolated"),
        # rank 2 of 4 in the first bucket: half of its width from 0.
        pytest.param(0.5, {0.001: 4, 0.002: 4, INF: 4}, 0.0005, id="first-bucket-starts-at-zero"),
        # the p99 lands in +Inf: the largest finite bound, as Prometheus answers.
        pytest.param(0.99, {0.001: 5, 0.002: 5, INF: 10}, 0.002, id="in-the-inf-bucket"),
    ],
)
def test_quantile(q: float, buckets: dict[float, float], want: float) -> None:
    assert quantile(q, buckets) == pytest.approx(want)


@pytest.mark.parametrize("buckets", [{}, {0.001: 0, INF: 0}], ids=["no-series", "no-observations"])
def test_no_observations_is_none_never_zero(buckets: dict[float, float]) -> None:
    assert quantile(0.5, buckets) is None


def test_a_quantile_outside_0_1_is_refused() -> None:
    with pytest.raises(ValueError, match=r"quantile 1\.5 is not between 0 and 1"):
        quantile(1.5, {INF: 1})


def test_delta_counts_only_the_window() -> None:
    before = {0.001: 100, 0.002: 100, INF: 100}
    now = {0.001: 100, 0.002: 110, INF: 110}
    assert bucket_delta(now, before) == {0.001: 0, 0.002: 10, INF: 10}
    assert quantile(0.5, bucket_delta(now, before)) == pytest.approx(0.0015)


def test_delta_after_a_reset_takes_the_new_reading_whole() -> None:
    assert bucket_delta({0.001: 3, INF: 3}, {0.001: 50, INF: 50}) == {0.001: 3, INF: 3}
    assert bucket_delta({0.001: 3, INF: 3}, None) == {0.001: 3, INF: 3}


def test_merge_adds_series() -> None:
    assert merge([{0.001: 1, INF: 2}, {0.001: 3, INF: 3}]) == {0.001: 4, INF: 5}
