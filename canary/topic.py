"""The monitor topic on the cluster: read its layout, and apply `placement.plan` rarely and only when needed.

Reads go through confluent-kafka's AdminClient; replica moves need AlterPartitionReassignments, which librdkafka
lacks, so they go through kafka-python's admin client behind the one-method `Reassigner` seam.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from canary.placement import Plan, TopicLayout, default_min_insync, default_replication_factor, plan
from pulse.admin_requests import describe_cluster
from pulse.config import CanaryConfig, ClusterConfig
from pulse.errors import KafkaUnavailable
from pulse.kafka.offsets import read_offsets
from pulse.profile import BrokerInfo, kafka_python_config

_LOG = logging.getLogger(__name__)


def read_brokers(admin: AdminClient, timeout_s: float) -> dict[int, BrokerInfo]:
    """Live brokers (registered and unfenced): endpoint and rack, from DescribeCluster."""
    try:
        description = describe_cluster(admin, timeout_s)
    except (KafkaException, TimeoutError) as exc:
        raise KafkaUnavailable(f"describe cluster failed: {exc}") from exc
    return {node.id: BrokerInfo(node.id, node.host, node.port, node.rack) for node in description.nodes}


def read_layout(admin: AdminClient, topic: str, timeout_s: float) -> TopicLayout | None:
    """The topic's replicas, leaders and ISRs from a metadata request; None when the topic does not exist."""
    try:
        metadata = admin.list_topics(topic=topic, timeout=timeout_s)
    except KafkaException as exc:
        raise KafkaUnavailable(f"metadata for topic {topic!r} failed: {exc}") from exc
    described = metadata.topics.get(topic)
    if described is None or (described.error is not None and described.error.code() == 3):  # UNKNOWN_TOPIC
        return None
    if described.error is not None and not described.partitions:
        raise KafkaUnavailable(f"metadata for topic {topic!r}: {described.error.str()}")
    parts = described.partitions
    return TopicLayout(
        replicas={p: tuple(m.replicas) for p, m in parts.items()},
        leaders={p: (m.leader if m.leader >= 0 else None) for p, m in parts.items()},
        in_sync={p: frozenset(m.isrs) for p, m in parts.items()},
    )


def kafka_python() -> ModuleType:
    """The `kafka` package (kafka-python), imported on first use with its DeprecationWarning silenced: 3.0 reads its
    protocol schemas with `importlib.resources.read_text`, deprecated since Python 3.11, at import time, and under
    `-W error` (our test suite) that import would raise instead of reassigning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import kafka
        import kafka.admin
        import kafka.errors
    module: ModuleType = kafka
    return module


def read_log_offsets(
    reader: Consumer, topic: str, leaders: Mapping[int, int | None], end: bool, timeout_s: float
) -> dict[int, int]:
    """Partition -> log start offset, or with `end` the log end (the high watermark), for the partitions whose
    leader answered; KafkaUnavailable when none did. One read per leader (`leaders`: partition -> its leader), so a
    hung leader costs its own partitions only; through a consumer, never Admin ListOffsets (pulse/kafka/offsets.py)."""
    by_leader: dict[int | None, list[tuple[str, int]]] = {}
    for partition, leader in sorted(leaders.items()):
        by_leader.setdefault(leader, []).append((topic, partition))
    at = OFFSET_END if end else OFFSET_BEGINNING
    offsets: dict[int, int] = {}
    errors: list[str] = []
    for leader, partitions in by_leader.items():
        try:
            offsets.update({p: offset for (_, p), offset in read_offsets(reader, partitions, at, timeout_s).items()})
        except KafkaException as exc:  # e.g. OFFSET_NOT_AVAILABLE from a leader just elected, or a timeout
            errors.append(f"leader {leader}: {exc}")
    if errors and not offsets:
        raise KafkaUnavailable(f"list offsets of {topic!r} failed: {'; '.join(errors)}")
    return offsets


class Reassigner(Protocol):
    """Moves replicas of existing partitions (AlterPartitionReassignments)."""

    def reassign(
        self, topic: str, assignment: Mapping[int, tuple[int, ...]], bootstrap: Sequence[str] = ()
    ) -> None: ...


CLIENT_ID = "kafka-pulse-canary-topic"


class KafkaPythonReassigner:
    """AlterPartitionReassignments through kafka-python's admin client, built from the same connection profile."""

    def __init__(self, cluster: ClusterConfig, timeout_s: float = 30.0) -> None:
        self._cluster = cluster
        self._timeout_s = timeout_s
        self._timeout_ms = int(timeout_s * 1000)

    def reassign(self, topic: str, assignment: Mapping[int, tuple[int, ...]], bootstrap: Sequence[str] = ()) -> None:
        """`bootstrap`: live brokers' host:port to start from instead of the configured list. kafka-python 3.0
        leaks the socket of a refused connection (its ResourceWarning surfaces whenever it is collected), and
        reassignments happen when a broker is gone, so they should not even try it."""
        kafka = kafka_python()
        try:
            client = kafka.KafkaAdminClient(**kafka_python_config(self._cluster, CLIENT_ID, self._timeout_s, bootstrap))
            try:
                moves = {kafka.TopicPartition(topic, p): list(replicas) for p, replicas in assignment.items()}
                errors = client.alter_partition_reassignments(moves, timeout_ms=self._timeout_ms)
            finally:
                client.close()
        except kafka.errors.KafkaError as exc:
            raise KafkaUnavailable(f"reassignment of {topic} failed: {exc!r}") from exc
        refused = {tp.partition: err.__name__ for tp, err in errors.items() if err is not None}
        if refused:
            raise KafkaUnavailable(f"reassignment of {topic} refused: {refused}")


