"""The health check's judgement (pure): facts from the probes -> one `Section` per question, each OK, WARN, CRIT,
UNKNOWN or INFO with the reasons, and the overall status and exit code of the Nagios convention.

Overall status: the worst judged section, ranked CRIT > WARN > UNKNOWN > OK. A known problem outranks a gap in
what the check could see, and a gap outranks OK, because missing data is never success. INFO sections (the lag
snapshot, SLO budgets that are not available or stale) are reported but never change the exit code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from kafka_pulse.check.facts import (
    BrokerProbe,
    FailureKind,
    LagFacts,
    MetadataFacts,
    NotAvailable,
    ProbeFailed,
    QuorumFacts,
    SloFacts,
)
from pulse.kafka.partitions import ElrVerdict, PartitionState

VOTER_STALE_S = 10.0
"""A KRaft voter that has not caught up with the leader for this long is reported (WARN): five times the quorum's
2 s fetch timeout, so a voter in a normal election or restart is not."""
EXAMPLES = 5
"""Partitions, groups or trips named per reason line; the JSON details carry more."""
WORST_GROUPS = 5


class Status(StrEnum):
    """A section's verdict, named as Nagios plugins print them; INFO is reported but not judged."""

    OK = "OK"
    WARN = "WARN"
    CRIT = "CRIT"
    UNKNOWN = "UNKNOWN"
    INFO = "INFO"

    @property
    def exit_code(self) -> int:
        """0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN (Nagios plugin guidelines); INFO alone is 0."""
        return {"OK": 0, "WARN": 1, "CRIT": 2, "UNKNOWN": 3, "INFO": 0}[self.value]

    @property
    def rank(self) -> int:
        """Severity for the overall status: INFO < OK < UNKNOWN < WARN < CRIT."""
        return {"INFO": 0, "OK": 1, "UNKNOWN": 2, "WARN": 3, "CRIT": 4}[self.value]


