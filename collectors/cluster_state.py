"""Cluster state from the Admin API alone (no JMX): the balance table and diagnoses of chapter 13.

`fetch_snapshot` reads brokers, controller, partitions and each topic's min.insync.replicas; `assess` is pure and
derives what an operator checks by hand: brokers missing, offline / under-replicated / under-min-ISR partitions,
partitions and leaders per broker with their skew, preferred-leader imbalance, replicas sharing one rack, and
`diagnose_under_replicated`: one broker common to every under-replicated partition, or a cluster-wide problem.
`fetch_elr`, `fetch_earliest_local` and `cluster_quorum.fetch_quorum` add what kafka-python reads and librdkafka
cannot: the ELR of partitions under min ISR, the earliest local offset of tiered partitions, and the KRaft quorum.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource

from pulse.admin_requests import describe_cluster
from pulse.config import ClusterConfig
from pulse.errors import KafkaUnavailable
from pulse.kafka.elr import elr_topics, read_elr, with_elr
from pulse.kafka.partitions import Diagnosis, ElrVerdict, PartitionState, diagnose_under_replicated
from pulse.kafka.quorum import QuorumState
from pulse.kafka.remote_tier import TIERED_CONFIGS, TieredTopic, read_earliest_local, tiered_topic
from pulse.profile import kafka_python_config

_LOG = logging.getLogger(__name__)
ELR_CLIENT_ID = "kafka-pulse-collectors"
"""client.id of the kafka-python reads (DescribeTopicPartitions, DescribeQuorum)."""
CONFIGS_BATCH = 100
"""Topics per DescribeConfigs request: several requests in flight can be served by several of a broker's request
threads, where one request for every topic is served by one."""
BASE_TIMEOUT_S = 10.0
PER_PARTITION_S = 0.002
MAX_TIMEOUT_S = 300.0
ATTEMPT_S = 2.0
"""Least wait for the kept client's read before a fresh client reads again (`read_attempt_s`): a small cluster
answers in milliseconds."""
RENEWALS = 2
"""Fresh clients one read may turn to (`fetch_snapshot`); the last one has all the read's time left."""
UNDER_MIN_ISR_EXAMPLES = 20
"""Partitions under min ISR named one by one on /metrics (`kafka_pulse_cluster_under_min_isr_partition`): the
series stay bounded however many there are; the per-verdict counts hold them all."""


class ClusterStateTimeout(KafkaUnavailable):
    """The cluster-state read did not finish within its time limit (a slow or hung broker, or a cluster too large
    for `collectors.admin_timeout_s`)."""


def read_timeout_s(partitions: int) -> float:
    """The default time limit of a cluster-state read of `partitions` partitions (pure)."""
    return min(MAX_TIMEOUT_S, BASE_TIMEOUT_S + PER_PARTITION_S * max(0, partitions))


def read_attempt_s(timeout_s: float | None, partitions: int, previous_s: float | None) -> float | None:
    """How long a read waits on the kept client before it is done again on a fresh one (pure): 3 times the previous
    good read's `previous_s`, at least `ATTEMPT_S` and at most half the read's limit (`timeout_s`, or the default
    for the previous read's `partitions`); half the limit before any good read; None (no second try) when half the
    limit is under `ATTEMPT_S`.

    librdkafka sends Metadata (the read's, and the refresh between DescribeCluster attempts) to the connected broker
    it sent to most recently, so once a broker hangs (SIGSTOP: connections kept, nothing answered) every later one of
    the kept client goes to it until `socket.timeout.ms` (60 s) drops the connection: about 70 s of failed reads;
    a fresh client uses only brokers that answered its handshake, which a hung one never does
    (docs/kafka-clients.md, tests/integration/collectors/test_kraft_quorum.py)."""
    half = (timeout_s or read_timeout_s(partitions)) / 2
    if half < ATTEMPT_S:
        return None
    return half if previous_s is None else min(half, max(ATTEMPT_S, 3 * previous_s))


@dataclass(frozen=True)
class ClusterSnapshot:
    """What one Admin API read returned."""

    brokers: Mapping[int, str | None]
    """Live brokers (present in metadata) and their racks."""
    controller: int | None
    partitions: tuple[PartitionState, ...]
    quorum: QuorumState | None = None
    """The KRaft metadata quorum (DescribeQuorum); None under ZooKeeper or when it was not read (`quorum_up`)."""
    quorum_up: bool | None = None
    """True when DescribeQuorum answered, False when it failed, None under ZooKeeper or when not asked."""
    servers: tuple[str, ...] = ()
    """host:port of the brokers the metadata lists (the live ones): where the kafka-python reads bootstrap, so they
    never try a dead broker of the configured list (kafka-python 3.0.12 leaves a refused connection's socket to the
    garbage collector)."""
    addresses: Mapping[int, tuple[str, int]] = field(default_factory=dict)
    """Live brokers' (host, port), as DescribeCluster gives them."""
    tiered: tuple[TieredTopic, ...] = ()
    """Topics with remote storage enabled (KIP-405), by name, and the copy lag each may have."""
    earliest_local: Mapping[tuple[str, int], int] = field(default_factory=dict)
    """Tiered partitions' earliest local offset (`fetch_earliest_local`); empty when not read."""


