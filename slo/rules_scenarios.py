"""Synthetic SLI series for the `promtool test rules` cases generated beside the Prometheus rules, and what the
job expects of them.

Each case's expected alerts, annotations and window ratios come from the burn-rate job's own pure evaluation
(slo/evaluation.py `alert_intervals`, slo/policy.py), so a passing `promtool test rules` shows that the rules and
the job fire the same alerts at the same minutes. slo/rules_promtool.py turns them into promtool's documents.

Time in a case starts at 0 (promtool's epoch). Minute i of a series holds the events of [i, i+1) minutes; its
Prometheus sample is at (i+1) minutes, as the job reads a Prometheus source (the value at t is the minute before).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from slo.evaluation import alert_intervals
from slo.model import BurnPair, Slo
from slo.policy import MINUTE_S, FloatArray, PairState, WindowSums, pair_state
from slo.results import Interval
from slo.rules import (
    Measure,
    period_s,
)

Value = float | None
"""Events in a minute; None when Prometheus has no sample for it."""


@dataclass(frozen=True)
class MinuteSeries:
    """Per-minute good and total events from minute 0 (see the module docstring for the time base)."""

    good: tuple[Value, ...]
    total: tuple[Value, ...]

    def __post_init__(self) -> None:
        if len(self.good) != len(self.total):
            raise ValueError(f"good has {len(self.good)} minutes, total {len(self.total)}")

    @property
    def minutes(self) -> int:
        return len(self.total)

    def __add__(self, other: MinuteSeries) -> MinuteSeries:
        return MinuteSeries(self.good + other.good, self.total + other.total)


@dataclass(frozen=True)
class Scenario:
    name: str
    why: str
    """What the series shows, for the test's name (promtool prints it on failure)."""
    series: MinuteSeries


# --- building series ----------------------------------------------------------------------------------------------


def steady(slo: Slo, minutes: int, events: int, bad: Fraction) -> MinuteSeries:
    """`events` a minute with a share `bad` of them bad. Occurrences: every minute the same whole number of bad
    events (`events x bad` must be whole). Timeslices: whole bad minutes, spread evenly, a share `bad` of them."""
    if slo.timeslice_target is None:
        bad_events = events * bad
        if bad_events.denominator != 1:
            raise ValueError(f"{events} events x {bad} bad is not a whole number of events")
        good = float(events - bad_events.numerator)
        return MinuteSeries((good,) * minutes, (float(events),) * minutes)
    flags = [math.floor((i + 1) * bad) > math.floor(i * bad) for i in range(minutes)]
    return MinuteSeries(tuple(0.0 if f else float(events) for f in flags), (float(events),) * minutes)


def missing(minutes: int) -> MinuteSeries:
    return MinuteSeries((None,) * minutes, (None,) * minutes)


def traffic(slo: Slo, *shares: Fraction) -> int:
    """Events a minute: at least 100 and enough for `min_events` in the shortest long window, and a multiple of
    every share's denominator, so a burn at exactly the budget is a whole number of bad events."""
    shortest = min((p.long_s for p in slo.pairs), default=3600) // MINUTE_S
    events = max(100, math.ceil(slo.min_events / shortest))
    step = math.lcm(*(s.denominator for s in shares)) if slo.timeslice_target is None else 1
    return step * math.ceil(events / step)


def slow_burn_rate(slo: Slo) -> Fraction | None:
    """A burn rate above the lowest ticket factor and at most the lowest page factor (ticket, never page); None
    when the policy has no ticket pair or no such rate."""
    tickets = [p.factor for p in slo.pairs if p.severity == "ticket"]
    pages = [p.factor for p in slo.pairs if p.severity == "page"]
    if not tickets:
        return None
    low = min(tickets)
    high = min([*pages, 1 / slo.budget])
    return (low + high) / 2 if low < high else None


def scenarios(slo: Slo) -> list[Scenario]:
    """The cases generated for every SLO: a steady burn at exactly the budget, a 1-hour full outage, a slow burn,
    no data, and the low-traffic guard when the spec has one."""
    budget = slo.budget
    out: list[Scenario] = []
    n = traffic(slo, budget)
    out.append(
        Scenario(
            "budget-burn",
            f"errors at exactly the budget ({float(budget):g} of {n} events a minute) for 3 h: "
            "no pair with a factor of 1 or more fires (strict >)",
            steady(slo, 180, n, budget),
        )
    )
    longest_short = max((p.short_s for p in slo.pairs), default=0) // MINUTE_S
    out.append(
        Scenario(
            "full-outage",
            f"{n} events a minute, all bad from minute 60 to 120: pages within minutes, resolves once the short "
            "windows hold no outage minute",
            steady(slo, 60, n, Fraction(0))
            + steady(slo, 60, n, Fraction(1))
            + steady(slo, longest_short + 30, n, Fraction(0)),
        )
    )
    rate = slow_burn_rate(slo)
    if rate is not None:
        share = rate * budget
        n = traffic(slo, budget, share)
        out.append(
            Scenario(
                "slow-burn",
                f"a {float(rate):g}x burn from minute 30: above the lowest ticket factor, not above the lowest "
                "page factor, so a ticket and no page",
                steady(slo, 30, n, Fraction(0)) + steady(slo, 180, n, share),
            )
        )
    idle = MinuteSeries((0.0,) * 60, (0.0,) * 60)
    out.append(
        Scenario(
            "no-data", "no samples for 60 minutes, then 60 minutes without events: nothing fires", missing(60) + idle
        )
    )
    if slo.min_events > 0:
        shortest = min((p.long_s for p in slo.pairs), default=3600) // MINUTE_S
        low = max(1, math.ceil(slo.min_events / shortest) - 1)
        length = max(120, min(360, math.ceil(slo.min_events / low) + 30))
        out.append(
            Scenario(
                "low-traffic",
                f"{low} event(s) a minute, all bad, for {length} minutes: a long window with fewer than "
                f"{slo.min_events:g} events never fires",
                steady(slo, length, low, Fraction(1)),
            )
        )
    return out


