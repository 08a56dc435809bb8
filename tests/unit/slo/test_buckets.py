"""Minute buckets without Spark: the ring keeps each bucket's latest emission, and buckets evaluate to the results
slo/evaluation.py gives the same sums (the batch job's equality is tests/integration/slo/test_slo_stream.py)."""

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from slo.bucket_sums import COLUMNS, RunningSums
from slo.buckets import (
    BUCKET_SCHEMA,
    BucketRing,
    add_buckets,
    backtest_table,
    evaluate_table,
    read_table,
    rollup_of,
    span_min,
)
from slo.evaluation import alert_intervals, backtest_start, evaluate_instance, sub_hour_windows_s
from slo.model import Slo
from slo.spec import parse_slos

T = datetime(2024, 4, 1, 12, 0, tzinfo=UTC)


def slo(**more: object) -> Slo:
    entry = {"name": "x", "source": {"type": "events", "path": "/x"}, "good": "ok", "total": "n", "objective": 99.0}
    (found,) = parse_slos([("t", [entry | more])], Path("/"), check_sources=False)
    return found


def table(rows: list[dict[str, Any]]) -> pa.Table:
    full = [
        {"slo": "x", "instance": "", "rows": 1, "n_bad_value": 0, "n_good_exceeds_total": 0, "batch": 0} | r
        for r in rows
    ]
    return pa.Table.from_pylist(full, schema=BUCKET_SCHEMA)


def minute(offset: int) -> datetime:
    return T + timedelta(minutes=offset)


def test_the_latest_emission_of_a_bucket_wins_whatever_the_file_order() -> None:
    ring = BucketRing(10)
    ring.update(
        table(
            [
                {"minute": minute(-2), "good": 5.0, "total": 6.0, "batch": 3},
                {"minute": minute(-2), "good": 1.0, "total": 2.0, "batch": 1},
                {"minute": minute(-1), "good": 4.0, "total": 4.0, "batch": 2},
            ]
        )
    )
    (series,) = ring.series(int(minute(-3).timestamp()), int(T.timestamp())).values()
    assert series.good.tolist() == [0.0, 5.0, 4.0]
    assert series.total.tolist() == [0.0, 6.0, 4.0]


def test_a_ring_forgets_minutes_past_its_capacity_and_refuses_a_longer_view() -> None:
    ring = BucketRing(3)
    ring.update(
        table([{"minute": minute(-4), "good": 1.0, "total": 1.0}, {"minute": minute(-1), "good": 2.0, "total": 2.0}])
    )
    (series,) = ring.series(int(minute(-3).timestamp()), int(T.timestamp())).values()
    assert series.total.tolist() == [0.0, 0.0, 2.0]
    assert ring.series(int(minute(-4).timestamp()), int(minute(-2).timestamp())) == {}  # minute -1 took its slot
    with pytest.raises(ValueError, match="4 minutes"):
        ring.series(int(minute(-4).timestamp()), int(T.timestamp()))


def test_buckets_roll_up_as_the_job_sums_rows() -> None:
    # 100 events a minute for 2 days; the last 20 minutes half bad; minute -90 held one bad-valued row.
    s = slo()
    rows = [
        {"minute": minute(-m), "good": 50.0 if m <= 20 else 100.0, "total": 100.0, "rows": 100}
        for m in range(1, 2 * 1440 + 1)
    ]
    rows[89] |= {"n_bad_value": 1, "rows": 101}
    span = span_min([s], T)
    sums = RunningSums(span + 2)
    add_buckets(sums, [s], table(rows))
    at_s = int(T.timestamp())
    rollup = rollup_of(s, sums, ("x", ""), at_s, at_s - span * 60, sub_hour_windows_s(s))
    assert rollup is not None
    assert len(rollup.hour_total) == 48
    assert rollup.hour_good[0] == 100 * 60 - 20 * 50
    assert rollup.hour_total[1:].tolist() == [6000.0] * 47
    assert rollup.sub_hour[300].bad == 250 and rollup.sub_hour[1800].bad == 1000
    assert rollup.period_total == 2 * 1440 * 100
    assert rollup.skipped == {"null_time": 0, "bad_value": 1, "good_exceeds_total": 0}
    (result,) = evaluate_table([s], T + timedelta(seconds=42), table(rows))
    assert result == evaluate_instance(s, {}, T, rollup)
    assert result.burn_rates["5m"] == pytest.approx(50.0)


