"""The data-flow audit's recent findings in the check's lag section: WARN with a reason naming topic, group, minute
and count; nothing changes but an empty list when there are none; `check` reads them from the findings table."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq

from audit import FINDINGS_ROWS, Finding
from audit.findings_log import findings_table
from kafka_pulse.check.consult.audit_findings import add_audit_findings, read_findings, recent_findings
from kafka_pulse.check.judge.verdict import Section, Status

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


def test_check_reads_the_recent_findings_of_its_cluster_from_the_table(tmp_path: Path) -> None:
    """Minute 121 is the newest a reconciliation with a 20-minute deadline has judged at minute 141."""
    found = [finding(0), finding(120, "missing", ""), finding(121), finding(121, cluster="other")]
    folder = tmp_path / FINDINGS_ROWS / "date=2027-01-15"
    folder.mkdir(parents=True)
    table = findings_table(found, 7, M)
    pq.write_table(table, folder / "part-0.parquet")
    pq.write_table(table, folder / "part-1.parquet")  # the same batch replayed after a crash
    now = datetime.fromtimestamp((M + 141 * 60_000) / 1000, UTC)
    assert read_findings(tmp_path / FINDINGS_ROWS, "prod", now, 1200) == [finding(120, "missing", ""), finding(121)]
    assert read_findings(tmp_path / "nowhere", "prod", now, 1200) == []
    (folder / "part-2.parquet").write_bytes(b"not parquet")
    assert str(read_findings(tmp_path / FINDINGS_ROWS, "prod", now, 1200)).startswith(f"{folder / 'part-2.parquet'}:")


def test_the_check_of_a_cluster_that_is_away_still_says_what_run_found(tmp_path: Path) -> None:
    """The lag section of `run_check`, with nothing listening on the bootstrap port: not read, and the findings."""
    from kafka_pulse.check.deadline import Deadline
    from kafka_pulse.check.health_check import run_check
    from pulse.config import ClusterConfig, PulseConfig

    folder = tmp_path / FINDINGS_ROWS / "date=2027-01-15"
    folder.mkdir(parents=True)
    pq.write_table(findings_table([finding(121)], 7, M), folder / "part-0.parquet")
    audit = {"log": {"dir": str(tmp_path)}, "reconcile": {"enabled": True, "deadline_s": 1200}}
    config = PulseConfig.model_validate({"audit": audit, "http": {"listen": "127.0.0.1:1"}})
    cluster = ClusterConfig(name="prod", bootstrap_servers=["127.0.0.1:9"])
    at = datetime.fromtimestamp((M + 141 * 60_000) / 1000, UTC)
    sections = run_check(config, cluster, Deadline.after(3), now=lambda: at, read_self=list, read_slow=list,
                         read_neighbours=list)  # fmt: skip
    (lag,) = [s for s in sections if s.name == "lag"]
    assert "100 records skipped on prod/orders, group billing, minute 2027-01-15T10:01Z" in lag.reasons
    assert [f["count"] for f in lag.details["audit_findings"]] == [100]