@dataclass(frozen=True)
class Section:
    """One question of the check and its answer."""

    name: str
    """`brokers`, `controller`, `partitions`, `round_trip`, `lag`, `slo` or `self`."""
    status: Status
    summary: str
    """One line for the table."""
    reasons: tuple[str, ...] = ()
    """Why the status is not OK (or, for INFO, what the figures mean), one sentence each."""
    culprits: tuple[int, ...] = ()
    """Brokers this section names as the cause."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """JSON-ready figures behind the verdict (docs/check.md lists them)."""


@dataclass(frozen=True)
class Report:
    """The whole check: what `--json` prints and the table renders."""

    cluster: str
    bootstrap_servers: tuple[str, ...]
    sections: tuple[Section, ...]
    checked_at: datetime
    elapsed_s: float
    """From the process's start (or the command's, where the start is not known) to the verdict."""
    timeout_s: float

    @property
    def status(self) -> Status:
        return overall(self.sections)

    @property
    def culprits(self) -> tuple[int, ...]:
        return tuple(sorted({b for s in self.sections for b in s.culprits}))


def overall(sections: Iterable[Section]) -> Status:
    """The worst judged status; UNKNOWN when nothing could be judged at all."""
    judged = [s.status for s in sections if s.status is not Status.INFO]
    return max(judged, key=lambda s: s.rank) if judged else Status.UNKNOWN


def _failed(kind: FailureKind) -> Status:
    """A cluster that does not answer (or refuses connections) is down from the client's side: CRIT. A request it
    refuses (credentials, an unsupported API) or a check error says nothing about its health: UNKNOWN."""
    return Status.CRIT if kind in (FailureKind.TIMEOUT, FailureKind.UNREACHABLE) else Status.UNKNOWN


def as_ms(seconds: float) -> str:
    """`seconds` as whole milliseconds, as the sections print latencies."""
    return f"{seconds * 1000:.0f} ms"


def _names(refs: Sequence[PartitionState]) -> str:
    shown = ", ".join(r.label for r in refs[:EXAMPLES])
    return shown + (f" and {len(refs) - EXAMPLES} more" if len(refs) > EXAMPLES else "")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


# --- brokers ------------------------------------------------------------------------------------------------------


UNASKED = "was not asked in time (the check's deadline came first)"
"""Why a registered broker has no probe, in the check; the status page names its own reason."""


def judge_brokers(
    meta: MetadataFacts | ProbeFailed, probes: Mapping[int, BrokerProbe], unasked: str = UNASKED
) -> Section:
    """Every expected broker registered and answering on its own connection (ApiVersions); a broker with no entry
    in `probes` is UNKNOWN, `unasked` saying why."""
    if isinstance(meta, ProbeFailed):
        return Section("brokers", _failed(meta.kind), "cluster metadata not read", (meta.reason,))
    reasons: list[str] = []
    culprits: list[int] = []
    unknown = False
    rows: list[dict[str, Any]] = []
    for broker in meta.expected:
        address = meta.brokers.get(broker)
        probe = probes.get(broker)
        row: dict[str, Any] = {"id": broker, "registered": address is not None, "answered": None}
        if address is not None:
            row |= {"host": address.host, "port": address.port, "rack": address.rack}
        if address is None:
            culprits.append(broker)
            reasons.append(f"broker {broker} is not registered with the cluster (down or fenced) but holds replicas")
        elif probe is None:
            unknown = True
            reasons.append(f"broker {broker} {unasked}")
        else:
            row |= {"answered": probe.ok, "latency_s": round(probe.latency_s, 4), "error": probe.error}
            if not probe.ok:
                culprits.append(broker)
                where = f"{address.host}:{address.port}" + (f", {address.rack}" if address.rack else "")
                how = (
                    f"no answer within {probe.latency_s:.1f} s (hung?)"
                    if probe.error == "timeout"
                    else f"refuses connections ({probe.error})"
                    if probe.error == "refused"
                    else f"failed: {probe.error}"
                )
                reasons.append(f"broker {broker} ({where}) {how}")
        rows.append(row)
    answering = [p for p in probes.values() if p.ok and p.broker in meta.brokers]
    summary = f"{len(answering)}/{len(meta.expected)} brokers answer"
    if answering:
        slowest = max(answering, key=lambda p: p.latency_s)
        summary += f" (slowest: broker {slowest.broker}, {as_ms(slowest.latency_s)})"
    if culprits:
        summary += "; down: " + ", ".join(f"broker {b}" for b in culprits)
    status = Status.CRIT if culprits else Status.UNKNOWN if unknown else Status.OK
    details = {"expected": list(meta.expected), "registered": sorted(meta.brokers), "brokers": rows}
    return Section("brokers", status, summary, tuple(reasons), tuple(culprits), details)


# --- controller ---------------------------------------------------------------------------------------------------


def judge_controller(quorum: QuorumFacts | ProbeFailed | NotAvailable) -> Section:
    """Exactly one active controller: the KRaft quorum's leader (a Raft quorum has at most one per epoch), its
    voters caught up; under ZooKeeper, the controller id of the metadata. Not read at all (the status page of a
    process that reads no quorum): INFO, with the reason."""
    if isinstance(quorum, NotAvailable):
        return Section("controller", Status.INFO, "not available", (quorum.reason,))
    if isinstance(quorum, ProbeFailed):
        status = Status.UNKNOWN if quorum.kind is not FailureKind.UNREACHABLE else Status.CRIT
        return Section("controller", status, "controller not known", (quorum.reason,))
    details: dict[str, Any] = {
        "mode": quorum.mode,
        "leader": quorum.leader,
        "epoch": quorum.epoch,
        "voters": [
            {"node": v.node, "lag_records": v.lag_records, "caught_up_age_s": v.caught_up_age_s} for v in quorum.voters
        ],
        "observers": list(quorum.observers),
    }
    if quorum.leader is None:
        what = "the KRaft metadata quorum has no leader" if quorum.mode == "kraft" else "no broker is the controller"
        return Section("controller", Status.CRIT, "no active controller", (what,), details=details)
    behind = [
        v
        for v in quorum.voters
        if v.node != quorum.leader and v.caught_up_age_s is not None and v.caught_up_age_s > VOTER_STALE_S
    ]
    reasons = tuple(
        f"controller quorum voter {v.node} last caught up {v.caught_up_age_s:.0f} s ago "
        f"({_plural(v.lag_records, 'record')} behind)"
        for v in behind
    )
    if quorum.mode == "kraft":
        unsure = [v for v in quorum.voters if v.node != quorum.leader and v.caught_up_age_s is None]
        caught_up = len(quorum.voters) - len(behind) - len(unsure)
        summary = f"node {quorum.leader} is the active controller (epoch {quorum.epoch})"
        summary += f"; {caught_up}/{len(quorum.voters)} voters caught up"
        if unsure:
            summary += f" ({len(unsure)} not yet seen by this leader)"
    else:
        summary = f"broker {quorum.leader} is the controller"
    return Section("controller", Status.WARN if behind else Status.OK, summary, reasons, details=details)


# --- partitions ---------------------------------------------------------------------------------------------------


def judge_partitions(meta: MetadataFacts | ProbeFailed) -> Section:
    """Offline and under-min-ISR partitions are CRIT (reads or acks=all writes fail); under-replicated ones WARN,
    with the common-broker diagnosis; topics with a short ISR whose min.insync.replicas was not read make it at
    least UNKNOWN, never OK."""
    if isinstance(meta, ProbeFailed):
        return Section("partitions", _failed(meta.kind), "partition states not read", (meta.reason,))
    reasons: list[str] = []
    if meta.offline:
        reasons.append(f"{_plural(len(meta.offline), 'partition')} offline (no leader): {_names(meta.offline)}")
    if meta.under_min_isr:
        reasons.append(
            f"{_plural(len(meta.under_min_isr), 'partition')} under min ISR (acks=all produces fail): "
            + _names(meta.under_min_isr)
        )
        reasons += _elr_reasons(meta)
    if meta.under_replicated:
        reasons.append(
            f"{_plural(len(meta.under_replicated), 'partition')} under-replicated: {_names(meta.under_replicated)}"
        )
        if meta.diagnosis_scope == "broker":
            brokers = " and ".join(f"broker {b}" for b in meta.diagnosis_brokers)
            reasons.append(f"diagnosis: {brokers} missing from the ISR of every under-replicated partition")
        else:
            reasons.append("diagnosis: cluster-wide, no single broker is behind them all (load, network, controller)")
    if meta.min_isr_unread:  # a partition we could not judge may take no write: never OK
        reasons.append(
            f"min.insync.replicas not read for {_plural(len(meta.min_isr_unread), 'topic')} "
            f"({meta.min_isr_unread_reason}): their partitions are not judged for min ISR: "
            + ", ".join(meta.min_isr_unread[:EXAMPLES])
            + (f" and {len(meta.min_isr_unread) - EXAMPLES} more" if len(meta.min_isr_unread) > EXAMPLES else "")
        )
    status = (
        Status.CRIT
        if meta.offline or meta.under_min_isr
        else Status.WARN
        if meta.under_replicated
        else Status.UNKNOWN
        if meta.min_isr_unread
        else Status.OK
    )
    if status is Status.OK:
        summary = f"{_plural(meta.partitions, 'partition')}, all fully replicated"
    else:
        summary = (
            f"{len(meta.offline)} offline, {len(meta.under_min_isr)} under min ISR, "
            f"{len(meta.under_replicated)} under-replicated of {meta.partitions}"
        )
        by_elr = _by_elr(meta.under_min_isr)
        if by_elr.get(ElrVerdict.AT_RISK) or by_elr.get(ElrVerdict.RECOVERABLE):
            summary += (
                f" ({len(by_elr.get(ElrVerdict.AT_RISK, ()))} at risk, "
                f"{len(by_elr.get(ElrVerdict.RECOVERABLE, ()))} recoverable through ELR)"
            )
        if meta.min_isr_unread:
            summary += f"; min ISR of {_plural(len(meta.min_isr_unread), 'topic')} not read"
    culprits = meta.diagnosis_brokers if meta.diagnosis_scope == "broker" else ()

    def listed(refs: Sequence[PartitionState]) -> list[dict[str, Any]]:
        return [
            {
                "topic": r.topic,
                "partition": r.partition,
                "leader": r.leader,
                "replicas": list(r.replicas),
                "isr": list(r.isr),
                "min_isr": r.min_isr,
                "elr": None if r.elr is None else list(r.elr),
                "last_known_elr": None if r.last_known_elr is None else list(r.last_known_elr),
                "elr_verdict": None if (v := r.elr_verdict) is None else v.value,
            }
            for r in refs[:20]
        ]

    details = {
        "partitions": meta.partitions,
        "offline": len(meta.offline),
        "under_replicated": len(meta.under_replicated),
        "under_min_isr": len(meta.under_min_isr),
        "under_min_isr_by_elr": {v.value: len(_by_elr(meta.under_min_isr).get(v, ())) for v in ElrVerdict},
        "diagnosis": {"scope": meta.diagnosis_scope, "brokers": list(meta.diagnosis_brokers)},
        "examples": {
            "offline": listed(meta.offline),
            "under_replicated": listed(meta.under_replicated),
            "under_min_isr": listed(meta.under_min_isr),
        },
    }
    return Section("partitions", status, summary, tuple(reasons), tuple(culprits), details)


def _by_elr(states: Sequence[PartitionState]) -> dict[ElrVerdict, list[PartitionState]]:
    """Partitions under min ISR by what can recover them (`PartitionState.elr_verdict`)."""
    out: dict[ElrVerdict, list[PartitionState]] = {}
    for s in states:
        if (verdict := s.elr_verdict) is not None:
            out.setdefault(verdict, []).append(s)
    return out


def _with_replicas(refs: Sequence[PartitionState], which: str) -> str:
    """`_names` with each partition's ELR or last known ELR, the brokers to bring back first."""
    shown = ", ".join(f"{r.label} ({which} {list(getattr(r, which) or ())})" for r in refs[:EXAMPLES])
    return shown + (f" and {len(refs) - EXAMPLES} more" if len(refs) > EXAMPLES else "")


