"""The stream's evaluation of all instances at once gives, bit for bit, what `rollup_of` + `evaluate_instance` give
one instance at a time (the batch job's equality is tests/integration/slo/test_slo_stream.py)."""

from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from slo.bucket_sums import COLUMNS, RunningSums
from slo.buckets import evaluate_sums, ring_minutes, rollup_of, span_min
from slo.evaluation import completed, evaluate_instance, floor_minute, sub_hour_windows_s
from slo.model import Slo
from slo.policy import (
    MINUTE_S,
    Rates,
    seconds_to_exhaustion_rolling,
    seconds_to_exhaustion_rolling_many,
)
from slo.results import SloResult
from slo.sources import instance_labels
from slo.spec import parse_slos

T = datetime(2024, 3, 31, 1, 17, tzinfo=UTC)  # Europe/Berlin changes to summer time this night


def slos() -> list[Slo]:
    base = {"source": {"type": "events", "path": "/x"}, "good": "ok", "total": "n", "group_by": ["topic"]}
    entries = [
        base | {"name": "rolling", "objective": 99.9, "window": "7d"},
        base | {"name": "month", "objective": 99.0, "window": {"calendar": "1M", "timezone": "Europe/Berlin"}},
        base | {"name": "week", "objective": 95.0, "window": {"calendar": "1w", "timezone": "UTC"}},
        base
        | {
            "name": "slices",
            "objective": 99.0,
            "window": "3d",
            "budgeting": {"method": "timeslices", "slice": "1m", "slice_target": 90},
            "alerting": {"page": {"windows": [{"long": "2h", "short": "10m", "factor": 10}]}, "min_events": 50},
        },
        base | {"name": "unseen", "objective": 99.0, "window": "3d"},
    ]
    return parse_slos([("t", entries)], Path("/"), check_sources=False)


def one_by_one(specs: list[Slo], at: datetime, sums: RunningSums) -> list[SloResult]:
    """The evaluation as it was before: a `Rollup` and `evaluate_instance` per instance."""
    at = floor_minute(at)
    at_s = int(at.timestamp())
    lo_s = at_s - span_min(specs, at) * MINUTE_S
    subs = sorted({w for s in specs for w in sub_hour_windows_s(s)})
    index = {s.name: i for i, s in enumerate(specs)}
    results, seen = [], set()
    for name, instance in sums.instances():
        i = index[name]
        rollup = rollup_of(specs[i], sums, (name, instance), at_s, lo_s, subs)
        if rollup is not None:
            seen.add(i)
            results.append(evaluate_instance(specs[i], instance_labels(specs[i], instance), at, rollup))
    return completed(specs, at, results, seen, subs)


@pytest.mark.parametrize("fractional", [False, True])
def test_all_instances_at_once_give_the_one_by_one_results(fractional: bool) -> None:
    # Per SLO, instances with histories of different lengths, gaps, outages (firing pairs, spent budgets), minutes
    # after `at`, and one with rows only before the evaluated span.
    rng = np.random.default_rng(11)
    specs = [s for s in slos() if s.name != "unseen"] + [slos()[-1]]
    sums = RunningSums(ring_minutes(specs) + 1440)
    at_m = int(T.timestamp()) // MINUTE_S
    for spec in specs[:-1]:
        for k in range(12):
            first = at_m - int(rng.integers(1, 40 * 1440)) if k % 3 else at_m - 40 * 1440
            minutes = np.arange(first, at_m + (5 if k == 4 else 0))
            minutes = minutes[rng.random(len(minutes)) < (0.3 if k % 4 == 1 else 0.97)]
            if k == 7:
                minutes = minutes[minutes < at_m - 36 * 1440]  # nothing in the span
            if len(minutes) == 0:
                continue
            values = np.zeros((len(minutes), len(COLUMNS)))
            total = rng.poisson(50, len(minutes)).astype(np.float64) * (0.37 if fractional else 1.0)
            bad = np.minimum(total, rng.poisson([0.01, 0.5, 5.0, 40.0][k % 4], len(minutes)))
            values[:, 0] = 1 + (total > 0)
            values[:, 1], values[:, 2] = total - bad, total
            values[:, 3] = rng.random(len(minutes)) < 0.01
            if spec.timeslice_target is None:
                values[:, 5], values[:, 6] = total - bad, total
            else:
                target = spec.timeslice_target
                values[:, 6] = total > 0
                values[:, 5] = (total > 0) & ((total - bad) * target.denominator >= total * target.numerator)
            sums.load((spec.name, f"i{k:02d}"), minutes, values)
    seen: list[SloResult] = []
    for at in (T, T + timedelta(minutes=3, seconds=20), T + timedelta(days=9)):
        expected = one_by_one(specs, at, sums)
        assert evaluate_sums(specs, at, sums) == expected
        seen += expected
    assert any(a.firing for r in seen for a in r.alerts)
    assert any(r.exhaustion_at is not None for r in seen)
    assert {p.state for r in seen for a in r.alerts for p in a.pairs} >= {"firing", "ok", "no_data"}


def test_exhaustion_of_many_rows_is_each_rows_own() -> None:
    rng = np.random.default_rng(5)
    budget = Fraction(1, 100)
    for length in (0, 1, 7, 9, 130, 720):
        total = rng.poisson(1000, (40, length)).astype(np.float64) * 0.7
        bad = np.minimum(total, rng.poisson(rng.choice([1.0, 9.0, 12.0], (40, 1)), (40, length)))
        bad_rate, total_rate = rng.random(40) * 0.2, np.full(40, 16.0)
        found = seconds_to_exhaustion_rolling_many(bad, total, bad_rate, total_rate, budget)
        expected = [
            seconds_to_exhaustion_rolling(bad[i], total[i], Rates(float(bad_rate[i]), float(total_rate[i])), budget)
            for i in range(40)
        ]
        assert found == expected
        assert length < 2 or {type(x) for x in found} == {float, type(None)}
