"""The reconciliation's findings as incidents (pure): one per (cluster, topic, group or producers, kind) while a
recent minute has the finding, naming topic, group, minute and count."""

from __future__ import annotations

from audit.findings_alerts import ALERT_NAME, incident_alerts
from tests.unit.audit.test_reconcile import found, minute

HOUR_MS = 3_600_000


def test_a_skip_is_a_paging_incident_naming_topic_group_minute_and_count() -> None:
    findings = [found("skipped", 100, "billing", at=3), found("skipped", 7, "billing", at=5)]
    (alert,) = incident_alerts(findings, minute(6), HOUR_MS)
    assert alert.labels == {
        "alertname": ALERT_NAME,
        "kind": "skipped",
        "cluster": "prod",
        "topic": "orders",
        "group": "billing",
        "severity": "page",
    }
    assert alert.annotations["summary"] == "7 records skipped on orders, group billing, minute 2027-01-15T08:05Z"
    assert (alert.annotations["minute"], alert.annotations["count"]) == ("2027-01-15T08:05Z", "7")
    assert alert.annotations["records_in_hold"] == "107"


def test_producers_findings_carry_no_group_and_old_minutes_close() -> None:
    findings = [found("missing", 2, at=0), found("unacknowledged", 3, at=61), found("duplicated", 1, "fraud", at=61)]
    alerts = incident_alerts(findings, minute(61), HOUR_MS)
    assert [(a.labels["kind"], a.labels.get("group"), a.labels["severity"]) for a in alerts] == [
        ("unacknowledged", None, "ticket"),
        ("duplicated", "fraud", "ticket"),
    ]
    assert incident_alerts(findings, None, HOUR_MS) == []
