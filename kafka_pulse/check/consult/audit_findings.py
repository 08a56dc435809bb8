"""The data-flow audit's findings in the check's judgement: where `run` reconciles the audit's counts
(`audit.reconcile`), the lag section, which answers "do the consumer groups get their records", also says which
records went astray: WARN and one reason per recent finding naming topic, group, minute and count. The status page
takes them from the running stream, `check` from the findings table (`read_findings`); the judgement is pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from audit import HOLD_S, Finding, describe
from kafka_pulse.check.judge.verdict import EXAMPLES, Section, Status


def recent_findings(found: Sequence[Finding], cluster: str, newest_minute_ms: int | None) -> list[Finding]:
    """The cluster's findings of minutes within `HOLD_S` of the newest judged (the alerts' hold), oldest first."""
    if newest_minute_ms is None:
        return []
    since = newest_minute_ms - HOLD_S * 1000
    return sorted(f for f in found if f.cluster == cluster and f.minute_ms >= since)


def add_audit_findings(lag: Section, found: Sequence[Finding]) -> Section:
    """The lag section with the recent findings: `details.audit_findings` lists them all (empty when none), the
    newest `EXAMPLES` become reasons, and any finding makes the section at least WARN."""
    details = {
        **lag.details,
        "audit_findings": [
            {
                "topic": f.topic,
                "group": f.group or None,
                "minute": datetime.fromtimestamp(f.minute_ms / 1000, UTC).isoformat().replace("+00:00", "Z"),
                "kind": f.kind,
                "count": f.count,
            }
            for f in found
        ],
    }
    if not found:
        return replace(lag, details=details)
    status = lag.status.at_least(Status.WARN)
    records = sum(f.count for f in found)
    summary = f"{records} records astray in the data-flow audit; {lag.summary}"
    reasons = (*(describe(f) for f in found[-EXAMPLES:]), *lag.reasons)
    return replace(lag, status=status, summary=summary, reasons=reasons, details=details)


def read_findings(directory: Path, cluster: str, now: datetime, deadline_s: float) -> list[Finding] | str:
    """`check`'s facts, from the findings table `run` writes (`<audit.log.dir>/findings`): the cluster's findings
    of minutes within `HOLD_S` of the newest a running reconciliation would have judged by `now` (`deadline_s`
    before it); only the date folders that can hold them are read. A reason string when the table cannot be read."""
    import pyarrow.parquet as pq

    newest_ms = int(now.timestamp() * 1000) - int(deadline_s * 1000)
    since_ms = newest_ms - HOLD_S * 1000
    first_day = datetime.fromtimestamp(since_ms / 1000, UTC).date()
    found: list[Finding] = []
    folders = sorted(directory.glob("date=*")) if directory.is_dir() else []
    for folder in folders:
        if folder.name.removeprefix("date=") < first_day.isoformat():
            continue
        for part in sorted(folder.glob("*.parquet")):
            try:
                rows = pq.read_table(part, columns=["cluster", "topic", "group", "minute", "kind", "count"]).to_pylist()
            except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                return f"{part}: {exc}"
            for r in rows:
                minute_ms = int(r["minute"].timestamp() * 1000)
                if r["cluster"] == cluster and minute_ms >= since_ms:
                    found.append(Finding(minute_ms, r["cluster"], r["topic"], r["group"] or "", r["kind"], r["count"]))
    return sorted(set(found))  # a batch replayed after a crash wrote its findings twice
