"""prometheus_client Collectors: the latest JMX and cluster-state results as metric families at /metrics time.

Last stage of the collectors' flow. Nothing here talks to Kafka: each `collect()` renders what the scrapers
(`scrapers.py`) published last, so a Prometheus scrape is as fast as formatting text. Every broker and client
target is reported (`kafka_pulse_jmx_up`, `kafka_pulse_client_jmx_up`, last success time, failures by reason) even
while its values are withheld.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from collectors.cluster_state import UNDER_MIN_ISR_EXAMPLES, BrokerBalance, ClusterHealth
from collectors.mapping import Family, merge_families
from collectors.scrapers import FAILURE_REASONS, BrokerScraper, PeriodicScraper
from pulse.kafka.partitions import ElrVerdict


def to_metric(family: Family) -> Metric:
    metric = Metric(family.name, family.help, family.kind)
    for sample in family.samples:
        metric.add_sample(family.name + sample.suffix, dict(sample.labels), sample.value)
    return metric


class _Families:
    """Builds our own families one sample at a time, in a stable order."""

    def __init__(self) -> None:
        self._families: dict[str, Metric] = {}

    def add(self, name: str, kind: str, help_text: str, labels: dict[str, str], value: float) -> None:
        metric = self._families.get(name)
        if metric is None:
            metric = self._families[name] = Metric(name, help_text, kind)
        metric.add_sample(name + ("_total" if kind == "counter" else ""), labels, value)

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._families.values())


@dataclass(frozen=True)
class HealthNames:
    """How one kind of JMX endpoint reports its scrape health: family prefix and the words of the help texts."""

    prefix: str
    subject: str
    timeout_key: str
    """The config key of the scrape time limit, named in the failure counter's help."""


BROKER_HEALTH = HealthNames("kafka_pulse_jmx", "broker", "jmx.timeout_s")
CLIENT_HEALTH = HealthNames("kafka_pulse_client_jmx", "client target", "collectors.clients[].timeout_s")
"""Client targets get families of their own: their label set (`client_target`) is not a broker's."""


class JmxCollector(Collector):
    """JMX families (jmx_exporter/Strimzi names) plus each endpoint's scrape health: brokers by default, or the
    client targets with `CLIENT_HEALTH`."""

    def __init__(self, scrapers: Mapping[Any, BrokerScraper], health: HealthNames = BROKER_HEALTH) -> None:
        self.scrapers = scrapers
        """A live view: scrapers added after registration are collected too."""
        self.health = health

    def collect(self) -> Iterator[Metric]:
        parts = []
        health = _Families()
        p, subject = self.health.prefix, self.health.subject
        for scraper in list(self.scrapers.values()):
            labels = dict(scraper.identity().labels())
            result = scraper.result
            if result is None:
                continue  # not scraped yet: unknown, not down
            if result.ok and result.value is not None:
                parts.append(result.value)
            health.add(
                f"{p}_up",
                "gauge",
                f"1 when the latest JMX scrape of the {subject} succeeded.",
                labels,
                1.0 if result.ok else 0.0,
            )
            if result.last_success_s is not None:
                health.add(
                    f"{p}_last_success_timestamp_seconds",
                    "gauge",
                    f"When the latest successful JMX scrape of the {subject} ended.",
                    labels,
                    result.last_success_s,
                )
            health.add(
                f"{p}_scrape_duration_seconds",
                "gauge",
                f"How long the latest JMX scrape of the {subject} took.",
                labels,
                result.duration_s,
            )
            for reason in FAILURE_REASONS:
                health.add(
                    f"{p}_scrape_failures",
                    "counter",
                    f"Failed JMX scrapes of the {subject} by reason (timeout: no answer within "
                    f"{self.health.timeout_key}).",
                    {**labels, "reason": reason},
                    scraper.failures.by_reason.get(reason, 0),
                )
        for family in merge_families(parts).values():
            yield to_metric(family)
        yield from health


