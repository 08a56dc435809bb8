"""Pure SLO arithmetic: Workbook factors, the strict firing rule, exhaustion and projection."""

from datetime import UTC, datetime
from fractions import Fraction

import numpy as np
import pytest

from slo.policy import (
    DAY_S,
    HOUR_S,
    PairState,
    Rates,
    WindowSums,
    budget_consumed,
    burn_factor,
    burn_rate,
    calendar_period,
    can_ever_fire,
    error_budget,
    exceeds,
    exceeds_many,
    format_duration,
    pair_state,
    parse_duration_s,
    projected_sli,
    seconds_to_exhaustion_calendar,
    seconds_to_exhaustion_rolling,
)

B999 = error_budget(Fraction("99.9"))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5m", 300), ("1h", 3600), ("1h30m", 5400), ("30d", 30 * DAY_S), ("2w", 14 * DAY_S), ("45s", 45)],
)
def test_durations_parse_and_format_back(text: str, seconds: int) -> None:
    assert parse_duration_s(text) == seconds
    assert parse_duration_s(format_duration(seconds)) == seconds


@pytest.mark.parametrize("text", ["", "5", "1M", "m5", "1h 30m", "-1h"])
def test_bad_durations_name_the_units(text: str) -> None:
    with pytest.raises(ValueError, match="units s, m, h, d, w"):
        parse_duration_s(text)


def test_budget_is_exact() -> None:
    # 1 - 0.999 in floats is 0.0010000000000000009; the rational is exactly one in a thousand.
    assert Fraction(1, 1000) == B999


@pytest.mark.parametrize(
    ("percent", "period", "long", "factor"),
    [
        pytest.param(2, "30d", "1h", Fraction("14.4"), id="page-fast-30d"),
        pytest.param(5, "30d", "6h", Fraction(6), id="page-slow-30d"),
        pytest.param(10, "30d", "1d", Fraction(3), id="ticket-fast-30d"),
        pytest.param(10, "30d", "3d", Fraction(1), id="ticket-slow-30d"),
        pytest.param(2, "28d", "1h", Fraction("13.44"), id="page-fast-28d-as-sloth"),
        pytest.param(10, "28d", "3d", Fraction(14, 15), id="ticket-slow-28d-0.933"),
        pytest.param(2, "7d", "1h", Fraction("3.36"), id="page-fast-7d"),
    ],
)
def test_factor_keeps_the_budget_share_for_any_window(percent: int, period: str, long: str, factor: Fraction) -> None:
    assert burn_factor(Fraction(percent, 100), parse_duration_s(period), parse_duration_s(long)) == factor


@pytest.mark.parametrize(
    ("objective", "factor", "fires"),
    [
        pytest.param("99.9", Fraction("14.4"), True, id="99.9-page"),
        pytest.param("90", Fraction("14.4"), False, id="90-page-workbook-never"),
        pytest.param("90", Fraction(10), False, id="threshold-exactly-1-never-with-strict-gt"),
        pytest.param("90", Fraction(6), True, id="90-slow-page"),
    ],
)
def test_can_ever_fire(objective: str, factor: Fraction, fires: bool) -> None:
    assert can_ever_fire(factor, error_budget(Fraction(objective))) is fires


def test_strict_rule_at_exactly_the_threshold() -> None:
    # 1 bad in 1000 at 99.9 % is a burn rate of exactly 1: the 1x ticket must not fire (Sloth's float would).
    assert not exceeds(1.0, 1000.0, B999)
    assert exceeds(2.0, 1999.0, B999)
    assert not exceeds(0.0, 0.0, B999)
    bad = np.array([1.0, 2.0, 0.0, 0.5])
    total = np.array([1000.0, 1999.0, 0.0, 400.0])
    assert exceeds_many(bad, total, B999).tolist() == [False, True, False, True]


def test_exceeds_decides_as_exact_fractions_do() -> None:
    # Cross-multiplied integers must give the verdict of the float sums' exact values, fractional or huge.
    rng = np.random.default_rng(3)
    limits = [B999, Fraction(1, 3), Fraction(144, 1000) * Fraction(1, 7), Fraction(7, 2)]
    values = [*rng.uniform(0, 1e6, 300), *rng.integers(0, 2**60, 100).astype(float), 1 / 3, 2.0**-40, 2.0**70]
    for limit in limits:
        for bad, total in zip(values, reversed(values), strict=True):
            for b, t in ((bad, total), (total * float(limit), total), (bad, 0.0)):
                assert exceeds(b, t, limit) is (t > 0 and Fraction(b) > limit * Fraction(t)), (b, t, limit)


def test_ratio_of_sums_and_no_data() -> None:
    assert burn_rate(144.0, 10_000.0, B999) == pytest.approx(14.4)
    assert burn_rate(0.0, 0.0, B999) is None
    assert budget_consumed(30.0, 60_000.0, B999) == pytest.approx(0.5)
    assert budget_consumed(0.0, 0.0, B999) is None


