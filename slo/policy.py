"""SLO arithmetic, pure: durations, error budgets, burn-rate factors and thresholds, the firing rule, and forecasts.

Formulas follow the SRE Workbook, ch. 5 "Alerting on SLOs". Thresholds are exact
rationals, so a steady burn at exactly the budget is never taken for a burn above it. No I/O, no Spark.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from zoneinfo import ZoneInfo

import numpy as np
import numpy.typing as npt

MINUTE_S = 60
HOUR_S = 3600
DAY_S = 86_400

_DURATION = re.compile(r"(\d+)([smhdw])")
_UNIT_S = {"s": 1, "m": MINUTE_S, "h": HOUR_S, "d": DAY_S, "w": 7 * DAY_S}

REPORTED_WINDOWS_S: tuple[int, ...] = (5 * MINUTE_S, 30 * MINUTE_S, HOUR_S, 2 * HOUR_S, 6 * HOUR_S, DAY_S, 3 * DAY_S)
"""The burn-rate windows every evaluation reports (`burn_rates` keys 5m ... 3d), those of the default policy."""

CALENDAR_NOMINAL_S = {"1w": 7 * DAY_S, "1M": 30 * DAY_S}
"""Length used to derive burn-rate factors for calendar windows, so a `1M` SLO alerts like a `30d` one; the budget
itself always covers the real period (28-31 days for a month)."""


def parse_duration_s(text: str) -> int:
    """`5m`, `1h30m`, `30d`, `2w` -> seconds; ValueError names the accepted units."""
    value = text.strip()
    parts = _DURATION.findall(value)
    if not value or "".join(n + u for n, u in parts) != value:
        raise ValueError(f"{text!r} is not a duration; write e.g. 5m, 1h, 30d (units s, m, h, d, w)")
    return sum(int(n) * _UNIT_S[u] for n, u in parts)


def format_duration(seconds: int) -> str:
    """The shortest spelling with one unit when there is one (`300` -> `5m`, `86400` -> `1d`), else combined."""
    if seconds <= 0:
        return "0s"
    for unit, size in (("d", DAY_S), ("h", HOUR_S), ("m", MINUTE_S), ("s", 1)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    out, rest = "", seconds
    for unit, size in (("d", DAY_S), ("h", HOUR_S), ("m", MINUTE_S), ("s", 1)):
        if rest >= size:
            out += f"{rest // size}{unit}"
            rest %= size
    return out


# --- budgets and burn rates ---------------------------------------------------------------------------------


def error_budget(objective_percent: Decimal | Fraction | int) -> Fraction:
    """Budget fraction B = 1 - SLO, exact: 99.9 -> 1/1000 (float arithmetic would give 0.0009999999999998899)."""
    return (100 - Fraction(objective_percent)) / 100


def burn_factor(budget_fraction: Fraction, period_s: int, long_window_s: int) -> Fraction:
    """Burn rate at which `budget_fraction` of the budget is spent within the long window (Workbook table 5-6):
    factor = fraction x period / long window, e.g. 2 % x 30d / 1h = 14.4."""
    return budget_fraction * period_s / long_window_s


def threshold(factor: Fraction, budget: Fraction) -> Fraction:
    """The error ratio a window must exceed for its pair to fire: factor x B."""
    return factor * budget


def can_ever_fire(factor: Fraction, budget: Fraction) -> bool:
    """An error ratio is at most 1, so with the strict `>` rule a threshold of 1 or more can never be crossed
    (Workbook §"extreme goals": at 90 % a 2 %-in-1h page never fires)."""
    return threshold(factor, budget) < 1


def error_ratio(bad: float, total: float) -> float | None:
    """bad / total over a window, ratio of sums; None when the window holds no events ("no data")."""
    return bad / total if total > 0 else None


def burn_rate(bad: float, total: float, budget: Fraction) -> float | None:
    """How fast the window spends the budget: error ratio / B (1.0 = exactly on budget); None without events."""
    ratio = error_ratio(bad, total)
    return None if ratio is None else ratio / float(budget)


def exceeds(bad: float, total: float, limit: Fraction) -> bool:
    """Strict `bad / total > limit`, decided on the exact values of the float sums (never via a rounded ratio)."""
    if not total > 0:
        return False
    # Exact on the floats' own ratios (a float is a / 2^k): integer cross-multiplication, no Fraction objects.
    bad_n, bad_d = float(bad).as_integer_ratio()
    total_n, total_d = float(total).as_integer_ratio()
    return bad_n * limit.denominator * total_d > limit.numerator * total_n * bad_d


def budget_consumed(bad: float, total: float, budget: Fraction) -> float | None:
    """Share of the period's budget spent: bad / (B x total); above 1 the budget is overspent; None without events."""
    return None if total <= 0 else bad / (float(budget) * total)


