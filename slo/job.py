"""The burn-rate job: the Spark plan from scored source rows to per-SLO sums; slo/evaluation.py decides the rest.

Evaluate: one aggregation per run. Rows are rolled up into hours counted back from the evaluation minute, so every
whole-hour window (1h ... 3d, a rolling 30d) is a prefix sum of one small array per SLO; windows that are not whole
hours (5m, 30m) and the calendar period are exact conditional sums in the same pass. Timeslice SLOs are first
bucketed per minute (one good or bad slice per minute with events). Backtest: minute buckets, then per SLO
instance (`applyInPandas`) cumulative sums give every window at every step as a difference, with no join. Report:
the same minute buckets, dense per instance, for slo/report.py.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pandas as pd  # type: ignore[import-untyped]  # no stubs; pandas-stubs is not a dependency
from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from slo.evaluation import (
    Rollup,
    alert_intervals,
    backtest_start,
    completed,
    data_start,
    evaluate_instance,
    floor_minute,
    period_bounds,
    sub_hour_windows_s,
)
from slo.identity import without_repeats
from slo.model import Slo
from slo.policy import HOUR_S, MINUTE_S, FloatArray, WindowSums
from slo.report import InstanceMinutes
from slo.results import BacktestResult, Interval, SloResult
from slo.sources import REASONS, SourceUnreadable, instance_labels, scored_rows

_COUNTS = [f"n_{reason}" for reason in REASONS]


def prepare(spark: SparkSession) -> None:
    """Session settings the job's arithmetic relies on (runtime SQL confs, so a shared session works too)."""
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    spark.conf.set("spark.sql.ansi.enabled", "false")  # a value that does not parse is null, counted, skipped
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")


@contextmanager
def _reading(slos: Sequence[Slo]) -> Iterator[None]:
    """A Spark failure while the job runs (unreadable or inconsistent files) becomes SourceUnreadable naming the
    sources; the message's first line is Spark's, without its stack trace."""
    try:
        with warnings.catch_warnings():
            # toPandas warns before re-raising a failure in mid-computation; the error below says it better.
            warnings.filterwarnings("ignore", message="toPandas attempted Arrow optimization", category=UserWarning)
            yield
    except (PySparkException, Py4JJavaError) as exc:
        first = next((line for line in str(exc).strip().splitlines() if line.strip()), type(exc).__name__)
        sources = sorted({str(getattr(s.source, "path", getattr(s.source, "url", ""))) for s in slos})
        raise SourceUnreadable(f"Spark could not evaluate the SLOs reading {', '.join(sources)}: {first}") from exc


def _names(slos: Sequence[Slo]) -> list[str]:
    return [f"slo {slo.name!r}" for slo in slos]


def _lookup(values: dict[int, object], key: Column) -> Column:
    """`values[key]` as a Spark expression (a literal map; a few thousand SLOs at most)."""
    pairs: list[Column] = []
    for k, v in values.items():
        pairs += [F.lit(k), F.lit(v)]
    return F.element_at(F.create_map(*pairs), key)


def _budget_units(rows: DataFrame, slos: Sequence[Slo]) -> DataFrame:
    """Occurrence SLOs keep their rows; timeslice SLOs become one row per minute with events: good 1 when at least
    the slice target of the minute's events were good (exact: good x q >= p x total for target p/q)."""
    sliced = {i: s.timeslice_target for i, s in enumerate(slos) if s.timeslice_target is not None}
    if not sliced:
        return rows
    is_sliced = F.col("slo").isin(list(sliced))
    plain = rows.where(~is_sliced)
    minute = (F.floor(F.col("ts") / MINUTE_S) * MINUTE_S).cast("long")
    buckets = (
        rows.where(is_sliced)
        .groupBy("slo", "instance", "since", minute.alias("ts"))
        .agg(
            F.sum(F.when(F.col("ok"), F.col("good"))).alias("g"),
            F.sum(F.when(F.col("ok"), F.col("total"))).alias("t"),
            *[F.sum(c).alias(c) for c in _COUNTS],
        )
    )
    num = _lookup({i: t.numerator for i, t in sliced.items() if isinstance(t, Fraction)}, F.col("slo"))
    den = _lookup({i: t.denominator for i, t in sliced.items() if isinstance(t, Fraction)}, F.col("slo"))
    has_events = F.col("ts").isNotNull() & (F.coalesce(F.col("t"), F.lit(0.0)) > 0)
    slices = buckets.select(
        "slo",
        "instance",
        "since",
        "ts",
        F.when(has_events & (F.col("g") * den >= F.col("t") * num), 1.0).otherwise(0.0).alias("good"),
        F.when(has_events, 1.0).otherwise(0.0).alias("total"),
        has_events.alias("ok"),
        *_COUNTS,
    )
    return plain.unionByName(slices)


# --- evaluate -------------------------------------------------------------------------------------------------


