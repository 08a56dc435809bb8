"""examples/prometheus-health/tiered-storage.rules.yml passes the real promtool (Debian `prometheus`) with its
hand-written cases (each alert after its `for`, not before; a deliberate copy delay, an idle remote tier, a caught-up
group never fire), every alert is shown firing, and the rules read only families docs/metrics.md documents. promtool
missing fails, never skips."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.support.promtool import promtool

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
HEALTH = REPO / "examples" / "prometheus-health"
RULES, CASES = "tiered-storage.rules.yml", "tiered-storage.test.yml"


def test_the_tiered_storage_rules_pass_promtool_check_and_their_tests() -> None:
    checked = promtool("check", "rules", RULES, cwd=HEALTH)
    assert checked.returncode == 0 and "SUCCESS: 6 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = promtool("test", "rules", CASES, cwd=HEALTH)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_every_tiered_storage_alert_is_tested_and_reads_documented_families() -> None:
    rules = [r for g in yaml.safe_load((HEALTH / RULES).read_text())["groups"] for r in g["rules"]]
    alerts = {r["alert"]: r for r in rules if "alert" in r}
    cases = yaml.safe_load((HEALTH / CASES).read_text())["tests"]
    fired = {t["alertname"] for case in cases for t in case.get("alert_rule_test", []) if t["exp_alerts"]}
    assert fired == set(alerts), f"alerts never shown firing: {set(alerts) - fired}"
    assert {a["labels"]["severity"] for a in alerts.values()} == {"ticket"}
    documented = set(re.findall(r"^\| `([a-z_:0-9]+)`", (REPO / "docs" / "metrics.md").read_text(), re.M))
    used = {name for r in rules for name in re.findall(r"\b((?:kafka|burrow)_[a-z_0-9:]+)\b", r["expr"])}
    assert used and used <= documented, f"undocumented families: {used - documented}"
    recorded = {r["record"] for r in rules if "record" in r}
    assert recorded <= documented, f"undocumented recording rules: {recorded - documented}"
    section = (REPO / "docs" / "metrics.md").read_text().split("### Tiered storage", 1)[1].split("\n### ", 1)[0]
    assert all(f"`{name}`" in section for name in alerts), "an alert missing from docs/metrics.md's tiered section"
