"""`run` with `audit.reconcile.enabled` (built, not started: nothing connects): the reconciliation is a part after
the SLO schedule, says where it reads, and its families are on the registry before its first batch."""

from __future__ import annotations

from pathlib import Path

import yaml

from kafka_pulse.runner.suite import Suite
from pulse.config import parse_config


def suite(tmp_path: Path, reconcile: bool) -> Suite:
    raw = {
        "clusters": [{"name": "prod", "bootstrap_servers": ["127.0.0.1:9"]}],
        "lag": {"enabled": False},
        "collectors": {"enabled": False},
        "canary": {"enabled": False},
        "http": {"listen": "127.0.0.1:1"},  # built, never bound
        "sli_sink": {"cluster": "prod", "topic_prefix": "kp-"},
        "audit": {"reconcile": {"enabled": reconcile, "deadline_s": 600}},
    }
    return Suite(
        parse_config(yaml.safe_dump(raw), "pulse.yaml", {}), "pulse.yaml", tmp_path, tmp_path / "dev", tmp_path
    )


def test_the_reconciliation_is_a_part_of_run_with_its_families(tmp_path: Path) -> None:
    built = suite(tmp_path, True)
    assert "audit-reconcile" in [p.name for p in built.parts]
    assert "audit-reconcile: kp-audit-* on prod, minutes judged 600 s after them, every 60 s" in built.status_line()
    assert built.registry.get_sample_value("kafka_pulse_audit_findings_total", {"kind": "missing"}) == 0
    assert built.registry.get_sample_value("kafka_pulse_audit_late_reports_total") == 0


def test_off_by_default_and_said_so(tmp_path: Path) -> None:
    built = suite(tmp_path, False)
    assert "audit-reconcile" not in [p.name for p in built.parts]
    assert "audit-reconcile: off (audit.reconcile.enabled is false)" in built.status_line()
