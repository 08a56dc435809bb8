"""SLO reports, pure: per SLO instance and calendar period, compliance against the objective, budget consumed, the
incidents (the backtest's alert intervals and the budget each cost), the worst hours and an hourly burn-down, from
the job's dense minute series and `job.backtest`'s intervals. Same arithmetic as slo/policy.py; no Spark, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from slo.model import CalendarWindow, Slo
from slo.policy import HOUR_S, MINUTE_S, FloatArray, budget_consumed, calendar_period, exceeds
from slo.results import Interval, iso

PERIOD_UNITS = {"month": "1M", "week": "1w"}
"""`--period` names -> slo/policy.py's calendar units."""
WORST_HOURS = 5
"""How many of the hours that spent the most budget a period lists."""


@dataclass(frozen=True)
class InstanceMinutes:
    """One SLO instance's events per minute from `first_minute_s` (epoch seconds, a whole minute), dense: index i is
    the minute [first + 60 i, first + 60 (i + 1)); a minute without events holds 0 / 0 (a gap)."""

    name: str
    labels: dict[str, str]
    first_minute_s: int
    good: FloatArray
    total: FloatArray


@dataclass(frozen=True)
class Incident:
    """An alert interval of the backtest, clipped to the period, and the budget its minutes' bad events cost."""

    severity: str
    start: datetime
    end: datetime
    ongoing: bool
    """Still firing at the end of the period (or of `--to`)."""
    bad: float
    budget_consumed: float | None
    """bad / (B x the period's total events): the share of the period's whole budget this incident spent."""


@dataclass(frozen=True)
class HourStat:
    """One clock hour (UTC) of the period and what it spent."""

    start: datetime
    good: float
    total: float
    budget_consumed: float | None
    """bad / (B x the period's total): this hour's share of the period's budget."""

    @property
    def bad(self) -> float:
        return self.total - self.good


@dataclass(frozen=True)
class PeriodReport:
    """One SLO instance over one calendar period [start, end), clipped to the report's [from, to)."""

    start: datetime
    end: datetime
    partial: bool
    """The report's --from/--to cut the calendar period."""
    minutes: int
    data_minutes: int
    """Minutes with at least one event; the rest are gaps, counted neither good nor bad."""
    good: float
    total: float
    compliance: float | None
    """good / total over the period (the SLI); None without events."""
    met: bool | None
    """compliance >= objective, decided exactly (bad <= B x total); None without events."""
    budget_consumed: float | None
    burndown: tuple[tuple[datetime, float], ...]
    """Budget left (1 - consumed so far, against the period's whole budget) at the period start and every hour end."""
    incidents: tuple[Incident, ...]
    worst_hours: tuple[HourStat, ...]

    @property
    def budget_remaining(self) -> float | None:
        return None if self.budget_consumed is None else 1 - self.budget_consumed


@dataclass(frozen=True)
class SloReport:
    """One SLO instance's periods."""

    name: str
    labels: dict[str, str]
    description: str
    objective: float
    budgeting: str
    periods: tuple[PeriodReport, ...]


def report_periods(unit: str, timezone: str, start: datetime, end: datetime) -> list[tuple[datetime, datetime, bool]]:
    """The calendar periods (`1M` or `1w` in `timezone`) overlapping [start, end), each clipped to it, with whether
    it was cut."""
    out: list[tuple[datetime, datetime, bool]] = []
    at = start
    while at < end:
        lo, hi = calendar_period(unit, timezone, at)
        a, b = max(lo, start), min(hi, end)
        out.append((a, b, (a, b) != (lo, hi)))
        at = hi
    return out


def period_timezone(slo: Slo) -> str:
    """A calendar SLO's periods are its own (its timezone); a rolling one's are UTC."""
    return slo.window.timezone if isinstance(slo.window, CalendarWindow) else "UTC"


