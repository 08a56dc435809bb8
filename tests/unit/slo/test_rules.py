"""slo/rules.py and slo/rules_files.py: rule names, expressions and thresholds for the default
and other windows, the guard, timeslices, calendar windows, alert labels and annotations as slo/alerting.py gives
them, refusals, and the generated example files as golden output."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_pulse.clusters import load_or_default
from slo.alerting import ALERTNAME, BurnCondition, SloAlertState, alert_annotations
from slo.alerting import alert_labels as job_alert_labels
from slo.model import Slo
from slo.policy import format_duration
from slo.rules import (
    RuleOptions,
    RulesRefused,
    Text,
    alert_rule,
    literal,
    range_of,
    render_template,
    rule_group,
)
from slo.rules_files import NoPrometheusSli, load_rule_slos, output_files, select
from slo.spec import parse_slos

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_CONFIG = REPO / "examples" / "prometheus-slo.yaml"
EXAMPLE_RULES = REPO / "examples" / "prometheus-rules"

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


def rules_by_name(slo: Slo, options: RuleOptions | None = None) -> dict[str, dict[str, Any]]:
    group = rule_group(slo, options or RuleOptions())
    out: dict[str, dict[str, Any]] = {}
    for rule in group["rules"]:
        key = rule.get("record") or f"{rule['alert']}:{rule['labels']['severity']}"
        assert key not in out, f"{key} twice"
        out[key] = rule
    return out


def thresholds(alert_expr: str) -> list[tuple[str, str, str]]:
    """(long, short, threshold) per pair, read back from an alert expression."""
    found = re.findall(
        r"ratio_rate(\w+)\{[^}]*\} > ([0-9.e-]+)\s+and\s+\S*ratio_rate(\w+)\{[^}]*\} > ([0-9.e-]+)", alert_expr
    )
    assert all(a == b for _, a, _, b in found), found
    return [(long, short, limit) for long, limit, short, _ in found]


def test_one_group_a_minute_with_rules_in_evaluation_order() -> None:
    group = rule_group(make_slo(), RuleOptions())
    assert (group["name"], group["interval"]) == ("kafka-pulse-slo-produce", "1m")
    assert list(rules_by_name(make_slo())) == [
        "slo:sli_total:events1m",
        "slo:sli_good:events1m",
        *(f"slo:sli_error:ratio_rate{w}" for w in ("5m", "30m", "1h", "2h", "6h", "1d", "3d", "30d")),
        "slo:objective:ratio",
        "slo:error_budget:ratio",
        "slo:time_period:days",
        "slo:period_burn_rate:ratio",
        "slo:period_error_budget_remaining:ratio",
        f"{ALERTNAME}:page",
        f"{ALERTNAME}:ticket",
    ]


def test_events_drop_the_minutes_the_job_skips() -> None:
    """Missing, negative or non-finite values and good above total: the job counts and skips such rows."""
    rules = rules_by_name(make_slo(labels={"cluster": "prod"}))
    total = rules["slo:sli_total:events1m"]
    assert total["expr"] == (
        "(sum(sum(increase(all_total[1m]))) >= 0 < Inf)\n"
        "and on() (sum(sum(increase(ok_total[1m]))) >= 0 < Inf)\n"
        "and on() sum(sum(increase(ok_total[1m]))) <= sum(sum(increase(all_total[1m])))\n"
    )
    assert total["labels"] == {"slo": "produce", "cluster": "prod"}
    good = rules["slo:sli_good:events1m"]
    assert good["expr"] == 'sum(sum(increase(ok_total[1m])))\nand on() slo:sli_total:events1m{slo="produce"}\n'


def test_window_ratio_is_a_ratio_of_sums_over_exactly_the_jobs_minutes() -> None:
    rules = rules_by_name(make_slo())
    assert rules["slo:sli_error:ratio_rate5m"]["expr"] == (
        '(sum_over_time(slo:sli_total:events1m{slo="produce"}[4m59s])\n'
        ' - sum_over_time(slo:sli_good:events1m{slo="produce"}[4m59s]))\n'
        '/ (sum_over_time(slo:sli_total:events1m{slo="produce"}[4m59s]) > 0)\n'
    )
    assert range_of(3 * 86_400) == "[2d23h59m59s]"
    assert range_of(30 * 86_400) == "[29d23h59m59s]"


@pytest.mark.parametrize(
    ("changes", "page", "ticket"),
    [
        pytest.param(
            {},
            [("1h", "5m", "0.0144"), ("6h", "30m", "0.006")],
            [("1d", "2h", "0.003"), ("3d", "6h", "0.001")],
            id="30d-99.9-workbook",
        ),
        pytest.param(
            {"objective": 99.95, "window": "28d"},
            [("1h", "5m", "0.00672"), ("6h", "30m", "0.0028")],
            [("1d", "2h", "0.0014"), ("3d", "6h", repr(float(Fraction(28, 3) / 10 / 2000)))],
            id="28d-99.95-factors-recomputed",
        ),
        pytest.param(
            {
                "objective": 99,
                "window": "7d",
                "alerting": {"page": {"windows": [{"long": "1h", "short": "5m", "factor": 10}]}},
            },
            [("1h", "5m", "0.1")],
            [("1d", "2h", "0.007"), ("3d", "6h", repr(float(Fraction(7, 3) / 10 / 100)))],
            id="7d-99-fixed-page-factor",
        ),
    ],
)
def test_thresholds_are_factor_times_budget(
    changes: dict[str, Any], page: list[tuple[str, str, str]], ticket: list[tuple[str, str, str]]
) -> None:
    rules = rules_by_name(make_slo(**changes))
    assert thresholds(rules[f"{ALERTNAME}:page"]["expr"]) == page
    assert thresholds(rules[f"{ALERTNAME}:ticket"]["expr"]) == ticket


def test_a_threshold_literal_is_the_float_nearest_the_exact_value() -> None:
    """Strict >: a ratio of 1/1000 exactly must not exceed the 1x threshold; Sloth's float arithmetic would
    write 0.0009999999999999432 (its generated rules, v0.16.0), which it exceeds."""
    assert literal(Fraction(1, 1000)) == "0.001"
    assert not float(literal(Fraction(1, 1000))) < (1 / 1000)
    assert (1 / 1000) > 0.0009999999999999432


def test_the_min_events_guard_holds_each_long_window_to_the_spec() -> None:
    plain = rules_by_name(make_slo())[f"{ALERTNAME}:page"]["expr"]
    assert "sum_over_time(slo:sli_total" not in plain
    guarded = rules_by_name(make_slo(alerting={"min_events": 250}))[f"{ALERTNAME}:page"]["expr"]
    assert 'sum_over_time(slo:sli_total:events1m{slo="produce"}[59m59s]) >= 250.0' in guarded
    assert 'sum_over_time(slo:sli_total:events1m{slo="produce"}[5h59m59s]) >= 250.0' in guarded


def test_timeslices_count_one_slice_per_minute_with_events() -> None:
    rules = rules_by_name(make_slo(objective=99, budgeting={"method": "timeslices", "slice_target": 95}))
    assert rules["slo:sli_total:slices1m"]["expr"] == '(slo:sli_total:events1m{slo="produce"} > 0) * 0 + 1'
    assert rules["slo:sli_good:slices1m"]["expr"] == (
        'slo:sli_total:slices1m{slo="produce"}\n'
        '* (slo:sli_good:events1m{slo="produce"} * 20 >= bool slo:sli_total:events1m{slo="produce"} * 19)\n'
    )
    assert "slo:sli_total:slices1m" in rules["slo:sli_error:ratio_rate1h"]["expr"]
    assert "events1m" not in rules["slo:sli_error:ratio_rate1h"]["expr"]


def test_a_calendar_window_has_no_period_rules() -> None:
    """PromQL has no range from the start of a month in a time zone; alerts do not need one (factors come from
    the nominal 30 days, as in the job)."""
    slo = make_slo(window={"calendar": "1M", "timezone": "Europe/Berlin"})
    rules = rules_by_name(slo)
    assert "slo:period_error_budget_remaining:ratio" not in rules
    assert "slo:sli_error:ratio_rate30d" not in rules
    page = rules[f"{ALERTNAME}:page"]
    assert thresholds(page["expr"])[0] == ("1h", "5m", "0.0144")
    assert {"sli", "budget_remaining"}.isdisjoint(page["annotations"])
    assert page["annotations"]["slo_window"] == "1M Europe/Berlin"


def test_a_disabled_tier_has_no_alert() -> None:
    slo = make_slo(alerting={"ticket": {"disabled": True}})
    assert alert_rule(slo, "ticket", RuleOptions()) is None
    assert f"{ALERTNAME}:ticket" not in rules_by_name(slo)


def _state(slo: Slo, severity: str) -> SloAlertState:
    return SloAlertState(
        slo=slo.name,
        severity="page" if severity == "page" else "ticket",
        firing=True,
        evaluated_at=datetime(2026, 3, 1, tzinfo=UTC),
        objective=float(slo.objective),
        window=slo.window.label,
        sli=0.99,
        budget_remaining=0.5,
        burn_rates={"5m": 20.0, "30m": 20.0, "1h": 20.0, "2h": 20.0, "6h": 20.0, "1d": 20.0, "3d": 20.0},
        conditions=tuple(
            BurnCondition(format_duration(p.long_s), format_duration(p.short_s), float(p.factor), "firing")
            for p in slo.pairs
            if p.severity == severity
        ),
        labels=dict(slo.labels),
        description=slo.description or None,
    )


@pytest.mark.parametrize("severity", ["page", "ticket"])
def test_labels_and_annotation_keys_are_those_of_the_jobs_alerts(severity: str) -> None:
    """Alertmanager routes and inhibits on these labels, so Prometheus-fired and job-fired alerts must agree."""
    slo = make_slo(labels={"cluster": "prod", "team": "payments"}, description="Produce requests acknowledged")
    options = RuleOptions({"team": "kafka", "env": "prod"}, "https://runbooks.example.com/{alertname}#{slo}")
    rule = rules_by_name(slo, options)[f"{ALERTNAME}:{severity}"]
    recorded = rules_by_name(slo, options)["slo:sli_total:events1m"]["labels"]
    prometheus_labels = {**recorded, **rule["labels"], "alertname": rule["alert"]}
    state = _state(slo, severity)
    assert prometheus_labels == job_alert_labels(state, options.labels)
    assert prometheus_labels["team"] == "payments"  # the SLO's own label wins over alerting.labels, as in the job
    job_keys = set(alert_annotations(state, job_alert_labels(state, options.labels), options.runbook_url))
    assert set(rule["annotations"]) == job_keys - {"evaluated_at", "exhaustion_at"}
    assert rule["annotations"]["runbook_url"] == f"https://runbooks.example.com/{ALERTNAME}#produce"
    assert rule["annotations"]["objective"] == "99.9"
    assert "for" not in rule


def test_text_that_looks_like_a_template_stays_text() -> None:
    slo = make_slo()
    assert render_template(slo, [Text("a {{ $labels.x }} b")]) == '{{ "a {{ $labels.x }} b" }}'
    assert render_template(slo, [Text("plain")]) == "plain"


@pytest.mark.parametrize(
    ("changes", "options", "message"),
    [
        (
            {"labels": {"severity": "x"}},
            RuleOptions(),
            "SLO 'produce': labels.severity: 'severity' is set by kafka-pulse",
        ),
        ({"labels": {"bad-name": "x"}}, RuleOptions(), "SLO 'produce': labels.bad-name: not a Prometheus label name"),
        ({}, RuleOptions({"__x": "y"}), "alerting.labels.__x: not a Prometheus label name"),
    ],
)
def test_unusable_labels_are_refused_with_their_key(
    changes: dict[str, Any], options: RuleOptions, message: str
) -> None:
    with pytest.raises(RulesRefused) as caught:
        rule_group(make_slo(**changes), options)
    assert message in str(caught.value)


def test_event_log_slos_are_skipped_and_a_config_without_prometheus_slis_is_refused() -> None:
    events = BASE | {
        "name": "canary",
        "source": {"type": "events", "path": "/nonexistent"},
        "good": "ok",
        "total": "true",
    }
    slos = parse_slos([("test.yaml", [BASE, events])], None, check_sources=False)
    selection = select(slos, "test.yaml")
    assert [s.name for s in selection.chosen] == ["produce"]
    assert [name for name, _ in selection.skipped] == ["canary"]
    with pytest.raises(NoPrometheusSli, match=r"test.yaml: no SLO has `source: \{type: prometheus"):
        select(slos[1:], "test.yaml")


def test_the_example_files_are_what_the_generator_writes() -> None:
    """Golden files: examples/prometheus-rules/ is `kafka-pulse slo rules --config examples/prometheus-slo.yaml
    --out examples/prometheus-rules`; regenerate them when the generator changes."""
    config = load_or_default(EXAMPLE_CONFIG, os.environ)
    source = "examples/prometheus-slo.yaml"
    slos = select(load_rule_slos(config, source, EXAMPLE_CONFIG.parent), source).chosen
    files = output_files(slos, RuleOptions(config.alerting.labels, config.alerting.runbook_url), source)
    assert sorted(files) == sorted(p.name for p in EXAMPLE_RULES.glob("*.yml"))
    for name, text in files.items():
        assert (EXAMPLE_RULES / name).read_text() == text, f"{name} differs; regenerate examples/prometheus-rules"
        yaml.safe_load(text)


def test_slos_of_a_spec_file_get_rules_and_event_sources_are_not_read(tmp_path: Path) -> None:
    """`slo.spec` SLOs count like inline ones; an event SLO whose directory is absent here is skipped, not an
    error, since its Parquet is read by the job wherever that runs."""
    events = {"name": "canary", "source": {"type": "events", "path": "absent"}, "good": "ok", "total": "true"}
    (tmp_path / "specs.yaml").write_text(yaml.safe_dump({"slos": [BASE, events | {"objective": 99.9}]}))
    (tmp_path / "pulse.yaml").write_text(yaml.safe_dump({"slo": {"spec": str(tmp_path / "specs.yaml")}}))
    config = load_or_default(tmp_path / "pulse.yaml", os.environ)
    slos = load_rule_slos(config, "pulse.yaml", tmp_path)
    assert [s.name for s in select(slos, "pulse.yaml").chosen] == ["produce"]
