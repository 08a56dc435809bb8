"""Time lag from HWM history, kafka-lag-exporter's interpolation (its `LookupTable.scala`)."""

from __future__ import annotations

import pytest

from lag.evaluate.timelag import hwm_at, time_lag_seconds, waiting_since_ms

OFFSETS = [100, 200, 200, 400]
TIMES = [0, 10_000, 20_000, 30_000]


@pytest.mark.parametrize(
    ("committed", "now_ms", "want"),
    [
        pytest.param(400, 40_000, 0.0, id="caught-up-is-zero"),
        pytest.param(300, 40_000, 15.0, id="interpolated-between-20s-and-30s"),
        pytest.param(200, 40_000, 20.0, id="plateau-end-is-when-the-log-left-the-offset"),
        pytest.param(150, 40_000, 35.0, id="first-segment"),
        pytest.param(50, 40_000, 45.0, id="extrapolated-before-history"),
    ],
)
def test_time_lag(committed: int, now_ms: int, want: float) -> None:
    assert time_lag_seconds(committed, OFFSETS, TIMES, now_ms) == pytest.approx(want)


def test_time_lag_unknown_without_two_distinct_samples() -> None:
    assert time_lag_seconds(5, [10], [0], 1000) is None
    assert time_lag_seconds(5, [10, 10], [0, 1], 1000) is None


def test_hwm_at() -> None:
    assert hwm_at(-1, OFFSETS, TIMES) is None
    assert hwm_at(5_000, OFFSETS, TIMES) == 150
    assert hwm_at(99_000, OFFSETS, TIMES) == 400


def test_waiting_since() -> None:
    # caught up (HWM 200 <= 200) until the sample at 20 s; records waited from the 30 s sample on
    assert waiting_since_ms(200, 12_000, OFFSETS, TIMES) == 30_000
    # never caught up within the history: waiting since the last commit
    assert waiting_since_ms(50, 12_000, OFFSETS, TIMES) == 12_000
