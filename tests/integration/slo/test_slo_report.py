"""`kafka-pulse slo report` in-process on the shared local Spark session: JSON figures against hand-computed
compliance, budget and incidents (a 28-day month, its calendar weeks, a day without data), and the HTML report
opened in Debian's headless Chromium with a clean console.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession
from selenium.webdriver.common.by import By

from kafka_pulse.cli.main import cli
from slo.bucket_table import BucketTable
from slo.buckets import BUCKET_SCHEMA
from tests.fixtures.browser import chromium, console_problems
from tests.fixtures.spark import minutes, write_rows

pytestmark = pytest.mark.integration

FEB = datetime(2023, 2, 1, tzinfo=UTC)
MAR = datetime(2023, 3, 1, tzinfo=UTC)
GAP = (datetime(2023, 2, 20, tzinfo=UTC), datetime(2023, 2, 21, tzinfo=UTC))
"""A day without any row (the source was down): counted neither good nor bad."""
BAD = datetime(2023, 2, 10, 3, 0, tzinfo=UTC)
"""From here 20 minutes with all 10 events bad: 200 bad events."""
TOTAL = 27 * 1440 * 10
"""February 2023 (28 days) less the gap day, 10 events a minute: 388,800 events, a 99.9 % budget of 388.8."""


def february() -> tuple[list[datetime], np.ndarray]:
    """The report's minutes and each one's good events (10 events a minute)."""
    times = [t for t in minutes(FEB, 28 * 1440) if not GAP[0] <= t < GAP[1]]
    return times, np.array([0 if BAD <= t < BAD + timedelta(minutes=20) else 10 for t in times])


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("slo-report")
    times, ok = february()
    write_rows(root / "events", times, ok=ok, n=np.full(len(times), 10))
    spec: dict[str, Any] = {"name": "produce", "description": "Canary produce availability", "good": "ok"}
    spec |= {"total": "n", "source": {"type": "events", "path": "events"}, "objective": 99.9, "window": "30d"}
    path = root / "pulse.yaml"
    path.write_text(yaml.safe_dump({"slos": [spec]}))
    return path


def report(config: Path, *options: str) -> dict[str, Any]:
    args = ["slo", "report", "--config", str(config), "--from", "2023-02-01T00:00:00Z", "--to", "2023-03-01T00:00:00Z"]
    result = CliRunner().invoke(cli, [*args, *options])
    assert result.exit_code == 0, result.output
    answer: dict[str, Any] = json.loads(result.output)
    return answer


def test_a_month_matches_the_hand_computed_figures(config: Path, spark: SparkSession) -> None:
    (slo,) = report(config, "--format", "json")["slos"]
    (month,) = slo["periods"]
    assert (month["start"], month["end"], month["partial"]) == ("2023-02-01T00:00:00Z", "2023-03-01T00:00:00Z", False)
    assert (month["minutes"], month["data_minutes"], month["total"], month["good"]) == (
        28 * 1440, 27 * 1440, TOTAL, TOTAL - 200,
    )  # fmt: skip
    assert month["compliance"] == pytest.approx(1 - 200 / TOTAL) and month["met"] is True
    assert month["budget_consumed"] == pytest.approx(200 / 388.8)  # 51.4 %
    # The page (1h/5m at 14.4x, then 6h/30m at 6x) fires from the evaluation at 03:01, the first to see a bad
    # minute, until 03:50, when the 30m window has none left; the ticket needs over 43.2 bad events in its 1d and 3d
    # windows (03:05) and lasts until the 6h window is clean (09:20). Each costs the bad minutes while it fired.
    page, ticket = month["incidents"]
    assert (page["severity"], page["start"], page["end"]) == ("page", "2023-02-10T03:01:00Z", "2023-02-10T03:50:00Z")
    assert page["bad"] == 190 and page["budget_consumed"] == pytest.approx(190 / 388.8)
    assert (ticket["severity"], ticket["start"], ticket["end"]) == (
        "ticket", "2023-02-10T03:05:00Z", "2023-02-10T09:20:00Z",
    )  # fmt: skip
    assert ticket["bad"] == 150 and ticket["budget_consumed"] == pytest.approx(150 / 388.8)
    (worst,) = month["worst_hours"]
    assert (worst["start"], worst["bad"], worst["total"]) == ("2023-02-10T03:00:00Z", 200, 600)
    assert month["burndown"][0] == ["2023-02-01T00:00:00Z", 1.0]
    assert month["burndown"][-1] == ["2023-03-01T00:00:00Z", pytest.approx(1 - 200 / 388.8)]


def test_the_stream_s_bucket_table_gives_the_same_report(config: Path, spark: SparkSession, tmp_path: Path) -> None:
    """`slo report --buckets`: the same minutes as buckets (as `slo stream` writes them, one per minute) give the
    report the sources give, figures, incidents and burn-down alike."""
    times, ok = february()
    rows = [
        {"slo": "produce", "instance": "", "minute": t, "rows": 1, "good": float(g), "total": 10.0}
        | {"n_bad_value": 0, "n_good_exceeds_total": 0, "batch": 0}
        for t, g in zip(times, ok, strict=True)
    ]
    table = BucketTable(str(tmp_path / "buckets"))
    table.prepare(None)  # type: ignore[arg-type]  # a local table needs no session
    table.write(None, pa.Table.from_pylist(rows, schema=BUCKET_SCHEMA), 0)  # type: ignore[arg-type]
    from_sources = report(config, "--format", "json")
    assert report(config, "--format", "json", "--buckets", table.location) == from_sources
    (slo,) = from_sources["slos"]
    assert slo["periods"][0]["incidents"], "the comparison covers an incident"


def test_weeks_each_spend_their_own_budget(config: Path, spark: SparkSession) -> None:
    # 1 February 2023 is a Wednesday: a partial first week, four Monday weeks, a partial last one (27-28 Feb).
    (slo,) = report(config, "--format", "json", "--period", "week")["slos"]
    weeks = slo["periods"]
    assert [(w["start"][:10], w["end"][:10], w["partial"]) for w in weeks] == [
        ("2023-02-01", "2023-02-06", True), ("2023-02-06", "2023-02-13", False), ("2023-02-13", "2023-02-20", False),
        ("2023-02-20", "2023-02-27", False), ("2023-02-27", "2023-03-01", True),
    ]  # fmt: skip
    assert weeks[1]["budget_consumed"] == pytest.approx(200 / 100.8) and weeks[1]["met"] is False  # 7 x 14,400
    assert weeks[3]["total"] == 6 * 14400 and weeks[3]["data_minutes"] == 6 * 1440  # the gap day
    assert [w["budget_consumed"] for w in weeks if w is not weeks[1]] == [0, 0, 0, 0]


def test_the_html_report_is_one_file_that_opens_without_console_errors(
    config: Path, spark: SparkSession, tmp_path: Path
) -> None:
    args = ["slo", "report", "--config", str(config), "--from", "2023-02-01T00:00:00Z", "--to", "2023-03-01T00:00:00Z"]
    result = CliRunner().invoke(cli, [*args, "--format", "html", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    path = tmp_path / "slo-report.html"
    assert result.output.strip() == str(path)
    driver = chromium()
    try:
        driver.get(path.as_uri())
        assert driver.title == "SLO report, 2023-02-01T00:00:00Z to 2023-03-01T00:00:00Z"
        assert "produce" in driver.find_element(By.TAG_NAME, "h2").text
        chart = driver.find_element(By.CSS_SELECTOR, "svg polyline")
        assert chart.is_displayed() and len(str(chart.get_attribute("points")).split()) == 28 * 24 + 1
        assert "51.4 %" in driver.find_element(By.TAG_NAME, "body").text
        assert console_problems(driver) == []
        # Nothing came from anywhere else: the page's only resource is the file itself.
        loaded = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert loaded == []
    finally:
        driver.quit()


def test_each_group_by_instance_gets_its_own_figures_and_incidents(tmp_path: Path, spark: SparkSession) -> None:
    # Three days per topic at 10 a minute; topic a has the 20 bad minutes, topic b none. The page's interval lands
    # on a's report only (the backtest and the minute buckets are matched by their labels).
    times = minutes(datetime(2023, 2, 9, tzinfo=UTC), 3 * 1440)
    ok_a = [0 if BAD <= t < BAD + timedelta(minutes=20) else 10 for t in times]
    topics = ["a"] * len(times) + ["b"] * len(times)
    write_rows(tmp_path / "events", times + times, ok=ok_a + [10] * len(times), n=[10] * 2 * len(times), topic=topics)
    spec: dict[str, Any] = {"name": "by-topic", "good": "ok", "total": "n", "group_by": ["topic"], "objective": 99.9}
    spec |= {"source": {"type": "events", "path": "events"}, "labels": {"team": "kafka"}}
    path = tmp_path / "pulse.yaml"
    path.write_text(yaml.safe_dump({"slos": [spec]}))
    a, b = report(path, "--format", "json")["slos"]
    assert (a["labels"], b["labels"]) == ({"team": "kafka", "topic": "a"}, {"team": "kafka", "topic": "b"})
    (month_a,), (month_b,) = a["periods"], b["periods"]
    assert month_a["total"] == month_b["total"] == 3 * 14400
    assert month_a["budget_consumed"] == pytest.approx(200 / 43.2) and month_a["met"] is False
    assert [i["severity"] for i in month_a["incidents"]] == ["page", "ticket"]
    assert month_b["budget_consumed"] == 0 and month_b["incidents"] == []
