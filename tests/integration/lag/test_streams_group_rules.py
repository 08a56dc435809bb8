"""examples/prometheus-health/streams-groups.rules.yml passes the real promtool (Debian `prometheus`) with its
hand-written cases (each alert after its `for`, not before; OK, UNKNOWN and brief conditions never fire), every
alert is shown firing, and the rules read only families docs/metrics.md documents. promtool missing fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.support.promtool import promtool

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
HEALTH = REPO / "examples" / "prometheus-health"


def test_the_streams_group_rules_pass_promtool_check_and_their_tests() -> None:
    checked = promtool("check", "rules", "streams-groups.rules.yml", cwd=HEALTH)
    assert checked.returncode == 0 and "SUCCESS: 4 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = promtool("test", "rules", "streams-groups.test.yml", cwd=HEALTH)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_every_streams_group_alert_is_tested_and_reads_documented_families() -> None:
    rules = yaml.safe_load((HEALTH / "streams-groups.rules.yml").read_text())
    alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"]}
    cases = yaml.safe_load((HEALTH / "streams-groups.test.yml").read_text())["tests"]
    fired = {t["alertname"] for case in cases for t in case["alert_rule_test"] if t["exp_alerts"]}
    assert fired == set(alerts), f"alerts never shown firing: {set(alerts) - fired}"
    documented = set(re.findall(r"^\| `([a-z_:0-9]+)`", (REPO / "docs" / "metrics.md").read_text(), re.M))
    used = {name for a in alerts.values() for name in re.findall(r"\b(kafka_[a-z_0-9]+)\b", a["expr"])}
    assert used and used <= documented, f"undocumented families: {used - documented}"