def _elr_reasons(meta: MetadataFacts) -> list[str]:
    """The partitions under min ISR by their ELR (KIP-966): at risk (ISR and ELR empty) first."""
    by_elr = _by_elr(meta.under_min_isr)
    out = []
    if at_risk := by_elr.get(ElrVerdict.AT_RISK):
        out.append(
            f"{_plural(len(at_risk), 'partition')} under min ISR at risk (ISR and ELR empty: no replica is known to "
            f"hold every acknowledged record; bring back the last known ELR first): "
            + _with_replicas(at_risk, "last_known_elr")
        )
    if recoverable := by_elr.get(ElrVerdict.RECOVERABLE):
        out.append(
            f"{_plural(len(recoverable), 'partition')} under min ISR recoverable through ELR (eligible leader "
            f"replicas hold every acknowledged record): " + _with_replicas(recoverable, "elr")
        )
    if isr_only := by_elr.get(ElrVerdict.ISR_ONLY):
        out.append(
            f"{_plural(len(isr_only), 'partition')} under min ISR with an empty ELR (only the in-sync replicas left "
            f"hold every acknowledged record): " + _names(isr_only)
        )
    if unknown := by_elr.get(ElrVerdict.UNKNOWN):
        out.append(
            f"ELR of {_plural(len(unknown), 'partition')} under min ISR not read ({meta.elr_unread_reason}): "
            + _names(unknown)
        )
    return out


