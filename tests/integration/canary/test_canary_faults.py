"""Broker faults under the canary, on a 3-node cluster of this module's own so the shared one is never hurt. Its
controller fences a dead broker after 4 s rather than 9 s (`devstack.topology.FAST_FENCING`): the tests are about who is
charged for the stall, not its length.

"Within 3 probe intervals" is counted in the canary's own probe rounds (0.5 s each), read from its round history,
so a busy test machine delays the rounds and the verdicts alike instead of failing a wall-clock bound. "Over the
same window" is defined in docs/metrics.md (Canary, "Availability attribution") and checked by `check_kill`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from canary.consumer import ProbeConsumer
from canary.events import ProbeResult
from canary.producer import departure_grace_s
from canary.service import CanaryService, RoundRecord
from canary.topic import read_layout, read_log_offsets
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import CanaryConfig
from pulse.errors import KafkaUnavailable
from pulse.paths import cache_dir
from pulse.polling import poll
from tests.fixtures.faults import elect_unclean, fast_fencing_cluster, quorum_leader
from tests.fixtures.kafka import KafkaHandle
from tests.integration.canary.canary_support import await_healthy, running_canary, sample

pytestmark = pytest.mark.integration

BROKERS = {1, 2, 3}
T_MIN = datetime.min.replace(tzinfo=UTC)
DETECT_ROUNDS = 3
PAUSE_S = 20.0
KILL_SETTINGS = {
    "latency_slo_s": 2.0,
    "connection_check_timeout_s": 5.0,
    "availability_window_s": 8.0,
    "loss_deadline_s": 30.0,
}
"""For the kill -9 test, on top of the 0.5 s rounds. The test machine runs other clusters and benches at once (load
averages of 50 to 90 on its 2 cores were seen), and then a healthy broker can take more than 2 s to answer an
ApiVersions check, or 1 s to acknowledge a probe: a real (if self-inflicted) fault that would rightly be charged
to it, but not the one under test. A dead broker refuses connections at once, so detection does not wait for the
longer check timeout. The loss deadline outlasts the failover: a probe acknowledged just before the kill can only
be read once its partition has a new leader, which took up to 17 s under that load."""


@pytest.fixture(scope="module")
def faulty_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaHandle]:
    yield from fast_fencing_cluster(tmp_path_factory.mktemp("kafka-canary-faults"), "kafka-canary-faults")


def first_drop(service: CanaryService, broker: int, after_round: int) -> RoundRecord:
    """The first round after `after_round` whose verdict put `broker` below 1.0."""

    def dropped(record: RoundRecord) -> bool:
        ratio = record.availability.get(broker)
        return record.round > after_round and ratio is not None and ratio < 1.0

    record = poll(
        lambda: next((r for r in list(service.history) if dropped(r)), None),
        lambda record: record is not None,
        60,
        f"broker {broker}'s availability below 1.0",
        interval_s=0.1,
    )
    assert record is not None
    return record


def fenced(service: CanaryService, broker: int) -> bool:
    """The canary's view shows `broker` leading nothing and in no ISR: the controller has fenced it."""
    if service.view.partitions_led().get(broker, 0) != 0:
        return False
    return all(broker not in service.view.leader(p).in_sync for p in service.view.partitions())


def check_kill(canary: CanaryService, events: list[ProbeResult], victim: int, killed_s: float, before: int) -> None:
    """The kill -9 check's first half, with "the same window" as docs/metrics.md defines it: the outage, from the kill
    until the canary saw the victim fenced (it leads nothing and is in no ISR) plus the grace of rule 3b. Over the
    verdicts of the probes sent in it, the victim's availability is below 1.0 and every other broker's is >= 0.99
    or unknown (each of its probes in the outage was stalled by the victim and charged to it)."""
    drop = first_drop(canary, victim, before)
    assert drop.round - before <= DETECT_ROUNDS, f"broker {victim} flagged at round {drop.round}, fault after {before}"
    poll(lambda: fenced(canary, victim), lambda done: done, 90, f"broker {victim} fenced (leads nothing, in no ISR)")
    outage_end_s = time.monotonic() + departure_grace_s(canary.config)
    poll(
        lambda: (canary.ledger.undecided(outage_end_s), time.monotonic() > outage_end_s),
        lambda seen: seen == (0, True),
        90,
        "a verdict for every probe sent in the outage",
    )
    outage = canary.ledger.availability_between(killed_s, outage_end_s)
    bad = [(e.partition, e.broker, e.sequence, e.error, e.produce_latency_s) for e in events if not e.produce_ok]
    rounds = "\n".join(f"{r.round} {r.at_s:.2f} {r.availability} {sorted(r.down)}" for r in list(canary.history))
    checks = sorted(
        (s.labels["broker"], s.labels["result"], s.value)
        for family in canary.registry.collect()
        for s in family.samples
        if s.name == "kafka_pulse_canary_connection_checks_total"
    )
    detail = f"outage {killed_s:.2f}..{outage_end_s:.2f}: {outage}\nchecks {checks}\nbad {bad}\nrounds:\n{rounds}"
    victims = outage[victim].ratio
    assert victims is not None and victims < 1.0, detail
    for other in BROKERS - {victim}:
        ratio = outage[other].ratio if other in outage else None
        assert ratio is None or ratio >= 0.99, detail