@dataclass(frozen=True)
class BrokerBalance:
    """One row of the chapter's balance table."""

    broker: int
    rack: str | None
    present: bool
    partitions: int
    """Replicas hosted."""
    leaders: int
    preferred: int
    """Partitions whose preferred (first) replica is this broker."""
    not_leading_preferred: int
    """Of those, how many another broker leads: the preferred-leader imbalance."""
    partition_skew: float
    """(partitions - mean) / mean over the expected brokers; 0 when the mean is 0."""
    leader_skew: float


@dataclass(frozen=True)
class ClusterHealth:
    """Everything `assess` derives; `collector.py` exposes it as the `kafka_pulse_cluster_*` families."""

    expected: tuple[int, ...]
    missing: tuple[int, ...]
    controller: int | None
    partitions: int
    offline: int
    under_replicated: int
    under_min_isr: int
    same_rack: int
    """Partitions with more than one replica, all of them in one rack (an AZ outage takes them all)."""
    balance: tuple[BrokerBalance, ...]
    diagnosis: Diagnosis
    under_min_isr_by_elr: Mapping[ElrVerdict, int] = field(default_factory=dict)
    """Partitions under min ISR by what can recover them (KIP-966; `PartitionState.elr_verdict`)."""
    under_min_isr_examples: tuple[PartitionState, ...] = ()
    """Up to `UNDER_MIN_ISR_EXAMPLES` of them, the worst verdict first, then by topic and partition."""
    quorum: QuorumState | None = None
    quorum_up: bool | None = None
    """As in `ClusterSnapshot`: the `kafka_pulse_kraft_*` families come from them."""
    tiered: tuple[TieredTopic, ...] = ()
    earliest_local: Mapping[tuple[str, int], int] = field(default_factory=dict)
    """As in `ClusterSnapshot`: the `kafka_pulse_cluster_topic_remote_*` and earliest-local families."""


def _skew(count: int, mean: float) -> float:
    return (count - mean) / mean if mean else 0.0


def assess(snapshot: ClusterSnapshot, expected: Iterable[int] = ()) -> ClusterHealth:
    """Derive the cluster's health from one snapshot; `expected` adds brokers that should exist but may be gone."""
    expected_ids = tuple(sorted(set(expected) | set(snapshot.brokers)))
    # One pass over the partitions; what depends only on a partition's replica list (replicas hosted, preferred
    # leader, replicas sharing a rack) is counted once per distinct list: clusters reuse a few hundred layouts
    # over tens of thousands of partitions.
    layouts: Counter[tuple[int, ...]] = Counter()
    leading: Counter[int] = Counter()
    not_leading: Counter[int] = Counter()
    offline = under_replicated = under_min_isr = 0
    lagging: list[PartitionState] = []
    short: list[PartitionState] = []
    for state in snapshot.partitions:
        replicas, leader, in_sync = state.replicas, state.leader, len(state.isr)
        layouts[replicas] += 1
        if leader < 0:
            offline += 1
        else:
            leading[leader] += 1
        if replicas and leader != replicas[0]:
            not_leading[replicas[0]] += 1
        if in_sync < len(replicas):
            under_replicated += 1
            lagging.append(state)
        if state.is_under_min_isr:  # the one rule, pulse/kafka/partitions.py
            under_min_isr += 1
            short.append(state)
    hosted: Counter[int] = Counter()
    preferred: Counter[int] = Counter()
    same_rack = 0
    for replicas, n in layouts.items():
        for broker in replicas:
            hosted[broker] += n
        if replicas:
            preferred[replicas[0]] += n
        racks = {snapshot.brokers.get(b) for b in replicas}
        if len(replicas) > 1 and len(racks) == 1 and None not in racks:
            same_rack += n
    count = max(len(expected_ids), 1)
    mean_partitions = sum(hosted[b] for b in expected_ids) / count
    mean_leaders = sum(leading[b] for b in expected_ids) / count
    balance = tuple(
        BrokerBalance(
            broker=b,
            rack=snapshot.brokers.get(b),
            present=b in snapshot.brokers,
            partitions=hosted[b],
            leaders=leading[b],
            preferred=preferred[b],
            not_leading_preferred=not_leading[b],
            partition_skew=_skew(hosted[b], mean_partitions),
            leader_skew=_skew(leading[b], mean_leaders),
        )
        for b in expected_ids
    )
    return ClusterHealth(
        expected=expected_ids,
        missing=tuple(b for b in expected_ids if b not in snapshot.brokers),
        controller=snapshot.controller,
        partitions=len(snapshot.partitions),
        offline=offline,
        under_replicated=under_replicated,
        under_min_isr=under_min_isr,
        same_rack=same_rack,
        balance=balance,
        diagnosis=diagnose_under_replicated(lagging),
        under_min_isr_by_elr=Counter(v for s in short if (v := s.elr_verdict) is not None),
        under_min_isr_examples=worst_under_min_isr(short),
        quorum=snapshot.quorum,
        quorum_up=snapshot.quorum_up,
        tiered=snapshot.tiered,
        earliest_local=snapshot.earliest_local,
    )


