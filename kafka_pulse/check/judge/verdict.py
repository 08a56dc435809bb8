"""The health check's judgement (pure): facts from the probes -> one `Section` per question, each OK, WARN, CRIT,
UNKNOWN or INFO with the reasons, and the overall status and exit code of the Nagios convention.

Overall status: the worst judged section, ranked CRIT > WARN > UNKNOWN > OK. A known problem outranks a gap in
what the check could see, and a gap outranks OK, because missing data is never success. INFO sections (the lag
snapshot, SLO budgets that are not available or stale) are reported but never change the exit code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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

    def at_least(self, floor: Status) -> Status:
        """This status, raised to `floor` when it ranks lower: a finding added to a section never hides a worse one."""
        return self if self.rank >= floor.rank else floor


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


def failure_status(kind: FailureKind) -> Status:
    """A cluster that does not answer (or refuses connections) is down from the client's side: CRIT. A request it
    refuses (credentials, an unsupported API) or a check error says nothing about its health: UNKNOWN."""
    return Status.CRIT if kind in (FailureKind.TIMEOUT, FailureKind.UNREACHABLE) else Status.UNKNOWN


def as_ms(seconds: float) -> str:
    """`seconds` as whole milliseconds, as the sections print latencies."""
    return f"{seconds * 1000:.0f} ms"


def plural(count: int, word: str) -> str:
    """`count` and `word`, with an s unless the count is one, as every section's lines count things."""
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
        return Section("brokers", failure_status(meta.kind), "cluster metadata not read", (meta.reason,))
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
        f"({plural(v.lag_records, 'record')} behind)"
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
    summary = f"{plural(facts.groups_listed, 'group')}, {len(facts.groups)} read"
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
    summary = f"{plural(len(facts.budgets), 'SLO')}"
    if known:
        low = min(known, key=lambda b: b.budget_remaining or 0.0)
        summary += f"; lowest budget: {name(low)} {(low.budget_remaining or 0.0) * 100:.1f}% left"
    return Section("slo", status, summary, tuple(reasons), details=details)