def test_kill_9_broker_loses_availability_alone_and_regains_it(faulty_kafka: KafkaHandle) -> None:
    """kill -9 one broker: its availability drops within 3 rounds while the others stay >= 0.99 over the same
    window (their stalled acks=all probes are charged to the dead in-sync follower, canary/availability.py rule
    3); restarted, it is 1.0 again and leads a monitor partition again (the canary's preferred leader election).

    The victim is a broker that is not the active controller: every dev node is also a KRaft voter, and killing
    the quorum leader is a second fault (a controller election among the two survivors, which on a loaded test
    machine was seen to take 15 s and stall every broker), while this test is about a broker dying."""
    cluster = faulty_kafka.cluster
    victim = max(BROKERS - {quorum_leader(faulty_kafka)})
    with running_canary(faulty_kafka, **KILL_SETTINGS) as (canary, sink):
        await_healthy(canary, BROKERS)
        before, killed_s = canary.rounds, time.monotonic()
        cluster.kill(victim)
        try:
            check_kill(canary, sink.events, victim, killed_s, before)
        finally:
            cluster.restart(victim, cache_dir())  # the next test needs all three, whatever happened here
        poll(lambda: canary.view.partitions_led().get(victim, 0), lambda led: led >= 1, 90, "the victim leads again")
        poll(lambda: canary.availability().get(victim), lambda a: a == 1.0, 60, "the victim's availability at 1.0")
        assert canary.broker_up()[victim]
        assert canary.topic_manager is not None and canary.topic_manager.report.actions.get("elect", 0) >= 1
    # Nothing acknowledged is lost (acks=all, min.insync.replicas=2). Duplicates are not ruled out: a probe to the
    # dead leader that the client gives up while "possibly persisted" makes librdkafka's idempotent producer bump
    # its epoch and re-send what it was retrying, which the broker cannot deduplicate; the canary counts those.
    lost = [e for e in sink.events if e.lost]
    assert not lost, f"a clean failover lost acknowledged probes: {lost}"


def test_sigstop_broker_is_flagged_and_recovers(faulty_kafka: KafkaHandle) -> None:
    """SIGSTOP broker 2 for 20 s (a hung broker: connections open, nothing answers): flagged within 3 rounds, the
    canary keeps probing throughout, and after SIGCONT broker 2 is up and available again."""
    cluster = faulty_kafka.cluster
    with running_canary(faulty_kafka) as (canary, _sink):
        await_healthy(canary, BROKERS)
        before = canary.rounds
        cluster.pause(2)
        paused_at = time.monotonic()
        try:
            drop = first_drop(canary, 2, before)
            assert drop.round - before <= DETECT_ROUNDS, f"broker 2 flagged at round {drop.round}, after {before}"
            assert 2 in drop.down
            time.sleep(max(0.0, PAUSE_S - (time.monotonic() - paused_at)))  # the full 20 s pause
            assert canary.broker_up()[2] is False
            assert canary.rounds >= before + int(PAUSE_S / canary.config.interval_s / 2), "probing stalled"
        finally:
            cluster.resume(2)
        poll(lambda: canary.broker_up().get(2), lambda up: up is True, 60, "broker 2 answering again")
        poll(lambda: canary.availability().get(2), lambda a: a == 1.0, 90, "broker 2 availability back to 1.0")
        await_healthy(canary, BROKERS)


def consumed_since(events: list[ProbeResult], since: datetime) -> int:
    return sum(1 for e in list(events) if e.consume_ok and not e.duplicate and e.time > since)