def worst_under_min_isr(short: Iterable[PartitionState]) -> tuple[PartitionState, ...]:
    """The partitions under min ISR to name on /metrics, at most `UNDER_MIN_ISR_EXAMPLES`: at risk first (pure)."""
    order = list(ElrVerdict)
    ranked = sorted(short, key=lambda s: (-order.index(s.elr_verdict or ElrVerdict.UNKNOWN), s.topic, s.partition))
    return tuple(ranked[:UNDER_MIN_ISR_EXAMPLES])


# --- Admin API ----------------------------------------------------------------------------------------------------


def fetch_snapshot(
    admin: AdminClient,
    cluster: str,
    timeout_s: float | None,
    renew: Callable[[], AdminClient] | None = None,
    attempt_s: float | None = None,
) -> ClusterSnapshot:
    """Read brokers, controller, every partition and each topic's min.insync.replicas: metadata, describe_cluster and
    batched describe_configs, all within `timeout_s` (None: `read_timeout_s` of the partitions the metadata lists);
    running out of it raises `ClusterStateTimeout`. With `renew`, a read `admin` has not finished within `attempt_s`
    is done again on `renew()`'s fresh client in the time left (`read_attempt_s` says why)."""
    started = time.monotonic()
    if renew is None or attempt_s is None:
        return _read(admin, cluster, started, timeout_s)
    for _ in range(RENEWALS):
        try:
            return _read(admin, cluster, started, timeout_s, time.monotonic() + attempt_s)
        except _AttemptCut:
            _LOG.warning(
                "cluster %r: no cluster state in %.1f s (a hung broker?); reading it again on a fresh client",
                cluster,
                attempt_s,
            )
        admin = renew()
    return _read(admin, cluster, started, timeout_s)


class _AttemptCut(ClusterStateTimeout):
    """A read ended by its attempt's cut, before its own limit."""


def _read(
    admin: AdminClient, cluster: str, started: float, timeout_s: float | None, cut: float = float("inf")
) -> ClusterSnapshot:
    """`fetch_snapshot` on `admin` alone; `cut` (monotonic) ends it early, as a timeout."""
    deadline = min(cut, started + (timeout_s or BASE_TIMEOUT_S))  # == cut: the cut ends it before its limit
    step = "metadata"
    try:
        # Metadata first: it refreshes librdkafka's idea of the controller, which describe_cluster is sent to;
        # after a kill -9 of that broker the cached one would time out every read until the next refresh.
        metadata = admin.list_topics(timeout=_left(deadline))
        if timeout_s is None:  # the rest gets the time this cluster's size needs, counted from the start
            timeout_s = read_timeout_s(sum(len(t.partitions) for t in metadata.topics.values()))
            deadline = min(cut, started + timeout_s)
        step = "describe_cluster"
        described = describe_cluster(admin, _left(deadline))
        step = f"describe_configs of {len(metadata.topics)} topics"
        min_isr, tiered = _topic_configs(admin, metadata.topics, deadline)
    except TimeoutError as exc:
        raise (_AttemptCut if deadline == cut else ClusterStateTimeout)(
            f"cluster {cluster!r}: cluster state read timed out after {deadline - started:g} s ({step})"
        ) from exc
    except KafkaException as exc:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        if error is not None and error.code() == KafkaError._TIMED_OUT:
            raise (_AttemptCut if deadline == cut else ClusterStateTimeout)(
                f"cluster {cluster!r}: cluster state read timed out after {deadline - started:g} s ({step}: "
                f"{error.str()})"
            ) from exc
        raise KafkaUnavailable(f"cluster {cluster!r}: cannot read cluster state: {exc.args[0]}") from exc
    brokers = {node.id: node.rack for node in described.nodes}
    controller = described.controller.id if described.controller is not None else None
    addresses = {node.id: (str(node.host), int(node.port)) for node in described.nodes}
    servers = tuple(f"{b.host}:{b.port}" for _, b in sorted(metadata.brokers.items()))
    states = partition_states(metadata.topics, min_isr)
    return ClusterSnapshot(brokers, controller, states, addresses=addresses, servers=servers, tiered=tiered)


