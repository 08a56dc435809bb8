"""examples/prometheus-health/share-acknowledgements.rules.yml passes the real promtool (Debian `prometheus`) with its
hand-written cases (each alert after its `for`, not before; a low ratio or an idle cluster never fires), every alert
is shown firing, and the rules read only families docs/metrics.md documents. promtool missing fails, never skips."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.support.promtool import promtool

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
HEALTH = REPO / "examples" / "prometheus-health"
RULES, CASES = "share-acknowledgements.rules.yml", "share-acknowledgements.test.yml"


def test_the_share_acknowledgement_rules_pass_promtool_check_and_their_tests() -> None:
    checked = promtool("check", "rules", RULES, cwd=HEALTH)
    assert checked.returncode == 0 and "SUCCESS: 3 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = promtool("test", "rules", CASES, cwd=HEALTH)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_every_share_acknowledgement_alert_is_tested_and_reads_documented_families() -> None:
    rules = yaml.safe_load((HEALTH / RULES).read_text())
    alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"]}
    cases = yaml.safe_load((HEALTH / CASES).read_text())["tests"]
    fired = {t["alertname"] for case in cases for t in case["alert_rule_test"] if t["exp_alerts"]}
    assert fired == set(alerts), f"alerts never shown firing: {set(alerts) - fired}"
    documented = set(re.findall(r"^\| `([a-z_:0-9]+)`", (REPO / "docs" / "metrics.md").read_text(), re.M))
    used = {name for a in alerts.values() for name in re.findall(r"\b(kafka_[a-z_0-9]+)\b", a["expr"])}
    assert used and used <= documented, f"undocumented families: {used - documented}"
    alert_table = (REPO / "docs" / "metrics.md").read_text().split("Rules over them", 1)[1]
    assert all(f"`{name}`" in alert_table for name in alerts), "an alert missing from docs/metrics.md"
