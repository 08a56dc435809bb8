"""`kafka-pulse check` end to end: the probes in dependency order, all inside one deadline, then the verdicts.

Order: the SLO results are read at once (a file or one HTTP GET); metadata comes from whichever bootstrap server
answers first; every registered broker is asked for its API versions (probe/broker_watch.py); once those have
answered, the round trip, the controller quorum and the lag snapshot run together, bootstrapped from the brokers that
answered, so a hung broker is not asked again. A broker found silent moves the verdict earlier (SILENT_GRACE_S):
whatever has not answered by then, or by the deadline, is reported as such.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from kafka_pulse.check.consult.noisy_neighbours import NoisyNeighbourFacts, read_noisy_neighbours
from kafka_pulse.check.consult.run_metrics import RunMetrics
from kafka_pulse.check.consult.self_check import judge_self, self_health_facts
from kafka_pulse.check.consult.slow_brokers import SlowBrokerFacts, read_slow_brokers
from kafka_pulse.check.deadline import Deadline, Task
from kafka_pulse.check.facts import (
    FailureKind,
    LagFacts,
    NotAvailable,
    ProbeFailed,
    QuorumFacts,
    RoundTripFacts,
    SloFacts,
)
from kafka_pulse.check.judge.lag_verdicts import LagVerdicts, judge_lag_verdicts
from kafka_pulse.check.judge.share_verdicts import ShareFacts, add_share_groups
from kafka_pulse.check.judge.verdict import (
    Section,
    judge_lag,
    judge_slo,
)
from kafka_pulse.check.probe.broker_watch import SILENT, BrokerWatch
from kafka_pulse.check.probe.kafka_probes import (
    AnsweringServers,
    needs_kafka_python,
    preload_quorum_client,
    read_lag,
    read_metadata,
    read_quorum,
)
from kafka_pulse.check.probe.round_trip import round_trip
from kafka_pulse.check.probe.slo_budgets import read_slo_budgets, stale_after_s
from kafka_pulse.check.sections import judged_sections
from kafka_pulse.self_health import ComponentHealth
from pulse.config import ClusterConfig, PulseConfig

METADATA_SHARE = 0.5
"""Of the budget, what the first metadata answer may take before the check gives up on the cluster."""
PROBE_SHARE, PROBE_CAP_S = 0.3, 2.0
"""A broker's ApiVersions answer (milliseconds when healthy) may take this share of what is left, at most 2 s."""
SILENT_GRACE_S = 0.5
"""Once a broker's probe has found it silent (connections accepted, nothing answered), what the reads still out
get before the verdict: they most likely wait on that broker, which the report names CRIT either way."""
INNER_MARGIN_S = 0.15
"""Probes that report partial facts at their deadline get it this much earlier than the verdict's."""
HUNG_QUORUM_HINT = " (a hung active controller holds DescribeQuorum until the quorum elects another)"


def _utc_now() -> datetime:
    return datetime.now(UTC)


VerdictsReader = Callable[[], LagVerdicts | ProbeFailed | NotAvailable]
"""Where the lag section's group verdicts come from: this process's evaluator (inside `run` and `lag`) or a running
listener (`check --lag-url`); without one, the lag section is the unjudged snapshot."""


ShareReader = Callable[[], ShareFacts | ProbeFailed | NotAvailable]
"""Where the lag section's share-group verdicts come from (kafka_pulse/check/judge/share_verdicts.py)."""


@dataclass(frozen=True)
class LagSource:
    """A running evaluator's verdicts: how to read them and what the report calls their source."""

    name: str
    """`http://127.0.0.1:9308` or `this process`."""
    read: VerdictsReader
    read_shares: ShareReader | None = None
    """The same evaluator's share-group verdicts; None: share groups are not read."""


SelfReader = Callable[[], list[ComponentHealth] | NotAvailable | ProbeFailed]
"""How the `self` section learns the components' health: from a running `run`'s /metrics (the CLI), or in-process
(the status page inside `run`, which must not scrape itself through its own login and TLS)."""


