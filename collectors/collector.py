"""prometheus_client Collectors: the latest JMX and cluster-state results as metric families at /metrics time.

Last stage of the collectors' flow. Nothing here talks to Kafka: each `collect()` renders what the scrapers
(`scrapers.py`) published last, so a Prometheus scrape is as fast as formatting text. Every broker and client
target is reported (`kafka_pulse_jmx_up`, `kafka_pulse_client_jmx_up`, last success time, failures by reason) even
while its values are withheld.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from collectors.cluster_state import ClusterHealth
from collectors.mapping import Family, merge_families
from collectors.scrapers import FAILURE_REASONS, BrokerScraper, PeriodicScraper


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
            health.add(f"{p}_up", "gauge", f"1 when the latest JMX scrape of the {subject} succeeded.",
                       labels, 1.0 if result.ok else 0.0)  # fmt: skip
            if result.last_success_s is not None:
                health.add(f"{p}_last_success_timestamp_seconds", "gauge",
                           f"When the latest successful JMX scrape of the {subject} ended.", labels,
                           result.last_success_s)  # fmt: skip
            health.add(f"{p}_scrape_duration_seconds", "gauge",
                       f"How long the latest JMX scrape of the {subject} took.", labels, result.duration_s)  # fmt: skip
            for reason in FAILURE_REASONS:
                health.add(f"{p}_scrape_failures", "counter",
                           f"Failed JMX scrapes of the {subject} by reason (timeout: no answer within "
                           f"{self.health.timeout_key}).",
                           {**labels, "reason": reason}, scraper.failures.by_reason.get(reason, 0))  # fmt: skip
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
            out.add("kafka_pulse_cluster_state_up", "gauge", "1 when the latest Admin API read succeeded.", c,
                    1.0 if result.ok else 0.0)  # fmt: skip
            if result.last_success_s is not None:
                out.add("kafka_pulse_cluster_state_last_success_timestamp_seconds", "gauge",
                        "When the latest successful Admin API read ended.", c, result.last_success_s)  # fmt: skip
            for reason in FAILURE_REASONS:
                out.add("kafka_pulse_cluster_state_failures", "counter",
                        "Failed Admin API reads of the cluster state by reason (timeout: not done within "
                        "collectors.admin_timeout_s).", {**c, "reason": reason},
                        scraper.failures.by_reason.get(reason, 0))  # fmt: skip
            if result.ok and result.value is not None:
                _add_health(out, c, result.value)
        yield from out


def _add_health(out: _Families, c: dict[str, str], health: ClusterHealth) -> None:
    gauge = "gauge"
    out.add(
        "kafka_pulse_cluster_brokers_expected",
        gauge,
        "Brokers expected: configured for JMX or ever seen by this collector.",
        c,
        len(health.expected),
    )
    out.add(
        "kafka_pulse_cluster_brokers_missing",
        gauge,
        "Expected brokers absent from the metadata.",
        c,
        len(health.missing),
    )
    if health.controller is not None:
        out.add(
            "kafka_pulse_cluster_controller",
            gauge,
            "1 for the broker the Admin API names as controller.",
            {**c, "broker": str(health.controller)},
            1.0,
        )
    out.add("kafka_pulse_cluster_partitions", gauge, "Partitions in the cluster.", c, health.partitions)
    out.add("kafka_pulse_cluster_offline_partitions", gauge, "Partitions without a leader.", c, health.offline)
    out.add(
        "kafka_pulse_cluster_under_replicated_partitions",
        gauge,
        "Partitions whose ISR is smaller than their replica set.",
        c,
        health.under_replicated,
    )
    out.add(
        "kafka_pulse_cluster_under_min_isr_partitions",
        gauge,
        "Partitions whose ISR is below the topic's min.insync.replicas (acks=all produce fails).",
        c,
        health.under_min_isr,
    )
    out.add(
        "kafka_pulse_cluster_same_rack_partitions",
        gauge,
        "Partitions with several replicas, all in one rack.",
        c,
        health.same_rack,
    )
    diagnosis = health.diagnosis
    for broker in diagnosis.brokers or ("",):
        out.add(
            "kafka_pulse_cluster_under_replicated_diagnosis",
            gauge,
            "1 for the verdict: scope none, broker (the broker common to all under-replicated partitions) "
            "or cluster-wide.",
            {**c, "scope": diagnosis.scope.value, "broker": str(broker)},
            1.0,
        )
    for row in health.balance:
        b = {**c, "broker": str(row.broker), "rack": row.rack or ""}
        out.add(
            "kafka_pulse_cluster_broker_present",
            gauge,
            "1 when the expected broker is in the metadata.",
            b,
            1.0 if row.present else 0.0,
        )
        out.add("kafka_pulse_cluster_broker_partitions", gauge, "Replicas hosted by the broker.", b, row.partitions)
        out.add("kafka_pulse_cluster_broker_leaders", gauge, "Partitions the broker leads.", b, row.leaders)
        out.add(
            "kafka_pulse_cluster_broker_preferred_leaders",
            gauge,
            "Partitions whose preferred (first) replica is the broker.",
            b,
            row.preferred,
        )
        out.add(
            "kafka_pulse_cluster_broker_preferred_leader_imbalance",
            gauge,
            "Partitions preferring the broker as leader but led by another.",
            b,
            row.not_leading_preferred,
        )
        out.add(
            "kafka_pulse_cluster_broker_partition_skew_ratio",
            gauge,
            "(partitions - mean) / mean over the expected brokers.",
            b,
            row.partition_skew,
        )
        out.add(
            "kafka_pulse_cluster_broker_leader_skew_ratio",
            gauge,
            "(leaders - mean) / mean over the expected brokers.",
            b,
            row.leader_skew,
        )
