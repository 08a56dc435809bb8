"""The `/api/status` document (schema `kafka-pulse-status/1`, docs/status-page.md), built from what the process
already holds: the check's sections, the canary's readings, the lag evaluator's verdicts and the SLO schedule's
results. Pure: the board (board.py) gathers the inputs and the page (static/status.js) only renders the output."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import quote

from kafka_pulse.check.judge.verdict import Report, Section, Status, overall
from kafka_pulse.check.render import report_json
from kafka_pulse.status.quantiles import Buckets, merge, quantile
from lag import GroupStatus
from lag import Status as LagStatus
from pulse.kafka.share_stall import ShareGroupVerdict, verdict_json
from pulse.redact import redact_text
from slo import SloResult, iso

SCHEMA = "kafka-pulse-status/1"
"""Bumped when a field changes meaning or goes away; new fields may appear without a bump."""
GRAFANA_DASHBOARDS = (
    ("kafka-pulse-cluster", "Kafka cluster overview"),
    ("kafka-pulse-canary", "Kafka canary"),
    ("kafka-pulse-lag", "Kafka consumer lag"),
    ("kafka-pulse-slo", "Kafka SLOs"),
)
"""The uids and titles of the generated dashboards (dashboards/json/)."""
_NO_AZ = "(no rack)"
SHARE_PARTITIONS = 20
"""Partitions not OK a share group's entry lists at most, the stalled first (every partition is on its share-group
route): an OK group costs one short row, whatever its partition count."""


class ShareReadingView(Protocol):
    """One cluster's latest judged share-group read (lag's `ShareReading`)."""

    @property
    def verdicts(self) -> tuple[ShareGroupVerdict, ...]: ...

    @property
    def read_at_s(self) -> float: ...

    @property
    def reason(self) -> str: ...


@dataclass(frozen=True)
class CanaryReading:
    """The in-process canary as the board read it: per broker its rack, connection check, availability over the
    canary's window and the produce latency histogram of the recent window (bucket counts, not cumulative since
    start)."""

    cluster: str
    window_s: float
    """The canary's availability window."""
    latency_window_s: float
    """The span the latency buckets cover."""
    latency_span_s: float = 300.0
    """The span the latency quantiles are meant to cover once that much history is held (the board's window)."""
    racks: Mapping[int, str | None] = field(default_factory=dict)
    up: Mapping[int, bool] = field(default_factory=dict)
    availability: Mapping[int, float | None] = field(default_factory=dict)
    latency: Mapping[int, Buckets] = field(default_factory=dict)


@dataclass(frozen=True)
class SloPoint:
    """One evaluation's error budget left (a point of the burn-down chart)."""

    at: datetime
    budget_remaining: float | None


@dataclass(frozen=True)
class SloView:
    """The SLO schedule as the board read it: the latest results and each instance's recent budget history."""

    results: Sequence[SloResult]
    history: Mapping[str, Sequence[SloPoint]]
    """Instance key (`slo_key`) -> points, oldest first."""
    runs_ok: int = 0
    runs_failed: int = 0
    last_error: str | None = None


@dataclass(frozen=True)
class GroupCount:
    """How many of one cluster's groups have one status, and how many of them the document lists."""

    cluster: str
    status: str
    """The group's Burrow status: OK, WARN, ERR, NOTFOUND (or our UNKNOWN)."""
    groups: int
    listed: int


@dataclass(frozen=True)
class StatusInputs:
    """Everything one document is made of; a component that is off is None and named in `off` with the reason."""

    generated_at: datetime
    refresh_s: float
    reports: Sequence[Report] = ()
    """One check report per cluster, from the last background refresh (empty before the first one ends)."""
    canary: CanaryReading | None = None
    groups: Sequence[GroupStatus] | None = None
    """The groups listed: every one not OK and the most lagging OK ones (kafka_pulse/status/lag_snapshot.py)."""
    group_counts: Sequence[GroupCount] = ()
    """Per cluster and status, the groups there are and how many of them `groups` lists."""
    groups_limit: int | None = None
    """OK groups listed at most (`lag.status_page_groups`)."""
    groups_dropped: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Per cluster and reason, records of groups lag refused at ingestion (name or count bound)."""
    slo: SloView | None = None
    off: Mapping[str, str] = field(default_factory=dict)
    grafana_url: str | None = None
    burrow_api: str | None = "/v3/kafka"
    """Path of the Burrow v3 API on this listener; None when lag is off."""
    shares: Mapping[str, ShareReadingView] | None = None
    """Per cluster, lag's latest judged share-group read; None when share groups are not read here."""


def slo_key(name: str, labels: Mapping[str, str]) -> str:
    """One SLO instance's identity: its name and its labels, sorted."""
    return name + "".join(f",{k}={v}" for k, v in sorted(labels.items()))


