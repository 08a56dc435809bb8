"""SLI sources -> one Spark DataFrame of scored rows: (slo, instance, ts, good, total, ok, n_null_time, n_bad_value,
n_good_exceeds_total). Parquet event logs are scanned once per path for every SLO reading them; Prometheus counter
pairs are fetched with `query_range` and handed to Spark as rows.

Malformed rows are kept, flagged and counted, never fatal: a null or unparsable `time` (`null_time`), a good or
total that is null, NaN, negative or not a number (`bad_value`), good above total (`good_exceeds_total`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import httpx
from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pulse.errors import PulseError
from pulse.http.client import outbound_client
from pulse.redact import redact_text, redact_url
from slo.model import EventsSource, PrometheusSource, Slo

REASONS = ("null_time", "bad_value", "good_exceeds_total")
"""Why a row was skipped, as reported in `skipped_rows`."""


class SourceUnreadable(PulseError):
    """An SLO's source could not be read or its expressions do not fit its rows (names the SLO and the key)."""


def _as_double(column: Column, data_type: T.DataType, where: str) -> Column:
    """Booleans count 0/1 and numbers are summed; strings are parsed, and what does not parse becomes null."""
    if isinstance(data_type, T.BooleanType):
        return column.cast("double")
    if isinstance(data_type, T.NumericType):
        return column.cast("double")
    if isinstance(data_type, T.StringType):
        return _parse_string(column)
    if isinstance(data_type, T.NullType):
        return F.lit(None).cast("double")
    raise SourceUnreadable(f"{where}: evaluates to {data_type.simpleString()}; expected a boolean or a number")


def _parse_string(column: Column) -> Column:
    number = column.try_cast("double")
    flag = F.lower(F.trim(column)).try_cast("boolean").cast("double")
    return F.coalesce(number, flag)


def _epoch_seconds(frame: DataFrame, name: str, where: str) -> Column:
    """`time` as epoch seconds (long); null when missing or unparsable."""
    data_type = frame.schema[name].dataType
    column = F.col(f"`{name}`")
    if isinstance(data_type, T.TimestampType | T.TimestampNTZType):
        return F.unix_seconds(column.cast("timestamp"))
    if isinstance(data_type, T.StringType):
        return F.unix_seconds(F.try_to_timestamp(column))
    if isinstance(data_type, T.DateType):
        return F.unix_seconds(column.cast("timestamp"))
    raise SourceUnreadable(f"{where}: column `time` is {data_type.simpleString()}; expected a UTC timestamp")


def _expression(frame: DataFrame, text: str, where: str) -> Column:
    try:
        column = F.expr(text)
        data_type = frame.select(column.alias("__v")).schema["__v"].dataType
    except (AnalysisException, PySparkException) as exc:
        first_line = str(exc).strip().splitlines()[0]
        raise SourceUnreadable(f"{where}: Spark cannot evaluate {text!r}: {first_line}") from exc
    return _as_double(column, data_type, where)


INSTANCE_SEPARATOR = "\x1f"
"""Joins an instance's `group_by` values into one key (cheaper per row than JSON); `instance_labels` splits it.
Each value is escaped first (`\\` -> `\\\\`, the separator -> `\\s`), so a value holding the separator can never
split into another instance's labels; a single `group_by` value is the key as it is."""
_ESCAPES = {"\\": "\\", "s": INSTANCE_SEPARATOR}
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)


def _escaped(value: Column) -> Column:
    """`value` with `\\` doubled and the separator written `\\s` (literal replacements, no regex)."""
    doubled = F.replace(value, F.lit("\\"), F.lit("\\\\"))
    return F.replace(doubled, F.lit(INSTANCE_SEPARATOR), F.lit("\\s"))


def _instance(slo: Slo) -> Column:
    """The `group_by` values as one string key (empty without grouping), one key per SLO instance."""
    if not slo.group_by:
        return F.lit("")
    values = [F.coalesce(F.col(f"`{label}`").cast("string"), F.lit("")) for label in slo.group_by]
    return values[0] if len(values) == 1 else F.concat_ws(INSTANCE_SEPARATOR, *(_escaped(v) for v in values))


def instance_key(values: Sequence[str]) -> str:
    """The key `_instance` makes of these `group_by` values, in Python (tests, Prometheus rows)."""
    if len(values) == 1:
        return values[0]
    return INSTANCE_SEPARATOR.join(v.replace("\\", "\\\\").replace(INSTANCE_SEPARATOR, "\\s") for v in values)


