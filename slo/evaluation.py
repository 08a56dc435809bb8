"""From aggregated sums to SLO results, pure: the job hands over per-instance rollups (evaluate) or dense minute
series (backtest); windows, alert states and forecasts are decided here with slo/policy.py. No Spark.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from slo.identity import identity, without_repeats
from slo.model import CalendarWindow, RollingWindow, Slo
from slo.policy import (
    HOUR_S,
    MINUTE_S,
    REPORTED_WINDOWS_S,
    FloatArray,
    PairState,
    Rates,
    WindowSums,
    budget_consumed,
    burn_rate,
    calendar_period,
    exceeds_many,
    format_duration,
    pair_state,
    projected_sli,
    seconds_to_exhaustion_calendar,
    seconds_to_exhaustion_rolling,
)
from slo.results import AlertResult, Interval, PairResult, SloResult


def floor_minute(moment: datetime) -> datetime:
    """Evaluations run at whole minutes: windows are [t - W, t) over minute buckets."""
    moment = moment.astimezone(UTC)
    return moment.replace(second=0, microsecond=0)


def period_bounds(slo: Slo, at: datetime) -> tuple[datetime, datetime | None]:
    """[start, end) of the budget period holding `at`; end is None for a rolling window."""
    if isinstance(slo.window, CalendarWindow):
        return calendar_period(slo.window.unit, slo.window.timezone, at)
    return at - timedelta(seconds=slo.window.period_s), None


def windows_s(slo: Slo) -> set[int]:
    """Every window an evaluation sums: the reported ones, each pair's, and the forecast window."""
    found = set(REPORTED_WINDOWS_S) | {slo.forecast_s}
    for pair in slo.pairs:
        found |= {pair.long_s, pair.short_s}
    return found


def sub_hour_windows_s(slo: Slo) -> list[int]:
    """Windows that are not whole hours: summed exactly by the job, as conditional sums, beside the hourly rollup."""
    return sorted(w for w in windows_s(slo) if w % HOUR_S)


def data_start(slo: Slo, at: datetime) -> datetime:
    """Oldest event an evaluation at `at` reads: the period start or the longest window, whichever is older."""
    start, _ = period_bounds(slo, at)
    return min(start, at - timedelta(seconds=max(windows_s(slo))))


@dataclass(frozen=True)
class Rollup:
    """One SLO instance's sums at evaluation time `at`, as the job's single aggregation yields them."""

    hour_good: FloatArray
    """Index k holds the hour [at - (k+1) h, at - k h): every whole-hour window is a prefix sum."""
    hour_total: FloatArray
    period_good: float
    period_total: float
    sub_hour: Mapping[int, WindowSums]
    """Exact sums of the windows that are not whole hours (5m, 30m, ...), keyed by seconds."""
    skipped: Mapping[str, int] = field(default_factory=dict)


def window_sums(rollup: Rollup, window_s: int) -> WindowSums:
    if window_s in rollup.sub_hour:
        return rollup.sub_hour[window_s]
    hours = window_s // HOUR_S
    good = float(rollup.hour_good[:hours].sum())
    total = float(rollup.hour_total[:hours].sum())
    return WindowSums(total - good, total)


def evaluate_instance(slo: Slo, labels: Mapping[str, str], at: datetime, rollup: Rollup) -> SloResult:
    """SLI, budget, burn rates, alert states and forecasts of one instance at `at` (a whole minute)."""
    budget = slo.budget
    start, end = period_bounds(slo, at)
    good, total = rollup.period_good, rollup.period_total
    bad = total - good
    burn_rates = {format_duration(w): burn_rate(*_pair(window_sums(rollup, w)), budget) for w in REPORTED_WINDOWS_S}
    alerts: list[AlertResult] = []
    for severity in ("page", "ticket"):
        pairs: list[PairResult] = []
        for pair in (p for p in slo.pairs if p.severity == severity):
            long, short = window_sums(rollup, pair.long_s), window_sums(rollup, pair.short_s)
            limit = slo.threshold(pair)
            state = pair_state(long, short, limit, slo.min_events)
            pairs.append(
                PairResult(
                    long=format_duration(pair.long_s),
                    short=format_duration(pair.short_s),
                    factor=float(pair.factor),
                    threshold=float(limit),
                    burn_rate_long=burn_rate(long.bad, long.total, budget),
                    burn_rate_short=burn_rate(short.bad, short.total, budget),
                    state=state.value,
                )
            )
        if pairs:
            alerts.append(AlertResult(severity, any(p.state == PairState.FIRING.value for p in pairs), tuple(pairs)))
    recent = window_sums(rollup, slo.forecast_s)
    rates = Rates(recent.bad / slo.forecast_s, recent.total / slo.forecast_s)
    exhaustion_s: float | None = None
    if isinstance(slo.window, RollingWindow):
        hours = slo.window.period_s // HOUR_S
        oldest_first_bad = (rollup.hour_total[:hours] - rollup.hour_good[:hours])[::-1]
        if total > 0:
            exhaustion_s = seconds_to_exhaustion_rolling(
                oldest_first_bad, rollup.hour_total[:hours][::-1], rates, budget
            )
        projected_at: datetime = at + timedelta(seconds=slo.window.period_s)
        projected = projected_sli(0.0, 0.0, rates, slo.window.period_s)
    else:
        assert end is not None
        left_s = (end - at).total_seconds()
        if total > 0:
            exhaustion_s = seconds_to_exhaustion_calendar(bad, total, rates, budget, left_s)
        projected_at = end
        projected = projected_sli(good, total, rates, left_s)
    consumed = budget_consumed(bad, total, budget)
    return SloResult(
        name=slo.name,
        labels={**slo.labels, **labels},
        objective=float(slo.objective),
        window=slo.window.label,
        at=at,
        period_start=start,
        period_end=end,
        good=good,
        total=total,
        sli=good / total if total > 0 else None,
        budget_consumed=consumed,
        budget_remaining=None if consumed is None else 1 - consumed,
        burn_rates=burn_rates,
        alerts=tuple(alerts),
        exhaustion_at=None if exhaustion_s is None else at + timedelta(seconds=exhaustion_s),
        projected_sli=projected,
        projected_at=projected_at,
        forecast_window=format_duration(slo.forecast_s),
        budgeting="occurrences" if slo.timeslice_target is None else "timeslices",
        skipped_rows=dict(rollup.skipped),
    )


