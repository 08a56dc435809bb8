"""The SLO job's scenarios: synthetic event logs with hand-computed expectations, run through
the real PySpark job. All SLOs are evaluated together at T (2024-04-01T00:30Z) in one job run, and the outage and
slow-burn SLOs are backtested together, so the suite pays for two Spark jobs, not one per scenario. Both jobs run
twice, in `local[2]` and on the standalone cluster (a master and two workers, tests/fixtures/spark.py): every
scenario test checks each, and one test asserts the two give identical results.

Unless a row says otherwise: objective 99.9 % (budget B = 0.001), rolling 30d, Workbook pairs (page 14.4x 1h/5m,
6x 6h/30m; ticket 3x 1d/2h, 1x 3d/6h), windows [t - W, t) over per-minute rows.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pyspark.sql import SparkSession

from devstack.spark_standalone import SparkStandalone
from slo import job
from slo.model import Slo
from slo.results import BacktestResult, SloResult
from slo.spec import parse_slos
from tests.fixtures.spark import T, at, minutes, spark_on, write_rows

pytestmark = pytest.mark.integration

DAY_MIN = 1440


def _spec(name: str, path: Path, good: str, total: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "source": {"type": "events", "path": str(path)}, "good": good, "total": total} | {
        "objective": 99.9,
        **more,
    }


def _logs(root: Path) -> list[Any]:
    """Write every scenario's log under `root`; returns the spec entries (our form and OpenSLO)."""
    specs: list[Any] = []
    # steady-at-budget: 1,000 events a minute, exactly 1 bad each minute for 30 days -> burn rate 1.0 everywhere.
    count = 30 * DAY_MIN
    write_rows(root / "steady", minutes(at(-count), count), ok=np.full(count, 999), n=np.full(count, 1000))
    specs.append(_spec("steady-at-budget", root / "steady", "ok", "n"))
    # outage: 100 events a minute for 4 days before T and 3 h after; all bad in [T - 30m, T + 30m).
    count = 4 * DAY_MIN + 180
    good = np.full(count, 100)
    good[4 * DAY_MIN - 30 : 4 * DAY_MIN + 30] = 0
    write_rows(root / "outage", minutes(at(-4 * DAY_MIN), count), ok=good, n=np.full(count, 100))
    specs.append(_spec("outage", root / "outage", "ok", "n"))
    # slow-burn: 4 bad in 1,000 each minute for 4 days -> burn rate 4: above the 3x and 1x tickets, below 6x pages.
    count = 4 * DAY_MIN
    write_rows(root / "slow", minutes(at(-count), count), ok=np.full(count, 996), n=np.full(count, 1000))
    specs.append(_spec("slow-burn", root / "slow", "ok", "n"))
    # low traffic: one probe every 6 minutes (10 an hour) for 4 days; the last one, at T - 6m, failed.
    count = 4 * DAY_MIN // 6
    flags = [True] * (count - 1) + [False]
    write_rows(root / "sparse", minutes(at(-4 * DAY_MIN), count, every_s=360), ok=flags)
    specs.append(_spec("low-traffic-unguarded", root / "sparse", "ok", "true"))
    specs.append(_spec("low-traffic-guarded", root / "sparse", "ok", "true", alerting={"min_events": 1000}))
    # calendar: 100 a minute from 2024-03-31T00:00Z to T, all bad 22:00-22:59Z (= 00:00-00:59 on 1 April in Berlin).
    count = 24 * 60 + 30
    good = np.full(count, 100)
    good[22 * 60 : 23 * 60] = 0
    write_rows(root / "month", minutes(at(-count), count), ok=good, n=np.full(count, 100))
    berlin = {"calendar": "1M", "timezone": "Europe/Berlin"}
    specs.append(_spec("calendar-berlin", root / "month", "ok", "n", window=berlin))
    specs.append(_spec("calendar-utc", root / "month", "ok", "n", window={"calendar": "1M"}))
    # no data: rows only 40 to 35 days before T; and a source that stopped 2 h before T after 4 h of errors.
    write_rows(root / "old", minutes(at(-40 * DAY_MIN), 60), ok=np.full(60, 0), n=np.full(60, 100))
    specs.append(_spec("no-data", root / "old", "ok", "n"))
    count = 3 * DAY_MIN
    good = np.full(count, 100)
    good[-240:] = 0
    write_rows(root / "stopped", minutes(at(-count - 120), count), ok=good, n=np.full(count, 100))
    specs.append(_spec("stopped", root / "stopped", "ok", "n"))
    # timeslices: two consumer groups' lag every minute for 7 days; group g1 lags 45 s when minute % 100 == 0.
    count = 7 * DAY_MIN
    lag = np.where(np.arange(count) % 100 == 0, 45.0, 3.0)
    times = minutes(at(-count), count)
    write_rows(
        root / "lag", times + times, group=["g1"] * count + ["g2"] * count, time_lag_s=np.concatenate([lag, lag * 0])
    )
    specs.append(
        {
            "name": "lag-minutes",
            "source": {"type": "lag", "path": str(root / "lag")},
            "good": "time_lag_s < 30",
            "total": "true",
            "objective": 99,
            "window": "7d",
            "budgeting": {"method": "timeslices", "slice_target": 100},
        }
    )
    # exhaustion: 1,000 a minute over the whole 30d window; clean, except 2 bad a minute in the last 6 h (2x burn).
    count = 30 * DAY_MIN
    good = np.full(count, 1000)
    good[-360:] = 998
    write_rows(root / "burning", minutes(at(-count), count), ok=good, n=np.full(count, 1000))
    specs.append(_spec("exhaustion", root / "burning", "ok", "n"))
    # OpenSLO: the slow-burn log again, written as an OpenSLO v1 SLO.
    source: dict[str, Any] = {"type": "events", "spec": {"path": str(root / "slow")}}
    specs.append(
        {
            "apiVersion": "openslo/v1",
            "kind": "SLO",
            "metadata": {"name": "slow-burn-openslo"},
            "spec": {
                "indicator": {
                    "metadata": {"name": "ok"},
                    "spec": {
                        "ratioMetric": {
                            "counter": True,
                            "good": {"metricSource": {**source, "spec": {**source["spec"], "query": "ok"}}},
                            "total": {"metricSource": {**source, "spec": {**source["spec"], "query": "n"}}},
                        }
                    },
                },
                "timeWindow": [{"duration": "30d", "isRolling": True}],
                "budgetingMethod": "Occurrences",
                "objectives": [{"target": 0.999}],
            },
        }
    )
    # malformed rows: 60 good rows in the last hour, plus 3 without time, 2 unparsable/NaN values, 1 good > total.
    malformed_times = [*minutes(at(-60), 60), None, None, None, at(-10), at(-9), at(-8)]
    good_text = ["1"] * 60 + ["1", "1", "1", "abc", "1", "2"]
    totals = [1.0] * 60 + [1.0, 1.0, 1.0, 1.0, float("nan"), 1.0]
    write_rows(root / "malformed", malformed_times, good_s=good_text, n=totals)
    specs.append(_spec("malformed-rows", root / "malformed", "good_s", "n"))
    # group_by: two topics, 100 a minute for 4 days; topic b is all bad in the last 30 minutes.
    count = 4 * DAY_MIN
    good_b = np.full(count, 100)
    good_b[-30:] = 0
    times = minutes(at(-count), count)
    write_rows(
        root / "topics",
        times + times,
        topic=["a"] * count + ["b"] * count,
        ok=np.concatenate([good_b * 0 + 100, good_b]),
    )
    specs.append(_spec("per-topic", root / "topics", "ok", "100", group_by=["topic"]))
    return specs


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> list[Slo]:
    return parse_slos([("scenarios", _logs(tmp_path_factory.mktemp("slo-scenarios")))], None)


