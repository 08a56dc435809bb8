"""examples/prometheus-health/: the Kafka health alerts pass the real promtool (Debian `prometheus`) as checked in,
with their hand-written cases (each alert after its `for` and not before; a collector down silences the verdicts
read through it and opens its own ticket), and read only metric families that docs/metrics.md documents, the
tables the collector tests hold the real output to. promtool missing fails these tests, it never skips them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.support.promtool import promtool

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
HEALTH = REPO / "examples" / "prometheus-health"


def test_the_health_rules_pass_promtool_check_and_their_tests() -> None:
    checked = promtool("check", "rules", "kafka-health.rules.yml", cwd=HEALTH)
    assert checked.returncode == 0 and "SUCCESS: 19 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = promtool("test", "rules", "kafka-health.test.yml", cwd=HEALTH)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_every_alert_is_tested_and_every_family_is_documented() -> None:
    rules = yaml.safe_load((HEALTH / "kafka-health.rules.yml").read_text())
    alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"]}
    cases = yaml.safe_load((HEALTH / "kafka-health.test.yml").read_text())["tests"]
    fired = {t["alertname"] for case in cases for t in case["alert_rule_test"] if t["exp_alerts"]}
    assert fired == set(alerts), f"alerts never shown firing: {set(alerts) - fired}"
    assert {a["labels"]["severity"] for a in alerts.values()} == {"page", "ticket"}
    documented = set(re.findall(r"^\| `([a-z_:0-9]+)`", (REPO / "docs" / "metrics.md").read_text(), re.M))
    used = {name for a in alerts.values() for name in re.findall(r"\b(kafka_[a-z_0-9]+)\b", a["expr"])}
    assert used and used <= documented, f"undocumented families: {used - documented}"