@pytest.mark.parametrize(
    ("long", "short", "min_events", "state"),
    [
        pytest.param(WindowSums(100, 6000), WindowSums(100, 500), 0, PairState.FIRING, id="outage"),
        pytest.param(WindowSums(100, 6000), WindowSums(0, 500), 0, PairState.OK, id="recovered-short-clears"),
        pytest.param(WindowSums(0, 0), WindowSums(0, 0), 0, PairState.NO_DATA, id="no-data-never-fires"),
        pytest.param(WindowSums(1, 10), WindowSums(1, 1), 100, PairState.LOW_TRAFFIC, id="low-traffic-guard"),
        pytest.param(WindowSums(1, 10), WindowSums(1, 1), 10, PairState.FIRING, id="guard-met"),
        pytest.param(WindowSums(1, 10), WindowSums(0, 0), 0, PairState.NO_DATA, id="short-window-empty"),
    ],
)
def test_pair_state(long: WindowSums, short: WindowSums, min_events: float, state: PairState) -> None:
    assert pair_state(long, short, Fraction("14.4") * B999, min_events) is state


def test_calendar_month_in_a_zone() -> None:
    # 2024-03-31T22:30Z is already April in Berlin (CEST, +2h): the period is April local.
    start, end = calendar_period("1M", "Europe/Berlin", datetime(2024, 3, 31, 22, 30, tzinfo=UTC))
    assert start == datetime(2024, 3, 31, 22, 0, tzinfo=UTC)
    assert end == datetime(2024, 4, 30, 22, 0, tzinfo=UTC)
    start, _ = calendar_period("1M", "Europe/Berlin", datetime(2024, 3, 31, 21, 30, tzinfo=UTC))
    assert start == datetime(2024, 2, 29, 23, 0, tzinfo=UTC)  # March began in CET (+1h)
    start, end = calendar_period("1w", "UTC", datetime(2024, 1, 3, 12, 0, tzinfo=UTC))
    assert (start, end) == (datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 8, tzinfo=UTC))


def test_exhaustion_without_history_is_budget_over_burn() -> None:
    # Empty 30d window, 100 events/s at 2x burn: bad = 0.2 t > 0.001 x 100 t from the first instant.
    hours = 720
    tau = seconds_to_exhaustion_rolling([0.0] * hours, [0.0] * hours, Rates(0.2, 100.0), B999)
    assert tau == 0.0


def test_exhaustion_counts_old_errors_leaving_the_window() -> None:
    # 3-hour window; the oldest hour held 10 bad of 1000 (1 %), the others were clean (1000 each, no errors).
    # Now 1000 events/hour at 0.5 % errors, budget 1 %: f = bad - 0.01 x total.
    budget = Fraction(1, 100)
    bad, total = [10.0, 0.0, 0.0], [1000.0, 1000.0, 1000.0]
    rates = Rates(5 / HOUR_S, 1000 / HOUR_S)
    # Without expiry, f(t) = 10 - 30 + (5 - 10) t/h never rises; with it nothing crosses either.
    assert seconds_to_exhaustion_rolling(bad, total, rates, budget) is None
    # At 2 % errors the new hours add +10 each: f(0) = -20; hour 0 leaving removes margin 0 -> slope +10/h:
    # f(1h) = -10, f(2h) = 0 (hour 1 leaving, margin -10 -> slope +20/h): f = -10 + 20 u = 0 at u = 0.5.
    tau = seconds_to_exhaustion_rolling(bad, total, Rates(20 / HOUR_S, 1000 / HOUR_S), budget)
    assert tau == pytest.approx(1.5 * HOUR_S)


def test_exhaustion_calendar_and_projection() -> None:
    budget = Fraction(1, 1000)
    # 1 M events/day at 2x burn (2,000 bad/day against 1,000 allowed): f = bad - B x total grows 1,000/day.
    rates = Rates(2000 / DAY_S, 1_000_000 / DAY_S)
    # Exactly on the line (12,000 bad of 12 M) and rising: crosses at once.
    assert seconds_to_exhaustion_calendar(12_000, 12_000_000, rates, budget, 30 * DAY_S) == 0.0
    tau = seconds_to_exhaustion_calendar(6_000, 12_000_000, rates, budget, 30 * DAY_S)
    assert tau == pytest.approx(6 * DAY_S)  # 6,000 margin at +1,000/day
    assert seconds_to_exhaustion_calendar(6_000, 12_000_000, rates, budget, 5 * DAY_S) is None
    assert projected_sli(999.0, 1000.0, Rates(0.0, 1.0), 1000.0) == pytest.approx(1999 / 2000)