def _run(session: SparkSession, slos: list[Slo]) -> dict[str, Any]:
    """Every SLO evaluated at T, and three backtested, in one Spark application."""
    chosen = [s for s in slos if s.name in ("outage", "slow-burn", "steady-at-budget")]
    return {
        "evaluate": job.evaluate(session, slos, T),
        "backtest": job.backtest(session, chosen, at(-120), at(180), timedelta(minutes=1)),
        "master": session.sparkContext.master,
        "app": session.sparkContext.applicationId,
    }


@pytest.fixture(scope="module")
def local_run(specs: list[Slo], spark: SparkSession) -> dict[str, Any]:
    return _run(spark_on("local[2]"), specs)


@pytest.fixture(scope="module")
def standalone_run(specs: list[Slo], spark_standalone: SparkStandalone, spark: SparkSession) -> dict[str, Any]:
    return _run(spark_on(spark_standalone.master_url), specs)


@pytest.fixture(scope="module", params=["local", "standalone"])
def scenarios(request: pytest.FixtureRequest) -> dict[str, Any]:
    """One master's results: each scenario test runs once per master (the local ones first)."""
    found: dict[str, Any] = request.getfixturevalue(f"{request.param}_run")
    return found


def result(scenarios: dict[str, Any], name: str, **labels: str) -> SloResult:
    evaluated: list[SloResult] = scenarios["evaluate"]
    (found,) = [r for r in evaluated if r.name == name and all(r.labels.get(k) == v for k, v in labels.items())]
    return found


