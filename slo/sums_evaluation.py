"""Every instance of one SLO evaluated at once from running sums (pure): the stream's per-cycle evaluation.

`evaluate_instance` (slo/evaluation.py) over one `Rollup` per instance costs a few hundred Python operations each;
here the lookups of all instances are one 3-D array and every sum, burn rate, pair state and forecast is a numpy
operation over the instances, with the same floating-point operations in the same order, so the results are the
ones `rollup_of` + `evaluate_instance` give (tests/unit/slo/test_sums_evaluation.py compares them).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from slo.bucket_sums import COLUMNS, RunningSums
from slo.evaluation import period_bounds
from slo.model import RollingWindow, Slo
from slo.policy import (
    HOUR_S,
    MINUTE_S,
    REPORTED_WINDOWS_S,
    FloatArray,
    PairState,
    exceeds_many,
    format_duration,
    seconds_to_exhaustion_rolling_many,
)
from slo.results import AlertResult, PairResult, SloResult
from slo.sources import instance_labels

_ROWS, _BAD, _EXCEEDS, _UNIT_GOOD, _UNIT_TOTAL = (
    COLUMNS.index(c) for c in ("rows", "n_bad_value", "n_good_exceeds_total", "unit_good", "unit_total")
)
Mask = npt.NDArray[np.bool_]
_STATES = [s.value for s in (PairState.NO_DATA, PairState.LOW_TRAFFIC, PairState.OK, PairState.FIRING)]


def lookup_minutes(slo: Slo, at_s: int, lo_s: int, subs: Sequence[int]) -> tuple[np.ndarray, int]:
    """The minutes `rollup_of` reads sums before (hour bounds back from `at_s` clipped to `lo_s`, the period start,
    each sub-hour window's start) and the number of hours."""
    at_m, lo_m = at_s // MINUTE_S, lo_s // MINUTE_S
    hours = -(-(at_m - lo_m) // 60)
    bounds = np.maximum(at_m - 60 * np.arange(hours + 1, dtype=np.int64), lo_m)
    since_m = int(period_bounds(slo, datetime.fromtimestamp(at_s, tz=UTC))[0].timestamp()) // MINUTE_S
    starts = [max(since_m, lo_m), *(max(at_m - w // MINUTE_S, lo_m) for w in subs)]
    return np.concatenate([bounds, np.array(starts, dtype=np.int64)]), hours


class _Sums:
    """The instances' sums at one evaluation time: hours (newest first), sub-hour windows, the period."""

    def __init__(self, c: np.ndarray, hours: int, subs: Sequence[int]) -> None:
        held = (c[:, :hours, _ROWS] - c[:, 1 : hours + 1, _ROWS]) > 0
        self.held: Mask = held.any(axis=1)
        if not self.held.all():
            keep = np.flatnonzero(self.held)
            c, held = c[keep], held[keep]
        if len(c) == 0:  # argmax refuses an empty axis
            held = np.ones((0, 1), dtype=bool)
        self.size = hours - np.argmax(held[:, ::-1], axis=1)
        """Per instance: hours up to the oldest one with a row (`Rollup`'s arrays are cut there)."""
        self.hour_good = c[:, :hours, _UNIT_GOOD] - c[:, 1 : hours + 1, _UNIT_GOOD]
        self.hour_total = c[:, :hours, _UNIT_TOTAL] - c[:, 1 : hours + 1, _UNIT_TOTAL]
        self.span = c[:, 0] - c[:, hours]
        self.period = c[:, 0] - c[:, hours + 1]
        self.sub = {w: c[:, 0] - c[:, hours + 2 + j] for j, w in enumerate(subs)}
        self._cache: dict[int, tuple[FloatArray, FloatArray]] = {}

    def window(self, window_s: int) -> tuple[FloatArray, FloatArray]:
        """(bad, total) per instance over the last `window_s`, as `window_sums` sums them: a sub-hour window from
        its two lookups, whole hours as numpy sums over each instance's own hours (the same pairwise sums)."""
        found = self._cache.get(window_s)
        if found is not None:
            return found
        if window_s in self.sub:
            part = self.sub[window_s]
            found = (part[:, _UNIT_TOTAL] - part[:, _UNIT_GOOD], part[:, _UNIT_TOTAL].copy())
        else:
            hours = window_s // HOUR_S
            good, total = np.zeros(len(self.size)), np.zeros(len(self.size))
            lengths = np.minimum(self.size, hours)
            for length in np.unique(lengths):
                rows = np.flatnonzero(lengths == length)
                good[rows] = self.hour_good[rows, :length].sum(axis=1)
                total[rows] = self.hour_total[rows, :length].sum(axis=1)
            found = (total - good, total)
        self._cache[window_s] = found
        return found


def _ratio(bad: FloatArray, total: FloatArray) -> tuple[FloatArray, Mask]:
    has = total > 0
    return np.divide(bad, total, out=np.zeros_like(bad), where=has), has


def _or_none(values: FloatArray, has: Mask) -> list[float | None]:
    return [v if h else None for v, h in zip(values.tolist(), has.tolist(), strict=True)]


def evaluate_group(
    slo: Slo, sums: RunningSums, instances: Sequence[str], at_s: int, lo_s: int, subs: Sequence[int]
) -> list[SloResult]:
    """The results of `slo`'s `instances` (in order) that have a row in [lo_s, at_s), as `rollup_of` and
    `evaluate_instance` give them one by one."""
    minutes, hours = lookup_minutes(slo, at_s, lo_s, subs)
    s = _Sums(sums.before_many([(slo.name, i) for i in instances], minutes), hours, subs)
    kept = [i for i, h in zip(instances, s.held.tolist(), strict=True) if h]
    if not kept:
        return []
    at = datetime.fromtimestamp(at_s, tz=UTC)
    budget, b = slo.budget, float(slo.budget)
    start, end = period_bounds(slo, at)
    good, total = s.period[:, _UNIT_GOOD], s.period[:, _UNIT_TOTAL]
    bad = total - good
    has_total = total > 0

    burn: dict[str, list[float | None]] = {}
    for w in REPORTED_WINDOWS_S:
        ratio, has = _ratio(*s.window(w))
        burn[format_duration(w)] = _or_none(ratio / b, has)

    tiers: list[tuple[str, list[tuple[PairResult, list[float | None], list[float | None], list[str]]], Mask]] = []
    for severity in ("page", "ticket"):
        pairs = []
        firing_any = np.zeros(len(kept), dtype=bool)
        for pair in (p for p in slo.pairs if p.severity == severity):
            (long_b, long_t), (short_b, short_t) = s.window(pair.long_s), s.window(pair.short_s)
            limit = slo.threshold(pair)
            no_data = (long_t <= 0) | (short_t <= 0)
            low = ~no_data & (long_t < slo.min_events)
            firing = ~no_data & ~low & exceeds_many(long_b, long_t, limit) & exceeds_many(short_b, short_t, limit)
            code = np.where(no_data, 0, np.where(low, 1, np.where(firing, 3, 2)))
            firing_any |= firing
            template = PairResult(
                long=format_duration(pair.long_s),
                short=format_duration(pair.short_s),
                factor=float(pair.factor),
                threshold=float(limit),
                burn_rate_long=None,
                burn_rate_short=None,
                state="",
            )
            long_r, long_has = _ratio(long_b, long_t)
            short_r, short_has = _ratio(short_b, short_t)
            states = [_STATES[c] for c in code.tolist()]
            pairs.append((template, _or_none(long_r / b, long_has), _or_none(short_r / b, short_has), states))
        if pairs:
            tiers.append((severity, pairs, firing_any))

    recent_b, recent_t = s.window(slo.forecast_s)
    bad_rate, total_rate = recent_b / slo.forecast_s, recent_t / slo.forecast_s
    good_rate = total_rate - bad_rate
    exhaustion: list[float | None]
    if isinstance(slo.window, RollingWindow):
        period_s = slo.window.period_s
        span_h = period_s // HOUR_S
        exhaustion = [None] * len(kept)
        lengths = np.where(has_total, np.minimum(s.size, span_h), -1)
        for length in np.unique(lengths[lengths >= 0]).tolist():
            rows = np.flatnonzero(lengths == length)
            hg, ht = s.hour_good[rows, :length], s.hour_total[rows, :length]
            found = seconds_to_exhaustion_rolling_many(
                (ht - hg)[:, ::-1], ht[:, ::-1], bad_rate[rows], total_rate[rows], budget
            )
            for k, spent in zip(rows.tolist(), found, strict=True):
                exhaustion[k] = spent
        projected_at: datetime = at + timedelta(seconds=period_s)
        num, den = 0.0 + good_rate * period_s, 0.0 + total_rate * period_s
    else:
        assert end is not None
        left_s = (end - at).total_seconds()
        f0 = bad - b * total
        slope = bad_rate - b * total_rate
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = -f0 / slope
        exhaustion = [
            None if not h else 0.0 if f > 0 else None if sl <= 0 else t if t < left_s else None
            for h, f, sl, t in zip(has_total.tolist(), f0.tolist(), slope.tolist(), tau.tolist(), strict=True)
        ]
        projected_at = end
        num, den = good + good_rate * left_s, total + total_rate * left_s
    projected = _or_none(*_ratio(num, den))
    consumed = _or_none(np.divide(bad, b * total, out=np.zeros_like(bad), where=has_total), has_total)
    sli = _or_none(*_ratio(good, total))

    objective, label, forecast = float(slo.objective), slo.window.label, format_duration(slo.forecast_s)
    budgeting = "occurrences" if slo.timeslice_target is None else "timeslices"
    skipped_bad, skipped_exceeds = s.span[:, _BAD].tolist(), s.span[:, _EXCEEDS].tolist()
    goods, totals = good.tolist(), total.tolist()
    results: list[SloResult] = []
    for k, instance in enumerate(kept):
        alerts = tuple(
            AlertResult(
                severity,
                bool(firing_any[k]),
                tuple(
                    PairResult(t.long, t.short, t.factor, t.threshold, long_rates[k], short_rates[k], states[k])
                    for t, long_rates, short_rates, states in pairs
                ),
            )
            for severity, pairs, firing_any in tiers
        )
        spent, used = exhaustion[k], consumed[k]
        results.append(
            SloResult(
                name=slo.name,
                labels={**slo.labels, **instance_labels(slo, instance)},
                objective=objective,
                window=label,
                at=at,
                period_start=start,
                period_end=end,
                good=goods[k],
                total=totals[k],
                sli=sli[k],
                budget_consumed=used,
                budget_remaining=None if used is None else 1 - used,
                burn_rates={w: rates[k] for w, rates in burn.items()},
                alerts=alerts,
                exhaustion_at=None if spent is None else at + timedelta(seconds=spent),
                projected_sli=projected[k],
                projected_at=projected_at,
                forecast_window=forecast,
                budgeting=budgeting,
                skipped_rows={
                    "null_time": 0,
                    "bad_value": int(skipped_bad[k]),
                    "good_exceeds_total": int(skipped_exceeds[k]),
                },
            )
        )
    return results