def _index(series: InstanceMinutes, moment: datetime) -> int:
    return int((int(moment.timestamp()) - series.first_minute_s) // MINUTE_S)


def _slice(series: InstanceMinutes, a: datetime, b: datetime) -> tuple[FloatArray, FloatArray]:
    """good and total of the minutes in [a, b) (whole minutes), zeros where the series does not reach."""
    i, j = _index(series, a), _index(series, b)
    n = len(series.total)
    good = np.zeros(max(0, j - i))
    total = np.zeros(max(0, j - i))
    lo, hi = max(i, 0), min(j, n)
    if hi > lo:
        good[lo - i : hi - i] = series.good[lo:hi]
        total[lo - i : hi - i] = series.total[lo:hi]
    return good, total


def period_report(
    slo: Slo, series: InstanceMinutes, alerts: Sequence[Interval], start: datetime, end: datetime, partial: bool
) -> PeriodReport:
    """One period's figures; `alerts` are the backtest's intervals (any span: they are clipped here)."""
    good, total = _slice(series, start, end)
    period_good, period_total = float(good.sum()), float(total.sum())
    budget = slo.budget
    budget_events = float(budget) * period_total

    def share(spent: float) -> float | None:
        return None if period_total <= 0 else spent / budget_events

    # Hours: clock hours (UTC) overlapping the period; a period starts at a whole minute, so the first may be short.
    start_s = int(start.timestamp())
    offsets = (start_s // MINUTE_S + np.arange(len(total))) * MINUTE_S // HOUR_S
    hour_keys, hour_of = np.unique(offsets, return_inverse=True)
    hour_good = np.bincount(hour_of, weights=good, minlength=len(hour_keys))
    hour_total = np.bincount(hour_of, weights=total, minlength=len(hour_keys))
    hours = [
        HourStat(_utc(int(k) * HOUR_S), float(g), float(t), share(float(t - g)))
        for k, g, t in zip(hour_keys, hour_good, hour_total, strict=True)
    ]
    worst = sorted((h for h in hours if h.bad > 0), key=lambda h: (-h.bad, h.start))[:WORST_HOURS]
    burndown: list[tuple[datetime, float]] = []
    if period_total > 0:
        spent_by_hour = np.cumsum(hour_total - hour_good)
        burndown.append((start, 1.0))
        for k, s in zip(hour_keys, spent_by_hour, strict=True):
            burndown.append((min(end, _utc((int(k) + 1) * HOUR_S)), 1 - float(s) / budget_events))
    incidents = []
    for alert in alerts:
        a = max(alert.start, start)
        b = min(alert.end, end) if alert.end is not None else end
        if a >= b:
            continue
        g, t = _slice(series, a, b)
        spent = float(t.sum() - g.sum())
        ongoing = alert.end is None or alert.end > end
        incidents.append(Incident(alert.severity, a, b, ongoing, spent, share(spent)))
    bad_total = period_total - period_good
    return PeriodReport(
        start=start,
        end=end,
        partial=partial,
        minutes=len(total),
        data_minutes=int(np.count_nonzero(total > 0)),
        good=period_good,
        total=period_total,
        compliance=period_good / period_total if period_total > 0 else None,
        met=None if period_total <= 0 else not exceeds(bad_total, period_total, budget),
        budget_consumed=budget_consumed(bad_total, period_total, budget),
        burndown=tuple(burndown),
        incidents=tuple(sorted(incidents, key=lambda i: (i.start, i.severity))),
        worst_hours=tuple(worst),
    )


def slo_report(
    slo: Slo, series: InstanceMinutes, alerts: Sequence[Interval], unit: str, start: datetime, end: datetime
) -> SloReport:
    """Every period of `unit` (`1M` or `1w`) overlapping [start, end) for one SLO instance."""
    periods = tuple(
        period_report(slo, series, alerts, a, b, partial)
        for a, b, partial in report_periods(unit, period_timezone(slo), start, end)
    )
    return SloReport(
        name=series.name,
        labels=dict(series.labels),
        description=slo.description,
        objective=float(slo.objective),
        budgeting="occurrences" if slo.timeslice_target is None else "timeslices",
        periods=periods,
    )


def _utc(epoch_s: int) -> datetime:
    return datetime.fromtimestamp(epoch_s, UTC)


# --- JSON (the `slo report --format json` contract) -----------------------------------------------------------


def report_json(reports: Sequence[SloReport], start: datetime, end: datetime, period: str) -> dict[str, Any]:
    """The whole report as JSON: times in UTC ISO 8601, ratios as fractions (0.999, not 99.9 %)."""
    return {
        "from": iso(start),
        "to": iso(end),
        "period": period,
        "slos": [
            {
                "name": r.name,
                "labels": r.labels,
                "description": r.description,
                "objective": r.objective,
                "budgeting": r.budgeting,
                "periods": [_period_json(p) for p in r.periods],
            }
            for r in reports
        ],
    }


def _period_json(p: PeriodReport) -> dict[str, Any]:
    return {
        "start": iso(p.start),
        "end": iso(p.end),
        "partial": p.partial,
        "minutes": p.minutes,
        "data_minutes": p.data_minutes,
        "good": p.good,
        "total": p.total,
        "compliance": p.compliance,
        "met": p.met,
        "budget_consumed": p.budget_consumed,
        "budget_remaining": p.budget_remaining,
        "incidents": [
            {
                "severity": i.severity,
                "start": iso(i.start),
                "end": iso(i.end),
                "ongoing": i.ongoing,
                "duration_s": int((i.end - i.start) / timedelta(seconds=1)),
                "bad": i.bad,
                "budget_consumed": i.budget_consumed,
            }
            for i in p.incidents
        ],
        "worst_hours": [
            {
                "start": iso(h.start),
                "good": h.good,
                "total": h.total,
                "bad": h.bad,
                "budget_consumed": h.budget_consumed,
            }
            for h in p.worst_hours
        ],
        "burndown": [[iso(t), remaining] for t, remaining in p.burndown],
    }