def firing(r: SloResult) -> dict[str, bool]:
    return {a.severity: a.firing for a in r.alerts}


def states(r: SloResult, severity: str) -> list[str]:
    return [p.state for a in r.alerts if a.severity == severity for p in a.pairs]


def test_steady_burn_at_exactly_the_budget_fires_nothing(scenarios: dict[str, Any]) -> None:
    r = result(scenarios, "steady-at-budget")
    assert r.burn_rates == {w: pytest.approx(1.0) for w in ("5m", "30m", "1h", "2h", "6h", "1d", "3d")}
    assert firing(r) == {"page": False, "ticket": False}  # 0.001 > 1 x 0.001 is false: strict >, exact
    assert r.sli == pytest.approx(0.999)
    assert r.total == 30 * DAY_MIN * 1000
    assert r.budget_remaining == pytest.approx(0.0, abs=1e-9)
    assert r.exhaustion_at is None  # exactly on budget: it never goes over


def test_a_full_outage_pages_at_once(scenarios: dict[str, Any]) -> None:
    # At T the outage is 30 minutes old: 5m = 500/500 bad (1000x), 1h = 3000/6000 (500x), 6h = 3000/36000.
    r = result(scenarios, "outage")
    assert r.burn_rates["5m"] == pytest.approx(1000)
    assert r.burn_rates["1h"] == pytest.approx(500)
    assert r.burn_rates["6h"] == pytest.approx(3000 / 36000 / 0.001)
    assert firing(r) == {"page": True, "ticket": True}
    assert r.exhaustion_at == T  # 3,000 bad of 432,000 + 3,000 events already exceeds 0.1 %


def test_the_outage_backtest_pages_within_a_minute_and_resolves_after(scenarios: dict[str, Any]) -> None:
    # Bad minutes are [T-30m, T+30m). Page: the 1h window first exceeds 1.44 % at T-29m (100/6000); after the
    # outage the 30m window still holds a bad minute until T+59m, so the page ends at T+60m. Ticket: the 1d and 3d
    # windows need 5 bad minutes (500/144,000 > 0.3 %; 500/432,000 > 0.1 %) -> T-25m; the 6h window keeps the 1x
    # pair true until T+6h30m, past the end of the backtest (end null).
    (r,) = [b for b in scenarios["backtest"] if b.name == "outage"]
    assert [(i.severity, i.start, i.end) for i in r.alerts] == [
        ("page", at(-29), at(60)),
        ("ticket", at(-25), None),
    ]


