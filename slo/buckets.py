"""Minute buckets (pure): per SLO instance and minute, the row count and the good/total sums that `slo stream` keeps
and writes (docs/slo.md, "Streaming from Kafka"), and their evaluation through slo/evaluation.py, so the stream,
`slo evaluate --buckets` and the batch job give one answer. No Spark.

The stream emits a bucket again each time late rows change it; the table keeps every emission, and the one of
the highest micro-batch wins. Evaluation reads running sums (slo/bucket_sums.py): a few lookups per hour of each
instance's window, whatever the events in it; the backtest reads dense minutes (`BucketRing`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from slo.bucket_sums import COLUMNS, RunningSums
from slo.evaluation import (
    Rollup,
    alert_intervals,
    backtest_start,
    completed,
    data_start,
    floor_minute,
    period_bounds,
    sub_hour_windows_s,
    windows_s,
)
from slo.identity import without_repeats
from slo.model import RollingWindow, Slo
from slo.policy import DAY_S, MINUTE_S, FloatArray, WindowSums
from slo.report import InstanceMinutes
from slo.results import BacktestResult, SloResult
from slo.sources import REASONS, instance_labels
from slo.sums_evaluation import evaluate_group

BUCKET_SCHEMA = pa.schema(
    [
        pa.field("slo", pa.string(), nullable=False),
        pa.field("instance", pa.string(), nullable=False),
        pa.field("minute", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("rows", pa.int64(), nullable=False),
        pa.field("good", pa.float64(), nullable=False),
        pa.field("total", pa.float64(), nullable=False),
        pa.field("n_bad_value", pa.int64(), nullable=False),
        pa.field("n_good_exceeds_total", pa.int64(), nullable=False),
        pa.field("batch", pa.int64(), nullable=False),
    ]
)
"""The bucket table's columns: `rows` counts every row of the minute, `good`/`total` sum the usable ones, the
`n_*` count the skipped ones (slo/sources.py's reasons; rows without a time have no minute and are not here)."""

_VALUES = ("rows", "good", "total", "n_bad_value", "n_good_exceeds_total")
Key = tuple[str, str]
"""(SLO name, instance key)."""


@dataclass(frozen=True)
class MinuteSeries:
    """One instance's buckets, dense, for the minutes first_s, first_s + 60, ... (missing minutes are zeros)."""

    first_s: int
    rows: FloatArray
    good: FloatArray
    total: FloatArray
    n_bad_value: FloatArray
    n_good_exceeds_total: FloatArray

    def minutes(self) -> np.ndarray:
        return self.first_s + MINUTE_S * np.arange(len(self.rows), dtype=np.int64)


class BucketRing:
    """The latest value of every bucket of the last `capacity_min` minutes, per instance: a numpy ring per value,
    with the minute each slot holds, so updating costs the new buckets and a dense view one window."""

    def __init__(self, capacity_min: int) -> None:
        self.capacity = max(1, capacity_min)
        self._stamps: dict[Key, np.ndarray] = {}
        self._values: dict[Key, np.ndarray] = {}

    def update(self, table: pa.Table) -> None:
        """Set every bucket of `table` (rows of `BUCKET_SCHEMA`, applied in `batch` order: the latest wins)."""
        if table.num_rows == 0:
            return
        table = table.sort_by([("batch", "ascending")])
        minutes = table["minute"].cast(pa.int64()).to_numpy() // 1_000_000 // MINUTE_S
        values = np.column_stack([table[c].to_numpy().astype(np.float64) for c in _VALUES])
        keys = list(zip(table["slo"].to_pylist(), table["instance"].to_pylist(), strict=True))
        for i, key in enumerate(keys):
            stamps = self._stamps.get(key)
            if stamps is None:
                stamps = self._stamps[key] = np.full(self.capacity, -1, dtype=np.int64)
                self._values[key] = np.zeros((self.capacity, len(_VALUES)))
            slot = int(minutes[i]) % self.capacity
            if minutes[i] >= stamps[slot]:  # a bucket older than the ring's horizon never overwrites a newer one
                stamps[slot] = minutes[i]
                self._values[key][slot] = values[i]

    def series(self, lo_s: int, hi_s: int) -> dict[Key, MinuteSeries]:
        """Every instance with a row in [lo_s, hi_s) (whole minutes, at most `capacity` of them), dense."""
        first = lo_s // MINUTE_S
        wanted = first + np.arange(max(0, (hi_s - lo_s) // MINUTE_S), dtype=np.int64)
        if len(wanted) > self.capacity:
            raise ValueError(f"{len(wanted)} minutes asked of a ring of {self.capacity}")
        slots = wanted % self.capacity
        found: dict[Key, MinuteSeries] = {}
        for key, stamps in self._stamps.items():
            held = stamps[slots] == wanted
            if not held.any():
                continue
            values = np.where(held[:, None], self._values[key][slots], 0.0)
            if not (values[:, 0] > 0).any():
                continue
            found[key] = MinuteSeries(first * MINUTE_S, *(values[:, j].copy() for j in range(len(_VALUES))))
        return found


def read_table(directory: Path) -> pa.Table:
    """Every bucket file under `directory` (the stream's table), hidden and temporary files skipped."""
    if not directory.is_dir():
        raise FileNotFoundError(f"no bucket table at {directory}")
    dataset = pads.dataset(directory, format="parquet", schema=BUCKET_SCHEMA)
    return dataset.to_table()


def span_min(slos: Sequence[Slo], at: datetime) -> int:
    """Minutes an evaluation at `at` reads back: to the oldest SLO's data start."""
    return (int(at.timestamp()) - min(int(data_start(s, at).timestamp()) for s in slos)) // MINUTE_S


def ring_minutes(slos: Sequence[Slo]) -> int:
    """Minutes a ring must hold for any evaluation time: the longest window, or a calendar period's longest
    length (a day more than the longest month or week, for daylight saving)."""
    longest = 0
    for slo in slos:
        period = slo.window.period_s if isinstance(slo.window, RollingWindow) else slo.window.nominal_s + 2 * DAY_S
        longest = max(longest, period, *windows_s(slo))
    return longest // MINUTE_S


# --- evaluate -------------------------------------------------------------------------------------------------


def _budget_units(slo: Slo, series: MinuteSeries) -> tuple[FloatArray, FloatArray]:
    """Good and total per minute as the budget counts them: timeslice SLOs make each minute with usable events one
    slice, good when good x q >= p x total for the slice target p/q (as slo/job.py's `_budget_units`)."""
    target = slo.timeslice_target
    if target is None:
        return series.good, series.total
    assert isinstance(target, Fraction)
    has = series.total > 0
    good = np.where(has & (series.good * target.denominator >= series.total * target.numerator), 1.0, 0.0)
    return good, has.astype(np.float64)


def add_buckets(sums: RunningSums, slos: Sequence[Slo], table: pa.Table) -> None:
    """Fold a bucket table into running sums (in `batch` order: a bucket's latest emission wins), with each
    minute's good and total in its SLO's budget units; buckets of SLOs not in `slos` are left out. An instance
    the sums do not hold yet is loaded whole (`RunningSums.load`: a restart refilling 30 days costs numpy passes,
    not one per bucket); the others take each bucket in turn."""
    targets = {slo.name: slo.timeslice_target for slo in slos}
    if table.num_rows == 0:
        return
    # Codes instead of strings and one index sort instead of filtered and sorted copies: a 30-day refill of 1,000
    # instances is 43 M buckets, and every copy of the table is gigabytes.
    names, instances = pc.unique(table["slo"]), pc.unique(table["instance"])
    slo_codes = pc.index_in(table["slo"], value_set=names).to_numpy()
    codes = slo_codes.astype(np.int64) * len(instances) + pc.index_in(table["instance"], instances).to_numpy()
    order = np.lexsort((table["batch"].to_numpy(), codes))  # per key, in batch order
    known = np.array([n in targets for n in names.to_pylist()], dtype=bool)
    if not known.all():
        order = order[known[slo_codes[order]]]
    if len(order) == 0:
        return
    minutes = table["minute"].cast(pa.int64()).to_numpy() // 1_000_000 // MINUTE_S
    columns = [table[c].to_numpy() for c in _VALUES]
    for group in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1):
        code = int(codes[group[0]])
        name, instance = str(names[code // len(instances)]), str(instances[code % len(instances)])
        rows = _unit_rows(np.column_stack([c[group] for c in columns]).astype(np.float64), targets[name])
        key = (name, instance)
        if not sums.has(key):
            reversed_minutes = minutes[group][::-1]  # the latest emission of a minute first
            unique, first = np.unique(reversed_minutes, return_index=True)
            sums.load(key, unique, rows[::-1][first])
            continue
        for i, minute in enumerate(minutes[group]):
            sums.set(key, int(minute), rows[i].copy())


def _unit_rows(values: np.ndarray, target: Fraction | None) -> np.ndarray:
    """Buckets' values (columns `_VALUES`) with their good and total in budget units appended (`COLUMNS`)."""
    rows = np.zeros((len(values), len(COLUMNS)))
    rows[:, : len(_VALUES)] = values
    good, total = values[:, 1], values[:, 2]
    if target is None:
        rows[:, 5], rows[:, 6] = good, total
    else:
        rows[:, 6] = (total > 0).astype(np.float64)
        rows[:, 5] = ((total > 0) & (good * target.denominator >= total * target.numerator)).astype(np.float64)
    return rows


_ROWS, _BAD, _EXCEEDS, _UNIT_GOOD, _UNIT_TOTAL = (
    COLUMNS.index(c) for c in ("rows", "n_bad_value", "n_good_exceeds_total", "unit_good", "unit_total")
)


def rollup_of(slo: Slo, sums: RunningSums, key: Key, at_s: int, lo_s: int, subs: Sequence[int]) -> Rollup | None:
    """The sums `evaluate_instance` takes over [lo_s, at_s), as slo/job.py's single aggregation makes them; None
    when the instance has no row there. Costs one lookup per hour of the span, none per event or minute."""
    at_m, lo_m = at_s // MINUTE_S, lo_s // MINUTE_S
    hours = -(-(at_m - lo_m) // 60)
    bounds = np.maximum(at_m - 60 * np.arange(hours + 1, dtype=np.int64), lo_m)
    since_m = int(period_bounds(slo, datetime.fromtimestamp(at_s, tz=UTC))[0].timestamp()) // MINUTE_S
    starts = [max(since_m, lo_m), *(max(at_m - w // MINUTE_S, lo_m) for w in subs)]
    c = sums.before(key, np.concatenate([bounds, np.array(starts, dtype=np.int64)]))
    hour = c[:hours] - c[1 : hours + 1]  # hour k: [at - (k+1) h, at - k h), clipped to lo
    held = np.nonzero(hour[:, _ROWS] > 0)[0]
    if len(held) == 0:
        return None
    size = int(held.max()) + 1
    span = c[0] - c[hours]
    period = c[0] - c[hours + 1]

    def window(j: int) -> WindowSums:
        part = c[0] - c[hours + 2 + j]
        return WindowSums(float(part[_UNIT_TOTAL] - part[_UNIT_GOOD]), float(part[_UNIT_TOTAL]))

    return Rollup(
        hour_good=hour[:size, _UNIT_GOOD].copy(),
        hour_total=hour[:size, _UNIT_TOTAL].copy(),
        period_good=float(period[_UNIT_GOOD]),
        period_total=float(period[_UNIT_TOTAL]),
        sub_hour={w: window(j) for j, w in enumerate(subs)},
        skipped={"null_time": 0, "bad_value": int(span[_BAD]), "good_exceeds_total": int(span[_EXCEEDS])},
    )


def evaluate_sums(slos: Sequence[Slo], at: datetime, sums: RunningSums) -> list[SloResult]:
    """Every SLO instance at `at` (floored to the minute) from running sums holding `span_min(slos, at)` minutes
    before it: the same results as `slo.job.evaluate` over the same rows. The instances of an SLO are evaluated
    together (slo/sums_evaluation.py), as `rollup_of` and `evaluate_instance` would one by one."""
    at = floor_minute(at)
    at_s = int(at.timestamp())
    lo_s = at_s - span_min(slos, at) * MINUTE_S
    subs = sorted({w for slo in slos for w in sub_hour_windows_s(slo)})
    index = {slo.name: i for i, slo in enumerate(slos)}
    by_slo: dict[int, list[str]] = {}
    for name, instance in sums.instances():  # sorted: an SLO's instances are adjacent, as before
        i = index.get(name)
        if i is not None:
            by_slo.setdefault(i, []).append(instance)
    results: list[SloResult] = []
    seen: set[int] = set()
    for i, instances in by_slo.items():
        found = evaluate_group(slos[i], sums, instances, at_s, lo_s, subs)
        if found:
            seen.add(i)
            results += found
    return completed(slos, at, results, seen, subs)


def evaluate_table(slos: Sequence[Slo], at: datetime, table: pa.Table) -> list[SloResult]:
    """`evaluate_sums` over a bucket table (`slo evaluate --buckets`); buckets from `at` on are left out."""
    at = floor_minute(at)
    before = table.filter(pc.less(table["minute"], pa.scalar(at, pa.timestamp("us", tz="UTC"))))
    sums = RunningSums(span_min(slos, at) + 2)
    add_buckets(sums, slos, before)
    return evaluate_sums(slos, at, sums)


# --- backtest -------------------------------------------------------------------------------------------------


def backtest_table(
    slos: Sequence[Slo], start: datetime, end: datetime, step: timedelta, table: pa.Table
) -> list[BacktestResult]:
    """Alert intervals over start, start + step, ..., <= end from a bucket table, as `slo.job.backtest`."""
    start, end = floor_minute(start), floor_minute(end)
    step_s = max(MINUTE_S, int(step.total_seconds()) // MINUTE_S * MINUTE_S)
    lo_s = min(int(backtest_start(s, start).timestamp()) for s in slos)
    end_s = int(end.timestamp())
    ring = BucketRing((end_s - lo_s) // MINUTE_S)
    ring.update(table)
    steps = np.arange(int(start.timestamp()), end_s + 1, step_s, dtype=np.int64)
    index = {slo.name: i for i, slo in enumerate(slos)}
    results: list[BacktestResult] = []
    seen: set[int] = set()
    for (name, instance), series in sorted(ring.series(lo_s, end_s).items()):
        i = index.get(name)
        if i is None:
            continue
        seen.add(i)
        slo = slos[i]
        m0 = int(backtest_start(slo, start).timestamp())
        good, total = _budget_units(slo, series)
        minutes = series.minutes()
        keep = minutes >= m0
        size = max(0, (end_s - m0) // MINUTE_S)
        at = (minutes[keep] - m0) // MINUTE_S
        dense_good = np.bincount(at, weights=good[keep], minlength=size).astype(np.float64)[:size]
        dense_total = np.bincount(at, weights=total[keep], minlength=size).astype(np.float64)[:size]
        intervals = tuple(alert_intervals(slo, m0, dense_good, dense_total, steps))
        skipped = {
            REASONS[0]: 0,
            REASONS[1]: int(series.n_bad_value.sum()),
            REASONS[2]: int(series.n_good_exceeds_total.sum()),
        }
        labels = {**slo.labels, **instance_labels(slo, instance)}
        results.append(BacktestResult(slo.name, labels, intervals, skipped))
    for i, slo in enumerate(slos):
        if i not in seen:
            results.append(BacktestResult(slo.name, dict(slo.labels), ()))
    order = {slo.name: i for i, slo in enumerate(slos)}
    return without_repeats(sorted(results, key=lambda r: (order[r.name], sorted(r.labels.items()))))[0]


# --- report ---------------------------------------------------------------------------------------------------


def minute_series_table(slos: Sequence[Slo], start: datetime, end: datetime, table: pa.Table) -> list[InstanceMinutes]:
    """Every SLO instance's events per minute over [start, end) from a bucket table (`slo report --buckets`), as
    `slo.job.minute_series` gives them from the sources: dense, in budget units, one empty series for an SLO
    without any bucket."""
    start, end = floor_minute(start), floor_minute(end)
    first, end_s = int(start.timestamp()), int(end.timestamp())
    size = max(0, (end_s - first) // MINUTE_S)
    ring = BucketRing(size)
    ring.update(table)
    index = {slo.name: i for i, slo in enumerate(slos)}
    found: list[InstanceMinutes] = []
    seen: set[int] = set()
    for (name, instance), series in sorted(ring.series(first, end_s).items()):
        i = index.get(name)
        if i is None:
            continue
        seen.add(i)
        slo = slos[i]
        good, total = _budget_units(slo, series)
        labels = {**slo.labels, **instance_labels(slo, instance)}
        found.append(InstanceMinutes(slo.name, labels, first, good[:size].copy(), total[:size].copy()))
    for i, slo in enumerate(slos):
        if i not in seen:
            found.append(InstanceMinutes(slo.name, dict(slo.labels), first, np.zeros(size), np.zeros(size)))
    order = {slo.name: i for i, slo in enumerate(slos)}
    return without_repeats(sorted(found, key=lambda s: (order[s.name], sorted(s.labels.items()))))[0]