def evaluate(spark: SparkSession, slos: Sequence[Slo], at: datetime) -> list[SloResult]:
    """Every SLO instance at `at` (floored to the minute): one Spark aggregation, then pure evaluation."""
    prepare(spark)
    at = floor_minute(at)
    at_s = int(at.timestamp())
    lo = min(data_start(slo, at) for slo in slos)
    starts = [int(period_bounds(slo, at)[0].timestamp()) for slo in slos]
    rows = _budget_units(scored_rows(spark, slos, lo, at, _names(slos), starts), slos)
    subs = sorted({w for slo in slos for w in sub_hour_windows_s(slo)})
    period_start = F.col("since")
    ok = F.col("ok")
    good, total, ts = F.col("good"), F.col("total"), F.col("ts")
    aggregates = [
        F.sum(F.when(ok, good)).alias("good"),
        F.sum(F.when(ok, total)).alias("total"),
        F.sum(F.when(ok & (ts >= period_start), good)).alias("p_good"),
        F.sum(F.when(ok & (ts >= period_start), total)).alias("p_total"),
    ]
    for w in subs:
        aggregates += [
            F.sum(F.when(ok & (ts >= at_s - w), good)).alias(f"good_{w}"),
            F.sum(F.when(ok & (ts >= at_s - w), total)).alias(f"total_{w}"),
        ]
    aggregates += [F.sum(c).alias(c) for c in _COUNTS]
    hour = F.floor((F.lit(at_s - 1) - ts) / HOUR_S).cast("int").alias("k")
    with _reading(slos):
        frame: pd.DataFrame = rows.groupBy("slo", "instance", hour).agg(*aggregates).toPandas()
    return _results(slos, at, frame.fillna(0), subs)


def _results(slos: Sequence[Slo], at: datetime, frame: pd.DataFrame, subs: list[int]) -> list[SloResult]:
    results: list[SloResult] = []
    seen: set[int] = set()
    for (index, instance), group in frame.groupby(["slo", "instance"], sort=True):
        slo = slos[int(index)]
        seen.add(int(index))
        hours = group[group["k"] >= 0]
        k = hours["k"].to_numpy(dtype=np.int64)
        size = int(k.max()) + 1 if len(k) else 0
        rollup = Rollup(
            hour_good=_bins(k, hours["good"].to_numpy(dtype=float), size),
            hour_total=_bins(k, hours["total"].to_numpy(dtype=float), size),
            period_good=float(group["p_good"].sum()),
            period_total=float(group["p_total"].sum()),
            sub_hour={
                w: WindowSums(
                    float(group[f"total_{w}"].sum() - group[f"good_{w}"].sum()), float(group[f"total_{w}"].sum())
                )
                for w in subs
            },
            skipped={reason: int(group[f"n_{reason}"].sum()) for reason in REASONS},
        )
        results.append(evaluate_instance(slo, instance_labels(slo, str(instance)), at, rollup))
    return completed(slos, at, results, seen, subs)


def _bins(index: npt.NDArray[np.int64], weights: FloatArray, size: int) -> FloatArray:
    """Sum `weights` into `size` slots by `index` (hours back, or minutes since the series start)."""
    return np.bincount(index, weights=weights, minlength=size).astype(np.float64)


# --- backtest -------------------------------------------------------------------------------------------------

_BACKTEST_SCHEMA = "slo int, instance string, severity string, start long, end long, " + ", ".join(
    f"{c} long" for c in _COUNTS
)