def test_a_slow_burn_opens_a_ticket_and_no_page(scenarios: dict[str, Any]) -> None:
    r = result(scenarios, "slow-burn")
    assert r.burn_rates["1h"] == pytest.approx(4.0)
    assert firing(r) == {"page": False, "ticket": True}
    assert states(r, "page") == ["ok", "ok"]
    (b,) = [x for x in scenarios["backtest"] if x.name == "slow-burn"]
    assert [(i.severity, i.start) for i in b.alerts] == [("ticket", at(-120))]  # from the first step, never a page
    (steady,) = [x for x in scenarios["backtest"] if x.name == "steady-at-budget"]
    assert steady.alerts == ()


def test_the_low_traffic_guard(scenarios: dict[str, Any]) -> None:
    # 10 probes an hour, one failed at T-6m: 1 of 5 in 30m, 1 of 60 in 6h (>0.6 %) pages without the guard (the
    # Workbook's 100x burn of one failure); the 5m window holds no probe, so the 1h/5m pair has no data.
    unguarded = result(scenarios, "low-traffic-unguarded")
    assert states(unguarded, "page") == ["no_data", "firing"]
    assert firing(unguarded) == {"page": True, "ticket": True}
    guarded = result(scenarios, "low-traffic-guarded")  # min_events 1,000: every long window holds fewer
    assert states(guarded, "page") == ["no_data", "low_traffic"]
    assert states(guarded, "ticket") == ["low_traffic", "low_traffic"]
    assert firing(guarded) == {"page": False, "ticket": False}
    assert guarded.burn_rates == unguarded.burn_rates  # the guard changes verdicts, not figures


def test_a_calendar_month_starts_at_local_midnight(scenarios: dict[str, Any]) -> None:
    # The bad hour 22:00-22:59Z on 31 March is April in Berlin (00:00 CEST) but March in UTC.
    berlin = result(scenarios, "calendar-berlin")
    assert berlin.period_start == at(-150) and berlin.period_end == at(-150) + timedelta(days=30)
    assert (berlin.good, berlin.total) == (9000, 15000)
    assert berlin.sli == pytest.approx(0.6)
    assert berlin.budget_remaining == pytest.approx(1 - 6000 / 15)  # 400 budgets spent
    utc = result(scenarios, "calendar-utc")
    assert utc.period_start == at(-30)
    assert (utc.good, utc.total, utc.budget_remaining) == (3000, 3000, 1.0)
    assert berlin.burn_rates == utc.burn_rates  # burn windows are rolling either way
    # Forecast from the last 6 h (36,000 events, 6,000 bad) to the end of April in Berlin:
    left_s = (berlin.period_end - T).total_seconds()
    rate = 36000 / 21600
    assert berlin.projected_sli == pytest.approx((9000 + rate * 5 / 6 * left_s) / (15000 + rate * left_s))
    assert berlin.projected_at == berlin.period_end


def test_no_data_never_fires(scenarios: dict[str, Any]) -> None:
    r = result(scenarios, "no-data")
    assert (r.sli, r.budget_remaining, r.exhaustion_at) == (None, None, None)
    assert set(r.burn_rates.values()) == {None}
    assert states(r, "page") + states(r, "ticket") == ["no_data"] * 4
    # A source that stopped 2 h ago after 4 h of errors: every page pair has an empty window; the 6h/3d ticket
    # pair still sees 4 h of errors in its 6 h window and fires.
    stopped = result(scenarios, "stopped")
    assert states(stopped, "page") == ["no_data", "no_data"]
    assert states(stopped, "ticket") == ["no_data", "firing"]
    assert stopped.burn_rates["1h"] is None and stopped.burn_rates["6h"] == pytest.approx(1000)