# --- what the job makes of a series -------------------------------------------------------------------------------


def job_units(slo: Slo, series: MinuteSeries) -> tuple[FloatArray, FloatArray]:
    """Good and total units per minute as the job counts them: a minute missing a value, with a negative or
    non-finite one, or with good above total is skipped; timeslice SLOs count one slice per minute with events,
    good when good x den >= total x num for the target num/den."""
    good = np.zeros(series.minutes)
    total = np.zeros(series.minutes)
    target = slo.timeslice_target
    for i, (g, t) in enumerate(zip(series.good, series.total, strict=True)):
        if g is None or t is None or not (math.isfinite(g) and math.isfinite(t)) or g < 0 or t < 0 or g > t:
            continue
        if target is None:
            good[i], total[i] = g, t
        elif t > 0:
            total[i] = 1.0
            good[i] = 1.0 if g * target.denominator >= t * target.numerator else 0.0
    return good, total


def expected_intervals(slo: Slo, series: MinuteSeries) -> list[Interval]:
    """The job's alert intervals over evaluations at every minute 0 ... end (its backtest's pure part)."""
    good, total = job_units(slo, series)
    steps = np.arange(0, (series.minutes + 1) * MINUTE_S, MINUTE_S, dtype=np.int64)
    return alert_intervals(slo, 0, good, total, steps)


def _seconds(interval_time: Any) -> int:
    return int(interval_time.timestamp())


def check_times(intervals: Sequence[Interval], minutes: int, every_min: int = 60) -> list[int]:
    """Evaluation times (seconds) worth asserting: the minute before and at each start and end, and every hour."""
    end_s = minutes * MINUTE_S
    times = set(range(every_min * MINUTE_S, end_s + 1, every_min * MINUTE_S)) | {end_s}
    for interval in intervals:
        start = _seconds(interval.start)
        times |= {start - MINUTE_S, start}
        if interval.end is not None:
            stop = _seconds(interval.end)
            times |= {stop - MINUTE_S, stop}
    return sorted(t for t in times if 0 < t <= end_s)


def is_firing(intervals: Sequence[Interval], severity: str, at_s: int) -> bool:
    return any(
        i.severity == severity and _seconds(i.start) <= at_s and (i.end is None or at_s < _seconds(i.end))
        for i in intervals
    )


class Sums:
    """Window sums of the job's units at an evaluation time: the numbers Prometheus' queries return."""

    def __init__(self, slo: Slo, series: MinuteSeries) -> None:
        self.slo = slo
        good, total = job_units(slo, series)
        self.cum_good = np.concatenate(([0.0], np.cumsum(good)))
        self.cum_total = np.concatenate(([0.0], np.cumsum(total)))

    def at(self, at_s: int, window_s: int) -> WindowSums:
        end = min(at_s // MINUTE_S, len(self.cum_total) - 1)
        start = max(0, end - window_s // MINUTE_S)
        total = float(self.cum_total[end] - self.cum_total[start])
        good = float(self.cum_good[end] - self.cum_good[start])
        return WindowSums(total - good, total)

    def ratio(self, at_s: int, window_s: int) -> float | None:
        sums = self.at(at_s, window_s)
        return sums.bad / sums.total if sums.total > 0 else None

    def measure(self, at_s: int, measure: Measure) -> float | None:
        """As the annotation's query computes it (same operations in the same order)."""
        budget = float(self.slo.budget)
        if measure.what == "burn_rate":
            ratio = self.ratio(at_s, measure.window_s)
            value = None if ratio is None else ratio / budget
        else:
            period = period_s(self.slo)
            ratio = None if period is None else self.ratio(at_s, period)
            if ratio is None:
                value = None
            elif measure.what == "sli":
                value = 1 - ratio
            else:
                value = 1 - ratio / budget
        if value is None:
            return None
        return value * 100 if measure.percent else value

    def first_firing(self, at_s: int, pairs: Sequence[BurnPair]) -> tuple[int, float] | None:
        for pair in pairs:
            long, short = self.at(at_s, pair.long_s), self.at(at_s, pair.short_s)
            if pair_state(long, short, self.slo.threshold(pair), self.slo.min_events) is PairState.FIRING:
                return pair.long_s, (long.bad / long.total) / float(self.slo.budget)
        return None
