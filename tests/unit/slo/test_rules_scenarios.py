"""slo/rules_scenarios.py and rules_promtool.py: the synthetic series generated into every SLO's promtool tests, and
the expectations computed for them, checked here against hand-computed minutes for the default policy (99.9 %,
30d: page 14.4x 1h/5m, 6x 6h/30m; ticket 3x 1d/2h, 1x 3d/6h). Times are minutes from the test start."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from slo.model import Slo
from slo.rules import RuleOptions
from slo.rules_promtool import promtool_case, series_notation
from slo.rules_scenarios import (
    MinuteSeries,
    Sums,
    check_times,
    expected_intervals,
    job_units,
    scenarios,
    steady,
)
from slo.spec import parse_slos

BASE: dict[str, Any] = {
    "name": "produce",
    "source": {"type": "prometheus", "url": "http://127.0.0.1:9090"},
    "good": "sum(increase(ok_total[1m]))",
    "total": "sum(increase(all_total[1m]))",
    "objective": 99.9,
    "window": "30d",
}


def make_slo(**changes: Any) -> Slo:
    (slo,) = parse_slos([("test.yaml", [BASE | changes])], None, check_sources=False)
    return slo


def fired(slo: Slo, series: MinuteSeries) -> list[tuple[str, int, int | None]]:
    """(severity, start minute, end minute or None) per interval."""
    return [
        (i.severity, int(i.start.timestamp()) // 60, None if i.end is None else int(i.end.timestamp()) // 60)
        for i in expected_intervals(slo, series)
    ]


def by_name(slo: Slo) -> dict[str, MinuteSeries]:
    return {s.name: s.series for s in scenarios(slo)}


def test_default_policy_scenarios_fire_as_computed_by_hand() -> None:
    slo = make_slo()
    series = by_name(slo)
    assert sorted(series) == ["budget-burn", "full-outage", "no-data", "slow-burn"]
    # Exactly at the budget: every ratio is 1/1000, never strictly above the 1x threshold.
    assert fired(slo, series["budget-burn"]) == []
    # Outage minutes 60..119 (their samples at 61..120). Page from the first evaluation that sees one (61); the
    # 1h/5m pair stops at 125, the 6h/30m pair's 30m window holds minute 119 until 150. Tickets: the 2h window
    # holds it until 240, the 6h window until 480.
    assert fired(slo, series["full-outage"]) == [("page", 61, 150), ("ticket", 61, 480)]
    # 3.5x from minute 30 (7 of 2000 events a minute): the 3d/6h pair's ratio 0.0035 (t-30)/t exceeds 0.001
    # when 2.5 t > 105: equal at 42, above at 43. The 1d/2h pair needs 0.5 t > 105 (t > 210, past the end).
    assert fired(slo, series["slow-burn"]) == [("ticket", 43, None)]
    assert fired(slo, series["no-data"]) == []


def test_the_low_traffic_guard_holds_until_a_long_window_has_min_events() -> None:
    """min_events 100: 1 event a minute, all bad. A 1h window never holds 100 events, so the 1h/5m pair never
    fires; the 6h, 1d and 3d windows reach 100 events at minute 100."""
    slo = make_slo(alerting={"min_events": 100})
    series = by_name(slo)["low-traffic"]
    assert set(series.total) == {1.0} and set(series.good) == {0.0}
    assert fired(slo, series) == [("page", 100, None), ("ticket", 100, None)]
    assert fired(slo, by_name(slo)["full-outage"]) == [("page", 61, 150), ("ticket", 61, 480)]


def test_traffic_makes_the_budget_burn_a_whole_number_of_events() -> None:
    slo = make_slo(objective=99.95, window="28d")
    budget = by_name(slo)["budget-burn"]
    assert (budget.total[0], budget.good[0]) == (2000.0, 1999.0)
    slow = by_name(slo)["slow-burn"]
    # midway between the lowest ticket factor (0.9333) and the lowest page factor (5.6): 49/15 x 0.0005
    total, good = slow.total[-1], slow.good[-1]
    assert total is not None and good is not None
    assert Fraction(total - good) / Fraction(total) == Fraction(49, 15) / 2000


def test_timeslices_turn_minutes_into_slices_as_the_job_does() -> None:
    """A minute is good when good x 20 >= total x 19 (target 95 %); skipped rows make no slice."""
    slo = make_slo(objective=99, budgeting={"method": "timeslices", "slice_target": 95})
    series = MinuteSeries(
        good=(95.0, 94.0, None, 5.0, 0.0, 7.0, float("nan")),
        total=(100.0, 100.0, 100.0, 4.0, 0.0, -1.0, 100.0),
    )
    good, total = job_units(slo, series)
    assert total.tolist() == [1, 1, 0, 0, 0, 0, 0]
    assert good.tolist() == [1, 0, 0, 0, 0, 0, 0]
    # 99 % in slices: the 6h/30m page fires once k bad of 60 + k slices exceed 0.06 (k = 4, minute 64); its 30m
    # window holds two bad slices (2/30 > 0.06) up to 148 and one at 149. The 1h/5m pair (0.144) needs 9 of 60.
    outage = by_name(slo)["full-outage"]
    assert fired(slo, outage)[0] == ("page", 64, 149)
    spread = steady(slo, 200, 100, Fraction(1, 100))
    assert sum(g == 0.0 for g in spread.good) == 2  # bad minutes spread evenly: one in every hundred


def test_occurrence_units_skip_what_the_job_skips() -> None:
    slo = make_slo()
    series = MinuteSeries(good=(5.0, None, 7.0, 3.0), total=(10.0, 10.0, 6.0, float("inf")))
    good, total = job_units(slo, series)
    assert (good.tolist(), total.tolist()) == ([5, 0, 0, 0], [10, 0, 0, 0])


def test_series_notation_is_promtools_expanding_form() -> None:
    assert series_notation([None, None, 1.0, 1.0, 1.0, 2.5, None]) == "_x2 1x2 2.5 _"
    assert series_notation([0.0, 10.0, 20.0, 30.0, None, 50.0, 60.0, 60.0]) == "0+10x3 _ 50 60x1"
    assert series_notation([9.0, 7.0, 5.0, 0.5, 1.0]) == "9-2x2 0.5 1"
    assert series_notation([]) == ""


def test_checks_sit_on_both_sides_of_every_transition() -> None:
    slo = make_slo()
    intervals = expected_intervals(slo, by_name(slo)["full-outage"])
    times = [t // 60 for t in check_times(intervals, 510)]
    assert {60, 61, 149, 150, 479, 480, 510} <= set(times)  # page 61-150, ticket 61-480
    assert times == sorted(set(times))


def test_a_case_expects_the_jobs_alerts_with_expanded_annotations() -> None:
    slo = make_slo(labels={"cluster": "prod"})
    options = RuleOptions({"team": "kafka"})
    case = promtool_case(slo, options, "outage", by_name(slo)["full-outage"])
    at_61 = next(c for c in case["alert_rule_test"] if c["eval_time"] == "61m")
    page, ticket = at_61["exp_alerts"]
    assert page["exp_labels"] == {"team": "kafka", "slo": "produce", "cluster": "prod", "severity": "page"}
    # At 61: minute 60 is all bad. 1h holds minutes 1..60 (1 of 60 bad), 1d all 61 minutes, 5m one of five.
    assert page["exp_annotations"]["summary"] == "SLO produce burns its error budget 16.7x too fast over 1h (page)"
    assert page["exp_annotations"]["burn_rate_5m"] == "200"
    assert page["exp_annotations"]["budget_remaining"] == f"{1 - (1 / 61) / 0.001:.6g}"
    assert ticket["exp_annotations"]["summary"] == "SLO produce burns its error budget 16.4x too fast over 1d (ticket)"
    assert next(c for c in case["alert_rule_test"] if c["eval_time"] == "60m")["exp_alerts"] == []
    ratios = {c["expr"]: c["exp_samples"] for c in case["promql_expr_test"]}
    assert ratios["slo:sli_error:ratio_rate5m"][0]["value"] == 0.0  # clean minutes: a ratio of 0, not no data
    assert ratios["slo:sli_error:ratio_rate3d"][0]["value"] == pytest.approx(60 / 510)


def test_sums_without_events_are_no_data() -> None:
    slo = make_slo()
    sums = Sums(slo, MinuteSeries((None, 0.0), (None, 0.0)))
    assert sums.ratio(120, 300) is None