class ClusterStateCollector(Collector):
    """The `kafka_pulse_cluster_*` families from each cluster's latest Admin API assessment."""

    def __init__(self, scrapers: Mapping[str, PeriodicScraper[ClusterHealth]]) -> None:
        self.scrapers = scrapers

    def collect(self) -> Iterator[Metric]:
        out = _Families()
        for cluster, scraper in list(self.scrapers.items()):
            result = scraper.result
            if result is None:
                continue
            c = {"cluster": cluster}
            out.add(
                "kafka_pulse_cluster_state_up",
                "gauge",
                "1 when the latest Admin API read succeeded.",
                c,
                1.0 if result.ok else 0.0,
            )
            if result.last_success_s is not None:
                out.add(
                    "kafka_pulse_cluster_state_last_success_timestamp_seconds",
                    "gauge",
                    "When the latest successful Admin API read ended.",
                    c,
                    result.last_success_s,
                )
            for reason in FAILURE_REASONS:
                out.add(
                    "kafka_pulse_cluster_state_failures",
                    "counter",
                    "Failed Admin API reads of the cluster state by reason (timeout: not done within "
                    "collectors.admin_timeout_s).",
                    {**c, "reason": reason},
                    scraper.failures.by_reason.get(reason, 0),
                )
            if result.ok and result.value is not None:
                _add_health(out, c, result.value)
        yield from out


ClusterGauge = tuple[str, str, Callable[[ClusterHealth], float]]
"""A `kafka_pulse_cluster_<name>` gauge per cluster: name, help, its value in the assessment."""
BrokerGauge = tuple[str, str, Callable[[BrokerBalance], float]]
"""A `kafka_pulse_cluster_broker_<name>` gauge per expected broker: name, help, its value in the broker's row."""

_BROKER_COUNTS: tuple[ClusterGauge, ...] = (
    (
        "brokers_expected",
        "Brokers expected: configured for JMX or ever seen by this collector.",
        lambda h: len(h.expected),
    ),
    ("brokers_missing", "Expected brokers absent from the metadata.", lambda h: len(h.missing)),
)
_PARTITION_COUNTS: tuple[ClusterGauge, ...] = (
    ("partitions", "Partitions in the cluster.", lambda h: h.partitions),
    ("offline_partitions", "Partitions without a leader.", lambda h: h.offline),
    (
        "under_replicated_partitions",
        "Partitions whose ISR is smaller than their replica set.",
        lambda h: h.under_replicated,
    ),
    (
        "under_min_isr_partitions",
        "Partitions whose ISR is below the topic's min.insync.replicas (acks=all produce fails).",
        lambda h: h.under_min_isr,
    ),
    ("same_rack_partitions", "Partitions with several replicas, all in one rack.", lambda h: h.same_rack),
)
_PER_BROKER: tuple[BrokerGauge, ...] = (
    ("present", "1 when the expected broker is in the metadata.", lambda r: 1.0 if r.present else 0.0),
    ("partitions", "Replicas hosted by the broker.", lambda r: r.partitions),
    ("leaders", "Partitions the broker leads.", lambda r: r.leaders),
    ("preferred_leaders", "Partitions whose preferred (first) replica is the broker.", lambda r: r.preferred),
    (
        "preferred_leader_imbalance",
        "Partitions preferring the broker as leader but led by another.",
        lambda r: r.not_leading_preferred,
    ),
    ("partition_skew_ratio", "(partitions - mean) / mean over the expected brokers.", lambda r: r.partition_skew),
    ("leader_skew_ratio", "(leaders - mean) / mean over the expected brokers.", lambda r: r.leader_skew),
)


def _add_health(out: _Families, c: dict[str, str], health: ClusterHealth) -> None:
    """One cluster's assessment as the gauges of the tables above, plus the controller and the diagnosis, in the
    order the families have always been exposed."""
    for name, help_text, value in _BROKER_COUNTS:
        out.add(f"kafka_pulse_cluster_{name}", "gauge", help_text, c, value(health))
    if health.controller is not None:
        out.add(
            "kafka_pulse_cluster_controller",
            "gauge",
            "1 for the broker the Admin API names as controller.",
            {**c, "broker": str(health.controller)},
            1.0,
        )
    for name, help_text, value in _PARTITION_COUNTS:
        out.add(f"kafka_pulse_cluster_{name}", "gauge", help_text, c, value(health))
    for verdict in ElrVerdict:
        out.add(
            "kafka_pulse_cluster_under_min_isr_elr_partitions",
            "gauge",
            "Partitions under min ISR by what can recover them (KIP-966): elr recoverable (ELR non-empty), isr_only "
            "(ELR empty, ISR not), at_risk (ISR and ELR empty), unknown (ELR not read).",
            {**c, "elr": verdict.value},
            health.under_min_isr_by_elr.get(verdict, 0),
        )
    for state in health.under_min_isr_examples:
        verdict = state.elr_verdict or ElrVerdict.UNKNOWN
        out.add(
            "kafka_pulse_cluster_under_min_isr_partition",
            "gauge",
            f"1 for each partition under min ISR, at most {UNDER_MIN_ISR_EXAMPLES} (at risk first), with its ELR "
            "verdict.",
            {**c, "topic": state.topic, "partition": str(state.partition), "elr": verdict.value},
            1.0,
        )
    _add_quorum(out, c, health)
    _add_tiered(out, c, health)
    diagnosis = health.diagnosis
    for broker in diagnosis.brokers or ("",):
        out.add(
            "kafka_pulse_cluster_under_replicated_diagnosis",
            "gauge",
            "1 for the verdict: scope none, broker (the broker common to all under-replicated partitions) "
            "or cluster-wide.",
            {**c, "scope": diagnosis.scope.value, "broker": str(broker)},
            1.0,
        )
    for row in health.balance:
        b = {**c, "broker": str(row.broker), "rack": row.rack or ""}
        for name, help_text, of_row in _PER_BROKER:
            out.add(f"kafka_pulse_cluster_broker_{name}", "gauge", help_text, b, of_row(row))


