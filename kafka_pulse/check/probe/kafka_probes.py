"""The check's Kafka reads, each bounded by the deadline: cluster metadata (asked of every bootstrap server in
parallel, the first answer wins), the KRaft quorum, and a lag snapshot (one ApiVersions exchange per broker is
broker_watch.py's).

Every read returns facts (kafka_pulse/check/facts.py) or `ProbeFailed`; nothing raises. A hung broker accepts
connections and never answers, so no read trusts a client timeout alone: each runs on a `Task` that is abandoned
at the deadline.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from confluent_kafka import OFFSET_END, Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from kafka_pulse.check.deadline import Deadline, Task, close_later, first_success
from kafka_pulse.check.facts import (
    BrokerAddress,
    FailureKind,
    GroupLag,
    LagFacts,
    MetadataFacts,
    ProbeFailed,
    QuorumFacts,
)
from kafka_pulse.check.probe.broker_watch import ask_api_versions
from kafka_pulse.check.probe.lag_summary import group_lag
from pulse.admin_requests import await_result, describe_cluster
from pulse.config import ClusterConfig, split_host_port
from pulse.kafka.admin_client import kafka_python_warnings
from pulse.kafka.broker_probe import CheckResult, tls_context
from pulse.kafka.elr import ElrRead, elr_topics, read_elr, with_elr
from pulse.kafka.group_offsets import GroupOffsets, GroupOffsetsReader
from pulse.kafka.partitions import PartitionState, diagnose_under_replicated
from pulse.kafka.quorum import QuorumNotKraft, QuorumUnreachable, QuorumUnread, describe_quorum, parse_quorum
from pulse.kafka.quorum_wire import describe_quorum_wire
from pulse.kafka_log import verdict_settings
from pulse.profile import admin_config, kafka_python_config

CLIENT_ID = "kafka-pulse-check"
MAX_GROUPS = 200
"""Consumer groups whose offsets one check reads at most (the rest are named as not read)."""
OFFSETS_SHARE = 0.3
"""Of the deadline left after the group listing, what each committed-offsets exchange may take (FindCoordinator,
OffsetFetch, and both again for groups whose coordinator moved)."""
MAX_CONFIG_TOPICS = 5000
"""Topics with a short ISR whose min.insync.replicas one check reads at most, in one DescribeConfigs batch (the rest
are named as not judged for min ISR)."""
CONFIGS_SHARE = 0.5
"""Of the metadata deadline left after Metadata and DescribeCluster, what the DescribeConfigs batch may take."""
ELR_SHARE = 0.5
"""Of the metadata deadline left after DescribeConfigs, what each DescribeTopicPartitions exchange may take."""


def admin_settings(
    cluster: ClusterConfig, servers: Iterable[str], on_error: Callable[[Any], None] | None = None
) -> dict[str, Any]:
    return {
        **admin_config(cluster),
        "bootstrap.servers": ",".join(servers),
        "client.id": CLIENT_ID,
        # reconnect chatter about a dead broker: the verdict says it better
        **verdict_settings(cluster.name, on_error=on_error),
        "allow.auto.create.topics": False,
    }


_LOGIN_ERRORS = (KafkaError._AUTHENTICATION, KafkaError._SSL)


def _failure(exc: BaseException, what: str) -> ProbeFailed:
    """A librdkafka error as a failure kind: transport and timeouts mean the cluster does not answer."""
    error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    text = error.str() if error is not None else str(exc)
    if isinstance(exc, TimeoutError) or (error is not None and error.code() == KafkaError._TIMED_OUT):
        return ProbeFailed(FailureKind.TIMEOUT, f"{what}: timed out")
    if error is not None and error.code() in _LOGIN_ERRORS:
        return ProbeFailed(FailureKind.REFUSED, f"{what}: {text}")
    if error is not None and error.code() in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
        return ProbeFailed(FailureKind.UNREACHABLE, f"{what}: {text}")
    return ProbeFailed(FailureKind.ERROR, f"{what}: {text}")


# --- metadata -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetadataRead:
    """A metadata answer: the facts for the verdicts, and every partition, for the round trip's layout."""

    facts: MetadataFacts
    topics: Mapping[str, tuple[PartitionState, ...]]


def read_metadata(
    cluster: ClusterConfig, configured: Collection[int], deadline: Deadline
) -> MetadataRead | ProbeFailed:
    """Ask every bootstrap server at once on clients of their own; the first complete answer is the cluster's."""
    done = threading.Event()
    tasks = [
        Task(f"metadata from {server}", partial(_metadata_from, cluster, server, configured, deadline), done)
        for server in cluster.bootstrap_servers
    ]
    return first_success(tasks, done, deadline)