def run_check(
    config: PulseConfig,
    cluster: ClusterConfig,
    deadline: Deadline,
    now: Callable[[], datetime] = _utc_now,
    read_self: SelfReader | None = None,
    read_slow: Callable[[], SlowBrokerFacts] | None = None,
    read_neighbours: Callable[[], NoisyNeighbourFacts] | None = None,
    lag_source: LagSource | None = None,
) -> tuple[Section, ...]:
    """Every section of the report for `cluster`, returned by the deadline whatever the cluster does.
    `read_self`, `read_slow` and `read_neighbours` replace what the run on http.listen reports on its /metrics
    (the default: that /metrics, read once for the three). With `lag_source`, the lag section is judged from the
    evaluator's group verdicts instead of the one-snapshot read."""
    if needs_kafka_python(cluster, lag_source is None and config.lag.share_groups.enabled):
        Task("kafka-python import", preload_quorum_client)  # overlaps the waits on the network below
    run = RunMetrics(config.http, deadline)
    slo_task: Task[SloFacts | NotAvailable] = Task("SLO results", partial(read_slo_budgets, config, deadline))
    self_task: Task[list[ComponentHealth] | NotAvailable | ProbeFailed] = Task(
        "self-health", read_self or partial(self_health_facts, run)
    )
    neighbours_task: Task[NoisyNeighbourFacts] = Task(
        "noisy neighbours", read_neighbours or partial(read_noisy_neighbours, run, cluster.name)
    )
    verdicts_task: Task[LagVerdicts | ProbeFailed | NotAvailable] | None = (
        Task("lag verdicts", lag_source.read) if lag_source is not None else None
    )

    shares_task: Task[ShareFacts | ProbeFailed | NotAvailable] | None = None
    if lag_source is not None and lag_source.read_shares is not None:
        shares_task = Task("share groups", lag_source.read_shares)

    def judged_lag(snapshot: LagFacts | ProbeFailed | NotAvailable) -> Section:
        if lag_source is None or verdicts_task is None:
            section = judge_lag(snapshot)
        else:
            section = judge_lag_verdicts(verdicts_task.wait(deadline), config.lag.check_statuses, lag_source.name)
        shares = shares_task.wait(deadline) if shares_task is not None else NotAvailable("share groups not read")
        return with_audit(add_share_groups(section, shares, config.lag.check_statuses))

    def with_audit(section: Section) -> Section:
        """With `audit.reconcile`, the findings `run` wrote; one that cannot be read is said, never judged OK."""
        if not config.audit.reconcile.enabled or not config.audit.log.enabled:
            return section
        from dataclasses import replace

        from audit import FINDINGS_ROWS
        from kafka_pulse.check.consult.audit_findings import add_audit_findings, read_findings
        from pulse.paths import state_dir

        root = config.audit.log.dir if config.audit.log.dir is not None else state_dir() / "sli" / "audit"
        found = read_findings(root / FINDINGS_ROWS, cluster.name, now(), config.audit.reconcile.deadline_s)
        if isinstance(found, str):
            return replace(section, reasons=(*section.reasons, f"audit findings not read: {found}"))
        return add_audit_findings(section, found)

    slow_task: Task[SlowBrokerFacts] = Task("slow brokers", read_slow or partial(read_slow_brokers, run, cluster.name))
    configured = {b.broker_id for b in cluster.jmx.brokers} if cluster.jmx is not None else set()
    answering = AnsweringServers(cluster, deadline)
    metadata_deadline = deadline.earlier(deadline.share(METADATA_SHARE))
    meta = read_metadata(cluster, configured, metadata_deadline)
    if isinstance(meta, ProbeFailed) and meta.kind is FailureKind.TIMEOUT and answering():
        # The brokers are there but their metadata did not come in time: too slow to judge, not down.
        reason = f"{meta.reason}; yet {', '.join(answering())} answered ApiVersions (overloaded cluster or check host?)"
        meta = ProbeFailed(FailureKind.ERROR, reason)
    elif (
        isinstance(meta, ProbeFailed)
        and meta.kind is FailureKind.UNREACHABLE
        and (up := answering.settle(metadata_deadline))
    ):
        # A transport failure from brokers that answer on a connection of ours: a dropped login or TLS session
        # (whose own error librdkafka may report after the request's), or overload; not a cluster that is down.
        reason = f"{meta.reason}; yet {', '.join(up)} answered ApiVersions (login or TLS refused, or overload?)"
        meta = ProbeFailed(FailureKind.ERROR, reason)
    slo = judge_slo(slo_task.wait(deadline), now(), stale_after_s(config))
    own = judge_self(self_task.wait(deadline), now())
    if isinstance(meta, ProbeFailed):
        unasked = ProbeFailed(FailureKind.ERROR, "not asked: no broker answered the metadata request")
        not_read = judged_lag(ProbeFailed(meta.kind, "not read: no broker answered the metadata request"))
        return judged_sections(
            meta, {}, unasked, meta, not_read, slow_task.wait(deadline), neighbours_task.wait(deadline), slo, own
        )
    facts = meta.facts
    watch = BrokerWatch(cluster, facts.brokers, deadline.earlier(deadline.share(PROBE_SHARE, cap_s=PROBE_CAP_S)))
    servers = watch.answered() or list(cluster.bootstrap_servers)
    layout = meta.topics.get(config.canary.topic)
    inner = deadline.before(INNER_MARGIN_S)  # probes settle their facts before the verdict stops waiting
    trip_task: Task[RoundTripFacts] = Task(
        "round trip", partial(round_trip, cluster, config.canary, layout, servers, inner, watch.down)
    )
    quorum_task: Task[QuorumFacts] = Task(
        "controller quorum", partial(read_quorum, cluster, servers, facts.metadata_controller, deadline)
    )
    lag_task: Task[LagFacts] | None = (
        Task("lag snapshot", partial(read_lag, cluster, servers, inner)) if lag_source is None else None
    )
    if lag_source is None and config.lag.share_groups.enabled:  # one read: lag shown, nothing judged
        from kafka_pulse.check.probe.share_probe import read_shares_once  # kafka-python's reader, only when on

        shares_task = Task("share groups", partial(read_shares_once, cluster, servers, inner))
    probes = watch.results()
    if any(p.error == SILENT for p in probes.values()):
        deadline = deadline.earlier(SILENT_GRACE_S)  # the reads still out most likely wait on the silent broker
    quorum = quorum_task.wait(deadline)
    if isinstance(quorum, ProbeFailed) and quorum.kind is FailureKind.TIMEOUT:
        quorum = ProbeFailed(quorum.kind, quorum.reason + HUNG_QUORUM_HINT)
    trips = trip_task.wait(deadline)
    lag: LagFacts | ProbeFailed | NotAvailable = (
        lag_task.wait(deadline) if lag_task is not None else NotAvailable("judged from the evaluator's verdicts")
    )
    return judged_sections(
        facts,
        probes,
        quorum,
        trips,
        judged_lag(lag),
        slow_task.wait(deadline),
        neighbours_task.wait(deadline),
        slo,
        own,
    )
