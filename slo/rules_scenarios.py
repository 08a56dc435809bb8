"""Synthetic SLI series and the `promtool test rules` cases generated beside the Prometheus rules.

Each case's expected alerts, annotations and window ratios come from the burn-rate job's own pure evaluation
(slo/evaluation.py `alert_intervals`, slo/policy.py), so a passing `promtool test rules` shows that the rules and
the job fire the same alerts at the same minutes. Pure: documents are dicts, slo/rules_files.py writes them.

Time in a case starts at 0 (promtool's epoch). Minute i of a series holds the events of [i, i+1) minutes; its
Prometheus sample is at (i+1) minutes, as the job reads a Prometheus source (the value at t is the minute before).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np

from slo.evaluation import alert_intervals
from slo.model import BurnPair, Slo
from slo.policy import MINUTE_S, FloatArray, PairState, WindowSums, pair_state
from slo.results import Interval
from slo.rules import (
    BUDGET_REMAINING,
    Measure,
    RuleOptions,
    alert_labels,
    annotation_pieces,
    events_metric,
    period_s,
    ratio_metric,
    render_expected,
    rule_windows_s,
    series_labels,
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


# --- promtool documents -------------------------------------------------------------------------------------------


def series_notation(values: Sequence[Value]) -> str:
    """promtool's expanding notation: `_xN` for N missing samples, `vxN` for N+1 equal ones, `a+bxN` for N+1
    whole numbers rising by b (counters); promtool adds the step repeatedly, so only whole numbers use it."""
    out: list[str] = []
    i = 0
    while i < len(values):
        value = values[i]
        if value is None:
            j = i
            while j + 1 < len(values) and values[j + 1] is None:
                j += 1
            out.append("_" if j == i else f"_x{j - i + 1}")
            i = j + 1
            continue
        j, step = i, _step(value, values[i + 1] if i + 1 < len(values) else None)
        while step is not None and j + 1 < len(values) and _step(values[j], values[j + 1]) == step:
            j += 1
        if step is None or j == i or (j == i + 1 and step != 0):
            out.append(_number_text(value))
            i += 1
            continue
        if step == 0:
            out.append(f"{_number_text(value)}x{j - i}")
        else:
            sign = "+" if step > 0 else "-"
            out.append(f"{_number_text(value)}{sign}{_number_text(abs(step))}x{j - i}")
        i = j + 1
    return " ".join(out)


def _step(a: Value, b: Value) -> float | None:
    """The difference b - a when a run may continue through it: equal values, or whole numbers."""
    if a is None or b is None:
        return None
    if a == b:
        return 0.0
    if float(a).is_integer() and float(b).is_integer() and abs(a) < 2**52 and abs(b) < 2**52:
        return b - a
    return None


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def selector_text(name: str, labels: Mapping[str, str]) -> str:
    """`name{a="b"}` with escaped values, as promtool reads series."""
    inner = ",".join(f"{k}={json.dumps(v)}" for k, v in labels.items())
    return f"{name}{{{inner}}}"


def events_input(slo: Slo, series: MinuteSeries) -> list[dict[str, str]]:
    """The per-minute event series as inputs (the spec's own PromQL finds nothing in the test and records none):
    no sample at 0, then minute i at (i + 1) minutes."""
    labels = series_labels(slo)
    return [
        {"series": selector_text(events_metric("good"), labels), "values": series_notation((None, *series.good))},
        {"series": selector_text(events_metric("total"), labels), "values": series_notation((None, *series.total))},
    ]


def _duration(seconds: int) -> str:
    return f"{seconds // MINUTE_S}m"


def alert_checks(
    slo: Slo, options: RuleOptions, series: MinuteSeries, intervals: Sequence[Interval], times: Sequence[int]
) -> list[dict[str, Any]]:
    """One `alert_rule_test` entry per time: the severities firing then, with labels and expanded annotations."""
    sums = Sums(slo, series)
    checks: list[dict[str, Any]] = []
    for at_s in times:
        expected: list[dict[str, Any]] = []
        for severity in ("page", "ticket"):
            if not is_firing(intervals, severity, at_s):
                continue
            labels = {k: v for k, v in alert_labels(slo, severity, options).items() if k != "alertname"}
            annotations = {
                key: render_expected(pieces, partial(sums.measure, at_s), partial(sums.first_firing, at_s))
                for key, pieces in annotation_pieces(slo, severity, options).items()
            }
            expected.append({"exp_labels": labels, "exp_annotations": annotations})
        checks.append({"eval_time": _duration(at_s), "alertname": "KafkaSLOBurnRate", "exp_alerts": expected})
    return checks


def value_checks(slo: Slo, series: MinuteSeries, at_s: int) -> list[dict[str, Any]]:
    """`promql_expr_test` entries: every window's error ratio (absent without events) and the budget left."""
    sums = Sums(slo, series)
    labels = series_labels(slo)
    checks: list[dict[str, Any]] = []
    for window in rule_windows_s(slo):
        ratio = sums.ratio(at_s, window)
        name = ratio_metric(window)
        samples = [] if ratio is None else [{"labels": selector_text(name, labels), "value": ratio}]
        checks.append({"expr": name, "eval_time": _duration(at_s), "exp_samples": samples})
    remaining = sums.measure(at_s, Measure("budget_remaining"))
    if period_s(slo) is not None:
        samples = [] if remaining is None else [{"labels": selector_text(BUDGET_REMAINING, labels), "value": remaining}]
        checks.append({"expr": BUDGET_REMAINING, "eval_time": _duration(at_s), "exp_samples": samples})
    return checks


def promtool_case(
    slo: Slo,
    options: RuleOptions,
    name: str,
    series: MinuteSeries,
    input_series: Sequence[Mapping[str, str]] | None = None,
    intervals: Sequence[Interval] | None = None,
) -> dict[str, Any]:
    """One `tests:` entry: `series` fed as `input_series` (default: the per-minute event series), alerts checked
    at the transitions of `intervals` (default: the job's own, from `expected_intervals`), ratios at the end."""
    if intervals is None:
        intervals = expected_intervals(slo, series)
    times = check_times(intervals, series.minutes)
    return {
        "name": name,
        "interval": "1m",
        "input_series": [dict(s) for s in (input_series or events_input(slo, series))],
        "alert_rule_test": alert_checks(slo, options, series, intervals, times),
        "promql_expr_test": value_checks(slo, series, series.minutes * MINUTE_S),
    }


def promtool_tests(slo: Slo, options: RuleOptions, rules_file: str) -> dict[str, Any]:
    """The unit-test document for one SLO's rules file: one case per scenario."""
    cases = [promtool_case(slo, options, f"{s.name}: {s.why}", s.series) for s in scenarios(slo)]
    return {"rule_files": [rules_file], "evaluation_interval": "1m", "tests": cases}