# --- lag ------------------------------------------------------------------------------------------------------------


SNAPSHOT_SOURCE = "one snapshot (no evaluator: groups not judged)"
"""What the lag section says it judged when no evaluator's verdicts were read (lag_verdicts.py has the other)."""
SNAPSHOT_NOTE = (
    "status UNKNOWN for every group: one snapshot cannot tell a stalled or stopped consumer (Burrow's STALL, STOP) "
    "from one that is merely behind; `kafka-pulse run` or `kafka-pulse lag` evaluate windows of commits and serve "
    "each group's status at /v3/kafka/<cluster>/consumer/<group>/status"
)


def judge_lag(facts: LagFacts | ProbeFailed | NotAvailable) -> Section:
    """The worst groups by total lag, from committed offsets against high watermarks. Never judged (INFO): lag alone
    is not a fault, and a single snapshot cannot classify a group."""
    if isinstance(facts, NotAvailable):
        return Section("lag", Status.INFO, "not available", (facts.reason,))
    if isinstance(facts, ProbeFailed):
        return Section("lag", Status.INFO, "lag not read", (facts.reason,))
    worst = sorted(facts.groups, key=lambda g: (-g.total_lag, g.group))[:WORST_GROUPS]
    summary = f"{_plural(facts.groups_listed, 'group')}, {len(facts.groups)} read"
    if worst:
        top = worst[0]
        summary += f"; worst: {top.group} (lag {top.total_lag}"
        summary += f", max {top.max_lag} on {top.max_lag_partition})" if top.max_lag_partition else ")"
    reasons = [SNAPSHOT_NOTE] if facts.groups else []
    if facts.unread:
        reasons.append(f"{len(facts.unread)} group(s) not read in time: {', '.join(facts.unread[:EXAMPLES])}")
    reasons += [f"partial listing: {e}" for e in facts.errors[:EXAMPLES]]
    details = {
        "groups_listed": facts.groups_listed,
        "groups_read": len(facts.groups),
        "worst": [
            {
                "group": g.group,
                "state": g.state,
                "status": "UNKNOWN",
                "total_lag": g.total_lag,
                "max_lag": g.max_lag,
                "max_lag_partition": g.max_lag_partition,
                "partitions": g.partitions,
                "unknown_partitions": g.unknown_partitions,
            }
            for g in worst
        ],
        "unread": list(facts.unread),
        "source": SNAPSHOT_SOURCE,
    }
    reasons.append(f"source: {SNAPSHOT_SOURCE}")
    return Section("lag", Status.INFO, summary, tuple(reasons), details=details)