class PairState(enum.Enum):
    """Verdict of one long/short window pair, ordered from quiet to firing."""

    NO_DATA = "no_data"
    """A window of the pair holds no events: never fires."""
    LOW_TRAFFIC = "low_traffic"
    """The long window holds fewer events than the policy's `min_events`: never fires."""
    OK = "ok"
    FIRING = "firing"


@dataclass(frozen=True)
class WindowSums:
    """Event sums over one window: `bad` = total - good."""

    bad: float
    total: float


def pair_state(long: WindowSums, short: WindowSums, limit: Fraction, min_events: float) -> PairState:
    """Multiwindow rule (Workbook approach 6): both windows' error ratios strictly above factor x B."""
    if long.total <= 0 or short.total <= 0:
        return PairState.NO_DATA
    if long.total < min_events:
        return PairState.LOW_TRAFFIC
    if exceeds(long.bad, long.total, limit) and exceeds(short.bad, short.total, limit):
        return PairState.FIRING
    return PairState.OK


FloatArray = npt.NDArray[np.float64]


def exceeds_many(bad: FloatArray, total: FloatArray, limit: Fraction) -> npt.NDArray[np.bool_]:
    """`exceeds` over arrays: integer cross-multiplication when every product fits a float exactly, else per item."""
    num, den = limit.numerator, limit.denominator
    ok = total > 0
    integral = bool(np.all(bad == np.floor(bad)) and np.all(total == np.floor(total)))
    bound = float(2**53) / max(num, den, 1)
    if integral and float(np.max(bad, initial=0.0)) < bound and float(np.max(total, initial=0.0)) < bound:
        return ok & (bad * den > total * num)
    return np.array([exceeds(float(b), float(t), limit) for b, t in zip(bad, total, strict=True)], dtype=bool)


# --- calendar periods ---------------------------------------------------------------------------------------