def instance_labels(slo: Slo, instance: str) -> dict[str, str]:
    """The labels of an instance key made by `_instance`; SourceUnreadable for a key that is not one (a value
    count other than `group_by`'s, an unknown escape), never labels that belong to another instance."""
    if not slo.group_by:
        return {}
    if len(slo.group_by) == 1:
        return {slo.group_by[0]: instance}
    parts = instance.split(INSTANCE_SEPARATOR)
    if len(parts) != len(slo.group_by) or any(_ESCAPED.sub("", p).count("\\") for p in parts):
        raise SourceUnreadable(f"slo {slo.name!r}: instance key {instance!r} does not hold {len(slo.group_by)} values")
    try:
        values = [_ESCAPED.sub(lambda m: _ESCAPES[m[1]], p) for p in parts]
    except KeyError as exc:
        raise SourceUnreadable(f"slo {slo.name!r}: instance key {instance!r} holds an unknown escape") from exc
    return dict(zip(slo.group_by, values, strict=True))


def scored_rows(
    spark: SparkSession,
    slos: Sequence[Slo],
    lo: datetime,
    hi: datetime,
    names: Sequence[str],
    since_s: Sequence[int] | None = None,
) -> DataFrame:
    """Every SLO's rows with time in [lo, hi) or without a usable time, scored; `slo` is the index in `slos`,
    `since` the SLO's `since_s` entry (its period start, as a per-row constant) or null."""
    frames: list[DataFrame] = []
    by_path: dict[tuple[str, str], list[int]] = {}
    for index, slo in enumerate(slos):
        if isinstance(slo.source, EventsSource):
            by_path.setdefault((slo.source.kind, str(slo.source.path)), []).append(index)
        else:
            frame = _prometheus_rows(spark, index, slo, slo.source, lo, hi, names[index])
            since = None if since_s is None else since_s[index]
            frames.append(frame.withColumn("since", F.lit(since).cast("long")))
    for (_, path), members in by_path.items():
        frames.append(_parquet_rows(spark, path, [(i, slos[i], names[i]) for i in members], lo, hi, since_s))
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def _read_parquet(spark: SparkSession, path: str, where: str) -> DataFrame:
    try:
        return spark.read.parquet(path)
    except (AnalysisException, PySparkException) as exc:
        first_line = str(exc).strip().splitlines()[0]
        raise SourceUnreadable(f"{where}: cannot read Parquet under '{path}': {first_line}") from exc


def _parquet_rows(
    spark: SparkSession,
    path: str,
    members: Sequence[tuple[int, Slo, str]],
    lo: datetime,
    hi: datetime,
    since_s: Sequence[int] | None,
) -> DataFrame:
    frame = _read_parquet(spark, path, members[0][2] + ".source.path")
    ts = _epoch_seconds(frame, "time", members[0][2] + ".source.path")
    lo_s, hi_s = int(lo.timestamp()), int(hi.timestamp())
    frame = frame.withColumn("__ts", ts).where(F.col("__ts").isNull() | F.col("__ts").between(lo_s, hi_s - 1))
    return score_frame(frame, members, since_s)


def score_frame(
    frame: DataFrame,
    members: Sequence[tuple[int, Slo, str]],
    since_s: Sequence[int] | None = None,
    carry: Sequence[str] = (),
) -> DataFrame:
    """Scored rows of every (index, SLO, key path) in `members` over one source's rows, whose epoch-second time is
    the column `__ts` (batch or streaming); `carry` keeps source columns alongside (the stream's event time)."""
    parts: list[Column] = []
    for index, slo, where in members:
        keep = F.lit(True)
        if isinstance(slo.source, EventsSource) and slo.source.filter is not None:
            keep = F.coalesce(_condition(frame, slo.source.filter, f"{where}.source.filter"), F.lit(False))
        parts.append(
            F.struct(
                F.lit(index).alias("slo"),
                _instance(slo).alias("instance"),
                F.lit(None if since_s is None else since_s[index]).cast("long").alias("since"),
                keep.alias("keep"),
                _expression(frame, slo.good, f"{where}.good").alias("good"),
                _expression(frame, slo.total, f"{where}.total").alias("total"),
            )
        )
    kept = [F.col(f"`{c}`") for c in carry]
    if len(parts) == 1:
        rows = frame.select(*kept, F.col("__ts").alias("ts"), parts[0].alias("s")).select(*carry, "ts", "s.*")
    else:
        exploded = F.explode(F.array(*parts)).alias("s")
        rows = frame.select(*kept, F.col("__ts").alias("ts"), exploded).select(*carry, "ts", "s.*")
    return _flag(rows.where("keep").drop("keep"), carry)