def log_end(reader: Consumer, topic: str) -> int:
    """Partition 0's log end, or -1 while it cannot be had (a hung broker may be asked first)."""
    try:
        return read_log_offsets(reader, topic, {0: None}, True, 5.0).get(0, -1)
    except KafkaUnavailable:
        return -1


def test_unclean_election_truncates_acknowledged_probes(faulty_kafka: KafkaHandle) -> None:
    """Truncation on the cluster. A test topic with one
    partition on brokers A (leader) and B, min.insync.replicas=1, so A alone may acknowledge:
      1. B hangs (SIGSTOP) and is fenced and dropped from the ISR; probes are now acknowledged by A alone. The
         canary reads some of them, then its reader is held back and more are acknowledged unread.
      2. A dies (kill -9) and B continues at once, so B never copies what A wrote alone; the partition is offline.
      3. An unclean election (the admin call an operator would make to get the partition back) makes B leader
         with the log it had when it hung: every offset A acknowledged alone is gone, and B hands them out again.
    The canary must count the truncation, call the read ones truncated and the unread ones lost, and lose nothing
    written after. Neither A nor B is the KRaft quorum leader, so the metadata quorum keeps two voters throughout.
    """
    cluster = faulty_kafka.cluster
    a, b = sorted(BROKERS - {quorum_leader(faulty_kafka)})
    topic = f"canary-trunc-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(faulty_kafka.client_config(**{"socket.timeout.ms": 3000}))  # B will hang
    new = NewTopic(topic, num_partitions=1, replica_assignment=[[a, b]], config={"min.insync.replicas": "1"})
    admin.create_topics([new])[topic].result(timeout=30)
    reader = Consumer(faulty_kafka.client_config(**{"group.id": f"{topic}-ends", "socket.timeout.ms": 3000}))
    tp = TopicPartition(topic, 0)
    settings = {"topic": topic, "manage_topic": False, "loss_deadline_s": 120.0, "log_check_interval_s": 1.0}
    with running_canary(faulty_kafka, **settings) as (canary, sink):
        assert canary.consumer is not None
        poll(lambda: consumed_since(sink.events, T_MIN), lambda n: n >= 3, 90, "three probes read on the test topic")
        cluster.pause(b)
        try:
            poll(lambda: canary.view.leader(0).in_sync, lambda isr: isr == {a}, 60, f"broker {b} out of the ISR")
            alone = datetime.now(UTC)
            poll(lambda: consumed_since(sink.events, alone), lambda n: n >= 2, 60, f"two probes read from {a} alone")
            canary.consumer.pause([0])
            first_unread = poll(lambda: canary.ledger.first_unread_offset(0), lambda o: o is not None, 30, "unread")
            assert first_unread is not None
            poll(
                lambda: log_end(reader, topic),
                lambda end: end >= first_unread + 2,
                30,
                f"two probes acknowledged by {a} alone and not read",
            )
            cluster.kill(a)
        finally:
            cluster.resume(b)
        try:
            poll(lambda: canary.view.leader(0).broker, lambda leader: leader is None, 60, "the partition offline")
            poll(
                lambda: elect_unclean(faulty_kafka, tp, BROKERS - {a}),
                lambda error: error is None,
                60,
                f"an unclean election of broker {b}",
                interval_s=1.0,
            )
            elected = datetime.now(UTC)
            canary.consumer.resume([0])
            poll(lambda: consumed_since(sink.events, elected), lambda n: n >= 3, 60, f"three probes read from {b}")
        finally:
            cluster.restart(a, cache_dir())
            reader.close()
        counts = canary.ledger.counts()[0]
        restarts = sample(canary, "kafka_pulse_canary_producer_restarts_total")
    events = list(sink.events)
    # B's log ended where the first probe written to it after the election landed: everything at or above that
    # offset acknowledged before the election is gone.
    cut = min(e.offset for e in events if e.consume_ok and e.time > elected and e.offset is not None)
    gone = [e for e in events if e.time < elected and e.offset is not None and e.offset >= cut and not e.duplicate]
    assert counts.truncations >= 1, counts
    assert counts.truncated == sum(1 for e in gone if e.consume_ok) >= 2, (cut, counts, gone)
    lost = [e for e in events if e.lost]
    assert {e.sequence for e in lost} == {e.sequence for e in gone if not e.consume_ok}, (cut, lost, gone)
    assert len(lost) >= 2 and all(alone < e.time < elected and e.produce_ok for e in lost), lost
    assert counts.late == 0, "a probe called lost was read after all"
    assert restarts >= 1, "the idempotent producer's fatal OUT_OF_ORDER_SEQUENCE_NUMBER should replace its client"


