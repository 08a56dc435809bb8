"""The board's sections from in-process readings (kafka_pulse/status/readings.py), judged by the check's own
verdicts: a fresh HWM round makes brokers and partitions OK, what no component here read is UNKNOWN or not
available with the reason (never OK), and the canary's settled probes make the round trip."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from canary.events import ProbeResult
from collectors import NOT_READ_HERE
from collectors.cluster_state import ClusterSnapshot
from kafka_pulse.check.consult.slow_brokers import SlowBrokerFacts
from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import (
    BrokerProbe,
    MetadataFacts,
    NotAvailable,
    ProbeFailed,
    QuorumFacts,
    RoundTripFacts,
)
from kafka_pulse.check.judge.verdict import Section, Status, judge_controller, judge_lag
from kafka_pulse.check.probe.kafka_probes import MetadataRead
from kafka_pulse.check.sections import judged_sections
from kafka_pulse.status import readings
from kafka_pulse.status.in_process import in_process_check
from lag.protocol import MetadataReading, Placement
from pulse.broker_health import BrokerHealthBoard, BrokerSlowness
from pulse.config import ClusterConfig, PulseConfig
from pulse.kafka.partitions import PartitionState
from pulse.kafka.quorum import QuorumState, VoterState

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)
NO_CANARY, NO_DETECTOR = NotAvailable("no canary here"), NotAvailable("no detector")
BROKERS = {1: ("127.0.0.1", 9091), 2: ("127.0.0.1", 9092), 3: ("127.0.0.1", 9093)}


def reading(
    placements: dict[tuple[str, int], Placement] | None = None,
    age_s: float = 1.0,
    brokers: dict[int, tuple[str, int]] = BROKERS,
) -> MetadataReading:
    """A 3-broker cluster's HWM round, every broker leading one partition of `orders`, fully in sync."""
    if placements is None:
        placements = {("orders", p): Placement(b, (b, b % 3 + 1), (b, b % 3 + 1)) for p, b in enumerate((1, 2, 3))}
    return MetadataReading("dev", NOW_MS - int(age_s * 1000), brokers, 2, placements, 0.012)


def sections(
    meta: MetadataRead | ProbeFailed,
    answers: dict[int, BrokerProbe] | None = None,
    trips: RoundTripFacts | ProbeFailed | NotAvailable = NO_CANARY,
    slow: SlowBrokerFacts = NO_DETECTOR,
) -> dict[str, Section]:
    """Every section, by name, as the board judges them."""
    facts: MetadataFacts | ProbeFailed = meta if isinstance(meta, ProbeFailed) else meta.facts
    if answers is None:
        answers = {} if isinstance(meta, ProbeFailed) else readings.answers_from_lag(reading())
    out = judged_sections(
        facts,
        answers,
        NotAvailable(readings.NO_QUORUM),
        trips,
        judge_lag(NotAvailable("no lag")),
        slow,
        NotAvailable("no neighbours"),
        Section("slo", Status.INFO, "not available"),
        Section("self", Status.INFO, "not available"),
        unasked=readings.NO_LEADERSHIP,
    )
    return {s.name: s for s in out}


def fresh(r: MetadataReading) -> MetadataRead:
    meta = readings.metadata_from_lag(r, None, (), NOW_MS, 30.0)
    assert isinstance(meta, MetadataRead), meta
    return meta


# --- brokers, controller and partitions from the lag source's HWM round -------------------------------------------


def test_a_fresh_round_of_a_healthy_cluster_is_ok_and_what_is_not_read_says_so() -> None:
    got = sections(fresh(reading()))
    assert (got["brokers"].status, got["partitions"].status) == (Status.OK, Status.OK)
    assert got["brokers"].summary.startswith("3/3 brokers answer")
    assert got["partitions"].summary == "3 partitions, all fully replicated"
    assert (got["controller"].status, got["controller"].reasons) == (Status.INFO, (readings.NO_QUORUM,))
    assert (got["round_trip"].status, got["round_trip"].summary) == (Status.INFO, "not run")


