"""SLO reports without Spark: hand-computed compliance, budget, incidents and worst hours per calendar period, and
the Markdown and HTML renderings of them."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from slo.model import Slo
from slo.report import InstanceMinutes, report_json, report_periods, slo_report
from slo.report_render import to_html, to_markdown
from slo.results import Interval
from slo.spec import parse_slos

BASE: dict[str, Any] = {
    "name": "produce",
    "description": "Canary produce availability",
    "source": {"type": "events", "path": "/x"},
    "good": "ok",
    "total": "n",
    "objective": 99.9,
}


def make_slo(**changes: Any) -> Slo:
    (slo,) = parse_slos([("test.yaml", [BASE | changes])], None, check_sources=False)
    return slo


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def steady(start: datetime, end: datetime, per_minute: float = 10.0) -> InstanceMinutes:
    """`per_minute` good events in every minute of [start, end)."""
    minutes = int((end - start) / timedelta(minutes=1))
    good = np.full(minutes, per_minute)
    return InstanceMinutes("produce", {}, int(start.timestamp()), good, good.copy())


def spoil(series: InstanceMinutes, at: datetime, minutes: int, bad_per_minute: float) -> None:
    """Turn `bad_per_minute` of each of `minutes` minutes from `at` bad."""
    i = int((int(at.timestamp()) - series.first_minute_s) // 60)
    series.good[i : i + minutes] -= bad_per_minute


@pytest.mark.parametrize(
    ("month", "days"),
    [
        pytest.param(utc(2023, 2, 1), 28, id="february-28-days"),
        pytest.param(utc(2024, 2, 1), 29, id="leap-february-29-days"),
        pytest.param(utc(2024, 4, 1), 30, id="april-30-days"),
        pytest.param(utc(2024, 7, 1), 31, id="july-31-days"),
    ],
)
def test_a_calendar_month_budgets_its_own_length(month: datetime, days: int) -> None:
    # 10 events a minute all month; 100 bad in one hour (5 a minute for 20 minutes) on the 10th at 03:00.
    end = month + timedelta(days=days)
    series = steady(month, end)
    spoil(series, month.replace(day=10, hour=3), 20, 5)
    (p,) = slo_report(make_slo(), series, (), "1M", month, end).periods
    total = days * 1440 * 10  # 403,200 / 417,600 / 432,000 / 446,400
    assert (p.start, p.end, p.partial, p.minutes, p.data_minutes) == (month, end, False, days * 1440, days * 1440)
    assert p.total == total and p.good == total - 100
    assert p.compliance == pytest.approx(1 - 100 / total)
    assert p.budget_consumed == pytest.approx(100 / (0.001 * total))  # February 2023: 100 of 403.2 = 24.8 %
    assert p.met is True
    (worst,) = p.worst_hours
    assert (worst.start, worst.bad, worst.total) == (month.replace(day=10, hour=3), 100, 600)
    assert worst.budget_consumed == pytest.approx(p.budget_consumed)
    assert p.burndown[0] == (month, 1.0) and p.burndown[-1][0] == end
    assert p.burndown[-1][1] == pytest.approx(1 - 100 / (0.001 * total))
    assert len(p.burndown) == days * 24 + 1


def test_an_overspent_month_is_missed_and_a_budget_spent_exactly_is_met() -> None:
    # July: 446,400 events, budget 446.4. 500 bad overspend it; 446.4 bad of 4,464,000 (100 a minute) is exactly B.
    month, end = utc(2024, 7, 1), utc(2024, 8, 1)
    series = steady(month, end)
    spoil(series, utc(2024, 7, 20, 12), 50, 10)
    (p,) = slo_report(make_slo(), series, (), "1M", month, end).periods
    assert p.met is False and p.budget_consumed == pytest.approx(500 / 446.4)
    assert p.budget_remaining == pytest.approx(1 - 500 / 446.4) and p.burndown[-1][1] < 0
    # 25 a minute: 1,116,000 events, a budget of exactly 1,116; spending all of it meets the objective, one more not.
    for bad, met in ((1116, True), (1117, False)):
        exact = steady(month, end, 25.0)
        spoil(exact, utc(2024, 7, 2), 44, 25)  # 1,100 bad ...
        spoil(exact, utc(2024, 7, 3), 1, bad - 1100)  # ... and the rest in one minute
        (q,) = slo_report(make_slo(), exact, (), "1M", month, end).periods
        assert (q.total, q.total - q.good, q.met) == (1_116_000, bad, met)
        assert q.budget_consumed == pytest.approx(bad / 1116)


def test_weeks_are_monday_to_monday_and_each_has_its_own_budget() -> None:
    # 2024-04-01 is a Monday; two weeks of 10 a minute, 60 bad in the first, none in the second.
    start, end = utc(2024, 4, 1), utc(2024, 4, 15)
    series = steady(start, end)
    spoil(series, utc(2024, 4, 3, 9, 30), 60, 1)
    first, second = slo_report(make_slo(), series, (), "1w", start, end).periods
    assert (first.start, first.end, second.start, second.end) == (start, utc(2024, 4, 8), utc(2024, 4, 8), end)
    assert first.total == second.total == 7 * 1440 * 10
    assert first.budget_consumed == pytest.approx(60 / 100.8)  # budget 0.1 % of 100,800
    assert second.budget_consumed == 0 and second.worst_hours == () and second.met is True
    # 09:30-10:30 spans two clock hours, 30 bad each: the worst hours say so, earliest first on a tie.
    assert [(h.start, h.bad) for h in first.worst_hours] == [(utc(2024, 4, 3, 9), 30), (utc(2024, 4, 3, 10), 30)]


def test_gaps_in_data_count_neither_good_nor_bad() -> None:
    # April, data only in its first 10 days (a source outage after): compliance over the events there are.
    month, end = utc(2024, 4, 1), utc(2024, 5, 1)
    series = steady(month, end)
    series.good[10 * 1440 :] = 0
    series.total[10 * 1440 :] = 0
    spoil(series, utc(2024, 4, 5), 30, 2)
    (p,) = slo_report(make_slo(), series, (), "1M", month, end).periods
    assert (p.minutes, p.data_minutes, p.total) == (30 * 1440, 10 * 1440, 144_000)
    assert p.compliance == pytest.approx(1 - 60 / 144_000)
    assert p.budget_consumed == pytest.approx(60 / 144)
    # The burn-down stays flat across the gap: hours without events spend nothing.
    assert p.burndown[-1][1] == pytest.approx(p.burndown[10 * 24][1])


def test_a_period_without_events_is_no_data_never_met() -> None:
    month, end = utc(2024, 4, 1), utc(2024, 5, 1)
    empty = InstanceMinutes("produce", {}, int(month.timestamp()), np.zeros(30 * 1440), np.zeros(30 * 1440))
    (p,) = slo_report(make_slo(), empty, (), "1M", month, end).periods
    assert (p.compliance, p.met, p.budget_consumed, p.burndown, p.worst_hours) == (None, None, None, (), ())


def test_an_incident_costs_the_budget_of_its_bad_minutes() -> None:
    # 30-day April at 10 a minute (budget 432 events); a page from 10:00 to 10:45 on the 12th over minutes with
    # 8 bad each (360 bad, 83.3 % of the budget) and a ticket still firing at --to.
    month, end = utc(2024, 4, 1), utc(2024, 5, 1)
    series = steady(month, end)
    spoil(series, utc(2024, 4, 12, 10), 45, 8)
    spoil(series, utc(2024, 4, 30, 23, 50), 10, 1)
    alerts = (
        Interval("page", utc(2024, 4, 12, 10), utc(2024, 4, 12, 10, 45)),
        Interval("ticket", utc(2024, 4, 30, 23, 40), None),
    )
    (p,) = slo_report(make_slo(), series, alerts, "1M", month, end).periods
    page, ticket = p.incidents
    assert (page.severity, page.bad, page.ongoing) == ("page", 360, False)
    assert page.budget_consumed == pytest.approx(360 / 432)
    assert (ticket.start, ticket.end, ticket.ongoing, ticket.bad) == (utc(2024, 4, 30, 23, 40), end, True, 10)
    assert p.budget_consumed == pytest.approx(370 / 432)
    out = report_json([slo_report(make_slo(), series, alerts, "1M", month, end)], month, end, "month")
    shown = out["slos"][0]["periods"][0]["incidents"][0]
    assert shown == {
        "severity": "page",
        "start": "2024-04-12T10:00:00Z",
        "end": "2024-04-12T10:45:00Z",
        "ongoing": False,
        "duration_s": 2700,
        "bad": 360.0,
        "budget_consumed": pytest.approx(360 / 432),
    }


def test_from_and_to_cut_the_periods_they_fall_in() -> None:
    start, end = utc(2024, 1, 20, 12, 30), utc(2024, 3, 5)
    assert report_periods("1M", "UTC", start, end) == [
        (start, utc(2024, 2, 1), True),
        (utc(2024, 2, 1), utc(2024, 3, 1), False),
        (utc(2024, 3, 1), end, True),
    ]
    # A period in the SLO's own zone: Berlin's March starts at 23:00 UTC the day before.
    berlin = report_periods("1M", "Europe/Berlin", utc(2024, 2, 29, 23), utc(2024, 3, 31, 22))
    assert berlin == [(utc(2024, 2, 29, 23), utc(2024, 3, 31, 22), False)]
    # An incident starting before the period counts only its minutes inside.
    series = steady(start, end)
    alerts = (Interval("page", utc(2024, 1, 31, 23), utc(2024, 2, 1, 1)),)
    spoil(series, utc(2024, 1, 31, 23), 120, 1)
    first, second, _ = slo_report(make_slo(), series, alerts, "1M", start, end).periods
    assert [(i.start, i.end, i.bad) for i in first.incidents] == [(utc(2024, 1, 31, 23), utc(2024, 2, 1), 60)]
    assert [(i.start, i.end, i.bad) for i in second.incidents] == [(utc(2024, 2, 1), utc(2024, 2, 1, 1), 60)]


def test_markdown_and_html_show_the_figures_and_html_needs_nothing_from_outside() -> None:
    month, end = utc(2023, 2, 1), utc(2023, 3, 1)
    series = steady(month, end)
    spoil(series, utc(2023, 2, 10, 3), 20, 5)
    alerts = (Interval("page", utc(2023, 2, 10, 3), utc(2023, 2, 10, 3, 20)),)
    reports = [slo_report(make_slo(), series, alerts, "1M", month, end)]
    md = to_markdown(reports, month, end)
    assert "| 99.975 % | 99.9 % | met | 24.8 % | 75.2 % | 403200 | 40320 of 40320 |" in md
    assert "| page | 2023-02-10T03:00:00Z | 2023-02-10T03:20:00Z | 100 | 24.8 % |" in md
    html = to_html(reports, month, end)
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "<polyline" in html
    assert not re.search(r"<script|<link|\bsrc=|href=|url\(|@import", html)  # one file, nothing fetched
    assert "24.8 %" in html and 'class="met"' in html


def test_the_command_refuses_a_report_that_ends_before_it_starts() -> None:
    from click.testing import CliRunner

    from kafka_pulse.cli.main import cli

    args = ["slo", "report", "--from", "2024-04-01T00:00:00Z", "--to", "2024-04-01T00:00:30Z"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "Invalid value for --to: is not after --from (whole minutes)" in result.output
    bad = CliRunner().invoke(cli, ["slo", "report", "--from", "yesterday", "--to", "now"])
    assert bad.exit_code == 2 and "'yesterday' is not an ISO 8601 time" in bad.output