def _add_tiered(out: _Families, c: dict[str, str], health: ClusterHealth) -> None:
    """Tiered topics (KIP-405): the copy lag each may have (the rules compare the brokers' RemoteCopyLagBytes with
    it), and each tiered partition's earliest local offset (a group committed below it reads the remote tier)."""
    for topic in health.tiered:
        if topic.allowed_copy_lag_bytes is not None:
            out.add(
                "kafka_pulse_cluster_topic_remote_copy_lag_allowed_bytes",
                "gauge",
                "Bytes a tiered topic may hold not yet copied to remote storage, over all its partitions: per "
                "partition remote.copy.lag.bytes (Kafka 4.4+) or else local.retention.bytes, plus one segment.",
                {**c, "topic": topic.topic, "basis": topic.basis},
                topic.allowed_copy_lag_bytes * topic.partitions,
            )
    for (topic_name, partition), offset in sorted(health.earliest_local.items()):
        out.add(
            "kafka_pulse_cluster_partition_earliest_local_offset",
            "gauge",
            "A tiered partition's earliest offset still on the brokers' disks (ListOffsets EARLIEST_LOCAL); "
            "older records are served from remote storage.",
            {**c, "topic": topic_name, "partition": str(partition)},
            float(offset),
        )


def _add_quorum(out: _Families, c: dict[str, str], health: ClusterHealth) -> None:
    """The KRaft metadata quorum from DescribeQuorum: the leader, its epoch (an election raises it: its changes are
    the leader churn), each voter's lag and the observers (a KIP-853 voter change moves a node between the two
    sets). Nothing under ZooKeeper."""
    if health.quorum_up is None:
        return
    out.add(
        "kafka_pulse_kraft_quorum_up",
        "gauge",
        "1 when the latest DescribeQuorum answered.",
        c,
        1.0 if health.quorum_up else 0.0,
    )
    quorum = health.quorum
    if quorum is None:
        return
    if quorum.leader is not None:
        out.add(
            "kafka_pulse_kraft_leader",
            "gauge",
            "1 for the node leading the KRaft metadata quorum (the active controller).",
            {**c, "node": str(quorum.leader)},
            1.0,
        )
    out.add(
        "kafka_pulse_kraft_leader_epoch",
        "gauge",
        "The quorum's leader epoch; every election raises it, so changes() over it is the leader churn.",
        c,
        quorum.epoch,
    )
    if quorum.high_watermark >= 0:
        out.add(
            "kafka_pulse_kraft_high_watermark",
            "gauge",
            "The quorum's high watermark: the last committed metadata offset; the leader's no-op records move it "
            "every 500 ms, so a still one means the quorum commits nothing.",
            c,
            quorum.high_watermark,
        )
    out.add("kafka_pulse_kraft_voters", "gauge", "Voters of the KRaft metadata quorum.", c, len(quorum.voters))
    out.add(
        "kafka_pulse_kraft_observers",
        "gauge",
        "Nodes replicating the metadata log without a vote (brokers, controllers not in the voter set).",
        c,
        len(quorum.observers),
    )
    for voter in quorum.voters:
        v = {**c, "node": str(voter.node)}
        out.add(
            "kafka_pulse_kraft_voter_lag_records",
            "gauge",
            "The leader's high watermark minus the voter's log end offset.",
            v,
            voter.lag_records,
        )
        if voter.caught_up_age_s is not None:
            out.add(
                "kafka_pulse_kraft_voter_caught_up_age_seconds",
                "gauge",
                "Seconds since the voter last caught up with the leader (DescribeQuorum's lastCaughtUpTimestamp).",
                v,
                voter.caught_up_age_s,
            )