@pytest.mark.parametrize(
    ("failure", "age_s", "reason"),
    [
        pytest.param(None, None, "the lag source has not completed a HWM round yet", id="no-round-yet"),
        pytest.param("KafkaException: _TIMED_OUT", 1.0, "last HWM round failed: KafkaException", id="round-failed"),
        pytest.param(None, 45.0, "last HWM round is 45 s old (over 30 s)", id="stale"),
    ],
)
def test_no_current_round_is_unknown_with_the_reason_never_ok(
    failure: str | None, age_s: float | None, reason: str
) -> None:
    """A hung broker holds the round to its timeout: the old reading is not shown as current."""
    meta = readings.metadata_from_lag(reading(age_s=age_s) if age_s is not None else None, failure, (), NOW_MS, 30.0)
    assert isinstance(meta, ProbeFailed)
    got = sections(meta)
    for name in ("brokers", "partitions"):
        assert got[name].status is Status.UNKNOWN, got[name]
        assert reason in got[name].reasons[0]


def test_a_round_whose_offsets_failed_judges_partitions_but_no_broker_answers() -> None:
    """The metadata came, a leader did not answer its ListOffsets: the partitions are judged from it, the brokers
    are not taken as answering; a canary connection check that failed still names its broker."""
    r = dataclasses.replace(reading(), offsets_error="KafkaException: _TIMED_OUT")
    got = sections(fresh(r), readings.answers_from_lag(r))
    assert got["partitions"].status is Status.OK
    assert got["brokers"].status is Status.UNKNOWN
    assert "last ListOffsets round failed (KafkaException: _TIMED_OUT)" in readings.unasked_reason(r)
    answers = readings.with_canary_checks(readings.answers_from_lag(r), {1: True, 2: True, 3: False})
    got = sections(fresh(r), answers)
    assert got["brokers"].status is Status.CRIT and got["brokers"].culprits == (3,)


def test_a_broker_leading_nothing_the_round_read_is_unknown_not_ok() -> None:
    placements = {("orders", p): Placement(1, (1, 2, 3), (1, 2, 3)) for p in range(3)}
    got = sections(fresh(reading(placements)), readings.answers_from_lag(reading(placements)))
    assert got["brokers"].status is Status.UNKNOWN
    assert f"broker 2 {readings.NO_LEADERSHIP}" in got["brokers"].reasons


def test_a_replica_missing_from_the_metadata_is_down_and_under_replication_is_named() -> None:
    """Broker 3 is gone from the metadata (fenced) yet holds replicas: CRIT, as `check` says; its partitions are
    under-replicated (WARN, with the diagnosis), and their min ISR is named as not read (the lag reads no configs)."""
    placements = {("orders", p): Placement(1, (1, 3), (1,)) for p in range(2)}
    r = reading(placements, brokers={1: BROKERS[1], 2: BROKERS[2]})
    got = sections(fresh(r), readings.answers_from_lag(r))
    assert got["brokers"].status is Status.CRIT and got["brokers"].culprits == (3,)
    assert got["partitions"].status is Status.WARN
    assert any("broker 3 missing from the ISR" in line for line in got["partitions"].reasons)
    assert any(readings.MIN_ISR_UNREAD in line for line in got["partitions"].reasons)


def test_an_offline_partition_is_crit() -> None:
    placements = {("orders", 0): Placement(-1, (3,), ()), ("orders", 1): Placement(1, (1,), (1,))}
    got = sections(fresh(reading(placements)))
    assert got["partitions"].status is Status.CRIT


def snapshot(isr: tuple[int, ...], min_isr: int) -> ClusterSnapshot:
    """The collectors' read of a 3-broker cluster: one topic of replication 3 with `isr` and `min_isr`."""
    racks: dict[int, str | None] = {1: "az-a", 2: "az-b", 3: "az-c"}
    states = tuple(PartitionState("pay", p, 1, (1, 2, 3), isr, min_isr) for p in range(2))
    return ClusterSnapshot(racks, 1, states, addresses=BROKERS)