def test_a_broker_gone_for_good_is_planned_around_and_taken_back(faulty_kafka: KafkaHandle) -> None:
    """Brokers removed and added. A broker missing for longer than `min_change_interval_s` is
    treated as removed: the canary moves the monitor topic's replicas off it (replication factor 2 on the two left)
    so every live broker still leads a partition. When it comes back, it gets its replicas and a partition to lead
    again, and once the topic is right the canary changes nothing more. A broker missing for less time (a restart)
    keeps its replicas: the kill -9 test runs with the default 600 s and no reassignment."""
    cluster = faulty_kafka.cluster
    victim = max(BROKERS - {quorum_leader(faulty_kafka)})
    admin = AdminClient(faulty_kafka.client_config(**{"socket.timeout.ms": 3000}))
    settings = {"min_change_interval_s": 4.0, "latency_slo_s": 2.0, "connection_check_timeout_s": 2.0}
    with running_canary(faulty_kafka, **settings) as (canary, _sink):
        await_healthy(canary, BROKERS)
        topic = canary.config.topic

        def placement() -> tuple[dict[int, tuple[int, ...]], dict[int, int]] | None:
            """The topic's replicas and who leads what; None while metadata times out (a loaded host, a dead
            broker's connections), so the poll asks again instead of failing."""
            try:
                layout = read_layout(admin, topic, 5.0)
            except KafkaUnavailable:
                return None
            return (dict(layout.replicas) if layout is not None else {}), canary.view.partitions_led()

        cluster.kill(victim)
        try:
            poll(
                placement,
                lambda seen: (
                    seen is not None
                    and bool(seen[0])
                    and all(victim not in r for r in seen[0].values())
                    and all(seen[1].get(b, 0) >= 1 for b in BROKERS - {victim})
                ),
                90,
                f"broker {victim}'s replicas moved to the live brokers, each leading a partition",
            )
        finally:
            cluster.restart(victim, cache_dir())
        poll(
            placement,
            lambda seen: (
                seen is not None
                and bool(seen[0])
                and all(len(r) == 3 for r in seen[0].values())
                and all(seen[1].get(b, 0) >= 1 for b in BROKERS)
            ),
            120,
            f"broker {victim} back in every replica list and leading a partition",
        )
        done = sample(canary, "kafka_pulse_canary_topic_changes_total", action="reassign")
        assert done >= 2, "expected one reassignment to remove the broker and one to take it back"
        target = canary.rounds + 8
        poll(lambda: canary.rounds, lambda rounds: rounds >= target, 60, "8 more probe rounds")
        assert sample(canary, "kafka_pulse_canary_topic_changes_total", action="reassign") == done, "thrashing"


def test_a_partition_whose_watermarks_failed_is_repositioned_when_its_leader_answers(faulty_kafka: KafkaHandle) -> None:
    """The canary's reader loses its place (librdkafka stops the partition: `auto.offset.reset=error`) while the
    leader cannot answer a watermark read (SIGSTOP here; in CI, a topic just created whose leader was still loading
    it). It asks again until the leader answers, then reads on: a partition never stays unread, which would leave
    every later probe to it lost and the status page's round trip with nothing recent to judge."""
    topic = f"reposition-{uuid.uuid4().hex[:8]}"
    admin = faulty_kafka.admin()
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[3]])])[topic].result(timeout=30)
    config = CanaryConfig(topic=topic)
    reader = ProbeConsumer(dev_cluster_config(faulty_kafka.cluster), config, "reposition-test", None)
    try:

        def assigned() -> frozenset[int]:
            reader.sync_partitions([0])
            return reader.assigned

        poll(assigned, lambda got: got == {0}, 30, "partition 0 read")
        faulty_kafka.cluster.pause(3)
        try:
            reader._reposition(0, "_AUTO_OFFSET_RESET")  # what a stopped partition's error leads to
        finally:
            faulty_kafka.cluster.resume(3)
        assert reader.counts.resets == 0, "the watermarks were read from a paused leader"
        producer = Producer({"bootstrap.servers": faulty_kafka.bootstrap_servers})
        producer.produce(topic, key=b"another canary", value=b"x", partition=0)
        assert producer.flush(30) == 0

        def read() -> tuple[int, int]:
            reader.poll_once(0.2)
            return reader.counts.resets, reader.counts.foreign

        poll(read, lambda seen: seen == (1, 1), 90, "the partition repositioned once and its record read")
    finally:
        reader.close()
