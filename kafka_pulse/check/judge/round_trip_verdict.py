"""The round trip's judgement (pure): every registered broker leads a partition of the monitor topic and sees its
records produced (acks=all) and read back within the canary's latency SLO; a failure is charged to the broker that
stalled it (kafka_pulse/check/judge/verdict.py holds the overall status)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafka_pulse.check.facts import FailureKind, NotAvailable, PartitionTrip, ProbeFailed, RoundTripFacts
from kafka_pulse.check.judge.verdict import Section, Status, as_ms


def blame(trip: PartitionTrip, unhealthy: frozenset[int]) -> int:
    """The broker a failed round trip is charged to: its leader when the leader itself is unhealthy; else an
    unhealthy in-sync follower, which stalls an acks=all produce until the ISR shrinks (canary/availability.py,
    rule 3); else the leader."""
    if trip.leader in unhealthy:
        return trip.leader
    followers = sorted(b for b in trip.in_sync if b != trip.leader and b in unhealthy)
    return followers[0] if followers else trip.leader


def judge_round_trip(
    facts: RoundTripFacts | ProbeFailed | NotAvailable,
    registered: Iterable[int],
    unhealthy: Iterable[int] = (),
) -> Section:
    """One record produced (acks=all) and read back through every partition of the monitor topic: each registered
    broker must lead at least one and see every one of its round trips complete. `unhealthy` are the brokers the
    other sections found down, for the blame of stalled produces."""
    if isinstance(facts, NotAvailable):
        return Section("round_trip", Status.INFO, "not run", (facts.reason,))
    if isinstance(facts, ProbeFailed):
        # Refused connections are the cluster's failure; a round trip that did not finish in time is the check's
        # (its records carry their own timeouts, which are judged below), so UNKNOWN.
        status = Status.CRIT if facts.kind is FailureKind.UNREACHABLE else Status.UNKNOWN
        return Section("round_trip", status, "round trip not completed", (facts.reason,))
    sick = frozenset(unhealthy)
    brokers = sorted(set(registered) | {t.leader for t in facts.trips if t.leader >= 0})
    reasons: list[str] = []
    culprits: set[int] = set()
    uncovered: list[int] = []
    unjudged: list[PartitionTrip] = []
    rows: list[dict[str, Any]] = []
    offline = [t for t in facts.trips if t.leader < 0]
    for trip in offline:
        reasons.append(f"{facts.topic}-{trip.partition} has no leader: nothing can be produced to it")
    for broker in brokers:
        led = [t for t in facts.trips if t.leader == broker]
        ok = [t for t in led if t.sent and t.read_back]
        failed = [t for t in led if not (t.sent and t.read_back)]
        slowest = max((t.latency_s for t in ok if t.latency_s is not None), default=None)
        rows.append({"id": broker, "partitions": len(led), "ok": len(ok), "failed": len(failed), "slowest_s": slowest})
        if not led:
            uncovered.append(broker)
            reasons.append(
                f"broker {broker} leads no partition of {facts.topic}: its produce path was not tested "
                "(the canary's preferred leader election, or Kafka's own, restores it)"
            )
        for trip in failed:
            charged = blame(trip, sick)
            error = trip.error or "failed"
            if not trip.judged and charged not in sick:
                unjudged.append(trip)
                reasons.append(
                    f"broker {broker}: round trip through {facts.topic}-{trip.partition} not judged ({error}, less "
                    "than canary.latency_slo_s: the check ran short of time)"
                )
                continue
            culprits.add(charged)
            if charged == broker:
                reasons.append(f"broker {broker}: round trip through {facts.topic}-{trip.partition} failed ({error})")
            else:
                reasons.append(
                    f"broker {broker}: round trip through {facts.topic}-{trip.partition} stalled behind in-sync "
                    f"follower {charged} ({error})"
                )
    if culprits or offline:
        status = Status.CRIT
    elif uncovered:
        status = Status.WARN
    elif unjudged:
        status = Status.UNKNOWN
    else:
        status = Status.OK
    done = [t for t in facts.trips if t.sent and t.read_back and t.latency_s is not None]
    summary = f"{len(done)}/{len(facts.trips)} records produced and read back through {len(brokers)} brokers"
    if done and status is Status.OK:
        slow = max(done, key=lambda t: t.latency_s or 0.0)
        summary += f" (slowest: {as_ms(slow.latency_s or 0.0)} via broker {slow.leader})"
    if culprits:
        summary += "; failing: " + ", ".join(f"broker {b}" for b in sorted(culprits))
    details = {
        "topic": facts.topic,
        "created": facts.created,
        "brokers": rows,
        "trips": [
            {
                "partition": t.partition,
                "leader": t.leader,
                "in_sync": list(t.in_sync),
                "sent": t.sent,
                "read_back": t.read_back,
                "error": t.error,
                "latency_s": t.latency_s,
                "judged": t.judged,
            }
            for t in facts.trips
        ],
    }
    if facts.created:
        reasons.append(f"{facts.topic} did not exist; the check created it with the canary's placement")
    return Section("round_trip", status, summary, tuple(reasons), tuple(sorted(culprits)), details)
