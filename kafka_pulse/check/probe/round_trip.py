"""The check's canary round trip: one probe record (pulse/kafka/probe_payload.py's format, under a producer id of
its own, so a running canary skips it as foreign) produced with acks=all to every partition of the monitor topic,
then read back from the offset its acknowledgement names, all within the deadline.

A missing monitor topic is created the way the canary creates it (canary/topic.py's `TopicManager`: replicas
interleaved across racks, every live broker a preferred leader), never with broker defaults; with
`canary.manage_topic: false` the check leaves it to the operator.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_pulse.check.deadline import Deadline, close_later
from kafka_pulse.check.facts import FailureKind, PartitionTrip, ProbeFailed, RoundTripFacts
from kafka_pulse.check.probe.kafka_probes import CLIENT_ID, admin_settings
from pulse.config import CanaryConfig, ClusterConfig
from pulse.errors import KafkaUnavailable
from pulse.kafka.partitions import PartitionState
from pulse.kafka.probe_payload import MalformedProbe, Probe, decode, encode
from pulse.kafka_log import verdict_settings
from pulse.profile import NO_AUTO_CREATE, client_config

_TIMEOUTS = frozenset({"_MSG_TIMED_OUT", "_TIMED_OUT", "REQUEST_TIMED_OUT"})
PRODUCE_SHARE = 0.6
"""Of the time left when the records are sent, the share their acknowledgements may take; the rest is for
reading them back."""


def round_trip(
    cluster: ClusterConfig,
    canary: CanaryConfig,
    layout: Sequence[PartitionState] | None,
    servers: Sequence[str],
    deadline: Deadline,
    down: Callable[[], Collection[int]] = frozenset,
) -> RoundTripFacts | ProbeFailed:
    """Produce one record to each partition in `layout` (None: the topic does not exist) and read each back.
    `down` tells, while the acknowledgements are awaited, the brokers known not to answer: once every record still
    out waits on one of them, the wait ends (an acks=all produce waits for every in-sync replica)."""
    created = False
    if layout is None:
        if not canary.manage_topic:
            return ProbeFailed(
                FailureKind.ERROR,
                f"monitor topic {canary.topic!r} does not exist and canary.manage_topic is false: create it, or let "
                "`kafka-pulse canary` (or `run`) manage it",
            )
        made = create_topic(cluster, canary, servers, deadline)
        if isinstance(made, ProbeFailed):
            return made
        layout, created = made, True
    trips = _trips(cluster, canary.topic, layout, servers, deadline, canary.latency_slo_s, down)
    return RoundTripFacts(canary.topic, trips, created)


def _trips(
    cluster: ClusterConfig,
    topic: str,
    layout: Sequence[PartitionState],
    servers: Sequence[str],
    deadline: Deadline,
    latency_slo_s: float,
    down: Callable[[], Collection[int]],
) -> tuple[PartitionTrip, ...]:
    producer_id = f"{CLIENT_ID}-{uuid.uuid4().hex}"
    produce_s = deadline.share(PRODUCE_SHARE)
    common = {**client_config(cluster), "bootstrap.servers": ",".join(servers), **verdict_settings(cluster.name)}
    producer = Producer(
        {
            **common,
            **NO_AUTO_CREATE,
            "client.id": CLIENT_ID,
            "acks": "all",
            "linger.ms": 0,
            "enable.idempotence": False,
            "message.timeout.ms": max(1, int(produce_s * 1000)),
            "socket.timeout.ms": max(10, int(produce_s * 1000)),
        }
    )
    sent_at: dict[int, float] = {}
    offsets: dict[int, int] = {}
    errors: dict[int, str] = {}

    def delivered(error: KafkaError | None, message: Message) -> None:
        partition = message.partition()
        if partition is None:
            return
        if error is not None:
            errors[partition] = str(error.name())
        else:
            offsets[partition] = message.offset() or 0

    for ref in layout:
        key, value = encode(Probe(producer_id, ref.partition, 0, time.time_ns()))
        sent_at[ref.partition] = time.monotonic()
        try:
            producer.produce(topic, value=value, key=key, partition=ref.partition, on_delivery=delivered)
        except (KafkaException, BufferError) as exc:
            code = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            errors[ref.partition] = str(code.name()) if code is not None else type(exc).__name__
    acks = deadline.earlier(produce_s)
    while len(offsets) + len(errors) < len(layout) and not acks.expired:
        producer.poll(min(0.02, acks.remaining()))
        stalled = stalled_behind(layout, {*offsets, *errors}, down())
        if stalled and len(offsets) + len(errors) + len(stalled) == len(layout):
            for partition, broker in stalled.items():
                waited = time.monotonic() - sent_at[partition]
                errors[partition] = f"not acknowledged after {waited:.1f} s: broker {broker} does not answer"
    read_s = deadline.remaining()
    read_at = _read_back(common, topic, producer_id, offsets, deadline)
    close_later(producer.purge)
    del producer
    trips = []
    for ref in layout:
        p = ref.partition
        got = read_at.get(p)
        error = errors.get(p)
        # A timeout within less than the canary's latency SLO says the check ran short, not that Kafka is slow.
        judged = True
        if error is None and p not in offsets:
            error, judged = f"not acknowledged within {produce_s:.1f} s", produce_s >= latency_slo_s
        elif error in _TIMEOUTS:
            judged = produce_s >= latency_slo_s
        elif error is None and got is None:
            error, judged = f"acknowledged but not read back within {read_s:.1f} s", read_s >= latency_slo_s
        trips.append(
            PartitionTrip(
                partition=p,
                leader=ref.leader,
                in_sync=ref.isr,
                sent=p in offsets,
                read_back=got is not None,
                error=error,
                latency_s=round(got - sent_at[p], 4) if got is not None else None,
                judged=judged,
            )
        )
    return tuple(trips)


def stalled_behind(
    layout: Sequence[PartitionState], settled: Collection[int], down: Collection[int]
) -> Mapping[int, int]:
    """Each partition of `layout` not in `settled` whose acks=all produce waits on a broker in `down` (pure): its
    leader, else its first in-sync follower there. Partitions that wait on no down broker are left out."""
    out: dict[int, int] = {}
    for ref in layout:
        if ref.partition in settled:
            continue
        if ref.leader in down:
            out[ref.partition] = ref.leader
        elif waiting := sorted(b for b in ref.isr if b in down):
            out[ref.partition] = waiting[0]
    return out


def _read_back(
    common: dict[str, Any], topic: str, producer_id: str, offsets: dict[int, int], deadline: Deadline
) -> dict[int, float]:
    """Monotonic time at which each acknowledged record was read, reading from exactly its offset (assign, no
    group: nothing joins or commits)."""
    if not offsets:
        return {}
    consumer = Consumer(
        {
            **common,
            "client.id": CLIENT_ID,
            "group.id": producer_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 20,
            "socket.timeout.ms": max(10, int(deadline.remaining() * 1000)),
        }
    )
    consumer.assign([TopicPartition(topic, p, o) for p, o in sorted(offsets.items())])
    read: dict[int, float] = {}
    key = producer_id.encode()
    while len(read) < len(offsets) and not deadline.expired:
        message = consumer.poll(min(0.05, deadline.remaining()))
        if message is None or message.error() is not None or message.key() != key:
            continue
        try:
            probe = decode(message.value())
        except MalformedProbe:
            continue
        if probe.partition == message.partition():
            read.setdefault(probe.partition, time.monotonic())
    close_later(consumer.close)
    return read


def create_topic(
    cluster: ClusterConfig, canary: CanaryConfig, servers: Sequence[str], deadline: Deadline
) -> tuple[PartitionState, ...] | ProbeFailed:
    """Create the monitor topic with the canary's own placement and wait until every partition has a leader."""
    from canary import KafkaPythonReassigner, TopicManager, read_layout  # its placement, only when it is missing

    admin = AdminClient(admin_settings(cluster, servers))
    manager = TopicManager(admin, KafkaPythonReassigner(cluster), canary, timeout_s=deadline.share(0.5))
    report = manager.reconcile(time.monotonic())
    if report.error is not None:
        return ProbeFailed(FailureKind.ERROR, f"monitor topic {canary.topic!r} missing and not created: {report.error}")
    while True:
        try:
            layout = read_layout(admin, canary.topic, deadline.share(0.5, cap_s=1.0))
        except KafkaUnavailable as exc:
            return ProbeFailed(FailureKind.TIMEOUT, f"monitor topic {canary.topic!r} created, then: {exc}")
        if layout is not None and layout.leaders and all(leader is not None for leader in layout.leaders.values()):
            return tuple(
                PartitionState(
                    canary.topic, p, layout.leaders[p] or -1, layout.replicas[p], tuple(sorted(layout.in_sync[p]))
                )
                for p in sorted(layout.replicas)
            )
        if deadline.expired:
            return ProbeFailed(FailureKind.TIMEOUT, f"monitor topic {canary.topic!r} created but has no leaders yet")
        time.sleep(0.05)