def test_the_collectors_read_judges_min_isr_as_check_does() -> None:
    """With min.insync.replicas 2 and one replica left in sync, acks=all produces fail: CRIT, where the lag source's
    reading (no configs) could only say WARN and name min ISR as not read."""
    got = sections(readings.metadata_from_collectors(snapshot((1,), 2), ()))
    assert got["partitions"].status is Status.CRIT
    assert "2 partitions under min ISR" in got["partitions"].reasons[0]
    healthy = sections(readings.metadata_from_collectors(snapshot((1, 2, 3), 2), ()))
    assert healthy["partitions"].status is Status.OK
    assert healthy["brokers"].details["brokers"][0]["rack"] == "az-a"


# --- the canary's readings ----------------------------------------------------------------------------------------


def test_a_failed_canary_connection_check_marks_its_broker_down() -> None:
    answers = readings.with_canary_checks(readings.answers_from_lag(reading()), {1: True, 2: False})
    got = sections(fresh(reading()), answers)
    assert got["brokers"].status is Status.CRIT and got["brokers"].culprits == (2,)
    assert readings.CANARY_DOWN in " ".join(got["brokers"].reasons)


def probe(partition: int, broker: int | None, age_s: float = 1.0, ok: bool = True, **kw: object) -> ProbeResult:
    at = NOW - timedelta(seconds=age_s)
    fields: dict[str, object] = {
        "produce_ok": ok,
        "produce_latency_s": 0.002 if ok else None,
        "consume_ok": ok if ok else None,
        "e2e_latency_s": 0.004 if ok else None,
        "error": None if ok else "_MSG_TIMED_OUT",
    } | kw
    return ProbeResult(at, "dev", "__pulse_canary", partition, broker, None, None, "p", 0, **fields)  # type: ignore[arg-type]


def settled(*probes: ProbeResult, after_s: float = 0.0) -> dict[int, readings.SettledProbe]:
    """Each probe as the canary settled it, `after_s` after its send."""
    return {r.partition: readings.SettledProbe(r, r.time + timedelta(seconds=after_s)) for r in probes}


def test_each_partitions_last_settled_probe_makes_the_round_trip() -> None:
    latest = settled(*(probe(p, b) for p, b in enumerate((1, 2, 3))))
    trips = readings.trips_from_canary("__pulse_canary", latest, {}, NOW, 7.0)
    got = sections(fresh(reading()), trips=trips)
    assert got["round_trip"].status is Status.OK
    assert got["round_trip"].summary.startswith("3/3 records produced and read back through 3 brokers")


def test_a_failed_probe_is_charged_to_its_leader_and_an_old_one_is_not_judged() -> None:
    failed = settled(probe(0, 1), probe(1, 2, ok=False), probe(2, 3))
    got = sections(fresh(reading()), trips=readings.trips_from_canary("__pulse_canary", failed, {}, NOW, 7.0))
    assert got["round_trip"].status is Status.CRIT and got["round_trip"].culprits == (2,)
    old = settled(probe(0, 1), probe(1, 2, age_s=30.0), probe(2, 3))
    got = sections(fresh(reading()), trips=readings.trips_from_canary("__pulse_canary", old, {}, NOW, 7.0))
    assert got["round_trip"].status is Status.UNKNOWN
    assert any("no canary probe settled for 30 s" in line for line in got["round_trip"].reasons)


def test_a_probe_settled_as_lost_is_judged_though_it_was_sent_long_ago() -> None:
    # A lost probe settles loss_deadline_s (30 s) after its send: its age is the settling's, so it counts as lost.
    lost = probe(1, 2, age_s=31.0, consume_ok=False, e2e_latency_s=None, lost=True)
    latest = settled(probe(0, 1), probe(2, 3)) | settled(lost, after_s=30.5)
    got = sections(fresh(reading()), trips=readings.trips_from_canary("__pulse_canary", latest, {}, NOW, 7.0))
    assert got["round_trip"].status is Status.CRIT and got["round_trip"].culprits == (2,)
    assert any("acknowledged, never read back" in line for line in got["round_trip"].reasons)