# --- SLOs ------------------------------------------------------------------------------------------------------------


def judge_slo(facts: SloFacts | ProbeFailed | NotAvailable, now: datetime, stale_after_s: float) -> Section:
    """The SLO job's latest budgets: a page alert firing or an overspent budget is CRIT, a ticket alert WARN.
    Results that cannot be read, or are older than `stale_after_s`, are INFO: not available, never a verdict."""
    if isinstance(facts, NotAvailable):
        return Section("slo", Status.INFO, "not available", (facts.reason,))
    if isinstance(facts, ProbeFailed):
        return Section("slo", Status.INFO, "not available", (f"SLO results not read: {facts.reason}",))
    details: dict[str, Any] = {
        "source": facts.source,
        "evaluated_at": facts.evaluated_at.isoformat() if facts.evaluated_at else None,
        "slos": [
            {
                "name": b.name,
                "labels": dict(b.labels),
                "budget_remaining": b.budget_remaining,
                "page_firing": b.page_firing,
                "ticket_firing": b.ticket_firing,
                "exhaustion_at": b.exhaustion_at.isoformat() if b.exhaustion_at else None,
            }
            for b in facts.budgets
        ],
    }
    if facts.evaluated_at is None or not facts.budgets:
        return Section("slo", Status.INFO, "not available", (f"no SLO results in {facts.source}",), details=details)
    age_s = (now - facts.evaluated_at).total_seconds()
    if age_s > stale_after_s:
        why = f"the latest results ({facts.source}) are {age_s:.0f} s old, older than {stale_after_s:.0f} s: not judged"
        return Section("slo", Status.INFO, "stale", (why,), details=details)

    def name(b: Any) -> str:
        labels = ",".join(f"{k}={v}" for k, v in sorted(b.labels.items()))
        return f"{b.name}{{{labels}}}" if labels else b.name

    reasons: list[str] = []
    status = Status.OK
    for b in facts.budgets:
        left = "no data" if b.budget_remaining is None else f"{b.budget_remaining * 100:.1f}% of its budget left"
        if b.page_firing or (b.budget_remaining is not None and b.budget_remaining < 0):
            status = Status.CRIT
            what = "page alert firing" if b.page_firing else "error budget overspent"
            reasons.append(f"SLO {name(b)}: {what} ({left})")
        elif b.ticket_firing:
            status = Status.WARN if status is Status.OK else status
            reasons.append(f"SLO {name(b)}: ticket alert firing ({left})")
    known = [b for b in facts.budgets if b.budget_remaining is not None]
    summary = f"{_plural(len(facts.budgets), 'SLO')}"
    if known:
        low = min(known, key=lambda b: b.budget_remaining or 0.0)
        summary += f"; lowest budget: {name(low)} {(low.budget_remaining or 0.0) * 100:.1f}% left"
    return Section("slo", status, summary, tuple(reasons), details=details)
