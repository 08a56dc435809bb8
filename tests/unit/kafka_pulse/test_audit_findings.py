"""The data-flow audit's recent findings in the check's lag section (pure): WARN with a reason naming topic, group,
minute and count; nothing changes but an empty list when there are none."""

from __future__ import annotations

from audit import Finding
from kafka_pulse.check.audit_findings import add_audit_findings, recent_findings
from kafka_pulse.check.verdict import Section, Status

M = 1_800_000_000_000 - 1_800_000_000_000 % 60_000
LAG = Section("lag", Status.OK, "3 groups OK", details={"groups": 3})


def finding(minute: int, kind: str = "skipped", group: str = "billing", cluster: str = "prod") -> Finding:
    return Finding(M + minute * 60_000, cluster, "orders", group, kind, 100)  # type: ignore[arg-type]


def test_a_recent_skip_warns_naming_topic_group_minute_and_count() -> None:
    found = [finding(0), finding(120, "missing", ""), finding(121), finding(121, cluster="other")]
    recent = recent_findings(found, "prod", M + 121 * 60_000)
    assert recent == [finding(120, "missing", ""), finding(121)]  # minute 0 is past the hour; other cluster's out
    judged = add_audit_findings(LAG, recent)
    assert judged.status is Status.WARN
    assert judged.summary == "200 records astray in the data-flow audit; 3 groups OK"
    assert judged.reasons == (
        "100 records missing on prod/orders, producers, minute 2027-01-15T10:00Z",
        "100 records skipped on prod/orders, group billing, minute 2027-01-15T10:01Z",
    )
    assert judged.details["groups"] == 3
    assert judged.details["audit_findings"][1] == {
        "topic": "orders",
        "group": "billing",
        "minute": "2027-01-15T10:01:00Z",
        "kind": "skipped",
        "count": 100,
    }


def test_no_finding_leaves_the_verdict_and_lists_none() -> None:
    assert add_audit_findings(LAG, []) == Section(
        "lag", Status.OK, "3 groups OK", details={"groups": 3, "audit_findings": []}
    )
    assert recent_findings([finding(0)], "prod", None) == []
    crit = Section("lag", Status.CRIT, "stalled")
    assert add_audit_findings(crit, [finding(0)]).status is Status.CRIT
