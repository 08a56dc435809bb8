"""Debian's `promtool` run on rule files, for the tests that check rules and their hand-written cases."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from pulse.process import require_program

REPO = Path(__file__).resolve().parents[2]
HEALTH = REPO / "examples" / "prometheus-health"
"""Where the example health rules and their promtool cases live."""
Alerts = dict[str, dict[str, Any]]
"""Alerting rules as the rule file holds them, by alert name."""


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`promtool ARGS` in `cwd`, its output captured; promtool missing fails (naming its package), never skips."""
    argv = [require_program("promtool", "prometheus"), *args]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def assert_rules_pass_promtool(rules: str, cases: str, rule_count: int, cwd: Path = HEALTH) -> None:
    """`promtool check rules` finds exactly `rule_count` rules in `rules`, and `promtool test rules` passes `cases`."""
    checked = promtool("check", "rules", rules, cwd=cwd)
    found = f"SUCCESS: {rule_count} rules found"
    assert checked.returncode == 0 and found in checked.stdout, checked.stdout + checked.stderr
    tested = promtool("test", "rules", cases, cwd=cwd)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def assert_alerts_fire_and_read_documented_families(rules: str, cases: str, cwd: Path = HEALTH) -> Alerts:
    """The alerts of `rules` by name, once every one is shown firing in `cases` and their expressions read only
    `kafka_*` families that docs/metrics.md documents (a rule on an undocumented family would alert on nothing)."""
    groups = yaml.safe_load((cwd / rules).read_text())["groups"]
    alerts: Alerts = {r["alert"]: r for g in groups for r in g["rules"]}
    tests = yaml.safe_load((cwd / cases).read_text())["tests"]
    fired = {t["alertname"] for case in tests for t in case["alert_rule_test"] if t["exp_alerts"]}
    assert fired == set(alerts), f"alerts never shown firing: {set(alerts) - fired}"
    documented = set(re.findall(r"^\| `([a-z_:0-9]+)`", (REPO / "docs" / "metrics.md").read_text(), re.M))
    used = {name for a in alerts.values() for name in re.findall(r"\b(kafka_[a-z_0-9]+)\b", a["expr"])}
    assert used and used <= documented, f"undocumented families: {used - documented}"
    return alerts
