"""The driver's side of a micro-batch without Spark: events summed per minute, late ones left out, and added to the
buckets' values so far, so the table keeps absolute values (the stream end to end:
tests/integration/slo/test_slo_stream.py). Also what the stream reads of Spark's checkpoint logs."""

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from slo.bucket_sums import COLUMNS, RunningSums
from slo.buckets import BUCKET_SCHEMA
from slo.checkpoint import log_field, newest_batch
from slo.stream_buckets import absolute_buckets, minute_sums

T = datetime(2024, 4, 1, 12, 0, tzinfo=UTC)
EVENTS = pa.schema(
    [
        ("slo", pa.int32()),
        ("instance", pa.string()),
        ("us", pa.int64()),
        ("ok", pa.bool_()),
        ("good", pa.float64()),
        ("total", pa.float64()),
        ("n_bad_value", pa.int64()),
        ("n_good_exceeds_total", pa.int64()),
    ]
)


def us(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000


def event(seconds: float, **more: Any) -> dict[str, Any]:
    row = {"slo": 0, "instance": "a", "ok": True, "good": 1.0, "total": 1.0, "n_bad_value": 0}
    return row | {"us": us(T) + int(seconds * 1_000_000), "n_good_exceeds_total": 0} | more


def test_events_sum_per_minute_and_those_at_or_before_the_watermark_are_late() -> None:
    events = pa.Table.from_pylist(
        [
            event(-120),  # at the watermark: late, as Spark's `<=`
            event(-119.5),
            event(-61, good=0.0),
            event(-60, instance="b"),
            event(-59, ok=False, good=None, n_bad_value=1),
            event(-1, good=2.0, total=3.0),
        ],
        schema=EVENTS,
    )
    sums, late = minute_sums(events, (us(T) - 120_000_000) // 1000)
    assert late == 1
    found = sorted(sums.to_pylist(), key=lambda r: (r["instance"], r["minute"]))
    assert found == [
        {"slo": 0, "instance": "a", "minute": us(T) - 120_000_000, "rows": 2, "good": 1.0, "total": 2.0}
        | {"n_bad_value": 0, "n_good_exceeds_total": 0},
        {"slo": 0, "instance": "a", "minute": us(T) - 60_000_000, "rows": 2, "good": 2.0, "total": 3.0}
        | {"n_bad_value": 1, "n_good_exceeds_total": 0},
        {"slo": 0, "instance": "b", "minute": us(T) - 60_000_000, "rows": 1, "good": 1.0, "total": 1.0}
        | {"n_bad_value": 0, "n_good_exceeds_total": 0},
    ]
    assert minute_sums(events.slice(0, 0), 0) == (sums.slice(0, 0), 0)


def test_a_batch_adds_to_the_values_its_minutes_hold_and_writes_absolute_buckets() -> None:
    running = RunningSums(10)
    minute = us(T) // 60_000_000
    held = np.zeros(len(COLUMNS))
    held[:3] = (4, 3.0, 4.0)
    running.set(("x", "a"), minute - 1, held)
    running.set(("x", "a"), minute, held)
    running.set(("x", "a"), minute + 12, held)  # the ring moves on: minute - 1 leaves it, minute is its oldest
    events = pa.Table.from_pylist(
        [event(-60 + 5), event(0), event(12 * 60), event(13 * 60), event(0, instance="new")], schema=EVENTS
    )
    sums, _ = minute_sums(events, 0)
    table, left_out = absolute_buckets(sums, ["x"], running, 7)
    assert table.schema == BUCKET_SCHEMA
    found = {(r["instance"], r["minute"]): (r["rows"], r["good"], r["total"], r["batch"]) for r in table.to_pylist()}
    assert found == {
        ("a", T + timedelta(minutes=12)): (5, 4.0, 5.0, 7),  # 4 held + 1
        ("a", T + timedelta(minutes=13)): (1, 1.0, 1.0, 7),  # not summed yet
        ("new", T): (1, 1.0, 1.0, 7),
    }
    assert left_out == 2  # minutes -1 and 0: as old as the ring or older, their values unknown


def test_the_checkpoint_logs_give_the_newest_batch_and_the_watermark() -> None:
    assert newest_batch(["0", "1", ".1.crc", "12", "3.tmp"]) == 12
    assert newest_batch([]) == -1
    offsets = 'v1\n{"batchWatermarkMs":1700000000000,"batchTimestampMs":1,"conf":{}}\n{"t":{"0":5}}'
    assert log_field(offsets, "batchWatermarkMs") == 1_700_000_000_000
    assert log_field('v1\n{"nextBatchWatermarkMs":7}', "nextBatchWatermarkMs") == 7
    assert log_field("v1\n", "nextBatchWatermarkMs") == 0
