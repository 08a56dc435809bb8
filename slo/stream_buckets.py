"""A micro-batch's scored events -> the minute buckets the stream writes (pure): the driver sums the batch's events
per SLO instance and minute and adds them to the values the running sums hold, so Spark keeps one stateful
operator (the deduplication) instead of two, and each bucket in the table stays an absolute value.

Events at or before the batch's watermark are left out and counted as late: Spark's deduplication judges lateness
by the previous micro-batch's watermark (so that chained operators agree), this filter by the batch's own, the one
Spark's batch without data would have applied, so that batch need not run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from slo.bucket_sums import RunningSums
from slo.buckets import BUCKET_SCHEMA

EVENT_COLUMNS = ("slo", "instance", "us", "ok", "good", "total", "n_bad_value", "n_good_exceeds_total")
"""The stream's scored events (slo/stream.py's `bucket_frame`): SLO index, instance key, event time in microseconds
since the epoch, whether good/total are usable, and the skipped-row indicators."""

_MINUTE_US = 60_000_000
_SUMMED = ("rows", "good", "total", "n_bad_value", "n_good_exceeds_total")


def minute_sums(events: pa.Table, watermark_ms: int) -> tuple[pa.Table, int]:
    """The events later than `watermark_ms` summed per (slo, instance, minute) as the stream's aggregation did
    (`rows` every event, `good`/`total` the usable ones, the skipped ones by reason), and how many were late."""
    us = events["us"].to_numpy(zero_copy_only=False).astype(np.int64)
    late = us <= watermark_ms * 1000
    dropped = int(late.sum())
    if dropped:
        events, us = events.filter(pa.array(~late)), us[~late]
    ok = pc.fill_null(events["ok"], False)
    frame = pa.table(
        {
            "slo": events["slo"],
            "instance": events["instance"],
            "minute": pa.array(us - us % _MINUTE_US),
            "rows": pa.array(np.ones(events.num_rows, dtype=np.int64)),
            "good": pc.if_else(ok, pc.cast(events["good"], pa.float64()), 0.0),
            "total": pc.if_else(ok, pc.cast(events["total"], pa.float64()), 0.0),
            "n_bad_value": pc.fill_null(pc.cast(events["n_bad_value"], pa.int64()), 0),
            "n_good_exceeds_total": pc.fill_null(pc.cast(events["n_good_exceeds_total"], pa.int64()), 0),
        }
    )
    summed = frame.group_by(["slo", "instance", "minute"]).aggregate([(c, "sum") for c in _SUMMED])
    return pa.table(
        {c: summed[c] for c in ("slo", "instance", "minute")} | {c: summed[f"{c}_sum"] for c in _SUMMED}
    ), dropped


def absolute_buckets(sums: pa.Table, names: Sequence[str], running: RunningSums, batch_id: int) -> tuple[pa.Table, int]:
    """`minute_sums` added to each minute's values in `running` (none for an instance or a minute it has not
    summed yet): the table entry of micro-batch `batch_id`, rows of BUCKET_SCHEMA; and the events left out. A
    minute older than its instance's ring has no value to add to: its events are left out, as the sums leave
    them out."""
    if sums.num_rows == 0:
        return BUCKET_SCHEMA.empty_table(), 0
    slo_names = [names[int(i)] for i in sums["slo"].to_pylist()]
    instances = sums["instance"].to_pylist()
    minutes_us = sums["minute"].to_numpy().astype(np.int64)
    values = np.column_stack([sums[c].to_numpy(zero_copy_only=False).astype(np.float64) for c in _SUMMED])
    known = np.ones(len(values), dtype=bool)
    members: dict[tuple[str, str], list[int]] = {}
    for i, key in enumerate(zip(slo_names, instances, strict=True)):
        members.setdefault(key, []).append(i)
    for key, found in members.items():
        rows = np.array(found)
        before, held = running.minute_values(key, minutes_us[rows] // _MINUTE_US)
        values[rows] += before[:, : len(_SUMMED)]
        known[rows] = held
    left_out = int(values[~known, 0].sum())
    keep = np.flatnonzero(known)
    table = pa.table(
        {
            "slo": pa.array([slo_names[i] for i in keep], pa.string()),
            "instance": pa.array([instances[i] for i in keep], pa.string()),
            "minute": pa.array(minutes_us[keep], pa.timestamp("us", tz="UTC")),
            "rows": pa.array(values[keep, 0].astype(np.int64)),
            "good": pa.array(values[keep, 1]),
            "total": pa.array(values[keep, 2]),
            "n_bad_value": pa.array(values[keep, 3].astype(np.int64)),
            "n_good_exceeds_total": pa.array(values[keep, 4].astype(np.int64)),
            "batch": pa.array(np.full(len(keep), batch_id, dtype=np.int64)),
        },
        schema=BUCKET_SCHEMA,
    )
    return table, left_out
