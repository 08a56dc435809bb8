"""The status page's facts from readings its process already has, inside `lag` and `run`: the lag source's last HWM
round (registered brokers, every partition's placement, every leader answered its ListOffsets), the collectors'
cluster-state read (with each topic's min ISR and the KRaft quorum), the canary's connection checks and settled
probes, and the slow-broker board. Pure mappings into the check's facts, judged by the check's own verdicts
(kafka_pulse/check/sections.py), so the page and `check` judge alike while the page opens no Kafka client and
produces nothing. `LatestProbes` is the canary sink that keeps each partition's last probe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kafka_pulse.check.consult.slow_brokers import SlowBrokerFact, SlowBrokerFacts
from kafka_pulse.check.facts import (
    BrokerAddress,
    BrokerProbe,
    FailureKind,
    NotAvailable,
    PartitionTrip,
    ProbeFailed,
    QuorumFacts,
    RoundTripFacts,
)
from kafka_pulse.check.probe.kafka_probes import MetadataRead, MinIsrRead, config_topics, metadata_facts
from pulse.broker_health import BrokerSlowness
from pulse.kafka.partitions import PartitionState

if TYPE_CHECKING:
    from canary import ProbeResult
    from collectors import ClusterSnapshot
    from lag import MetadataReading

LAG_METADATA = "the lag source's last HWM round"
"""Where the brokers and partitions sections' facts come from (the `answered_by` of the metadata facts)."""
NO_LEADERSHIP = (
    "is registered but leads no partition the lag source reads, so no request of this process went to it "
    "(`kafka-pulse check` asks it)"
)
"""Why a registered broker is not judged answering on the page (judge_brokers' `unasked`)."""
COLLECTORS = "the collectors' cluster-state read"
"""Where the partitions' facts come from when collectors run in the process (with min ISR read)."""
NO_ANSWERS = "is registered, but no reading of this process shows it answering (`kafka-pulse check` asks it)"
"""Why a registered broker is not judged answering when no lag source runs here."""
NO_QUORUM = (
    "this process reads no controller quorum (DescribeQuorum): the collectors read it in `run`, `kafka-pulse check` "
    "reads it"
)
QUORUM_UNREAD = "the collectors' latest DescribeQuorum failed (their log says why)"
MIN_ISR_UNREAD = "the lag source reads no topic configs"
CANARY_DOWN = "the canary's connection check failed"


def metadata_from_lag(
    reading: MetadataReading | None,
    failure: str | None,
    configured: Collection[int],
    now_ms: int,
    stale_after_s: float,
) -> MetadataRead | ProbeFailed:
    """The lag source's last successful round as metadata facts: ProbeFailed (UNKNOWN on the page, never OK) before
    a first round, when the last round failed, or when the last success is older than `stale_after_s`. Topics with a
    short ISR are named as not judged for min ISR (the lag source reads no configs)."""
    if failure is not None:
        return ProbeFailed(FailureKind.ERROR, f"the lag source's last HWM round failed: {failure}")
    if reading is None:
        return ProbeFailed(FailureKind.ERROR, "the lag source has not completed a HWM round yet")
    age_s = (now_ms - reading.read_at_ms) / 1000
    if age_s > stale_after_s:
        return ProbeFailed(
            FailureKind.ERROR, f"the lag source's last HWM round is {age_s:.0f} s old (over {stale_after_s:g} s)"
        )
    brokers = {b: BrokerAddress(b, host, port) for b, (host, port) in reading.brokers.items()}
    states = [
        PartitionState(topic, partition, p.leader, p.replicas, p.isr)
        for (topic, partition), p in sorted(reading.placements.items())
    ]
    asked, skipped = config_topics(states)
    unread = MinIsrRead({}, tuple(sorted([*asked, *skipped])), MIN_ISR_UNREAD) if asked else MinIsrRead({})
    return metadata_facts(brokers, states, unread, configured, reading.controller, LAG_METADATA)


def metadata_from_collectors(snapshot: ClusterSnapshot, configured: Collection[int]) -> MetadataRead:
    """The collectors' latest cluster-state read as metadata facts: brokers with their racks, every partition with
    its topic's min.insync.replicas (the collectors read every topic's), so min ISR is judged as `check` judges it."""
    brokers = {
        b: BrokerAddress(b, *snapshot.addresses.get(b, ("", 0)), rack=rack) for b, rack in snapshot.brokers.items()
    }
    return metadata_facts(brokers, snapshot.partitions, MinIsrRead({}), configured, snapshot.controller, COLLECTORS)


