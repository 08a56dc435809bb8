"""examples/prometheus-health/share-groups.rules.yml passes the real promtool (Debian `prometheus`) with its
hand-written cases (each alert after its `for`, not before; OK and UNKNOWN partitions never fire), every alert is
shown firing, and the rules read only families docs/metrics.md documents. promtool missing fails, never skips."""

from __future__ import annotations

import pytest

from tests.support.promtool import assert_alerts_fire_and_read_documented_families, assert_rules_pass_promtool

pytestmark = pytest.mark.integration

RULES, CASES = "share-groups.rules.yml", "share-groups.test.yml"


def test_the_share_group_rules_pass_promtool_check_and_their_tests() -> None:
    assert_rules_pass_promtool(RULES, CASES, rule_count=2)


def test_every_share_group_alert_is_tested_and_reads_documented_families() -> None:
    assert_alerts_fire_and_read_documented_families(RULES, CASES)
