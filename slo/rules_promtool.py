"""The `promtool test rules` documents generated beside the Prometheus rules: the synthetic series of
slo/rules_scenarios.py in promtool's notation, and the alerts and values it must see at each check time.

Pure: documents are dicts, slo/rules_files.py writes them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from slo.model import Slo
from slo.policy import MINUTE_S
from slo.results import Interval
from slo.rules import (
    BUDGET_REMAINING,
    Measure,
    RuleOptions,
    alert_labels,
    annotation_pieces,
    events_metric,
    period_s,
    ratio_metric,
    render_expected,
    rule_windows_s,
    series_labels,
)
from slo.rules_scenarios import MinuteSeries, Sums, Value, check_times, expected_intervals, is_firing, scenarios


def series_notation(values: Sequence[Value]) -> str:
    """promtool's expanding notation: `_xN` for N missing samples, `vxN` for N+1 equal ones, `a+bxN` for N+1
    whole numbers rising by b (counters); promtool adds the step repeatedly, so only whole numbers use it."""
    out: list[str] = []
    i = 0
    while i < len(values):
        value = values[i]
        if value is None:
            j = i
            while j + 1 < len(values) and values[j + 1] is None:
                j += 1
            out.append("_" if j == i else f"_x{j - i + 1}")
            i = j + 1
            continue
        j, step = i, _step(value, values[i + 1] if i + 1 < len(values) else None)
        while step is not None and j + 1 < len(values) and _step(values[j], values[j + 1]) == step:
            j += 1
        if step is None or j == i or (j == i + 1 and step != 0):
            out.append(_number_text(value))
            i += 1
            continue
        if step == 0:
            out.append(f"{_number_text(value)}x{j - i}")
        else:
            sign = "+" if step > 0 else "-"
            out.append(f"{_number_text(value)}{sign}{_number_text(abs(step))}x{j - i}")
        i = j + 1
    return " ".join(out)


def _step(a: Value, b: Value) -> float | None:
    """The difference b - a when a run may continue through it: equal values, or whole numbers."""
    if a is None or b is None:
        return None
    if a == b:
        return 0.0
    if float(a).is_integer() and float(b).is_integer() and abs(a) < 2**52 and abs(b) < 2**52:
        return b - a
    return None


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def selector_text(name: str, labels: Mapping[str, str]) -> str:
    """`name{a="b"}` with escaped values, as promtool reads series."""
    inner = ",".join(f"{k}={json.dumps(v)}" for k, v in labels.items())
    return f"{name}{{{inner}}}"


def events_input(slo: Slo, series: MinuteSeries) -> list[dict[str, str]]:
    """The per-minute event series as inputs (the spec's own PromQL finds nothing in the test and records none):
    no sample at 0, then minute i at (i + 1) minutes."""
    labels = series_labels(slo)
    return [
        {"series": selector_text(events_metric("good"), labels), "values": series_notation((None, *series.good))},
        {"series": selector_text(events_metric("total"), labels), "values": series_notation((None, *series.total))},
    ]


def _duration(seconds: int) -> str:
    return f"{seconds // MINUTE_S}m"


def alert_checks(
    slo: Slo, options: RuleOptions, series: MinuteSeries, intervals: Sequence[Interval], times: Sequence[int]
) -> list[dict[str, Any]]:
    """One `alert_rule_test` entry per time: the severities firing then, with labels and expanded annotations."""
    sums = Sums(slo, series)
    checks: list[dict[str, Any]] = []
    for at_s in times:
        expected: list[dict[str, Any]] = []
        for severity in ("page", "ticket"):
            if not is_firing(intervals, severity, at_s):
                continue
            labels = {k: v for k, v in alert_labels(slo, severity, options).items() if k != "alertname"}
            annotations = {
                key: render_expected(pieces, partial(sums.measure, at_s), partial(sums.first_firing, at_s))
                for key, pieces in annotation_pieces(slo, severity, options).items()
            }
            expected.append({"exp_labels": labels, "exp_annotations": annotations})
        checks.append({"eval_time": _duration(at_s), "alertname": "KafkaSLOBurnRate", "exp_alerts": expected})
    return checks


def value_checks(slo: Slo, series: MinuteSeries, at_s: int) -> list[dict[str, Any]]:
    """`promql_expr_test` entries: every window's error ratio (absent without events) and the budget left."""
    sums = Sums(slo, series)
    labels = series_labels(slo)
    checks: list[dict[str, Any]] = []
    for window in rule_windows_s(slo):
        ratio = sums.ratio(at_s, window)
        name = ratio_metric(window)
        samples = [] if ratio is None else [{"labels": selector_text(name, labels), "value": ratio}]
        checks.append({"expr": name, "eval_time": _duration(at_s), "exp_samples": samples})
    remaining = sums.measure(at_s, Measure("budget_remaining"))
    if period_s(slo) is not None:
        samples = [] if remaining is None else [{"labels": selector_text(BUDGET_REMAINING, labels), "value": remaining}]
        checks.append({"expr": BUDGET_REMAINING, "eval_time": _duration(at_s), "exp_samples": samples})
    return checks


def promtool_case(
    slo: Slo,
    options: RuleOptions,
    name: str,
    series: MinuteSeries,
    input_series: Sequence[Mapping[str, str]] | None = None,
    intervals: Sequence[Interval] | None = None,
) -> dict[str, Any]:
    """One `tests:` entry: `series` fed as `input_series` (default: the per-minute event series), alerts checked
    at the transitions of `intervals` (default: the job's own, from `expected_intervals`), ratios at the end."""
    if intervals is None:
        intervals = expected_intervals(slo, series)
    times = check_times(intervals, series.minutes)
    return {
        "name": name,
        "interval": "1m",
        "input_series": [dict(s) for s in (input_series or events_input(slo, series))],
        "alert_rule_test": alert_checks(slo, options, series, intervals, times),
        "promql_expr_test": value_checks(slo, series, series.minutes * MINUTE_S),
    }


def promtool_tests(slo: Slo, options: RuleOptions, rules_file: str) -> dict[str, Any]:
    """The unit-test document for one SLO's rules file: one case per scenario."""
    cases = [promtool_case(slo, options, f"{s.name}: {s.why}", s.series) for s in scenarios(slo)]
    return {"rule_files": [rules_file], "evaluation_interval": "1m", "tests": cases}
