"""Agreement: one synthetic counter pair, evaluated (a) by the Spark burn-rate job reading a
real Prometheus whose TSDB was backfilled with `promtool tsdb create-blocks-from openmetrics`, and (b) by
Prometheus' own rule engine running the generated rules on the same counters (`promtool test rules`), fires the
same alerts at the same minutes. Both read the spec's PromQL at whole minutes, so they agree exactly here; a live
Prometheus evaluates its group at a fixed offset into each minute, so there they agree within that step.

The other generated cases compare promtool with the job's pure evaluation (tests/integration/slo/test_slo_rules.py);
this is the one Spark run.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
import yaml
from pyspark.sql import SparkSession

from devstack.prometheus import Prometheus
from pulse.process import require_program
from slo import job
from slo.model import Slo
from slo.results import Interval
from slo.rules import RuleOptions
from slo.rules_files import dump_yaml, rules_file_name, rules_text
from slo.rules_promtool import promtool_case, selector_text, series_notation
from slo.rules_scenarios import MinuteSeries, expected_intervals
from slo.spec import parse_slos
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration

MINUTES = 400
EVENTS = 2000
"""Events a minute; 7 bad of 2000 is a 3.5x burn at 99.9 %."""
GAP = range(150, 155)
"""Minutes without a scrape: no counter samples at their ends."""


def counters() -> tuple[list[float | None], list[float | None]]:
    """Cumulative good and total events at each whole minute 0 ... MINUTES (None where the scrape was missed):
    clean, a 10-minute full outage from minute 30, clean with a scrape gap, then a 3.5x slow burn from 200."""
    bad = np.zeros(MINUTES)
    bad[30:40] = EVENTS
    bad[200:] = 7
    total = np.cumsum(np.concatenate(([0.0], np.full(MINUTES, float(EVENTS)))))
    good = np.cumsum(np.concatenate(([0.0], EVENTS - bad)))
    missed = {m + 1 for m in GAP}
    return (
        [None if i in missed else float(v) for i, v in enumerate(good)],
        [None if i in missed else float(v) for i, v in enumerate(total)],
    )


def per_minute(samples: Sequence[float | None]) -> tuple[float | None, ...]:
    """What `increase(c[1m])` gives at each whole minute when samples sit exactly on the minutes: the difference
    of the two samples in [t - 1m, t], or nothing without both."""
    return tuple(None if a is None or b is None else b - a for a, b in pairwise(samples))


@pytest.fixture(scope="module")
def start() -> datetime:
    """Minute 0: whole hours back, inside Prometheus' default 15-day retention and before anything it holds."""
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    return now - timedelta(hours=12)


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory: pytest.TempPathFactory, start: datetime) -> Iterator[Prometheus]:
    """A Prometheus of its own whose TSDB holds the counters as blocks written by promtool before it starts."""
    workdir = tmp_path_factory.mktemp("prometheus-backfilled")
    good, total = counters()
    lines = ["# TYPE pulse_rules_good counter"]
    base = int(start.timestamp())
    lines += [f"pulse_rules_good_total {v:.0f} {base + 60 * i}" for i, v in enumerate(good) if v is not None]
    lines += ["# TYPE pulse_rules_events counter"]
    lines += [f"pulse_rules_events_total {v:.0f} {base + 60 * i}" for i, v in enumerate(total) if v is not None]
    source = workdir / "counters.om"
    source.write_text("\n".join([*lines, "# EOF"]) + "\n")
    promtool = require_program("promtool", "prometheus")
    argv = [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(workdir / "data")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    service = Prometheus(workdir)
    register_log("prometheus-backfilled", service.log_path)
    try:
        yield service.start()
    finally:
        service.stop()


def spec(url: str) -> Slo:
    entry = {
        "name": "agreement",
        "labels": {"cluster": "test"},
        "source": {"type": "prometheus", "url": url},
        "good": "sum(increase(pulse_rules_good_total[1m]))",
        "total": "sum(increase(pulse_rules_events_total[1m]))",
        "objective": 99.9,
        "window": "30d",
        "alerting": {"min_events": 100},
    }
    (slo,) = parse_slos([("agreement", [entry])], None, check_sources=False)
    return slo


def minutes_from(start: datetime, intervals: Sequence[Interval]) -> list[tuple[str, int, int | None]]:
    def minute(at: datetime) -> int:
        return int((at - start).total_seconds()) // 60

    return [(i.severity, minute(i.start), None if i.end is None else minute(i.end)) for i in intervals]


def test_spark_job_and_generated_rules_fire_the_same_alerts_at_the_same_minutes(
    backfilled: Prometheus, spark: SparkSession, start: datetime, tmp_path: Path
) -> None:
    slo = spec(backfilled.url)
    good, total = counters()
    series = MinuteSeries(per_minute(good), per_minute(total))
    assert backfilled.query("pulse_rules_events_total", at=(start + timedelta(minutes=10)).timestamp())

    (result,) = job.backtest(spark, [slo], start, start + timedelta(minutes=MINUTES), timedelta(minutes=1))

    fired = minutes_from(start, result.alerts)
    # The outage pages at 31 (first sample holding a bad minute); the 6h/30m pair's 30m window holds minute 39
    # until 70. Tickets open at 31 and never close: the 6h window holds the outage until 400, and the 3.5x burn
    # from 200 keeps the 3d/6h pair above 1x after it. The scrape gap is skipped alike (6 minutes, no value).
    assert fired == [("page", 31, 70), ("ticket", 31, None)]
    epoch = datetime.fromtimestamp(0, UTC)
    assert fired == minutes_from(epoch, expected_intervals(slo, series)), "Spark and the pure evaluation differ"

    # (b) The generated rules on the same counters, expectations taken from the Spark run (shifted to minute 0).
    options = RuleOptions()
    rules = tmp_path / rules_file_name(slo)
    rules.write_text(rules_text([slo], options, "test"))
    inputs = [
        {"series": selector_text("pulse_rules_good_total", {}), "values": series_notation(good)},
        {"series": selector_text("pulse_rules_events_total", {}), "values": series_notation(total)},
    ]
    shifted = [
        Interval(i.severity, epoch + (i.start - start), None if i.end is None else epoch + (i.end - start))
        for i in result.alerts
    ]
    case = promtool_case(slo, options, "agreement with the Spark job", series, inputs, shifted)
    tests = tmp_path / "agreement.test.yml"
    tests.write_text(dump_yaml({"rule_files": [rules.name], "evaluation_interval": "1m", "tests": [case]}))
    checked_times = {c["eval_time"] for c in case["alert_rule_test"]}
    assert {"30m", "31m", "69m", "70m", "400m"} <= checked_times
    counter = yaml.safe_load(tests.read_text())["tests"][0]["input_series"][1]["values"]
    assert counter == f"0+2000x150 _x5 {156 * EVENTS}+2000x{MINUTES - 156}"

    promtool = require_program("promtool", "prometheus")
    done = subprocess.run(
        [promtool, "test", "rules", tests.name], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