def test_no_settled_probe_yet_is_unknown() -> None:
    trips = readings.trips_from_canary("__pulse_canary", {}, {}, NOW, 7.0)
    assert sections(fresh(reading()), trips=trips)["round_trip"].status is Status.UNKNOWN


def test_the_sink_keeps_each_partitions_newest_probe_and_skips_duplicates() -> None:
    sink = readings.LatestProbes(clock=lambda: NOW)
    newer, older = probe(0, 1, age_s=1.0), probe(0, 1, age_s=5.0)
    sink.record(newer)
    sink.record(older)
    sink.record(probe(0, 2, age_s=0.5, duplicate=True))
    assert sink.latest() == {0: readings.SettledProbe(newer, NOW)}


def test_a_slow_broker_of_this_process_warns_on_the_brokers_section() -> None:
    board = {
        2: BrokerSlowness(2, True, 4.0, "probe_rtt_ms", 80.0, True),
        1: BrokerSlowness(1, False, 1.0, "", None, False),
    }
    got = sections(fresh(reading()), slow=readings.slow_from_board(board))
    assert got["brokers"].status is Status.WARN and got["brokers"].culprits == (2,)


# --- the board's check in `lag` -----------------------------------------------------------------------------------


class LagMetadata:
    """The lag runner's face the board reads (a stand-in holding one reading, no Kafka)."""

    def __init__(self, r: MetadataReading | None, failure: str | None = None) -> None:
        self.r, self.failure = r, failure

    def metadata(self, cluster: str) -> MetadataReading | None:
        return self.r

    def metadata_failure(self, cluster: str) -> str | None:
        return self.failure


def test_the_board_in_lag_judges_from_the_reading_and_runs_no_round_trip() -> None:
    """No canary in the process: the round trip is not run (INFO, the reason says the page produces nothing), and a
    broker the canary does not watch is not judged on its behalf."""
    r = MetadataReading("dev", int(datetime.now(UTC).timestamp() * 1000), BROKERS, 2, reading().placements, 0.01)
    check = in_process_check(None, metadata=LagMetadata(r), broker_health=BrokerHealthBoard())
    cluster = ClusterConfig(name="dev", bootstrap_servers=["127.0.0.1:1"])  # nothing listens: nothing is asked
    got = {s.name: s for s in check(PulseConfig(), cluster, Deadline.after(4.0))}
    assert list(got) == ["brokers", "controller", "partitions", "round_trip", "lag", "slo", "self"]
    assert (got["brokers"].status, got["partitions"].status) == (Status.OK, Status.OK)
    assert got["round_trip"].status is Status.INFO and "produces nothing" in got["round_trip"].reasons[0]
    assert got["lag"].status is Status.INFO and got["self"].status is Status.INFO


def test_the_board_without_a_lag_source_is_unknown_for_brokers_and_partitions() -> None:
    check = in_process_check(None)
    cluster = ClusterConfig(name="dev", bootstrap_servers=["127.0.0.1:1"])
    got = {s.name: s for s in check(PulseConfig(), cluster, Deadline.after(4.0))}
    assert got["brokers"].status is Status.UNKNOWN and got["partitions"].status is Status.UNKNOWN
    assert "no component of this process reads the cluster's metadata" in got["brokers"].reasons[0]


class CollectorsState:
    """The collectors' face the board reads (a stand-in holding one read, or the reason there is none)."""

    def __init__(self, state: ClusterSnapshot | str) -> None:
        self.state = state

    def cluster_snapshot(self, cluster: str, now_s: float | None = None) -> ClusterSnapshot | str:
        return self.state


