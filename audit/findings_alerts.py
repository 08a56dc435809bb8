"""The reconciliation's findings as Alertmanager incidents (pure; docs/audit.md, "Alerts"): one incident per
(cluster, topic, group or producers, kind) while a minute judged within `hold` has that finding; its annotations
name the newest such minute and its count, and the records over the hold."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from audit.reconcile import PRODUCERS, Finding
from pulse.alerts import Alert

HOLD_S = 3600
"""A finding stays current (an open incident, a reason of the check's lag section) while its minute is at most this
long before the newest minute judged."""

ALERT_NAME = "KafkaPulseAuditRecords"
"""Every finding's incidents share it; `kind` tells them apart."""

SEVERITY = {
    "unacknowledged": "ticket",
    "missing": "page",
    "skipped": "page",
    "duplicated": "ticket",
    "incomplete": "page",
}
"""Records lost (missing from the log, skipped by a group, never consumed) page; the rest are tickets."""


def _minute(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%MZ")


def incident_alerts(found: Iterable[Finding], newest_minute_ms: int | None, hold_ms: int) -> list[Alert]:
    """The incidents open now: findings of minutes at most `hold_ms` before the newest minute judged."""
    if newest_minute_ms is None:
        return []
    latest: dict[tuple[str, str, str, str], tuple[Finding, int]] = {}
    for f in found:
        if f.minute_ms < newest_minute_ms - hold_ms:
            continue
        key = (f.cluster, f.topic, f.group, f.kind)
        held = latest.get(key)
        total = f.count + (held[1] if held is not None else 0)
        newest = f if held is None or f.minute_ms >= held[0].minute_ms else held[0]
        latest[key] = (newest, total)
    alerts = []
    for (cluster, topic, group, kind), (newest, total) in sorted(latest.items()):
        who = "the producers" if group == PRODUCERS else f"group {group}"
        alerts.append(
            Alert(
                labels={
                    "alertname": ALERT_NAME,
                    "kind": kind,
                    "cluster": cluster,
                    "topic": topic,
                    "group": "" if group == PRODUCERS else group,
                    "severity": SEVERITY[kind],
                },
                annotations={
                    "summary": f"{newest.count} records {kind} on {topic}, {who}, minute {_minute(newest.minute_ms)}",
                    "minute": _minute(newest.minute_ms),
                    "count": str(newest.count),
                    "records_in_hold": str(total),
                    "description": (
                        f"The data-flow audit's reconciliation found {total} records {kind} on {cluster}/{topic} "
                        f"({who}) in the minutes judged over the last {hold_ms // 60_000} minutes; the newest is "
                        f'{_minute(newest.minute_ms)} with {newest.count} (docs/audit.md, "What each finding means").'
                    ),
                },
            )
        )
    return alerts