def _metadata_from(
    cluster: ClusterConfig, server: str, configured: Collection[int], deadline: Deadline
) -> MetadataRead | ProbeFailed:
    reported: list[KafkaError] = []
    admin = AdminClient(admin_settings(cluster, [server], on_error=reported.append))
    try:
        metadata = admin.list_topics(timeout=deadline.remaining())
        described = describe_cluster(admin, deadline.remaining())
    except (KafkaException, TimeoutError) as exc:
        admin.poll(0)  # deliver the errors librdkafka queued for error_cb while we waited
        refused = [e for e in reported if isinstance(e, KafkaError) and e.code() in _LOGIN_ERRORS]
        if refused:  # the request itself often fails as a transport error once the broker drops the connection
            return ProbeFailed(FailureKind.REFUSED, f"metadata from {server}: {refused[0].str()}")
        return _failure(exc, f"metadata from {server}")
    racks = {node.id: node.rack for node in described.nodes}
    brokers = {b.id: BrokerAddress(b.id, str(b.host), b.port, racks.get(b.id)) for b in metadata.brokers.values()}
    states = [
        PartitionState(name, p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
        for name, topic in sorted(metadata.topics.items())
        for p in sorted(topic.partitions.values(), key=lambda part: part.id)
    ]
    min_isr = _min_isr(admin, states, deadline)
    elr = _elr(cluster, server, with_min_isr(states, min_isr), deadline)
    controller = metadata.controller_id if metadata.controller_id >= 0 else None
    return metadata_facts(brokers, states, min_isr, configured, controller, server, elr)


def metadata_facts(
    brokers: Mapping[int, BrokerAddress],
    states: Iterable[PartitionState],
    min_isr: MinIsrRead,
    configured: Collection[int],
    controller: int | None,
    server: str,
    elr: ElrRead | None = None,
) -> MetadataRead:
    """The facts of one metadata answer (pure), each partition judged against its topic's min.insync.replicas as
    the leader applies it (`PartitionState.is_under_min_isr`), and those under it by their ELR (`elr_verdict`)."""
    states = list(with_elr(with_min_isr(states, min_isr), elr or ElrRead()))
    topics: dict[str, list[PartitionState]] = {}
    for state in states:
        topics.setdefault(state.topic, []).append(state)
    diagnosis = diagnose_under_replicated(states)
    expected = set(brokers) | set(configured) | {b for s in states for b in s.replicas}
    facts = MetadataFacts(
        brokers=brokers,
        expected=tuple(sorted(expected)),
        partitions=len(states),
        offline=tuple(s for s in states if s.is_offline),
        under_replicated=tuple(s for s in states if s.is_under_replicated),
        under_min_isr=tuple(s for s in states if s.is_under_min_isr),
        diagnosis_scope=diagnosis.scope.value,
        diagnosis_brokers=diagnosis.brokers,
        metadata_controller=controller,
        answered_by=server,
        min_isr_unread=min_isr.unread,
        min_isr_unread_reason=min_isr.reason,
        elr_unread_reason=elr.reason if elr is not None else "ELR not read",
    )
    return MetadataRead(facts, {t: tuple(parts) for t, parts in topics.items()})


def with_min_isr(states: Iterable[PartitionState], min_isr: MinIsrRead) -> list[PartitionState]:
    """`states` with their topic's min.insync.replicas where it was read (pure)."""
    return [replace(s, min_isr=min_isr.by_topic.get(s.topic, s.min_isr)) for s in states]


def _elr(cluster: ClusterConfig, server: str, states: Iterable[PartitionState], deadline: Deadline) -> ElrRead:
    """The ELR of the partitions under min ISR (none asked when there are none), within a share of the deadline."""
    topics = elr_topics(states)
    if not topics:
        return ElrRead()
    settings = kafka_python_config(cluster, CLIENT_ID, deadline.share(ELR_SHARE), [server])
    return read_elr(settings, topics, close=close_later)


@dataclass(frozen=True)
class MinIsrRead:
    """Each topic's effective min.insync.replicas as DescribeConfigs gave it, and the topics it did not give."""

    by_topic: Mapping[str, int]
    unread: tuple[str, ...] = ()
    reason: str = ""
    """Why `unread` were not read (past the cap, timed out, refused)."""


def config_topics(states: Iterable[PartitionState], cap: int = MAX_CONFIG_TOPICS) -> tuple[list[str], list[str]]:
    """The topics whose min.insync.replicas one check asks for, and those past `cap` (pure): the topics with a
    partition whose ISR is short of its replicas, the smallest ISRs first. A full ISR is never under min ISR, as
    the leader requires at most as many replicas as there are (`PartitionState.is_under_min_isr`)."""
    smallest: dict[str, int] = {}
    for s in states:
        if s.is_under_replicated:
            smallest[s.topic] = min(len(s.isr), smallest.get(s.topic, len(s.isr)))
    ordered = sorted(smallest, key=lambda t: (smallest[t], t))
    return ordered[:cap], ordered[cap:]


def _min_isr(admin: AdminClient, states: Iterable[PartitionState], deadline: Deadline) -> MinIsrRead:
    """The min.insync.replicas of the topics `config_topics` picks, in one DescribeConfigs batch within a share of
    the deadline. A topic that sets none is described with the broker's default (source DEFAULT_CONFIG or a broker
    config). What is not read is named, never taken as 1."""
    asked, skipped = config_topics(states)
    if not asked:
        return MinIsrRead({})
    timeout_s = deadline.share(CONFIGS_SHARE)
    limit = deadline.earlier(timeout_s)
    out: dict[str, int] = {}
    failed: list[str] = []
    reason = f"{len(skipped)} topics past the {MAX_CONFIG_TOPICS}-topic bound" if skipped else ""
    try:
        futures: dict[Any, Any] = admin.describe_configs(
            [ConfigResource("TOPIC", t) for t in asked], request_timeout=timeout_s
        )
        for resource, future in futures.items():
            try:
                entry = await_result(future, limit.remaining()).get("min.insync.replicas")
            except KafkaException as exc:  # this topic only (deleted meanwhile, not authorised)
                failed.append(resource.name)
                reason = reason or f"DescribeConfigs: {_failure(exc, resource.name).reason}"
                continue
            if entry is not None and entry.value is not None:
                out[resource.name] = int(entry.value)
            else:
                failed.append(resource.name)
                reason = reason or f"DescribeConfigs of {resource.name} has no min.insync.replicas"
    except (KafkaException, TimeoutError) as exc:
        reason = _failure(exc, "DescribeConfigs").reason
    unread = sorted({*asked, *skipped} - set(out))
    return MinIsrRead(out, tuple(unread), reason if unread else "")


# --- brokers ------------------------------------------------------------------------------------------------------


class AnsweringServers:
    """ApiVersions to every bootstrap server, started at construction. Served before authentication, so it tells a
    cluster that does not answer from one that refuses our login or is too slow for the deadline."""

    def __init__(self, cluster: ClusterConfig, deadline: Deadline) -> None:
        context = tls_context(cluster)
        self._tasks: list[tuple[str, Task[CheckResult]]] = []
        for server in cluster.bootstrap_servers:
            host, port = split_host_port(server)
            address = BrokerAddress(-1, host, port)
            ask = partial(ask_api_versions, context, address, deadline)
            self._tasks.append((server, Task(f"bootstrap {server}", ask)))

    def __call__(self) -> list[str]:
        """The servers that have answered so far."""
        return [s for s, t in self._tasks if isinstance(r := t.result(), CheckResult) and r.ok]

    def settle(self, deadline: Deadline) -> list[str]:
        """The servers that answered once every exchange is over (a closed port fails at once), or at `deadline`."""
        for _, task in self._tasks:
            task.wait(deadline)
        return self()


# --- controller -----------------------------------------------------------------------------------------------------


WIRE_PROTOCOLS = ("PLAINTEXT", "SSL")
"""Listeners whose quorum read goes over a connection of our own (pulse/kafka/quorum_wire.py); with a SASL login it
goes through kafka-python."""


def needs_kafka_python(cluster: ClusterConfig, share_groups: bool) -> bool:
    """Whether a healthy check of `cluster` reads through kafka-python: the quorum behind a SASL login, or the
    share groups (with `lag.share_groups.enabled`). The ELR read of partitions under min ISR, and the committed
    offsets of a cluster that has consumer groups, import it on use."""
    return share_groups or cluster.security.protocol not in WIRE_PROTOCOLS


def preload_quorum_client() -> None:
    """Import kafka-python on a thread of its own while the check waits on the network, when a read will need it
    (`needs_kafka_python`): its import is most of such a read's time (0.1 s of CPU), which then finds it loaded."""
    with kafka_python_warnings():
        import kafka.admin  # noqa: F401


def read_quorum(
    cluster: ClusterConfig, servers: Iterable[str], metadata_controller: int | None, deadline: Deadline
) -> QuorumFacts | ProbeFailed:
    """The KRaft quorum through DescribeQuorum (brokers forward it to the active controller), on a connection of
    our own unless a SASL login is needed; a cluster that does not know the request runs ZooKeeper, whose controller
    is the one the metadata names."""
    try:
        if cluster.security.protocol in WIRE_PROTOCOLS:
            answer = describe_quorum_wire(servers, deadline.remaining(), tls_context(cluster))
        else:
            settings = kafka_python_config(cluster, CLIENT_ID, deadline.remaining(), list(servers))
            answer = describe_quorum(settings, close=close_later)
    except QuorumNotKraft:
        return QuorumFacts("zookeeper", metadata_controller)
    except QuorumUnreachable as exc:
        return ProbeFailed(FailureKind.UNREACHABLE, f"controller quorum: {exc}")
    except QuorumUnread as exc:
        return ProbeFailed(FailureKind.ERROR, f"controller quorum: {exc}")
    return quorum_facts(answer, time.time())


def quorum_facts(answer: Mapping[str, Any], now_s: float) -> QuorumFacts | ProbeFailed:
    """The DescribeQuorum response (kafka-python's dict of the protocol's fields) as facts."""
    try:
        state = parse_quorum(answer, now_s)
    except QuorumUnread as exc:
        return ProbeFailed(FailureKind.ERROR, f"controller quorum: {exc}")
    return QuorumFacts("kraft", state.leader, state.epoch, state.voters, state.observers)


# --- lag ----------------------------------------------------------------------------------------------------------


def read_lag(cluster: ClusterConfig, servers: Iterable[str], deadline: Deadline) -> LagFacts | ProbeFailed:
    """Committed offsets of every group (up to MAX_GROUPS) against the high watermarks, in three rounds of
    parallel requests; what has not answered by the deadline is named, never counted as zero lag."""
    admin = AdminClient(admin_settings(cluster, servers))
    try:
        # ListGroups goes to every broker: a hung one would hold the listing to its timeout, so it gets a share.
        listing = await_result(admin.list_consumer_groups(request_timeout=deadline.share(0.4)), deadline.remaining())
    except (KafkaException, TimeoutError) as exc:
        return _failure(exc, "consumer group listing")
    groups = sorted(listing.valid, key=lambda g: g.group_id)
    errors = tuple(str(e) for e in listing.errors or [])
    chosen, skipped = groups[:MAX_GROUPS], [g.group_id for g in groups[MAX_GROUPS:]]
    committed: dict[str, dict[tuple[str, int], int]] = {}
    unread = list(skipped)
    found = _committed(cluster, servers, [g.group_id for g in chosen], deadline)
    for g in chosen:
        read = found.get(g.group_id)
        if read is None or read.code:
            unread.append(g.group_id)
        else:
            committed[g.group_id] = dict(read.offsets)
    hwms = _hwms({tp for offsets in committed.values() for tp in offsets}, cluster, servers, deadline)
    states = {g.group_id: _state_name(g.state) for g in chosen}
    lags: list[GroupLag] = [group_lag(g, states[g], committed[g], hwms) for g in sorted(committed)]
    return LagFacts(len(groups), tuple(lags), tuple(unread), errors)


def _committed(
    cluster: ClusterConfig, servers: Iterable[str], groups: list[str], deadline: Deadline
) -> dict[str, GroupOffsets]:
    """The groups' committed offsets by the deadline (pulse/kafka/group_offsets.py: never librdkafka's
    ListConsumerGroupOffsets, which can kill the process when a coordinator moves); none when no broker could be
    reached or the deadline came first. The read runs on a Task that closes its client when it ends, so a hung
    broker never holds the verdict."""
    if not groups:
        return {}
    with kafka_python_warnings():
        from kafka.errors import KafkaError as KafkaPythonError

    reader = GroupOffsetsReader(kafka_python_config(cluster, CLIENT_ID, deadline.share(OFFSETS_SHARE), list(servers)))

    def read() -> dict[str, GroupOffsets]:
        try:
            return reader.read(dict.fromkeys(groups))
        except KafkaPythonError:
            return {}
        finally:
            reader.close()

    found = Task("committed offsets", read).wait(deadline)
    return found if isinstance(found, dict) else {}


def _hwms(
    partitions: set[tuple[str, int]], cluster: ClusterConfig, servers: Iterable[str], deadline: Deadline
) -> dict[tuple[str, int], int]:
    """High watermarks through a consumer's `offsets_for_times`: an Admin ListOffsets that times out can abort the
    process in native code (lag/ingest/admin_clients.py), and the
    check's timeouts are short. Partitions whose leader did
    not answer are left out: their lag is unknown, never zero."""
    if not partitions:
        return {}
    consumer = Consumer(
        {
            **admin_settings(cluster, servers),
            "group.id": f"{CLIENT_ID}-{uuid.uuid4().hex[:8]}",  # never joined or committed
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",  # HWMs, as the lag evaluator reads them
        }
    )
    try:
        request = [TopicPartition(t, p, OFFSET_END) for t, p in sorted(partitions)]
        answered = consumer.offsets_for_times(request, timeout=deadline.share(0.9))
    except KafkaException:
        return {}
    finally:
        close_later(consumer.close)
    return {(tp.topic, tp.partition): tp.offset for tp in answered if tp.error is None and tp.offset >= 0}


def _state_name(state: Any) -> str:
    name = getattr(state, "name", str(state))
    return str(name).replace("_", " ").title().replace(" ", "")