def status_document(inputs: StatusInputs) -> dict[str, Any]:
    """The whole `/api/status` answer; every key is listed in docs/status-page.md."""
    sections = [s for r in inputs.reports for s in r.sections]
    verdict = overall(sections).value if sections else Status.UNKNOWN.value
    return {
        "schema": SCHEMA,
        "generated_at": iso(inputs.generated_at),
        "refresh_s": inputs.refresh_s,
        "status": verdict,
        "checked_at": iso(min(r.checked_at for r in inputs.reports)) if inputs.reports else None,
        "clusters": [_cluster(r) for r in inputs.reports],
        "brokers": _brokers(inputs.reports, inputs.canary),
        "azs": _azs(inputs.canary),
        "canary_history": _history(inputs.canary),
        "partitions": _partitions(inputs.reports),
        "groups": None if inputs.groups is None else [_group(g) for g in inputs.groups],
        "groups_counts": None if inputs.groups is None else [_count(c) for c in inputs.group_counts],
        "groups_limit": None if inputs.groups is None else inputs.groups_limit,
        "groups_dropped": None if inputs.groups is None else _dropped(inputs.groups_dropped),
        "share_groups": None if inputs.shares is None else _share_groups(inputs.shares),
        "slos": None if inputs.slo is None else [_slo(r, inputs.slo.history) for r in inputs.slo.results],
        "slo_schedule": None if inputs.slo is None else _schedule(inputs.slo),
        "off": {name: redact_text(why) for name, why in sorted(inputs.off.items())},
        "links": _links(inputs.grafana_url, inputs.burrow_api),
    }


def _count(c: GroupCount) -> dict[str, Any]:
    return {"cluster": c.cluster, "status": c.status, "groups": c.groups, "listed": c.listed}


def _dropped(counts: Mapping[str, Mapping[str, int]]) -> list[dict[str, Any]]:
    """Each cluster and reason with groups dropped at ingestion, and how many of their records."""
    return [
        {"cluster": cluster, "reason": reason, "records": n}
        for cluster, reasons in sorted(counts.items())
        for reason, n in sorted(reasons.items())
        if n
    ]


def _cluster(report: Report) -> dict[str, Any]:
    """The check's `--json` document for one cluster, without its timing fields."""
    out = report_json(report)
    for key in ("schema", "exit_code", "elapsed_s", "timeout_s"):
        out.pop(key, None)
    return out


def _section(report: Report, name: str) -> Section | None:
    return next((s for s in report.sections if s.name == name), None)


def _brokers(reports: Sequence[Report], canary: CanaryReading | None) -> list[dict[str, Any]]:
    """One row per broker a check expects or the canary knows: rack, up (registered and answering), the check's
    reason when not, and the canary's figures for the broker."""
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for report in reports:
        section = _section(report, "brokers")
        if section is None:
            continue
        for b in section.details.get("brokers", []):
            up = False if not b.get("registered") else b.get("answered")
            why = next((redact_text(r) for r in section.reasons if r.startswith(f"broker {b['id']} ")), None)
            rows[(report.cluster, b["id"])] = {
                "cluster": report.cluster,
                "id": b["id"],
                "rack": b.get("rack"),
                "host": b.get("host"),
                "port": b.get("port"),
                "up": up,
                "reason": why,
            }
    if canary is not None:
        for broker, rack in canary.racks.items():
            row = rows.setdefault(
                (canary.cluster, broker),
                {
                    "cluster": canary.cluster,
                    "id": broker,
                    "rack": rack,
                    "host": None,
                    "port": None,
                    "up": None,
                    "reason": None,
                },
            )
            row["rack"] = row["rack"] or rack
            buckets = canary.latency.get(broker, {})
            row["canary"] = {
                "connection_up": canary.up.get(broker),
                "availability": canary.availability.get(broker),
                "latency_p50_s": quantile(0.5, buckets),
                "latency_p99_s": quantile(0.99, buckets),
            }
    for row in rows.values():
        row.setdefault("canary", None)
    return [rows[k] for k in sorted(rows)]


def _azs(canary: CanaryReading | None) -> list[dict[str, Any]]:
    """Per availability zone (broker.rack): its brokers, the mean canary availability of those with a verdict, and
    latency quantiles over all its brokers' probes."""
    if canary is None:
        return []
    zones: dict[str, list[int]] = {}
    for broker, rack in canary.racks.items():
        zones.setdefault(rack or _NO_AZ, []).append(broker)
    out = []
    for zone, brokers in sorted(zones.items()):
        known = [a for b in brokers if (a := canary.availability.get(b)) is not None]
        buckets = merge(canary.latency.get(b, {}) for b in brokers)
        out.append(
            {
                "rack": None if zone == _NO_AZ else zone,
                "brokers": sorted(brokers),
                "brokers_up": sum(1 for b in brokers if canary.up.get(b)),
                "availability": sum(known) / len(known) if known else None,
                "latency_p50_s": quantile(0.5, buckets),
                "latency_p99_s": quantile(0.99, buckets),
            }
        )
    return out


def _history(canary: CanaryReading | None) -> dict[str, float] | None:
    """How much history the latency quantiles hold of the span they are meant to cover: the page shows "2 min of 5"
    instead of an empty cell while the run is younger than the span."""
    if canary is None:
        return None
    return {"latency_history_s": round(canary.latency_window_s, 1), "latency_span_s": canary.latency_span_s}


