"""The partitions section's judgement (pure): offline, under-min-ISR (with what ELR can recover, KIP-966) and
under-replicated partitions, and the common-broker diagnosis (kafka_pulse/check/judge/verdict.py holds the overall
status)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kafka_pulse.check.facts import MetadataFacts, ProbeFailed
from kafka_pulse.check.judge.verdict import EXAMPLES, Section, Status, failure_status, plural
from pulse.kafka.partitions import ElrVerdict, PartitionState


def judge_partitions(meta: MetadataFacts | ProbeFailed) -> Section:
    """Offline and under-min-ISR partitions are CRIT (reads or acks=all writes fail); under-replicated ones WARN,
    with the common-broker diagnosis; topics with a short ISR whose min.insync.replicas was not read make it at
    least UNKNOWN, never OK."""
    if isinstance(meta, ProbeFailed):
        return Section("partitions", failure_status(meta.kind), "partition states not read", (meta.reason,))
    reasons: list[str] = []
    if meta.offline:
        reasons.append(f"{plural(len(meta.offline), 'partition')} offline (no leader): {_names(meta.offline)}")
    if meta.under_min_isr:
        reasons.append(
            f"{plural(len(meta.under_min_isr), 'partition')} under min ISR (acks=all produces fail): "
            + _names(meta.under_min_isr)
        )
        reasons += _elr_reasons(meta)
    if meta.under_replicated:
        reasons.append(
            f"{plural(len(meta.under_replicated), 'partition')} under-replicated: {_names(meta.under_replicated)}"
        )
        if meta.diagnosis_scope == "broker":
            brokers = " and ".join(f"broker {b}" for b in meta.diagnosis_brokers)
            reasons.append(f"diagnosis: {brokers} missing from the ISR of every under-replicated partition")
        else:
            reasons.append("diagnosis: cluster-wide, no single broker is behind them all (load, network, controller)")
    if meta.min_isr_unread:  # a partition we could not judge may take no write: never OK
        reasons.append(
            f"min.insync.replicas not read for {plural(len(meta.min_isr_unread), 'topic')} "
            f"({meta.min_isr_unread_reason}): their partitions are not judged for min ISR: "
            + _first_of(meta.min_isr_unread[:EXAMPLES], len(meta.min_isr_unread))
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
        summary = f"{plural(meta.partitions, 'partition')}, all fully replicated"
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
            summary += f"; min ISR of {plural(len(meta.min_isr_unread), 'topic')} not read"
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
    return _first_of((f"{r.label} ({which} {list(getattr(r, which) or ())})" for r in refs[:EXAMPLES]), len(refs))


def _elr_reasons(meta: MetadataFacts) -> list[str]:
    """The partitions under min ISR by their ELR (KIP-966): at risk (ISR and ELR empty) first."""
    by_elr = _by_elr(meta.under_min_isr)
    out = []
    if at_risk := by_elr.get(ElrVerdict.AT_RISK):
        out.append(
            f"{plural(len(at_risk), 'partition')} under min ISR at risk (ISR and ELR empty: no replica is known to "
            f"hold every acknowledged record; bring back the last known ELR first): "
            + _with_replicas(at_risk, "last_known_elr")
        )
    if recoverable := by_elr.get(ElrVerdict.RECOVERABLE):
        out.append(
            f"{plural(len(recoverable), 'partition')} under min ISR recoverable through ELR (eligible leader "
            f"replicas hold every acknowledged record): " + _with_replicas(recoverable, "elr")
        )
    if isr_only := by_elr.get(ElrVerdict.ISR_ONLY):
        out.append(
            f"{plural(len(isr_only), 'partition')} under min ISR with an empty ELR (only the in-sync replicas left "
            f"hold every acknowledged record): " + _names(isr_only)
        )
    if unknown := by_elr.get(ElrVerdict.UNKNOWN):
        out.append(
            f"ELR of {plural(len(unknown), 'partition')} under min ISR not read ({meta.elr_unread_reason}): "
            + _names(unknown)
        )
    return out


def _names(refs: Sequence[PartitionState]) -> str:
    """The first partitions of `refs` by name, and how many more."""
    return _first_of((r.label for r in refs[:EXAMPLES]), len(refs))


def _first_of(shown: Iterable[str], total: int) -> str:
    """The examples a reason line names, then how many of `total` it leaves out: a line stays one line."""
    return ", ".join(shown) + (f" and {total - EXAMPLES} more" if total > EXAMPLES else "")
