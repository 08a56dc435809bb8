"""The reconciliation's rules as Spark plans (docs/audit.md, "Reconciliation"), the same as audit/reconcile.py's
Python (a test runs both on the same tables): `audit-client` and `audit-broker` rows -> count rows; count rows ->
totals per (cluster, topic, minute, group); totals -> findings. Streaming or not is the caller's: the totals of a
stream are kept in Spark's state under a watermark on `minute` and emitted once a minute is judged."""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from audit.reconcile import COUNT_COLUMNS, KINDS, LARGEST, PRODUCERS, SUMMED

KEY = ("cluster", "topic", "minute", "grp")
"""The totals' key; `grp` is the group, `PRODUCERS` ('') for the producers' counts (`group` is a keyword)."""

_LONG = "CAST(NULL AS BIGINT)"


def count_rows(client: DataFrame, broker: DataFrame) -> DataFrame:
    """Decoded `audit-client` and `audit-broker` rows (with the reader's `__id`) as one frame of count rows: the
    key, and each source's counts with the others' null. A consumer row without a group is named by its `app`; a
    client row of another role is left out."""
    is_producer = "role = 'producer'"
    client_counts = client.where("role IN ('producer', 'consumer')").selectExpr(
        "__id",
        "cluster",
        "topic",
        "minute",
        f"CASE WHEN {is_producer} THEN '{PRODUCERS}' ELSE coalesce(`group`, app) END AS grp",
        *(f"CASE WHEN {is_producer} THEN {c} END AS {c}" for c in ("sent", "acknowledged", "failed")),
        f"{_LONG} AS written",
        f"{_LONG} AS passed",
        "CAST(NULL AS BOOLEAN) AS complete",
        *(f"CASE WHEN NOT {is_producer} THEN {c} END AS {c}" for c in ("received", "processed")),
    )
    broker_counts = broker.selectExpr(
        "__id",
        "cluster",
        "topic",
        "minute",
        "`group` AS grp",
        *(f"{_LONG} AS {c}" for c in ("sent", "acknowledged", "failed")),
        "records_written AS written",
        "records_passed AS passed",
        "complete",
        *(f"{_LONG} AS {c}" for c in ("received", "processed")),
    )
    return client_counts.unionByName(broker_counts)


def totals(rows: DataFrame) -> DataFrame:
    """Count rows summed per key: client counts added, broker counts the largest (audit.reconcile.add_rows)."""
    summed = [F.sum(c).alias(c) for c in SUMMED]
    largest = [F.max(c).alias(c) for c in LARGEST]
    return rows.groupBy(*KEY).agg(*summed, *largest).select(*KEY, *COUNT_COLUMNS)


def _counted(groups: Iterable[str]) -> Column:
    return F.array(*[F.lit(g) for g in sorted(groups)]).cast("array<string>")


CANDIDATES = {
    "unacknowledged": f"CASE WHEN grp = '{PRODUCERS}' THEN sent - acknowledged END",
    "missing": f"CASE WHEN grp = '{PRODUCERS}' THEN acknowledged - minute_written END",
    "skipped": f"CASE WHEN grp <> '{PRODUCERS}' THEN passed - done END",
    "duplicated": f"CASE WHEN grp <> '{PRODUCERS}' THEN done - minute_written END",
    "incomplete": (
        f"CASE WHEN grp <> '{PRODUCERS}' THEN"
        " CASE WHEN written IS NOT NULL AND passed IS NOT NULL THEN CASE WHEN NOT complete THEN written - passed END"
        " ELSE minute_written - done END END"
    ),
}
"""Each finding's count per totals row (kept when positive), as audit.reconcile._counts: `minute_written` is the
minute's written count from any group's broker row, `done` the group's processed count (0 for a counted group the
broker has a row of and that reported nothing)."""


def findings(totals_frame: DataFrame, counted_groups: Iterable[str] = ()) -> DataFrame:
    """Totals of whole minutes (a static frame: one micro-batch's judged minutes) -> findings (minute, cluster,
    topic, group, kind, count), one row per positive count."""
    with_minute = totals_frame.withColumn(
        "minute_written", F.max("written").over(Window.partitionBy("cluster", "topic", "minute"))
    ).withColumn(
        "done",
        F.coalesce(
            F.col("processed"),
            F.when(F.array_contains(_counted(counted_groups), F.col("grp")) & F.col("written").isNotNull(), F.lit(0)),
        ),
    )
    pairs = ", ".join(f"'{kind}', CAST({CANDIDATES[kind]} AS BIGINT)" for kind in KINDS)
    return (
        with_minute.selectExpr("minute", "cluster", "topic", "grp", f"stack({len(KINDS)}, {pairs}) AS (kind, count)")
        .where("count > 0")
        .withColumnRenamed("grp", "group")
    )