def _condition(frame: DataFrame, text: str, where: str) -> Column:
    try:
        column = F.expr(text)
        frame.select(column.alias("__c")).schema  # noqa: B018 - analysis only: unknown columns fail here
    except (AnalysisException, PySparkException) as exc:
        first_line = str(exc).strip().splitlines()[0]
        raise SourceUnreadable(f"{where}: Spark cannot evaluate {text!r}: {first_line}") from exc
    return column.cast("boolean")


def _flag(rows: DataFrame, carry: Sequence[str] = ()) -> DataFrame:
    """Add `ok` and the per-reason indicator columns (0/1) summed later into `skipped_rows`."""
    bad_value = (
        F.col("good").isNull()
        | F.col("total").isNull()
        | F.isnan("good")
        | F.isnan("total")
        | (F.col("good") < 0)
        | (F.col("total") < 0)
    )
    null_time = F.col("ts").isNull()
    exceeds = ~null_time & ~bad_value & (F.col("good") > F.col("total"))
    return rows.select(
        *carry,
        "slo",
        "instance",
        *(["since"] if "since" in rows.columns else []),
        "ts",
        "good",
        "total",
        (~null_time & ~bad_value & ~exceeds).alias("ok"),
        null_time.cast("long").alias("n_null_time"),
        (~null_time & bad_value).cast("long").alias("n_bad_value"),
        exceeds.cast("long").alias("n_good_exceeds_total"),
    )


# --- Prometheus -----------------------------------------------------------------------------------------------

_MAX_POINTS = 10_000
"""Prometheus refuses a range query of more than 11,000 points per series: query in chunks below that."""


def fetch_minutes(source: PrometheusSource, query: str, lo: datetime, hi: datetime, where: str) -> dict[int, float]:
    """epoch minute start -> value of `query` one minute later (the events of that minute), over [lo, hi)."""
    values: dict[int, float] = {}
    step = 60
    start = int(lo.timestamp()) + step
    end = int(hi.timestamp())
    with outbound_client(source.login, source.timeout_s, base_url=source.url) as client:
        while start <= end:
            chunk_end = min(end, start + step * (_MAX_POINTS - 1))
            params: dict[str, Any] = {"query": query, "start": start, "end": chunk_end, "step": step}
            try:
                response = client.get("/api/v1/query_range", params=params)
            except httpx.HTTPError as exc:
                shown = redact_url(source.url)
                raise SourceUnreadable(f"{where}: Prometheus at {shown} unreachable: {redact_text(str(exc))}") from exc
            body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
            if response.status_code != 200 or body.get("status") != "success":
                reason = body.get("error") or response.text.strip()[:200]
                raise SourceUnreadable(f"{where}: Prometheus refused {query!r}: HTTP {response.status_code}: {reason}")
            result = body["data"]["result"]
            if len(result) > 1:
                raise SourceUnreadable(f"{where}: {query!r} returns {len(result)} series; aggregate it to one (sum)")
            for series in result:
                for stamp, text in series["values"]:
                    value = float(text)
                    if math.isfinite(value):
                        values[int(float(stamp)) - step] = value
            start = chunk_end + step
    return values


def _prometheus_rows(
    spark: SparkSession, index: int, slo: Slo, source: PrometheusSource, lo: datetime, hi: datetime, where: str
) -> DataFrame:
    good = fetch_minutes(source, slo.good, lo, hi, f"{where}.good")
    total = fetch_minutes(source, slo.total, lo, hi, f"{where}.total")
    rows = [
        (index, "", minute, good.get(minute), value)
        for minute, value in sorted(total.items())
        if lo <= lo + timedelta(seconds=minute - int(lo.timestamp())) < hi
    ]
    schema = "slo int, instance string, ts long, good double, total double"
    return _flag(spark.createDataFrame(rows, schema))