def _partitions(reports: Sequence[Report]) -> dict[str, list[dict[str, Any]]]:
    """Offline, under-min-ISR and under-replicated partitions (the check's examples, 20 of each at most), each with
    the brokers to blame: the replicas missing from its ISR."""
    out: dict[str, list[dict[str, Any]]] = {"offline": [], "under_min_isr": [], "under_replicated": []}
    for report in reports:
        section = _section(report, "partitions")
        examples = section.details.get("examples", {}) if section is not None else {}
        for kind, rows in out.items():
            for p in examples.get(kind, []):
                blame = sorted(set(p["replicas"]) - set(p["isr"]))
                rows.append({"cluster": report.cluster, **p, "blame": blame})
    return out


def _group(g: GroupStatus) -> dict[str, Any]:
    """A consumer group's row: Burrow's status, our worst partition status (STOP, STALL, REWIND are ERR at group
    level), lag in records and seconds, the rule that decided, and the brokers where it is a noisy neighbour."""
    worst = max((p.status for p in g.partitions), default=None)
    culprit = next((p for p in g.partitions if worst is not None and p.status == worst and p.reason), None)
    maxlag = g.maxlag
    rule = g.reason or (culprit.reason if culprit is not None and worst != LagStatus.OK else "")
    return {
        "cluster": g.cluster,
        "group": g.group,
        "status": g.status.name,
        "worst_partition_status": worst.name if worst is not None else None,
        "reason": "; ".join(r for r in (rule, *(n.describe() for n in g.noisy_neighbours)) if r),
        "totallag": g.totallag,
        "lag_seconds": g.lag_seconds,
        "complete": g.complete,
        "partition_count": g.partition_count,
        "maxlag": None
        if maxlag is None
        else {"topic": maxlag.topic, "partition": maxlag.partition, "current_lag": maxlag.current_lag},
        "lag_url": f"/v3/kafka/{quote(g.cluster, safe='')}/consumer/{quote(g.group, safe='')}/lag",
        "noisy_neighbour": [
            {"broker": n.broker, "topic": n.topic, "partitions": list(n.partitions), "why": n.describe()}
            for n in g.noisy_neighbours
        ],
    }


def _share_groups(shares: Mapping[str, ShareReadingView]) -> list[dict[str, Any]]:
    """Every share group of every cluster as the share-stall rule judged it (the check's `lag` section reads the
    same verdicts), with the read's time and reason; lag not known is null, never 0."""
    out = []
    for cluster, reading in sorted(shares.items()):
        read_at = iso(datetime.fromtimestamp(reading.read_at_s, UTC))
        for v in sorted(reading.verdicts, key=lambda v: v.group):
            group = verdict_json(v)
            parts = sorted(group["partitions"], key=lambda p: (p["status"] != "STALLED", p["status"] != "UNKNOWN"))
            listed = [p for p in parts if p["status"] != "OK"][:SHARE_PARTITIONS]
            stalled = "; ".join(p.reason() for p in v.stalled[:3])
            out.append(
                {
                    "cluster": cluster,
                    **group,
                    "reason": stalled,
                    "partitions": listed,
                    "partition_count": len(parts),
                    "read_at": read_at,
                    "read_reason": redact_text(reading.reason) or None,
                    "url": f"/v3/kafka/{quote(cluster, safe='')}/sharegroup/{quote(v.group, safe='')}",
                }
            )
    return out


def _slo(r: SloResult, history: Mapping[str, Sequence[SloPoint]]) -> dict[str, Any]:
    """An SLO instance: the schedule's latest figures and its budget history (the burn-down chart's points)."""
    points = history.get(slo_key(r.name, r.labels), ())
    return {
        "name": r.name,
        "labels": dict(r.labels),
        "objective": r.objective,
        "window": r.window,
        "at": iso(r.at),
        "sli": r.sli,
        "total": r.total,
        "budget_remaining": r.budget_remaining,
        "burn_rates": dict(r.burn_rates),
        "alerts": [{"severity": a.severity, "firing": a.firing} for a in r.alerts],
        "firing": [a.severity for a in r.alerts if a.firing],
        "exhaustion_at": iso(r.exhaustion_at),
        "history": [{"at": iso(p.at), "budget_remaining": p.budget_remaining} for p in points],
    }


def _schedule(view: SloView) -> dict[str, Any]:
    last_error = None if view.last_error is None else redact_text(view.last_error)
    return {"runs_ok": view.runs_ok, "runs_failed": view.runs_failed, "last_error": last_error}


def _links(grafana_url: str | None, burrow_api: str | None) -> dict[str, Any]:
    grafana = (
        [{"title": title, "url": f"{grafana_url.rstrip('/')}/d/{uid}"} for uid, title in GRAFANA_DASHBOARDS]
        if grafana_url
        else []
    )
    return {"burrow_api": burrow_api, "grafana": grafana, "metrics": "/metrics"}