def test_running_sums_take_late_buckets_and_gaps() -> None:
    sums = RunningSums(10)
    one = np.ones(len(COLUMNS))
    sums.set(("x", ""), 100, one)
    sums.set(("x", ""), 104, 2 * one)  # minutes 101-103 empty
    sums.set(("x", ""), 101, 3 * one)  # late
    sums.set(("x", ""), 104, 5 * one)  # emitted again: replaces
    before = sums.before(("x", ""), np.array([100, 101, 102, 105, 200]))[:, 0]
    assert before.tolist() == [0.0, 1.0, 4.0, 9.0, 9.0]
    sums.set(("x", ""), 94, 7 * one)  # older than the ring: ignored
    with pytest.raises(ValueError, match="older than the ring"):
        sums.before(("x", ""), np.array([95]))


def test_timeslice_buckets_count_one_slice_per_minute_with_events() -> None:
    s = slo(budgeting={"method": "timeslices", "slice": "1m", "slice_target": 90})
    rows = [
        {"minute": minute(-3), "good": 9.0, "total": 10.0},
        {"minute": minute(-2), "good": 8.0, "total": 10.0},
        {"minute": minute(-1), "good": 0.0, "total": 0.0, "n_bad_value": 1},
    ]
    (result,) = evaluate_table([s], T, table(rows))
    assert (result.good, result.total, result.budgeting) == (1.0, 2.0, "timeslices")
    assert result.skipped_rows["bad_value"] == 1


def test_an_slo_without_buckets_is_one_no_data_result_and_grouped_instances_keep_their_labels() -> None:
    grouped = slo(name="g", group_by=["topic"])
    rows = [{"slo": "g", "instance": t, "minute": minute(-1), "good": 1.0, "total": 1.0} for t in ("b", "a")]
    results = evaluate_table([slo(), grouped], T, table(rows))
    assert [(r.name, r.labels, r.sli) for r in results] == [
        ("x", {}, None),
        ("g", {"topic": "a"}, 1.0),
        ("g", {"topic": "b"}, 1.0),
    ]


def test_a_backtest_of_buckets_is_the_alert_intervals_of_their_minutes() -> None:
    s = slo()
    start, end = T, T + timedelta(hours=3)
    first = int(backtest_start(s, start).timestamp())
    n = (int(end.timestamp()) - first) // 60
    total = np.full(n, 100.0)
    good = total.copy()
    outage = (int(T.timestamp()) + 3600 - first) // 60
    good[outage : outage + 30] = 0.0
    rows = [
        {"minute": datetime.fromtimestamp(first + 60 * i, UTC), "good": good[i], "total": total[i]} for i in range(n)
    ]
    (result,) = backtest_table([s], start, end, timedelta(minutes=1), table(rows))
    steps = np.arange(int(start.timestamp()), int(end.timestamp()) + 1, 60, dtype=np.int64)
    assert result.alerts == tuple(alert_intervals(s, first, good, total, steps))
    assert result.alerts  # the outage pages


def test_the_table_is_read_from_its_files_skipping_hidden_ones(tmp_path: Path) -> None:
    pq.write_table(table([{"minute": minute(-1), "good": 1.0, "total": 1.0}]), tmp_path / "part-1.parquet")
    pq.write_table(table([{"minute": minute(-1), "good": 0.0, "total": 1.0}]), tmp_path / ".part-2.parquet.tmp")
    assert read_table(tmp_path).num_rows == 1
    with pytest.raises(FileNotFoundError):
        read_table(tmp_path / "absent")