def test_the_board_prefers_the_collectors_read_for_partitions_and_says_why_it_is_missing() -> None:
    r = MetadataReading("dev", int(datetime.now(UTC).timestamp() * 1000), BROKERS, 2, reading().placements, 0.01)
    cluster = ClusterConfig(name="dev", bootstrap_servers=["127.0.0.1:1"])
    both = in_process_check(None, metadata=LagMetadata(r), cluster_state=CollectorsState(snapshot((1,), 2)))
    got = {s.name: s for s in both(PulseConfig(), cluster, Deadline.after(4.0))}
    assert got["partitions"].status is Status.CRIT  # min ISR, which only the collectors read
    assert got["brokers"].status is Status.OK  # each broker led a partition of the lag source's round
    alone = in_process_check(None, cluster_state=CollectorsState("the collectors' latest read failed: timed out"))
    got = {s.name: s for s in alone(PulseConfig(), cluster, Deadline.after(4.0))}
    assert got["partitions"].status is Status.UNKNOWN
    assert "the collectors' latest read failed: timed out" in got["partitions"].reasons[0]


# --- the controller quorum from the collectors' read --------------------------------------------------------------


def quorum_snapshot(caught_up_age_s: float | None, quorum_up: bool | None = True) -> ClusterSnapshot:
    """The collectors' read with DescribeQuorum's answer: node 1 leads epoch 7, node 3 `caught_up_age_s` behind."""
    voters = (VoterState(1, 0, 0.0), VoterState(2, 0, 0.2), VoterState(3, 42, caught_up_age_s))
    quorum = QuorumState(1, 7, 1000, voters) if quorum_up else None
    return dataclasses.replace(snapshot((1, 2, 3), 2), quorum=quorum, quorum_up=quorum_up)


def controller_section(state: ClusterSnapshot | str) -> Section:
    check = in_process_check(None, cluster_state=CollectorsState(state))
    cluster = ClusterConfig(name="dev", bootstrap_servers=["127.0.0.1:1"])
    return {s.name: s for s in check(PulseConfig(), cluster, Deadline.after(4.0))}["controller"]


def test_the_page_names_a_lagging_voter_as_check_does() -> None:
    """One verdict path: the page's controller section is the check's own (judge_controller) over the collectors'
    DescribeQuorum, so the voter and its lag read the same words as `kafka-pulse check` prints."""
    behind = controller_section(quorum_snapshot(45.0))
    facts = QuorumFacts("kraft", 1, 7, quorum_snapshot(45.0).quorum.voters)  # type: ignore[union-attr]
    assert behind == judge_controller(facts)
    assert behind.status is Status.WARN
    assert behind.reasons == ("controller quorum voter 3 last caught up 45 s ago (42 records behind)",)
    assert behind.details["voters"][2] == {"node": 3, "lag_records": 42, "caught_up_age_s": 45.0}
    caught_up = controller_section(quorum_snapshot(0.3))
    assert caught_up.status is Status.OK and caught_up.summary.startswith("node 1 is the active controller (epoch 7)")


@pytest.mark.parametrize(
    ("state", "status", "reason"),
    [
        pytest.param(quorum_snapshot(None, quorum_up=False), Status.UNKNOWN, readings.QUORUM_UNREAD, id="unread"),
        pytest.param("the collectors' latest cluster-state read is 40 s old", Status.UNKNOWN, "40 s old", id="stale"),
        pytest.param(NOT_READ_HERE, Status.INFO, readings.NO_QUORUM, id="another-shard"),
    ],
)
def test_a_quorum_the_collectors_did_not_read_is_never_ok(
    state: ClusterSnapshot | str, status: Status, reason: str
) -> None:
    got = controller_section(state)
    assert got.status is status and reason in got.reasons[0], got


def test_a_cluster_without_a_quorum_is_judged_from_its_metadata_controller() -> None:
    """ZooKeeper (3.x): the collectors ask no quorum (`quorum_up` None); the controller id of the metadata stands."""
    got = controller_section(quorum_snapshot(None, quorum_up=None))
    assert (got.status, got.summary) == (Status.OK, "broker 1 is the controller")
