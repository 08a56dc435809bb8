"""The check the status board runs inside `lag` and `run`: each section judged from the readings this process's
components already hold (kafka_pulse/status/readings.py), with no Kafka client of its own and nothing produced."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import NotAvailable
from kafka_pulse.check.judge.verdict import Section
from kafka_pulse.self_health import SelfHealth
from kafka_pulse.status.document import ShareReadingView
from kafka_pulse.status.lag_snapshot import LagSnapshots
from pulse.config import ClusterConfig, PulseConfig

if TYPE_CHECKING:
    from audit import Judged
    from canary import CanaryService
    from collectors import ClusterSnapshot
    from kafka_pulse.check.facts import BrokerProbe, QuorumFacts, RoundTripFacts
    from kafka_pulse.check.judge.share_verdicts import ShareFacts
    from kafka_pulse.check.probe.kafka_probes import MetadataRead
    from kafka_pulse.status.readings import LatestProbes
    from lag import MetadataReading
    from pulse.broker_health import BrokerHealthBoard

CheckRunner = Callable[[PulseConfig, ClusterConfig, Deadline], tuple[Section, ...]]
"""One cluster's check sections: `check`'s own (kafka_pulse/check/health_check.py) or `in_process_check`'s."""


class MetadataSource(Protocol):
    """What the board reads of the lag source (lag's `LagRunner`): each cluster's last HWM round."""

    def metadata(self, cluster: str) -> MetadataReading | None: ...

    def metadata_failure(self, cluster: str) -> str | None: ...


class AuditFindingsSource(Protocol):
    """What the board reads of the audit's reconciliation (audit's `ReconcileStream`): its recent findings."""

    def judged(self) -> Judged: ...


class ShareSource(Protocol):
    """What the board reads of lag's share-group board: every cluster's latest judged read."""

    def latest(self) -> Mapping[str, ShareReadingView]: ...


class ClusterStateSource(Protocol):
    """What the board reads of the collectors (collectors' `CollectorService`): each cluster's latest state read."""

    def cluster_snapshot(self, cluster: str, now_s: float | None = None) -> ClusterSnapshot | str: ...


