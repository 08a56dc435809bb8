"""examples/prometheus-health/streams-groups.rules.yml passes the real promtool (Debian `prometheus`) with its
hand-written cases (each alert after its `for`, not before; OK, UNKNOWN and brief conditions never fire), every
alert is shown firing, and the rules read only families docs/metrics.md documents. promtool missing fails."""

from __future__ import annotations

import pytest

from tests.support.promtool import assert_alerts_fire_and_read_documented_families, assert_rules_pass_promtool

pytestmark = pytest.mark.integration

RULES, CASES = "streams-groups.rules.yml", "streams-groups.test.yml"


def test_the_streams_group_rules_pass_promtool_check_and_their_tests() -> None:
    assert_rules_pass_promtool(RULES, CASES, rule_count=4)


def test_every_streams_group_alert_is_tested_and_reads_documented_families() -> None:
    assert_alerts_fire_and_read_documented_families(RULES, CASES)