def partition_states(topics: Mapping[str, Any], min_isr: Mapping[str, int]) -> tuple[PartitionState, ...]:
    """Every partition of `topics` (librdkafka's `TopicMetadata` by name), sorted by topic and partition id."""
    return tuple(
        PartitionState(name, p.id, p.leader, tuple(p.replicas), tuple(p.isrs), topic_min_isr)
        for name, topic in sorted(topics.items())
        for topic_min_isr in (min_isr.get(name, 1),)  # once per topic, not per partition
        for _, p in sorted(topic.partitions.items())  # keyed by partition id
    )


def fetch_elr(cluster: ClusterConfig, snapshot: ClusterSnapshot, timeout_s: float) -> ClusterSnapshot:
    """`snapshot` with the ELR of its partitions under min ISR (DescribeTopicPartitions through kafka-python, each
    exchange bounded by `timeout_s`); nothing is asked when none is under min ISR. A failed read leaves their ELR
    unknown (`ElrVerdict.UNKNOWN`) and is logged, never raised: the rest of the snapshot stands."""
    topics = elr_topics(snapshot.partitions)
    if not topics:
        return snapshot
    read = read_elr(kafka_python_config(cluster, ELR_CLIENT_ID, timeout_s, snapshot.servers), topics)
    if read.reason:
        _LOG.warning("cluster %r: ELR of partitions under min ISR not read: %s", cluster.name, read.reason)
    return replace(snapshot, partitions=with_elr(snapshot.partitions, read))


def fetch_earliest_local(cluster: ClusterConfig, snapshot: ClusterSnapshot, timeout_s: float) -> ClusterSnapshot:
    """`snapshot` with its tiered partitions' earliest local offsets (ListOffsets -4 through kafka-python, each
    exchange bounded by `timeout_s`); nothing is asked when no topic is tiered. A failed read is logged, never
    raised: the offsets it got stand, the others stay unknown."""
    asked = [(t.topic, p) for t in snapshot.tiered for p in range(t.partitions)]
    if not asked:
        return snapshot
    read = read_earliest_local(kafka_python_config(cluster, ELR_CLIENT_ID, timeout_s, snapshot.servers), asked)
    if read.reason:
        _LOG.warning("cluster %r: earliest local offsets of tiered partitions: %s", cluster.name, read.reason)
    return replace(snapshot, earliest_local=read.offsets)


def fetch_racks(admin: AdminClient, cluster: str, timeout_s: float) -> dict[int, str | None]:
    """Live brokers and their racks in one describe_cluster call: what a shard that leaves the cluster's state to
    another shard still needs to label its brokers' samples, at a cost that does not grow with partitions."""
    try:
        described = describe_cluster(admin, timeout_s)
    except (KafkaException, TimeoutError) as exc:
        reason = exc.args[0] if exc.args else "timed out"
        raise KafkaUnavailable(f"cluster {cluster!r}: cannot read its brokers: {reason}") from exc
    return {node.id: node.rack for node in described.nodes}


def _left(deadline: float) -> float:
    """Seconds left before `deadline`; TimeoutError once none are."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("no time left")
    return left


def _topic_configs(
    admin: AdminClient, topics: Mapping[str, Any], deadline: float
) -> tuple[dict[str, int], tuple[TieredTopic, ...]]:
    """Each topic's min.insync.replicas, and the tiered topics among them (pulse/kafka/remote_tier.py), from one
    DescribeConfigs of `CONFIGS_BATCH` topics a request, every request in flight at once."""
    names = list(topics)
    futures: dict[Any, Any] = {}
    for at in range(0, len(names), CONFIGS_BATCH):
        resources = [ConfigResource("TOPIC", t) for t in names[at : at + CONFIGS_BATCH]]
        futures |= admin.describe_configs(resources, request_timeout=_left(deadline))
    out: dict[str, int] = {}
    tiered: list[TieredTopic] = []
    for resource, future in futures.items():
        entries = future.result(timeout=_left(deadline))
        entry = entries.get("min.insync.replicas")
        if entry is not None and entry.value is not None:
            out[resource.name] = int(entry.value)
        configs = {name: e.value for name in TIERED_CONFIGS if (e := entries.get(name)) is not None}
        topic = tiered_topic(resource.name, configs, len(topics[resource.name].partitions))
        if topic is not None:
            tiered.append(topic)
    return out, tuple(sorted(tiered, key=lambda t: t.topic))
