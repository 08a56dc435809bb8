"""examples/prometheus-health/: the Kafka health alerts pass the real promtool (Debian `prometheus`) as checked in,
with their hand-written cases (each alert after its `for` and not before; a collector down silences the verdicts
read through it and opens its own ticket), and read only metric families that docs/metrics.md documents, the
tables the collector tests hold the real output to. promtool missing fails these tests, it never skips them."""

from __future__ import annotations

import pytest

from tests.support.promtool import assert_alerts_fire_and_read_documented_families, assert_rules_pass_promtool

pytestmark = pytest.mark.integration

RULES, CASES = "kafka-health.rules.yml", "kafka-health.test.yml"


def test_the_health_rules_pass_promtool_check_and_their_tests() -> None:
    assert_rules_pass_promtool(RULES, CASES, rule_count=19)


def test_every_alert_is_tested_and_every_family_is_documented() -> None:
    alerts = assert_alerts_fire_and_read_documented_families(RULES, CASES)
    assert {a["labels"]["severity"] for a in alerts.values()} == {"page", "ticket"}
