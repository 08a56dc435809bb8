"""Validated SLOs as frozen dataclasses: what slo/spec.py produces from YAML and what the job and rule generator read.

Numbers that decide alerts (objective, budget, factors) are exact `Fraction`s; durations are whole seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from pulse.config import HttpClientConfig
from slo.policy import format_duration, threshold


@dataclass(frozen=True)
class EventsSource:
    """Parquet files under `path` (searched recursively, hive `date=...` partitions allowed), one row per probe or
    per pre-aggregated bucket, with a UTC `time` column. `kind` is `events` (canary SLI log), `lag` (lag
    evaluation log) or `audit` (the broker-side audit's rows); all are read the same way."""

    kind: str
    path: Path
    filter: str | None
    """Spark SQL condition keeping the rows this SLO counts, e.g. `cluster = 'prod'`."""


@dataclass(frozen=True)
class PrometheusSource:
    """A counter pair in Prometheus: `good` and `total` are PromQL whose value at t is the events of the minute
    before t (e.g. `sum(increase(canary_produce_total[1m]))`), read with `query_range` at a 1-minute step."""

    url: str
    timeout_s: float
    login: HttpClientConfig | None = None
    """Basic auth or bearer token and CA file for `url` (the source's own keys)."""


Source = EventsSource | PrometheusSource


@dataclass(frozen=True)
class RollingWindow:
    """The last `period_s` seconds (a whole number of hours)."""

    period_s: int

    @property
    def label(self) -> str:
        return format_duration(self.period_s)


@dataclass(frozen=True)
class CalendarWindow:
    """The calendar week or month holding the evaluation time, in `timezone`; its budget resets at the boundary."""

    unit: str
    """`1w` or `1M`."""
    timezone: str
    nominal_s: int
    """Length the burn factors are derived from (7d, 30d); the budget covers the real period."""

    @property
    def label(self) -> str:
        return f"{self.unit} {self.timezone}"


Window = RollingWindow | CalendarWindow


@dataclass(frozen=True)
class BurnPair:
    """One multiwindow condition: fires when both windows' error ratios are strictly above factor x budget."""

    severity: str
    """`page` or `ticket`."""
    long_s: int
    short_s: int
    factor: Fraction

    @property
    def name(self) -> str:
        return f"{format_duration(self.long_s)}/{format_duration(self.short_s)}"


@dataclass(frozen=True)
class Slo:
    """One validated SLO; with `group_by`, the job evaluates one instance per distinct value of those labels."""

    name: str
    description: str
    labels: dict[str, str]
    source: Source
    good: str
    """Spark SQL over the source rows (PromQL for a Prometheus source); booleans count 0/1, numbers are summed."""
    total: str
    objective: Fraction
    """Percent, e.g. 999/10 for 99.9."""
    window: Window
    pairs: tuple[BurnPair, ...]
    """Page pairs first, then ticket pairs; empty when alerting is disabled."""
    min_events: float
    """A long window with fewer events than this never fires (low-traffic guard)."""
    forecast_s: int
    """Rates over this last stretch are assumed to continue, for exhaustion and the projected SLI."""
    timeslice_target: Fraction | None
    """None for occurrence budgeting; otherwise the share (0, 1] of a minute's events that must be good for the
    minute to count as one good slice, and every minute with events counts as one slice."""
    group_by: tuple[str, ...] = ()

    @property
    def budget(self) -> Fraction:
        return (100 - self.objective) / 100

    def threshold(self, pair: BurnPair) -> Fraction:
        return threshold(pair.factor, self.budget)