def backtest(
    spark: SparkSession, slos: Sequence[Slo], start: datetime, end: datetime, step: timedelta
) -> list[BacktestResult]:
    """Alert intervals of every SLO instance over evaluation times start, start + step, ..., <= end."""
    prepare(spark)
    start, end = floor_minute(start), floor_minute(end)
    step_s = max(MINUTE_S, int(step.total_seconds()) // MINUTE_S * MINUTE_S)
    lo = min(backtest_start(slo, start) for slo in slos)
    rows = _budget_units(scored_rows(spark, slos, lo, end, _names(slos)), slos)
    minute = (F.floor(F.col("ts") / MINUTE_S) * MINUTE_S).cast("long").alias("ts")
    buckets = rows.groupBy("slo", "instance", minute).agg(
        F.sum(F.when(F.col("ok"), F.col("good"))).alias("good"),
        F.sum(F.when(F.col("ok"), F.col("total"))).alias("total"),
        *[F.sum(c).alias(c) for c in _COUNTS],
    )
    steps = np.arange(int(start.timestamp()), int(end.timestamp()) + 1, step_s, dtype=np.int64)
    first = {i: int(backtest_start(slo, start).timestamp()) for i, slo in enumerate(slos)}
    last_s = int(end.timestamp())
    frozen = list(slos)

    def per_instance(frame: pd.DataFrame) -> pd.DataFrame:
        return _instance_intervals(frozen, first, last_s, steps, frame)

    with _reading(slos):
        out = buckets.groupBy("slo", "instance").applyInPandas(per_instance, _BACKTEST_SCHEMA).toPandas()
    return _backtest_results(slos, out)


def _instance_intervals(
    slos: Sequence[Slo], first: dict[int, int], last_s: int, steps: npt.NDArray[np.int64], frame: pd.DataFrame
) -> pd.DataFrame:
    """Runs on an executor: one instance's minute buckets -> one row per interval, plus one row of counts."""
    index = int(frame["slo"].iloc[0])
    instance = str(frame["instance"].iloc[0])
    m0 = first[index]
    size = max(0, (last_s - m0) // MINUTE_S)
    valid = frame[frame["ts"].notna() & (frame["ts"] >= m0) & (frame["ts"] < last_s)]
    at = ((valid["ts"].to_numpy(dtype=np.int64) - m0) // MINUTE_S).astype(np.int64)
    good = _bins(at, valid["good"].fillna(0).to_numpy(dtype=float), size)
    total = _bins(at, valid["total"].fillna(0).to_numpy(dtype=float), size)
    intervals = alert_intervals(slos[index], m0, good, total, steps)
    counts = {c: int(frame[c].fillna(0).sum()) for c in _COUNTS}
    rows = [{"slo": index, "instance": instance, "severity": None, "start": None, "end": None, **counts}]
    for interval in intervals:
        rows.append(
            {
                "slo": index,
                "instance": instance,
                "severity": interval.severity,
                "start": int(interval.start.timestamp()),
                "end": None if interval.end is None else int(interval.end.timestamp()),
                **{c: 0 for c in _COUNTS},
            }
        )
    return pd.DataFrame(rows, columns=["slo", "instance", "severity", "start", "end", *_COUNTS]).astype(
        {"start": "Int64", "end": "Int64"}
    )


def _backtest_results(slos: Sequence[Slo], out: pd.DataFrame) -> list[BacktestResult]:
    results: list[BacktestResult] = []
    seen: set[int] = set()
    for (index, instance), group in out.groupby(["slo", "instance"], sort=True):
        seen.add(int(index))
        slo = slos[int(index)]
        meta = group[group["severity"].isna()]
        fired = group[group["severity"].notna()].sort_values(["start", "severity"])
        intervals = tuple(
            Interval(
                str(row.severity),
                datetime.fromtimestamp(int(row.start), UTC),
                None if pd.isna(row.end) else datetime.fromtimestamp(int(row.end), UTC),
            )
            for row in fired.itertuples()
        )
        skipped = {reason: int(meta[f"n_{reason}"].sum()) for reason in REASONS}
        labels = {**slo.labels, **instance_labels(slo, str(instance))}
        results.append(BacktestResult(slo.name, labels, intervals, skipped))
    for index, slo in enumerate(slos):
        if index not in seen:
            results.append(BacktestResult(slo.name, dict(slo.labels), ()))
    order = {slo.name: i for i, slo in enumerate(slos)}
    return without_repeats(sorted(results, key=lambda r: (order[r.name], sorted(r.labels.items()))))[0]


# --- report ---------------------------------------------------------------------------------------------------


def minute_series(spark: SparkSession, slos: Sequence[Slo], start: datetime, end: datetime) -> list[InstanceMinutes]:
    """Every SLO instance's events per minute over [start, end) (whole minutes), dense, for slo/report.py; one
    empty series for an SLO without any row. Budget units as in `evaluate` (timeslices become minutes)."""
    prepare(spark)
    start, end = floor_minute(start), floor_minute(end)
    rows = _budget_units(scored_rows(spark, slos, start, end, _names(slos)), slos)
    minute = (F.floor(F.col("ts") / MINUTE_S) * MINUTE_S).cast("long").alias("ts")
    with _reading(slos):
        frame: pd.DataFrame = (
            rows.where(F.col("ok"))
            .groupBy("slo", "instance", minute)
            .agg(F.sum("good").alias("good"), F.sum("total").alias("total"))
            .toPandas()
        )
    first = int(start.timestamp())
    size = max(0, (int(end.timestamp()) - first) // MINUTE_S)
    found: list[InstanceMinutes] = []
    seen: set[int] = set()
    for (index, instance), group in frame.groupby(["slo", "instance"], sort=True):
        slo = slos[int(index)]
        seen.add(int(index))
        inside = group[(group["ts"] >= first) & (group["ts"] < first + size * MINUTE_S)]
        at = ((inside["ts"].to_numpy(dtype=np.int64) - first) // MINUTE_S).astype(np.int64)
        labels = {**slo.labels, **instance_labels(slo, str(instance))}
        good = _bins(at, inside["good"].fillna(0).to_numpy(dtype=float), size)
        total = _bins(at, inside["total"].fillna(0).to_numpy(dtype=float), size)
        found.append(InstanceMinutes(slo.name, labels, first, good, total))
    for index, slo in enumerate(slos):
        if index not in seen:
            found.append(InstanceMinutes(slo.name, dict(slo.labels), first, np.zeros(size), np.zeros(size)))
    order = {slo.name: i for i, slo in enumerate(slos)}
    return without_repeats(sorted(found, key=lambda s: (order[s.name], sorted(s.labels.items()))))[0]