def in_process_check(
    health: SelfHealth | None,
    lag: LagSnapshots | None = None,
    metadata: MetadataSource | None = None,
    canary: CanaryService | None = None,
    probes: LatestProbes | None = None,
    broker_health: BrokerHealthBoard | None = None,
    cluster_state: ClusterStateSource | None = None,
    shares: ShareSource | None = None,
    audit: AuditFindingsSource | None = None,
) -> CheckRunner:
    """The check's sections judged from this process's readings (kafka_pulse/status/readings.py), with no Kafka
    client of its own and nothing produced: brokers and partitions from the lag source's HWM rounds (`metadata`),
    answers and the round trip from the canary (with `probes`, its sink), slow brokers from `broker_health`, lag
    from the evaluator (`lag`: the verdicts the board read at the start of this refresh, the page's own), share
    groups from lag's share board (`shares`, judged there by the share-stall rule), the data-flow audit's recent
    findings into the lag section (`audit`, the reconciliation's stream), `self` from `health`. What no
    component here reads is UNKNOWN or not available, with the reason."""

    def check(config: PulseConfig, cluster: ClusterConfig, deadline: Deadline) -> tuple[Section, ...]:
        from kafka_pulse.check.consult.self_check import judge_self
        from kafka_pulse.check.facts import FailureKind, ProbeFailed
        from kafka_pulse.check.judge.lag_verdicts import judge_lag_verdicts
        from kafka_pulse.check.judge.share_verdicts import add_share_groups
        from kafka_pulse.check.judge.verdict import judge_lag, judge_slo
        from kafka_pulse.check.probe.slo_budgets import read_slo_budgets, stale_after_s
        from kafka_pulse.check.sections import judged_sections
        from kafka_pulse.status import readings

        now = datetime.now(UTC)
        configured = {b.broker_id for b in cluster.jmx.brokers} if cluster.jmx is not None else set()
        answers: dict[int, BrokerProbe] = {}
        meta: MetadataRead | ProbeFailed
        reading: MetadataReading | None = None
        unasked = readings.NO_ANSWERS
        if metadata is not None:
            reading = metadata.metadata(cluster.name)
            failure = metadata.metadata_failure(cluster.name)
            stale_s = config.lag.effective_stale_after_s()
            meta = readings.metadata_from_lag(reading, failure, configured, int(now.timestamp() * 1000), stale_s)
            if reading is not None and not isinstance(meta, ProbeFailed):
                answers = readings.answers_from_lag(reading)
                unasked = readings.unasked_reason(reading)
        else:
            meta = ProbeFailed(FailureKind.ERROR, "no component of this process reads the cluster's metadata")
        state = cluster_state.cluster_snapshot(cluster.name) if cluster_state is not None else None
        quorum: QuorumFacts | ProbeFailed | NotAvailable = NotAvailable(readings.NO_QUORUM)
        if state is not None and not isinstance(state, str):  # with each topic's min ISR: judged as `check` does
            meta = readings.metadata_from_collectors(state, configured)
            quorum = readings.quorum_from_collectors(state)
        elif isinstance(state, str):
            from collectors import NOT_READ_HERE

            if state != NOT_READ_HERE:  # another shard's cluster is not this page's to judge
                quorum = ProbeFailed(FailureKind.ERROR, state)
            if metadata is None:
                meta = ProbeFailed(FailureKind.ERROR, state)
        mine = canary if canary is not None and canary.cluster.name == cluster.name else None
        trips: RoundTripFacts | ProbeFailed | NotAvailable = NotAvailable(
            "no canary runs for this cluster in this process, and the status page produces nothing"
        )
        if mine is not None:
            answers = readings.with_canary_checks(answers, mine.broker_up())
            if probes is not None:
                layout = meta.topics.get(mine.config.topic, ()) if not isinstance(meta, ProbeFailed) else ()
                in_sync = {s.partition: s.isr for s in layout}
                c = mine.config
                max_age_s = 3 * c.interval_s + 2 * c.latency_slo_s
                trips = readings.trips_from_canary(c.topic, probes.latest(), in_sync, now, max_age_s)
        if lag is not None:
            statuses = lag.latest().verdicts(IN_PROCESS, cluster.name)
            lag_section = judge_lag_verdicts(statuses, config.lag.check_statuses, IN_PROCESS)
        else:
            lag_section = judge_lag(NotAvailable("lag is off in this process"))
        if shares is not None:
            stale_s = STALE_READS * config.lag.share_groups.refresh_s
            share_facts = share_facts_of(shares.latest().get(cluster.name), now.timestamp(), stale_s)
            lag_section = add_share_groups(lag_section, share_facts, config.lag.check_statuses)
        if audit is not None:
            from kafka_pulse.check.consult.audit_findings import add_audit_findings, recent_findings

            judged = audit.judged()
            found = recent_findings(judged.recent, cluster.name, judged.newest_minute_ms)
            lag_section = add_audit_findings(lag_section, found)
        components = health.snapshot() if health is not None else []
        own = judge_self(
            components or NotAvailable("no component of this process reports its health (`run` does)"), now
        )
        slo = judge_slo(read_slo_budgets(config, deadline), now, stale_after_s(config))
        slow = readings.slow_from_board(
            broker_health.snapshot(cluster.name)
            if broker_health is not None and cluster.name in broker_health.clusters()
            else None
        )
        # A request to our own /metrics would evaluate every group again.
        neighbours = NotAvailable("in this process: the lag API's status names noisy neighbours")
        return judged_sections(
            meta.facts if not isinstance(meta, ProbeFailed) else meta,
            answers,
            quorum,
            trips,
            lag_section,
            slow,
            neighbours,
            slo,
            own,
            unasked=unasked,
        )

    return check


IN_PROCESS = "this process's evaluator"
"""The lag verdicts' source inside `run` and `lag`."""
STALE_READS = 3
"""A share-group read older than this many `lag.share_groups.refresh_s` judges nothing any more (UNKNOWN)."""


def share_facts_of(reading: ShareReadingView | None, now_s: float, stale_after_s: float) -> ShareFacts:
    """Lag's latest judged share-group read of a cluster as the check's facts (pure): its verdicts as judged
    there; none yet, or one older than `stale_after_s`, is an incomplete read (UNKNOWN, never OK)."""
    from kafka_pulse.check.judge.share_verdicts import ShareFacts

    if reading is None:
        return ShareFacts(IN_PROCESS, (), windowed=True, reason="no share-group read yet")
    age_s = now_s - reading.read_at_s
    if age_s > stale_after_s:
        why = f"the last share-group read is {age_s:.0f} s old (over {stale_after_s:g} s)"
        return ShareFacts(IN_PROCESS, (), windowed=True, reason="; ".join(filter(None, [why, reading.reason])))
    return ShareFacts(IN_PROCESS, reading.verdicts, windowed=True, reason=reading.reason)
