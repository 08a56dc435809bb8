"""examples/prometheus-health/share-acknowledgements.rules.yml passes the real promtool (Debian `prometheus`) with its
hand-written cases (each alert after its `for`, not before; a low ratio or an idle cluster never fires), every alert
is shown firing, and the rules read only families docs/metrics.md documents. promtool missing fails, never skips."""

from __future__ import annotations

import pytest

from tests.support.promtool import (
    REPO,
    assert_alerts_fire_and_read_documented_families,
    assert_rules_pass_promtool,
)

pytestmark = pytest.mark.integration

RULES, CASES = "share-acknowledgements.rules.yml", "share-acknowledgements.test.yml"


def test_the_share_acknowledgement_rules_pass_promtool_check_and_their_tests() -> None:
    assert_rules_pass_promtool(RULES, CASES, rule_count=3)


def test_every_share_acknowledgement_alert_is_tested_and_reads_documented_families() -> None:
    alerts = assert_alerts_fire_and_read_documented_families(RULES, CASES)
    alert_table = (REPO / "docs" / "metrics.md").read_text().split("Rules over them", 1)[1]
    assert all(f"`{name}`" in alert_table for name in alerts), "an alert missing from docs/metrics.md"