def completed(
    slos: Sequence[Slo], at: datetime, results: list[SloResult], seen: Collection[int], subs: Sequence[int]
) -> list[SloResult]:
    """The evaluation's answer: `results` plus one "no data" result (never firing) for each SLO whose index is not in
    `seen`, in spec order, a repeated label set refused and counted (slo/identity.py)."""
    results = list(results)
    for index, slo in enumerate(slos):
        if index not in seen:
            empty = Rollup(np.zeros(0), np.zeros(0), 0.0, 0.0, {w: WindowSums(0.0, 0.0) for w in subs})
            results.append(evaluate_instance(slo, {}, at, empty))
    order = {slo.name: i for i, slo in enumerate(slos)}
    kept, refused = without_repeats(sorted(results, key=lambda r: (order[r.name], sorted(r.labels.items()))))
    if not refused:
        return kept
    return [replace(r, repeated_label_sets=refused.get(identity(r.name, r.labels), 0)) for r in kept]


def _pair(sums: WindowSums) -> tuple[float, float]:
    return sums.bad, sums.total


# --- backtest -------------------------------------------------------------------------------------------------


def backtest_start(slo: Slo, start: datetime) -> datetime:
    """Oldest event a backtest from `start` reads: its longest alert window before the first step."""
    longest = max((p.long_s for p in slo.pairs), default=0)
    return start - timedelta(seconds=longest)


def alert_intervals(
    slo: Slo,
    first_minute_s: int,
    good: FloatArray,
    total: FloatArray,
    steps_s: npt.NDArray[np.int64],
) -> list[Interval]:
    """Intervals in which each severity fired, over evaluation times `steps_s` (whole minutes, epoch seconds);
    `good`/`total` are dense per-minute sums from `first_minute_s`. Windows are differences of cumulative sums."""
    cum_good = np.concatenate(([0.0], np.cumsum(good)))
    cum_total = np.concatenate(([0.0], np.cumsum(total)))
    n = len(good)
    end_index = np.clip((steps_s - first_minute_s) // MINUTE_S, 0, n)

    def sums(window_s: int) -> tuple[FloatArray, FloatArray]:
        start_index = np.clip(end_index - window_s // MINUTE_S, 0, n)
        window_total = cum_total[end_index] - cum_total[start_index]
        window_good = cum_good[end_index] - cum_good[start_index]
        return window_total - window_good, window_total

    intervals: list[Interval] = []
    for severity in ("page", "ticket"):
        firing = np.zeros(len(steps_s), dtype=bool)
        for pair in (p for p in slo.pairs if p.severity == severity):
            limit = slo.threshold(pair)
            long_bad, long_total = sums(pair.long_s)
            short_bad, short_total = sums(pair.short_s)
            fires = (long_total > 0) & (short_total > 0) & (long_total >= slo.min_events)
            fires &= exceeds_many(long_bad, long_total, limit) & exceeds_many(short_bad, short_total, limit)
            firing |= fires
        intervals += _runs(severity, firing, steps_s)
    return intervals


def _runs(severity: str, firing: npt.NDArray[np.bool_], steps_s: npt.NDArray[np.int64]) -> list[Interval]:
    edges = np.diff(np.concatenate(([0], firing.astype(np.int8), [0])))
    starts, ends = np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0]
    out: list[Interval] = []
    for a, b in zip(starts, ends, strict=True):
        end = None if b >= len(steps_s) else _utc(int(steps_s[b]))
        out.append(Interval(severity, _utc(int(steps_s[a])), end))
    return out


def _utc(epoch_s: int) -> datetime:
    return datetime.fromtimestamp(epoch_s, UTC)
