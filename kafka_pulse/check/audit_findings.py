"""The data-flow audit's findings in the check's judgement (pure): where `run` reconciles the audit's counts
(`audit.reconcile`), the lag section, which answers "do the consumer groups get their records", also says which
records went astray: WARN and one reason per recent finding naming topic, group, minute and count."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from audit import HOLD_S, Finding, describe
from kafka_pulse.check.verdict import EXAMPLES, Section, Status


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
    status = lag.status if lag.status.rank >= Status.WARN.rank else Status.WARN
    records = sum(f.count for f in found)
    summary = f"{records} records astray in the data-flow audit; {lag.summary}"
    reasons = (*(describe(f) for f in found[-EXAMPLES:]), *lag.reasons)
    return replace(lag, status=status, summary=summary, reasons=reasons, details=details)