@dataclass
class ReconcileReport:
    """What the last reconciliation saw and did, for the metrics and the log."""

    partitions: int = 0
    gaps: tuple[str, ...] = ()
    actions: dict[str, int] = field(default_factory=dict)
    """Totals per action (`create`, `add_partitions`, `reassign`, `elect`) since start."""
    deferred: bool = False
    """A placement change was needed but held back by `min_change_interval_s`."""
    error: str | None = None


class TopicManager:
    """Reconciles the monitor topic each `reconcile_interval_s`; placement changes at most every
    `min_change_interval_s`, and a missing broker only counts as removed after that long too."""

    def __init__(self, admin: AdminClient, reassigner: Reassigner, config: CanaryConfig, timeout_s: float = 10.0):
        self._admin = admin
        self._reassigner = reassigner
        self._config = config
        self._timeout_s = timeout_s
        self._last_change_s = -math.inf
        self._missing_since: dict[int, float] = {}
        self._known: set[int] = set()
        self._live_endpoints: tuple[str, ...] = ()
        self.report = ReconcileReport()

    def reconcile(self, now: float) -> ReconcileReport:
        """One pass; Kafka errors are caught and reported, never raised."""
        try:
            self._reconcile(now)
            self.report.error = None
        except KafkaUnavailable as exc:
            self.report.error = str(exc)
            _LOG.warning("canary topic %s: %s", self._config.topic, exc)
        except Exception as exc:  # a client-library bug must not stop the metadata refresh that runs after us
            self.report.error = repr(exc)
            _LOG.exception("canary topic %s: reconciliation failed", self._config.topic)
        return self.report

    def _reconcile(self, now: float) -> None:
        config = self._config
        live = read_brokers(self._admin, self._timeout_s)
        racks = {b: info.rack for b, info in live.items()}
        self._live_endpoints = tuple(f"{info.host}:{info.port}" for _, info in sorted(live.items()))
        layout = read_layout(self._admin, config.topic, self._timeout_s)
        if layout is not None:
            self._known |= {b for r in layout.replicas.values() for b in r}
        self._known |= set(racks)
        for broker in self._known - set(racks):
            self._missing_since.setdefault(broker, now)
        for broker in set(racks):
            self._missing_since.pop(broker, None)
        gone = frozenset(b for b, since in self._missing_since.items() if now - since >= config.min_change_interval_s)
        rf = default_replication_factor(len(self._known - gone), config.replication_factor)
        wanted = plan(racks, layout, rf, config.partitions_per_broker, gone)
        self.report.partitions = len(layout.replicas) if layout is not None else 0
        self.report.gaps = wanted.gaps
        self.report.deferred = False
        if wanted.is_empty:
            return
        if not config.manage_topic:
            _LOG.warning(
                "canary topic %s is not as it should be (manage_topic is off): %s", config.topic, "; ".join(wanted.gaps)
            )
            return
        if wanted.changes_placement and not wanted.create and now - self._last_change_s < config.min_change_interval_s:
            self.report.deferred = True
            _LOG.info(
                "canary topic %s: change deferred by min_change_interval_s: %s", config.topic, "; ".join(wanted.gaps)
            )
        else:
            self._apply_placement(wanted, rf, now)
        if wanted.elect:
            self._elect(wanted.elect)

    def _apply_placement(self, wanted: Plan, rf: int, now: float) -> None:
        topic = self._config.topic
        if wanted.create:
            min_isr = default_min_insync(rf, self._config.min_insync_replicas)
            assignment = [list(wanted.create[p]) for p in sorted(wanted.create)]
            new = NewTopic(
                topic,
                num_partitions=len(assignment),
                replica_assignment=assignment,
                config={
                    "min.insync.replicas": str(min(min_isr, rf)),
                    "cleanup.policy": "delete",
                    "retention.ms": str(24 * 3600 * 1000),
                },
            )
            future = self._admin.create_topics([new], request_timeout=self._timeout_s)[topic]
            if self._wait(future, "create topic", tolerate=KafkaError.TOPIC_ALREADY_EXISTS):
                self._count("create")
                _LOG.warning("canary topic %s created: %s", topic, wanted.create)
            else:  # metadata lagged behind a create (ours or another instance's): next pass sees the topic
                _LOG.info("canary topic %s already exists; placement is checked on the next pass", topic)
        if wanted.add:
            total = self.report.partitions + len(wanted.add)
            new_parts = NewPartitions(topic, total, [list(wanted.add[p]) for p in sorted(wanted.add)])
            self._wait(
                self._admin.create_partitions([new_parts], request_timeout=self._timeout_s)[topic], "add partitions"
            )
            self._count("add_partitions")
            _LOG.warning("canary topic %s: partitions added: %s", topic, wanted.add)
        if wanted.reassign:
            self._reassigner.reassign(topic, wanted.reassign, self._live_endpoints)
            self._count("reassign")
            _LOG.warning("canary topic %s: replicas moved: %s", topic, wanted.reassign)
        if wanted.changes_placement:
            self._last_change_s = now

    def _elect(self, partitions: tuple[int, ...]) -> None:
        topic = self._config.topic
        tps = [TopicPartition(topic, p) for p in partitions]
        try:
            results = self._admin.elect_leaders(ElectionType.PREFERRED, tps).result(timeout=self._timeout_s + 1)
        except (KafkaException, TimeoutError) as exc:
            raise KafkaUnavailable(f"preferred leader election on {topic} failed: {exc}") from exc
        self._count("elect")
        failed = {tp.partition: str(err) for tp, err in results.items() if err is not None}
        if failed:
            _LOG.info("canary topic %s: preferred leader election not done for %s", topic, failed)

    def _wait(self, future: Any, what: str, tolerate: int | None = None) -> bool:
        """True once the request is done; False if it failed with the `tolerate` error code."""
        try:
            future.result(timeout=self._timeout_s + 1)
        except KafkaException as exc:
            if tolerate is not None and exc.args and exc.args[0].code() == tolerate:
                return False
            raise KafkaUnavailable(f"{what} {self._config.topic!r} failed: {exc}") from exc
        except TimeoutError as exc:
            raise KafkaUnavailable(f"{what} {self._config.topic!r} failed: {exc}") from exc
        return True

    def _count(self, action: str) -> None:
        self.report.actions[action] = self.report.actions.get(action, 0) + 1
