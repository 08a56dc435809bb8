"""From sums to verdicts without Spark: rollups to results, minute series to alert intervals."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from slo.evaluation import Rollup, alert_intervals, evaluate_instance, floor_minute, sub_hour_windows_s
from slo.policy import WindowSums
from slo.spec import parse_slos

T = datetime(2024, 4, 1, 0, 30, tzinfo=UTC)


def slo(**more: object):  # type: ignore[no-untyped-def]
    entry = {"name": "x", "source": {"type": "events", "path": "/x"}, "good": "ok", "total": "n", "objective": 99.9}
    (found,) = parse_slos([("t", [entry | more])], Path("/"), check_sources=False)
    return found


def test_evaluation_times_are_whole_minutes() -> None:
    assert floor_minute(datetime(2024, 1, 1, 10, 7, 59, 999, tzinfo=UTC)) == datetime(2024, 1, 1, 10, 7, tzinfo=UTC)


def test_a_rollup_becomes_a_result() -> None:
    # 720 hours of 6,000 events; the latest hour all bad, and in it the last 5 and 30 minutes too.
    s = slo()
    assert sub_hour_windows_s(s) == [300, 1800]
    good = np.full(720, 6000.0)
    good[0] = 0.0
    total = np.full(720, 6000.0)
    rollup = Rollup(
        good, total, float(good.sum()), float(total.sum()), {300: WindowSums(500, 500), 1800: WindowSums(3000, 3000)}
    )
    r = evaluate_instance(s, {"topic": "a"}, T, rollup)
    assert r.burn_rates["5m"] == pytest.approx(1000)
    assert r.burn_rates["1h"] == pytest.approx(1000)
    assert r.burn_rates["2h"] == pytest.approx(500)
    assert r.burn_rates["3d"] == pytest.approx(1000 / 72)
    assert [(a.severity, a.firing) for a in r.alerts] == [("page", True), ("ticket", True)]
    assert r.budget_consumed == pytest.approx(6000 / (0.001 * 720 * 6000))  # 6000 bad of a 4,320 budget
    assert r.exhaustion_at == T
    assert r.labels == {"topic": "a"}


def test_an_empty_rollup_is_no_data() -> None:
    r = evaluate_instance(
        slo(), {}, T, Rollup(np.zeros(0), np.zeros(0), 0.0, 0.0, {300: WindowSums(0, 0), 1800: WindowSums(0, 0)})
    )
    assert (r.sli, r.budget_remaining, r.exhaustion_at, r.projected_sli) == (None, None, None, None)
    assert all(p.state == "no_data" for a in r.alerts for p in a.pairs)


def test_alert_intervals_from_cumulative_sums() -> None:
    # 100 events a minute from T-1d; all bad in [T, T+60m). Steps every minute from T-10m to T+2h.
    s = slo()
    first = int((T - timedelta(days=1)).timestamp())
    total = np.full(1440 + 180, 100.0)
    good = total.copy()
    good[1440 : 1440 + 60] = 0
    steps = np.arange(int(T.timestamp()) - 600, int(T.timestamp()) + 7200 + 1, 60, dtype=np.int64)
    intervals = alert_intervals(s, first, good, total, steps)
    page = [(i.start, i.end) for i in intervals if i.severity == "page"]
    # First step whose 1h window holds a bad minute: T+1m. Last bad minute T+59m leaves the 30m window at T+90m.
    assert page == [(T + timedelta(minutes=1), T + timedelta(minutes=90))]
    # The 3d window holds only the day of data there is: 2 bad minutes exceed 1x (200 > 0.001 x 144,200) at
    # T+2m, before the 1d pair needs 5 (500 > 0.003 x 144,000); the 6h window keeps the 1x pair up past T+2h.
    ticket = [(i.start, i.end) for i in intervals if i.severity == "ticket"]
    assert ticket == [(T + timedelta(minutes=2), None)]