def quorum_from_collectors(snapshot: ClusterSnapshot) -> QuorumFacts | ProbeFailed:
    """The KRaft quorum of the collectors' latest cluster-state read (the DescribeQuorum `check` makes), so the page
    names a lagging voter as `check` does; each voter's caught-up age is as of that read. No quorum asked for means
    a ZooKeeper cluster, judged from the metadata's controller id."""
    if snapshot.quorum_up is None:
        return QuorumFacts("zookeeper", snapshot.controller)
    if snapshot.quorum is None:
        return ProbeFailed(FailureKind.ERROR, QUORUM_UNREAD)
    q = snapshot.quorum
    return QuorumFacts("kraft", q.leader, q.epoch, q.voters, q.observers)


def answers_from_lag(reading: MetadataReading) -> dict[int, BrokerProbe]:
    """Every leader of a round whose ListOffsets all answered, within the round's time; none when they did not all
    answer (which one failed is not known). A broker that leads nothing the round asked is left out (not asked)."""
    if reading.offsets_error is not None:
        return {}
    leaders = {p.leader for p in reading.placements.values() if p.leader >= 0}
    return {b: BrokerProbe(b, True, reading.round_s) for b in sorted(leaders)}


def unasked_reason(reading: MetadataReading | None) -> str:
    """Why a registered broker has no answer on the page (judge_brokers' `unasked`)."""
    if reading is not None and reading.offsets_error is not None:
        return f"was not judged: the lag source's last ListOffsets round failed ({reading.offsets_error})"
    return NO_LEADERSHIP


def with_canary_checks(answers: Mapping[int, BrokerProbe], up: Mapping[int, bool]) -> dict[int, BrokerProbe]:
    """The canary's latest connection check (ApiVersions on a connection of its own) per broker: a failed one marks
    the broker down; a passed one answers for a broker the lag reading did not ask."""
    out = dict(answers)
    for broker, ok in up.items():
        if not ok:
            out[broker] = BrokerProbe(broker, False, 0.0, CANARY_DOWN)
        elif broker not in out:
            out[broker] = BrokerProbe(broker, True, 0.0)
    return out


def slow_from_board(brokers: Mapping[int, BrokerSlowness] | None) -> SlowBrokerFacts:
    """The slow-broker detector's verdicts of this process (pulse.broker_health), as the check's slow facts."""
    if brokers is None:
        return NotAvailable("no slow-broker detector runs in this process")
    return [SlowBrokerFact(b.broker, b.score, b.reason, None, None, None) for _, b in sorted(brokers.items()) if b.slow]


def trips_from_canary(
    topic: str,
    latest: Mapping[int, SettledProbe],
    in_sync: Mapping[int, tuple[int, ...]],
    now: datetime,
    max_age_s: float,
) -> RoundTripFacts | ProbeFailed:
    """Each partition's last settled canary probe as a round trip: produced (acks=all) and read back, or failed with
    its error. A partition whose last probe settled more than `max_age_s` ago is not judged (a stalled canary, or a
    produce still waiting on a hung broker), never taken as a success. The age runs from the settling, not the
    send: a probe settled as lost settles `loss_deadline_s` after its send, and must still be judged, as lost."""
    if not latest:
        return ProbeFailed(FailureKind.ERROR, "the canary has settled no probe yet")
    trips: list[PartitionTrip] = []
    for partition, settled in sorted(latest.items()):
        r = settled.result
        leader = r.broker if r.broker is not None else -1
        isr = in_sync.get(partition, ())
        age_s = (now - settled.settled_at).total_seconds()
        if age_s > max_age_s:
            error = f"no canary probe settled for {age_s:.0f} s"
            trips.append(PartitionTrip(partition, leader, isr, False, False, error, judged=False))
            continue
        failed = r.error or ("acknowledged, never read back" if r.lost else None)
        trips.append(PartitionTrip(partition, leader, isr, r.produce_ok, r.consume_ok is True, failed, r.e2e_latency_s))
    return RoundTripFacts(topic, tuple(trips))


@dataclass(frozen=True)
class SettledProbe:
    """A partition's last probe and when the canary settled it (read back, lost or failed): its age is the page's."""

    result: ProbeResult
    settled_at: datetime


class LatestProbes:
    """A canary sink keeping each partition's last settled probe (duplicates skipped): what the round trip section
    reads. Bounded by the monitor topic's partitions."""

    def __init__(self, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._latest: dict[int, SettledProbe] = {}

    def record(self, event: ProbeResult) -> None:
        if event.duplicate:
            return
        settled_at = self._clock()
        with self._lock:
            last = self._latest.get(event.partition)
            if last is None or event.time >= last.result.time:
                self._latest[event.partition] = SettledProbe(event, settled_at)

    def latest(self) -> dict[int, SettledProbe]:
        with self._lock:
            return dict(self._latest)