def test_timeslices_count_minutes(scenarios: dict[str, Any]) -> None:
    # 10,080 minutes in 7 days, each one slice; g1 lags 45 s in minutes 0, 100, ..., 10,000: 101 bad minutes.
    r = result(scenarios, "lag-minutes")
    assert (r.good, r.total) == (10080 - 101, 10080)
    assert r.budgeting == "timeslices"
    assert r.budget_remaining == pytest.approx(1 - 101 / (0.01 * 10080))
    # 5m = [T-5m, T): minutes 10,075-10,079 hold no bad minute; 1d = 1,440 minutes hold 14 or 15 bad ones.
    assert r.burn_rates["5m"] == 0
    bad_1d = sum(1 for m in range(10080 - 1440, 10080) if m % 100 == 0)
    assert r.burn_rates["1d"] == pytest.approx(bad_1d / 1440 / 0.01)


def test_exhaustion_lets_old_errors_leave_the_window(scenarios: dict[str, Any]) -> None:
    # Per hour: 60,000 events. The last 6 h burn 2x (120 bad/h, margin bad - B x total = +60/h); the 714 clean
    # hours before have margin -60/h: f(0) = 6 x 60 - 714 x 60 = -42,480. Going on at 2x adds +60/h while a clean
    # hour leaves (+60/h): f rises 120/h and crosses 0 after 354 h.
    r = result(scenarios, "exhaustion")
    assert r.budget_remaining == pytest.approx(1 - 720 / 43_200)
    assert r.burn_rates["6h"] == pytest.approx(2.0)
    assert r.exhaustion_at == T + timedelta(hours=354)
    assert r.projected_sli == pytest.approx(0.998)
    assert firing(r) == {"page": False, "ticket": False}  # 2x over 6h, but 1d and 3d average it away


def test_openslo_input_gives_the_same_verdict(scenarios: dict[str, Any]) -> None:
    native, converted = result(scenarios, "slow-burn"), result(scenarios, "slow-burn-openslo")
    assert (converted.sli, converted.burn_rates, converted.alerts) == (native.sli, native.burn_rates, native.alerts)


def test_malformed_rows_are_counted_and_skipped(scenarios: dict[str, Any]) -> None:
    r = result(scenarios, "malformed-rows")
    assert r.skipped_rows == {"null_time": 3, "bad_value": 2, "good_exceeds_total": 1}
    assert (r.good, r.total, r.sli) == (60, 60, 1.0)


def test_group_by_gives_one_instance_per_label_value(scenarios: dict[str, Any]) -> None:
    a, b = result(scenarios, "per-topic", topic="a"), result(scenarios, "per-topic", topic="b")
    assert firing(a) == {"page": False, "ticket": False}
    assert firing(b) == {"page": True, "ticket": True}
    assert b.burn_rates["30m"] == pytest.approx(1000)
    assert b.total == 4 * DAY_MIN * 100


def test_backtest_reports_every_slo(scenarios: dict[str, Any]) -> None:
    names = [b.name for b in scenarios["backtest"]]
    assert names == ["steady-at-budget", "outage", "slow-burn"]
    assert all(isinstance(b, BacktestResult) for b in scenarios["backtest"])


def test_the_standalone_cluster_gives_identical_results(
    local_run: dict[str, Any], standalone_run: dict[str, Any], spark_standalone: SparkStandalone
) -> None:
    local, standalone = local_run, standalone_run
    assert (local["master"], standalone["master"]) == ("local[2]", spark_standalone.master_url)
    # The standalone application got its executors on both workers (one core each), so the scans, shuffles and the
    # backtest's pandas UDF ran in worker processes, not in the driver.
    (app,) = [a for a in spark_standalone.status()["activeapps"] if a["id"] == standalone["app"]]
    assert app["cores"] == 2
    assert standalone["evaluate"] == local["evaluate"]  # alerts, burn rates, budgets, forecasts, skipped rows
    assert standalone["backtest"] == local["backtest"]
    assert len(local["evaluate"]) == 15 and sum(len(b.alerts) for b in local["backtest"]) == 3