@pytest.mark.parametrize("budgeting", ["occurrences", {"method": "timeslices", "slice": "1m", "slice_target": 90}])
def test_a_refill_loaded_whole_sums_as_the_buckets_taken_one_at_a_time(budgeting: object) -> None:
    # A restart loads each instance's buckets at once (RunningSums.load); a running stream takes them one by one
    # (RunningSums.set). Random buckets with late re-emissions, some older than the ring, give the same sums.
    rng = np.random.default_rng(3)
    s = slo(budgeting=budgeting)
    rows = [
        {
            "instance": f"i{int(rng.integers(0, 3))}",
            "minute": minute(-int(rng.integers(0, 40))),
            "good": float(rng.integers(0, 10)),
            "total": 10.0,
            "batch": batch,
        }
        for batch in range(300)
    ]
    whole, stepped = RunningSums(30), RunningSums(30)
    add_buckets(whole, [s], table(rows))
    for row in rows:  # one table per bucket: after the first, every instance goes through `set`
        add_buckets(stepped, [s], table([row]))
    assert whole.instances() == stepped.instances()
    asked = np.array([int(minute(-k).timestamp()) // 60 for k in range(0, 29)])
    for key in whole.instances():  # windows are differences of sums (the stepped ones also hold older minutes)
        loaded, taken = whole.before(key, asked), stepped.before(key, asked)
        assert np.array_equal(loaded - loaded[-1], taken - taken[-1]), key


def test_buckets_of_slos_not_evaluated_are_left_out_of_the_sums() -> None:
    rows = [
        {"slo": "other", "instance": "a", "minute": minute(-2), "good": 1.0, "total": 1.0},
        {"slo": "x", "instance": "a", "minute": minute(-1), "good": 1.0, "total": 2.0},
    ]
    sums = RunningSums(30)
    add_buckets(sums, [slo()], table(rows))
    assert sums.instances() == [("x", "a")]
    add_buckets(sums, [slo()], table(rows[:1]))
    assert sums.instances() == [("x", "a")]


@pytest.mark.parametrize("capacity", [120, 121])  # whole hours: minutes an hour apart in adjacent rows
def test_running_sums_are_the_sums_of_the_minutes_they_took(capacity: int) -> None:
    # Random loads and sets, late and gapped, against a plain dict of the minutes each took (the ones the ring
    # refused left out): every sum before a minute still in the ring is the dict's.
    rng = np.random.default_rng(8)
    sums = RunningSums(capacity)
    taken: dict[str, dict[int, np.ndarray]] = {"a": {}, "b": {}}
    first = np.unique(rng.integers(1000, 1400, 150))
    values = rng.integers(0, 9, (len(first), len(COLUMNS))).astype(np.float64)
    sums.load(("x", "a"), first, values)
    taken["a"] = {int(m): v for m, v in zip(first, values, strict=True) if m >= first.max() - capacity + 1}
    for step in range(400):
        key = "ab"[step % 2]
        last = max(taken[key], default=0)
        minute = int(rng.integers(last - capacity - 5, last + 90)) if taken[key] else 2000
        value = rng.integers(0, 9, len(COLUMNS)).astype(np.float64)
        if taken[key] and minute <= last - capacity + 1:
            sums.set(("x", key), minute, value)  # ignored
            continue
        sums.set(("x", key), minute, value)
        taken[key][minute] = value
    for key, minutes in taken.items():
        newest = max(minutes)
        asked = np.arange(newest - capacity + 2, newest + 3)
        expected = [sum((v for m, v in minutes.items() if m < a), np.zeros(len(COLUMNS))) for a in asked]
        assert np.array_equal(sums.before(("x", key), asked), np.array(expected)), key
        known, held = sums.minute_values(("x", key), asked)
        assert held.tolist() == [a > newest - capacity + 1 for a in asked]
        assert np.array_equal(known[held], np.array([minutes.get(int(a), np.zeros(len(COLUMNS))) for a in asked[held]]))