def calendar_period(unit: str, timezone: str, at: datetime) -> tuple[datetime, datetime]:
    """[start, end) in UTC of the calendar week (Monday 00:00) or month that holds `at`, in `timezone`."""
    zone = ZoneInfo(timezone)
    local = at.astimezone(zone)
    if unit == "1M":
        start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        end = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
    elif unit == "1w":
        start = (local - timedelta(days=local.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
        end = start + timedelta(days=7)
    else:
        raise ValueError(f"unknown calendar unit {unit!r}; use 1w or 1M")
    # Re-attach the zone after replace(): a DST change between `at` and the period start shifts the offset.
    start = start.replace(tzinfo=None).replace(tzinfo=zone)
    end = end.replace(tzinfo=None).replace(tzinfo=zone)
    return start.astimezone(ZoneInfo("UTC")), end.astimezone(ZoneInfo("UTC"))


# --- forecasts ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rates:
    """Event rates over the forecast window, per second, assumed to continue."""

    bad_per_s: float
    total_per_s: float


def seconds_to_exhaustion_rolling(
    hourly_bad: Sequence[float] | npt.NDArray[np.float64],
    hourly_total: Sequence[float] | npt.NDArray[np.float64],
    rates: Rates,
    budget: Fraction,
) -> float | None:
    """Seconds until bad > B x total in a rolling window whose history is `hourly_*` (oldest hour first, the
    window's full length), while the current rates go on and old hours leave the window (each evenly over its
    hour). 0 when already overspent; None when it never happens within one window length (after that the
    window holds only projected events, so it never will)."""
    bad = np.asarray(hourly_bad, dtype=np.float64)
    total = np.asarray(hourly_total, dtype=np.float64)
    b = float(budget)
    margin = bad - b * total  # what each history hour contributes to f = bad - B x total
    f0 = float(margin.sum())
    if f0 > 0:
        return 0.0
    if len(margin) == 0:
        return None
    # f at the start of hour j of the future: history hours < j have left, j hours of new events have arrived.
    new_per_hour = (rates.bad_per_s - b * rates.total_per_s) * HOUR_S
    hours = np.arange(len(margin), dtype=np.float64)
    f_start = f0 - np.concatenate(([0.0], np.cumsum(margin)[:-1])) + new_per_hour * hours
    slope = new_per_hour - margin  # change of f across hour j, linear inside the hour
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(slope > 0, -f_start / slope, np.inf)
    # f(start of hour j) <= 0 always holds up to the first crossing, so the first u in [0, 1) marks it.
    crossing = np.nonzero((u >= 0) & (u < 1) & (slope > 0))[0]
    if len(crossing) == 0:
        return None
    j = int(crossing[0])
    return (j + float(u[j])) * HOUR_S


def seconds_to_exhaustion_rolling_many(
    hourly_bad: FloatArray, hourly_total: FloatArray, bad_per_s: FloatArray, total_per_s: FloatArray, budget: Fraction
) -> list[float | None]:
    """`seconds_to_exhaustion_rolling` of each row of `hourly_*` (instances x hours, oldest hour first, rows of one
    length) with its rates, as numpy operations over all rows: the same operations, so the same answers."""
    b = float(budget)
    margin = np.ascontiguousarray(hourly_bad - b * hourly_total)
    rows, length = margin.shape
    f0 = margin.sum(axis=1)
    if length == 0:
        return [0.0 if f > 0 else None for f in f0.tolist()]
    new_per_hour = (bad_per_s - b * total_per_s) * HOUR_S
    hours = np.arange(length, dtype=np.float64)
    before = np.concatenate((np.zeros((rows, 1)), np.cumsum(margin, axis=1)[:, :-1]), axis=1)
    f_start = f0[:, None] - before + new_per_hour[:, None] * hours
    slope = new_per_hour[:, None] - margin
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(slope > 0, -f_start / slope, np.inf)
    crossing = (u >= 0) & (u < 1) & (slope > 0)
    first = np.argmax(crossing, axis=1)
    found: list[float | None] = []
    crossed_rows = [bool(c) for c in np.any(crossing, axis=1).tolist()]
    for f, crossed, j, u_j in zip(
        f0.tolist(), crossed_rows, first.tolist(), u[np.arange(rows), first].tolist(), strict=True
    ):
        found.append(0.0 if f > 0 else (j + u_j) * HOUR_S if crossed else None)
    return found


def seconds_to_exhaustion_calendar(
    bad_so_far: float, total_so_far: float, rates: Rates, budget: Fraction, seconds_left: float
) -> float | None:
    """Seconds until bad > B x total in a calendar period that keeps everything until it ends; None if not before
    the period ends (then the budget resets). 0 when already overspent."""
    b = float(budget)
    f0 = bad_so_far - b * total_so_far
    if f0 > 0:
        return 0.0
    slope = rates.bad_per_s - b * rates.total_per_s
    if slope <= 0:
        return None
    tau = -f0 / slope
    return tau if tau < seconds_left else None


def projected_sli(good: float, total: float, rates: Rates, seconds_ahead: float) -> float | None:
    """SLI at a later point if the current rates go on: (good + good_rate x dt) / (total + total_rate x dt)."""
    good_rate = rates.total_per_s - rates.bad_per_s
    num = good + good_rate * seconds_ahead
    den = total + rates.total_per_s * seconds_ahead
    return num / den if den > 0 else None
