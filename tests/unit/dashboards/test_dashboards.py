"""What the dashboards show: the panels each one must have, the template variables, and every
metric a query names is a documented family (docs/metrics.md, docs/slo.md), so a typo fails here, offline."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from dashboards.files import all_dashboards
from dashboards.lint import all_panels

DOCS = Path(__file__).resolve().parents[3] / "docs"
_SELECTOR_NAME = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?=\{|\[)")
"""A metric name directly followed by its label matchers or range: `x{...}`, `x[5m]`."""
BY_FILE = {name.removesuffix(".json").removeprefix("kafka-pulse-"): d for name, d in all_dashboards().items()}


def titles(dashboard: dict[str, Any]) -> set[str]:
    return {p["title"] for p in all_panels(dashboard)}


def exprs(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in all_panels(dashboard) for t in p.get("targets", [])]


REQUIRED = {
    "cluster": [
        "Brokers",
        "Active controllers",
        "Controller",
        "Offline partitions",
        "Under-replicated partitions",
        "Under min ISR",
        "Under-replication diagnosis",
        "Request latency p$quantile",
        "Produce time breakdown p$quantile",
        "Conversions per second",
        "Conversion time p$quantile",
        "Bytes in",
        "Bytes out",
        "Messages in",
        "Handler and network idle",
        "ISR shrinks and expands",
        "KRaft quorum",
        "Voter last caught up",
        "Voter lag (records)",
        "Leader elections (1 h)",
        "Metadata snapshot age",
        "Pending voter change",
        "Brokers flagged slow",
        "Slow-broker score",
    ],
    "canary": [
        "Availability per broker",
        "Produce success per AZ pair",
        "Same-AZ / cross-AZ success",
        "Same-AZ vs cross-AZ end-to-end p$quantile",
        "Produce latency (acks=all)",
        "End-to-end latency",
        "Lost",
        "Duplicated",
        "Replication latency",
        "Replication latency p$quantile",
        "Mirror lag",
    ],
    "lag": [
        "Groups",
        "Lag (records)",
        "Lag (seconds)",
        "Worst groups (seconds)",
        "Worst groups now",
        "Partitions not OK",
    ],
    "slo": [
        "SLOs",
        "Error budget remaining",
        "Burn rate per window",
        "Firing alerts",
        "Time to exhaustion",
        "Budget remaining (rules)",
        "Burn rate per window (rules)",
    ],
    "tiered": [
        "Tiered topics",
        "Groups on the remote tier",
        "Copy errors",
        "Remote fetch errors",
        "Copy lag vs allowance per topic",
        "Groups reading the remote tier",
    ],
}


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_each_dashboard_has_its_required_panels(name: str) -> None:
    assert set(REQUIRED[name]) <= titles(BY_FILE[name])


@pytest.mark.parametrize("name", sorted(BY_FILE))
def test_panel_titles_are_unique_within_a_dashboard(name: str) -> None:
    """A title names one panel, in Grafana's search and in the integration test's report."""
    all_titles = [p["title"] for p in all_panels(BY_FILE[name])]
    assert len(all_titles) == len(set(all_titles))


def variables(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in dashboard["templating"]["list"]}


@pytest.mark.parametrize(
    ("name", "wanted"),
    [
        ("cluster", {"cluster", "broker"}),
        ("canary", {"cluster", "broker", "client_rack"}),
        ("lag", {"cluster", "group"}),
        ("slo", {"slo"}),
        ("tiered", {"cluster", "broker"}),
    ],
)
def test_template_variables_come_from_label_values(name: str, wanted: set[str]) -> None:
    found = variables(BY_FILE[name])
    assert wanted <= set(found)
    for var in wanted:
        assert found[var]["type"] == "query"
        assert found[var]["definition"].startswith("label_values(")
        assert found[var]["definition"].endswith(f", {'consumer_group' if var == 'group' else var})")


def test_multi_value_variables_are_matched_with_a_regex() -> None:
    """All is sent as `.*`: a query must use `=~` for broker, group and slo, or All would match nothing."""
    for dashboard in BY_FILE.values():
        multi = [v["name"] for v in dashboard["templating"]["list"] if v.get("multi")]
        for expr in exprs(dashboard):
            for var in multi:
                assert f'="${var}"' not in expr.replace(f'=~"${var}"', ""), (var, expr)


def documented_names() -> set[str]:
    text = (DOCS / "metrics.md").read_text() + (DOCS / "slo.md").read_text()
    return set(re.findall(r"`([a-zA-Z_:][a-zA-Z0-9_:]*)", text))


def test_every_metric_a_query_names_is_a_documented_family() -> None:
    documented = documented_names() | {"ALERTS"}
    missing = set()
    for dashboard in BY_FILE.values():
        for expr in exprs(dashboard):
            for name in _SELECTOR_NAME.findall(expr):
                family = re.sub(r"_bucket$", "", name)
                if name not in documented and family not in documented:
                    missing.add(name)
    assert missing == set()


def test_rule_series_read_by_the_slo_dashboard_are_the_generated_ones() -> None:
    from slo.rules import RuleOptions, rule_group
    from slo.spec import parse_slos

    (slo,) = parse_slos(
        [
            (
                "t",
                [
                    {
                        "name": "x",
                        "source": {"type": "prometheus", "url": "http://127.0.0.1:9090"},
                        "good": "sum(a)",
                        "total": "sum(b)",
                        "objective": 99.9,
                    }
                ],
            )
        ],
        None,
        check_sources=False,
    )
    recorded = {r.get("record") or r.get("alert") for r in rule_group(slo, RuleOptions({}, None))["rules"]}
    text = "\n".join(exprs(BY_FILE["slo"]))
    used = set(re.findall(r"slo:[a-z_]+:[a-z0-9_]+", text)) | {"KafkaSLOBurnRate"}
    assert {u for u in used if not u.startswith("slo:sli_error:ratio_rate")} <= recorded
    for window in ("5m", "30m", "1h", "2h", "6h", "1d", "3d"):
        assert f"slo:sli_error:ratio_rate{window}" in recorded
