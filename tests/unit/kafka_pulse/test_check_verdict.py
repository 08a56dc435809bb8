"""The health check's verdicts as rule tables: each row a cluster shape, the expected status, the
brokers named, and why. Facts are built by hand; no server is involved."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest

from kafka_pulse.check.facts import (
    BrokerAddress,
    BrokerProbe,
    FailureKind,
    GroupLag,
    LagFacts,
    MetadataFacts,
    NotAvailable,
    PartitionTrip,
    ProbeFailed,
    QuorumFacts,
    RoundTripFacts,
    SloBudget,
    SloFacts,
    VoterState,
)
from kafka_pulse.check.judge.partition_verdict import judge_partitions
from kafka_pulse.check.judge.round_trip_verdict import blame, judge_round_trip
from kafka_pulse.check.judge.verdict import (
    VOTER_STALE_S,
    Section,
    Status,
    judge_brokers,
    judge_controller,
    judge_lag,
    judge_slo,
    overall,
)
from kafka_pulse.check.probe.kafka_probes import MinIsrRead, config_topics, metadata_facts
from kafka_pulse.check.probe.lag_summary import group_lag
from pulse.kafka.elr import ElrRead
from pulse.kafka.partitions import PartitionState

ADDRESSES = {b: BrokerAddress(b, "127.0.0.1", 9090 + b, f"az-{'abc'[b - 1]}") for b in (1, 2, 3)}
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def meta(registered: tuple[int, ...] = (1, 2, 3), expected: tuple[int, ...] = (1, 2, 3), **kw: object) -> MetadataFacts:
    base = MetadataFacts(
        brokers={b: ADDRESSES[b] for b in registered},
        expected=expected,
        partitions=12,
        offline=(),
        under_replicated=(),
        under_min_isr=(),
        diagnosis_scope="none",
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def probe(broker: int, ok: bool = True, error: str | None = None, latency_s: float = 0.004) -> BrokerProbe:
    return BrokerProbe(broker, ok, latency_s, error)


def ref(p: int, leader: int, replicas: tuple[int, ...], isr: tuple[int, ...], min_isr: int = 2) -> PartitionState:
    return PartitionState("orders", p, leader, replicas, isr, min_isr)


# --- overall status and exit codes ------------------------------------------------------------------------------


def section(status: Status) -> Section:
    return Section("x", status, "")


@pytest.mark.parametrize(
    ("statuses", "want", "code"),
    [
        pytest.param([Status.OK, Status.OK], Status.OK, 0, id="all-ok"),
        pytest.param([Status.OK, Status.INFO, Status.INFO], Status.OK, 0, id="info-never-counts"),
        pytest.param([Status.OK, Status.WARN], Status.WARN, 1, id="warn"),
        pytest.param([Status.WARN, Status.CRIT, Status.OK], Status.CRIT, 2, id="crit-beats-warn"),
        pytest.param([Status.OK, Status.UNKNOWN], Status.UNKNOWN, 3, id="a-gap-is-not-ok"),
        pytest.param([Status.UNKNOWN, Status.WARN], Status.WARN, 1, id="a-known-problem-beats-a-gap"),
        pytest.param([Status.UNKNOWN, Status.CRIT], Status.CRIT, 2, id="crit-beats-unknown"),
        pytest.param([Status.INFO], Status.UNKNOWN, 3, id="nothing-judged-is-unknown"),
    ],
)  # fmt: skip
def test_overall_status_and_nagios_exit_code(statuses: list[Status], want: Status, code: int) -> None:
    got = overall(section(s) for s in statuses)
    assert got is want
    assert got.exit_code == code


# --- brokers --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokerCase:
    meta: MetadataFacts | ProbeFailed
    probes: dict[int, BrokerProbe] = field(default_factory=dict)
    want: Status = Status.OK
    culprits: tuple[int, ...] = ()
    says: str = ""


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(BrokerCase(meta(), {b: probe(b) for b in (1, 2, 3)}, Status.OK, (), "3/3 brokers answer"),
                     id="healthy"),
        pytest.param(BrokerCase(meta(registered=(1, 2)), {1: probe(1), 2: probe(2)}, Status.CRIT, (3,),
                                "broker 3 is not registered"),
                     id="killed-and-fenced-broker-still-expected-by-its-replicas"),
        pytest.param(BrokerCase(meta(), {1: probe(1), 2: probe(2, False, "timeout", 1.2), 3: probe(3)}, Status.CRIT,
                                (2,), "broker 2 (127.0.0.1:9092, az-b) no answer within 1.2 s"),
                     id="sigstopped-broker-times-out"),
        pytest.param(BrokerCase(meta(), {1: probe(1), 2: probe(2), 3: probe(3, False, "refused")}, Status.CRIT, (3,),
                                "refuses connections"),
                     id="killed-broker-not-yet-fenced"),
        pytest.param(BrokerCase(meta(), {1: probe(1), 2: probe(2)}, Status.UNKNOWN, (), "broker 3 was not asked"),
                     id="probe-missing-is-unknown-never-ok"),
        pytest.param(BrokerCase(ProbeFailed(FailureKind.UNREACHABLE, "connection refused"), {}, Status.CRIT, (),
                                "connection refused"),
                     id="no-bootstrap-server-answers"),
        pytest.param(BrokerCase(ProbeFailed(FailureKind.REFUSED, "SASL authentication failed"), {}, Status.UNKNOWN,
                                (), "SASL"),
                     id="refused-login-says-nothing-about-health"),
        pytest.param(BrokerCase(ProbeFailed(FailureKind.ERROR, "no metadata in 2.2 s; yet 127.0.0.1:9091 answered"), {},
                                Status.UNKNOWN, (), "answered"),
                     id="slow-metadata-from-brokers-that-answer-is-not-a-verdict"),
    ],
)  # fmt: skip
def test_brokers(case: BrokerCase) -> None:
    got = judge_brokers(case.meta, case.probes)
    assert got.status is case.want, got
    assert got.culprits == case.culprits
    assert case.says in got.summary + " ".join(got.reasons)


# --- controller -----------------------------------------------------------------------------------------------------


def voters(*ages: float | None) -> tuple[VoterState, ...]:
    return tuple(VoterState(n, 0 if (age or 0) < VOTER_STALE_S else 42, age) for n, age in enumerate(ages, 1))


@pytest.mark.parametrize(
    ("quorum", "want", "says"),
    [
        pytest.param(QuorumFacts("kraft", 2, 7, voters(0.1, 0.0, 0.2)), Status.OK,
                     "node 2 is the active controller (epoch 7); 3/3 voters caught up", id="kraft-leader"),
        pytest.param(QuorumFacts("kraft", None, 7, voters(None, None, None)), Status.CRIT, "no leader",
                     id="kraft-no-leader"),
        pytest.param(QuorumFacts("kraft", 1, 7, voters(0.0, 30.0, 0.5)), Status.WARN,
                     "voter 2 last caught up 30 s ago (42 records behind)", id="kraft-voter-behind"),
        pytest.param(QuorumFacts("kraft", 1, 7, voters(0.0, None, 0.5)), Status.OK, "2/3",
                     id="unknown-catch-up-time-is-not-a-fault"),
        pytest.param(QuorumFacts("zookeeper", 3), Status.OK, "broker 3 is the controller", id="zookeeper"),
        pytest.param(QuorumFacts("zookeeper", None), Status.CRIT, "no broker is the controller",
                     id="zookeeper-none"),
        pytest.param(ProbeFailed(FailureKind.TIMEOUT, "controller quorum: no answer within 2.0 s"), Status.UNKNOWN,
                     "no answer", id="quorum-hung-is-unknown"),
    ],
)  # fmt: skip
def test_controller(quorum: QuorumFacts | ProbeFailed, want: Status, says: str) -> None:
    got = judge_controller(quorum)
    assert got.status is want, got
    assert says in got.summary + " ".join(got.reasons)


def test_the_controller_details_list_the_observers_a_removed_voter_joins() -> None:
    """A KIP-853 removal moves the node from `voters` to `observers`; both sets are in the details the page shows."""
    got = judge_controller(QuorumFacts("kraft", 1, 9, voters(0.0, 0.2), observers=(3,)))
    assert [v["node"] for v in got.details["voters"]] == [1, 2]
    assert got.details["observers"] == [3]


# --- partitions -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("facts", "want", "culprits", "says"),
    [
        pytest.param(meta(), Status.OK, (), "12 partitions, all fully replicated", id="healthy"),
        pytest.param(meta(under_replicated=(ref(0, 1, (1, 2, 3), (1, 2)), ref(1, 2, (2, 3, 1), (2, 1))),
                          diagnosis_scope="broker", diagnosis_brokers=(3,)),
                     Status.WARN, (3,), "diagnosis: broker 3 missing from the ISR of every under-replicated partition",
                     id="urp-common-broker"),
        pytest.param(meta(under_replicated=(ref(0, 1, (1, 2, 3), (1, 2)), ref(1, 2, (2, 3, 1), (2, 3))),
                          diagnosis_scope="cluster-wide"),
                     Status.WARN, (), "cluster-wide", id="urp-cluster-wide"),
        pytest.param(meta(under_replicated=(ref(0, 1, (1, 2, 3), (1,)),), under_min_isr=(ref(0, 1, (1, 2, 3), (1,)),),
                          diagnosis_scope="broker", diagnosis_brokers=(2, 3)),
                     Status.CRIT, (2, 3), "under min ISR (acks=all produces fail): orders-0", id="under-min-isr"),
        pytest.param(meta(offline=(ref(4, -1, (3,), ()),)), Status.CRIT, (), "offline (no leader): orders-4",
                     id="offline"),
        pytest.param(meta(under_replicated=tuple(ref(p, 1, (1, 2), (1,)) for p in range(8)),
                          diagnosis_scope="broker", diagnosis_brokers=(2,)),
                     Status.WARN, (2,), "orders-4 and 3 more", id="long-lists-are-cut"),
        pytest.param(ProbeFailed(FailureKind.TIMEOUT, "metadata: no answer"), Status.CRIT, (), "no answer",
                     id="cluster-hung"),
    ],
)  # fmt: skip
def test_partitions(facts: MetadataFacts | ProbeFailed, want: Status, culprits: tuple[int, ...], says: str) -> None:
    got = judge_partitions(facts)
    assert got.status is want, got
    assert got.culprits == culprits
    assert says in got.summary + " | ".join(got.reasons)


# --- canary round trip ------------------------------------------------------------------------------------------------


def trip(
    p: int, leader: int, ok: bool = True, isr: tuple[int, ...] = (1, 2, 3), error: str | None = None
) -> PartitionTrip:
    return PartitionTrip(p, leader, isr, ok, ok, None if ok else error or "_MSG_TIMED_OUT", 0.01 if ok else None)


def trips(*items: PartitionTrip) -> RoundTripFacts:
    return RoundTripFacts("__pulse_canary", items)


@pytest.mark.parametrize(
    ("facts", "unhealthy", "want", "culprits", "says"),
    [
        pytest.param(trips(trip(0, 1), trip(1, 2), trip(2, 3)), (), Status.OK, (),
                     "3/3 records produced and read back through 3 brokers", id="every-broker-round-trips"),
        pytest.param(trips(trip(0, 1), trip(1, 2, False), trip(2, 3)), (2,), Status.CRIT, (2,),
                     "broker 2: round trip through __pulse_canary-1 failed (_MSG_TIMED_OUT)", id="leader-hung"),
        pytest.param(trips(trip(0, 1, False), trip(1, 2, False), trip(2, 3, False)), (2,), Status.CRIT, (2,),
                     "broker 1: round trip through __pulse_canary-0 stalled behind in-sync follower 2",
                     id="acks-all-stalls-charged-to-the-hung-follower"),
        pytest.param(trips(trip(0, 1), trip(1, 1, False, isr=(1, 3), error="NOT_ENOUGH_REPLICAS"), trip(2, 3)), (),
                     Status.CRIT, (1,), "failed (NOT_ENOUGH_REPLICAS)", id="healthy-peers-so-the-leader-is-charged"),
        pytest.param(trips(trip(0, 1), replace(trip(1, 2, False), judged=False), trip(2, 3)), (), Status.UNKNOWN, (),
                     "not judged (_MSG_TIMED_OUT, less than canary.latency_slo_s", id="check-ran-short-of-time"),
        pytest.param(trips(replace(trip(0, 1, False), judged=False), trip(1, 2, False), trip(2, 3)), (2,),
                     Status.CRIT, (2,), "stalled behind in-sync follower 2",
                     id="short-of-time-but-behind-a-hung-follower-is-still-charged"),
        pytest.param(trips(trip(0, 1), trip(1, 1), trip(2, 3)), (), Status.WARN, (),
                     "broker 2 leads no partition of __pulse_canary", id="uncovered-broker-is-a-warning"),
        pytest.param(trips(trip(0, 1), trip(1, -1, False), trip(2, 3)), (), Status.CRIT, (),
                     "__pulse_canary-1 has no leader", id="offline-monitor-partition"),
        pytest.param(ProbeFailed(FailureKind.TIMEOUT, "round trip: no answer within 3.0 s"), (), Status.UNKNOWN, (),
                     "no answer", id="unfinished-round-trip-is-the-checks-problem"),
        pytest.param(ProbeFailed(FailureKind.UNREACHABLE, "connection refused"), (), Status.CRIT, (), "refused",
                     id="cluster-refuses"),
        pytest.param(NotAvailable("canary off"), (), Status.INFO, (), "canary off", id="not-run"),
    ],
)  # fmt: skip
def test_round_trip(
    facts: RoundTripFacts | ProbeFailed | NotAvailable,
    unhealthy: tuple[int, ...],
    want: Status,
    culprits: tuple[int, ...],
    says: str,
) -> None:
    got = judge_round_trip(facts, (1, 2, 3), unhealthy)
    assert got.status is want, got
    assert got.culprits == culprits
    assert says in got.summary + " | ".join(got.reasons)


@pytest.mark.parametrize(
    ("leader", "isr", "unhealthy", "want"),
    [
        pytest.param(1, (1, 2, 3), {1}, 1, id="hung-leader"),
        pytest.param(1, (1, 2, 3), {3}, 3, id="hung-in-sync-follower"),
        pytest.param(1, (1, 2), {3}, 1, id="out-of-sync-follower-does-not-stall-acks-all"),
        pytest.param(1, (1, 2, 3), {2, 3}, 2, id="lowest-hung-follower-named"),
        pytest.param(1, (1, 2, 3), set(), 1, id="nobody-else-to-blame"),
    ],
)  # fmt: skip
def test_blame(leader: int, isr: tuple[int, ...], unhealthy: set[int], want: int) -> None:
    assert blame(trip(0, leader, False, isr), frozenset(unhealthy)) == want


# --- lag ------------------------------------------------------------------------------------------------------------


def test_group_lag_counts_only_partitions_with_a_known_high_watermark() -> None:
    committed = {("t", 0): 100, ("t", 1): 50, ("t", 2): 10, ("u", 0): 7}
    hwms = {("t", 0): 150, ("t", 1): 40, ("t", 2): 110}  # t-1 committed past a truncated log; u-0 leader hung
    got = group_lag("g", "Stable", committed, hwms)
    assert (got.total_lag, got.max_lag, got.max_lag_partition) == (150, 100, "t-2")
    assert (got.partitions, got.unknown_partitions) == (3, 1)


def test_lag_is_reported_never_judged_and_says_why() -> None:
    groups = tuple(GroupLag(f"g{i}", "Stable", i * 10, i * 5, f"t-{i}", 3) for i in range(8))
    got = judge_lag(LagFacts(9, groups, unread=("slow-group",)))
    assert got.status is Status.INFO
    assert got.summary == "9 groups, 8 read; worst: g7 (lag 70, max 35 on t-7)"
    assert [g["group"] for g in got.details["worst"]] == ["g7", "g6", "g5", "g4", "g3"]
    assert all(g["status"] == "UNKNOWN" for g in got.details["worst"])
    assert "cannot tell a stalled or stopped consumer" in got.reasons[0]
    assert "slow-group" in got.reasons[1]


def test_lag_not_read_is_info() -> None:
    assert judge_lag(ProbeFailed(FailureKind.TIMEOUT, "listing timed out")).status is Status.INFO


# --- SLOs -------------------------------------------------------------------------------------------------------------


def slo_facts(*budgets: SloBudget, age_s: float = 30) -> SloFacts:
    return SloFacts("parquet:/x/evaluation-1.parquet", NOW - timedelta(seconds=age_s), budgets)


@pytest.mark.parametrize(
    ("facts", "want", "says"),
    [
        pytest.param(slo_facts(SloBudget("produce", {}, 0.8), SloBudget("lag", {"cluster": "a"}, 0.35)), Status.OK,
                     "lowest budget: lag{cluster=a} 35.0% left", id="within-budget"),
        pytest.param(slo_facts(SloBudget("produce", {}, 0.6, ticket_firing=True)), Status.WARN,
                     "ticket alert firing (60.0% of its budget left)", id="ticket"),
        pytest.param(slo_facts(SloBudget("produce", {}, 0.2, page_firing=True, ticket_firing=True)), Status.CRIT,
                     "page alert firing", id="page"),
        pytest.param(slo_facts(SloBudget("produce", {}, -0.1)), Status.CRIT, "error budget overspent",
                     id="overspent"),
        pytest.param(slo_facts(SloBudget("produce", {}, None)), Status.OK, "1 SLO", id="no-events-yet"),
        pytest.param(slo_facts(SloBudget("produce", {}, 0.2, page_firing=True), age_s=3600), Status.INFO,
                     "3600 s old", id="stale-results-are-not-judged"),
        pytest.param(NotAvailable("no SLOs configured"), Status.INFO, "no SLOs configured", id="not-available"),
        pytest.param(ProbeFailed(FailureKind.ERROR, "Pushgateway down"), Status.INFO, "Pushgateway down",
                     id="unreadable-is-not-a-verdict"),
    ],
)  # fmt: skip
def test_slo(facts: SloFacts | NotAvailable | ProbeFailed, want: Status, says: str) -> None:
    got = judge_slo(facts, NOW, stale_after_s=180)
    assert got.status is want, got
    assert says in got.summary + " | ".join(got.reasons)


# --- min ISR: as the leader applies it --------------------------------------------------------------------------


def state(topic: str, replicas: tuple[int, ...], isr: tuple[int, ...]) -> PartitionState:
    return PartitionState(topic, 0, replicas[0] if isr else -1, replicas, isr)


@pytest.mark.parametrize(
    ("replicas", "isr", "min_isr", "want", "under_min_isr"),
    [
        pytest.param((1, 2, 3), (1, 2, 3), 2, Status.OK, False, id="rf3-full-isr-min2"),
        # Kafka >= 3.7 requires min(min.insync.replicas, replicas): a full ISR takes acks=all writes (proved on a
        # real cluster in tests/integration/app/test_check_min_isr.py), so these are not under min ISR.
        pytest.param((1, 2), (1, 2), 3, Status.OK, False, id="rf2-full-isr-min3-still-writable"),
        pytest.param((1,), (1,), 2, Status.OK, False, id="rf1-on-broker-default-2-still-writable"),
        pytest.param((1, 2, 3), (1, 2), 2, Status.WARN, False, id="shrunk-but-at-min"),
        pytest.param((1, 2, 3), (1,), 2, Status.CRIT, True, id="shrunk-below-min"),
        pytest.param((1, 2), (1,), 3, Status.CRIT, True, id="shrunk-below-capped-min"),
        pytest.param((1, 2, 3), (1, 2), 5, Status.CRIT, True, id="shrunk-below-min-above-replicas"),
        pytest.param((1, 2, 3), (), 1, Status.CRIT, True, id="offline-empty-isr"),
    ],
)
def test_a_partition_is_under_min_isr_as_the_leader_judges_it(
    replicas: tuple[int, ...], isr: tuple[int, ...], min_isr: int, want: Status, under_min_isr: bool
) -> None:
    read = metadata_facts(ADDRESSES, [state("t", replicas, isr)], MinIsrRead({"t": min_isr}), (), 1, "s")
    assert [s.label for s in read.facts.under_min_isr] == (["t-0"] if under_min_isr else [])
    got = judge_partitions(read.facts)
    assert got.status is want, got
    if under_min_isr:
        assert "1 partition under min ISR (acks=all produces fail): t-0" in got.reasons
        assert got.details["examples"]["under_min_isr"][0]["min_isr"] == min_isr


def test_partitions_under_min_isr_are_named_by_what_can_recover_them() -> None:
    """KIP-966: ELR non-empty is recoverable, ISR and ELR empty is at risk; both CRIT (acks=all fails either way),
    each named with the brokers to bring back, and partitions whose ELR was not read say why."""
    states = [state("rec", (1, 2, 3), (1, 2)), state("risk", (3,), ()), state("unread", (1, 2, 3), (1,))]
    elr = ElrRead({("rec", 0): ((3,), ()), ("risk", 0): ((), (3,))}, "DescribeTopicPartitions: timed out")
    read = metadata_facts(ADDRESSES, states, MinIsrRead({"rec": 3, "risk": 2, "unread": 2}), (), 1, "s", elr)
    got = judge_partitions(read.facts)
    assert got.status is Status.CRIT
    assert got.reasons[2:5] == (  # after "offline" and "under min ISR"
        "1 partition under min ISR at risk (ISR and ELR empty: no replica is known to hold every acknowledged "
        "record; bring back the last known ELR first): risk-0 (last_known_elr [3])",
        "1 partition under min ISR recoverable through ELR (eligible leader replicas hold every acknowledged "
        "record): rec-0 (elr [3])",
        "ELR of 1 partition under min ISR not read (DescribeTopicPartitions: timed out): unread-0",
    )
    assert "(1 at risk, 1 recoverable through ELR)" in got.summary
    assert got.details["under_min_isr_by_elr"] == {"recoverable": 1, "isr_only": 0, "unknown": 1, "at_risk": 1}
    rows = {r["topic"]: r for r in got.details["examples"]["under_min_isr"]}
    assert (rows["rec"]["elr"], rows["rec"]["elr_verdict"]) == ([3], "recoverable")
    assert (rows["risk"]["elr"], rows["risk"]["last_known_elr"], rows["risk"]["elr_verdict"]) == ([], [3], "at_risk")
    assert (rows["unread"]["elr"], rows["unread"]["elr_verdict"]) == (None, "unknown")


def test_only_topics_with_a_short_isr_are_asked_smallest_isr_first() -> None:
    """A full ISR is never under min ISR, so its topic's config is not read; past the bound, the largest ISRs are
    left out."""
    states = [
        state("full", (1, 2), (1, 2)),
        state("two-left", (1, 2, 3), (1, 2)),
        state("one-left", (1, 2, 3), (1,)),
        state("wide", (1, 2, 3, 4), (1, 2, 3)),
    ]
    assert config_topics(states) == (["one-left", "two-left", "wide"], [])
    assert config_topics(states, cap=2) == (["one-left", "two-left"], ["wide"])


def test_topics_whose_min_isr_was_not_read_are_named() -> None:
    """A short ISR whose min.insync.replicas the batch did not return is named, never judged at min ISR 1; a topic
    that is not short cannot be under min ISR, so only a read-less report (no short ISR) floors at UNKNOWN."""
    states = [state("a", (1, 2, 3), (1, 2)), state("b", (1, 2, 3), (1, 2))]
    read = metadata_facts(ADDRESSES, states, MinIsrRead({"a": 2}, ("b",), "DescribeConfigs: timed out"), (), 1, "s")
    got = judge_partitions(read.facts)
    assert got.status is Status.WARN
    assert (
        "min.insync.replicas not read for 1 topic (DescribeConfigs: timed out): their partitions are not judged "
        "for min ISR: b"
    ) in got.reasons
    assert got.summary.endswith("; min ISR of 1 topic not read")
    lone = metadata_facts(ADDRESSES, [], MinIsrRead({}, ("c",), "x"), (), 1, "s")
    assert judge_partitions(lone.facts).status is Status.UNKNOWN
