"""The canary's Prometheus families (documented in docs/metrics.md, "## Canary"), on a registry it is given.

Counters and histograms follow each settled probe (`CanaryMetrics` is a `ProbeSink`); gauges (availability,
broker up, topic placement, tracker totals) are read from a `CanarySnapshot` at scrape time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from canary.commit_outcome import CommitResult
from canary.consumer import ConsumerCounts
from canary.events import ProbeResult
from canary.tracker import PartitionCounts
from pulse.kafka.broker_probe import CheckResult

PREFIX = "kafka_pulse_canary"
LATENCY_BUCKETS_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
"""0.5 ms to 10 s: an idle cluster's acks=all round trip lands in the first buckets."""
_PROBE_LABELS = ("cluster", "broker", "rack", "client_rack")


def _label(value: object) -> str:
    return "" if value is None else str(value)


@dataclass(frozen=True)
class CanarySnapshot:
    """State read at scrape time."""

    availability: dict[int, float | None] = field(default_factory=dict)
    """Broker -> produce availability over the window (None: no verdict in the window)."""
    broker_up: dict[int, bool] = field(default_factory=dict)
    """Broker -> last connection check succeeded."""
    racks: dict[int, str | None] = field(default_factory=dict)
    partitions_led: dict[int, int] = field(default_factory=dict)
    partitions: int = 0
    placement_gaps: int = 0
    topic_actions: dict[str, int] = field(default_factory=dict)
    tracker: dict[int, PartitionCounts] = field(default_factory=dict)
    consumer: ConsumerCounts = field(default_factory=ConsumerCounts)
    pending: int = 0
    fetch_brokers: dict[int, int] = field(default_factory=dict)
    """Closest-replica probe: partition -> broker it fetches from."""
    producer_restarts: int = 0
    """Times the probe producer's client was replaced after a fatal error."""


class CanaryMetrics:
    """Every canary family for one cluster; `record` is the ProbeSink side."""

    def __init__(
        self,
        registry: CollectorRegistry,
        cluster: str,
        client_rack: str | None,
        window_s: float,
        snapshot: Callable[[], CanarySnapshot],
    ) -> None:
        self._cluster = cluster
        self._client_rack = _label(client_rack)
        self._window_s = window_s
        self._snapshot = snapshot
        self.produce_attempts = Counter(
            f"{PREFIX}_produce_attempts",
            "Probes sent, by the partition leader at send time.",
            _PROBE_LABELS,
            registry=registry,
        )
        self.produce_errors = Counter(
            f"{PREFIX}_produce_errors",
            "Probes whose produce failed, by librdkafka error name.",
            (*_PROBE_LABELS, "error"),
            registry=registry,
        )
        self.produce_latency = Histogram(
            f"{PREFIX}_produce_latency_seconds",
            "produce() to acks=all acknowledgement (librdkafka delivery report).",
            _PROBE_LABELS,
            buckets=LATENCY_BUCKETS_S,
            registry=registry,
        )
        self.e2e_latency = Histogram(
            f"{PREFIX}_e2e_latency_seconds",
            "Send to read back, per leader at send time and replica read from.",
            (*_PROBE_LABELS, "replica"),
            buckets=LATENCY_BUCKETS_S,
            registry=registry,
        )
        self.consumed = Counter(
            f"{PREFIX}_records_consumed", "Probes read back (first reads).", _PROBE_LABELS, registry=registry
        )
        self.lost = Counter(
            f"{PREFIX}_records_lost", "Acknowledged probes never read back.", _PROBE_LABELS, registry=registry
        )
        self.duplicated = Counter(
            f"{PREFIX}_records_duplicated", "Extra reads of probes already read.", _PROBE_LABELS, registry=registry
        )
        self.out_of_order = Counter(
            f"{PREFIX}_records_out_of_order", "Probes read after a later one.", _PROBE_LABELS, registry=registry
        )
        self.checks = Counter(
            f"{PREFIX}_connection_checks",
            "Per-broker ApiVersions checks, by result.",
            ("cluster", "broker", "rack", "result"),
            registry=registry,
        )
        self.check_latency = Histogram(
            f"{PREFIX}_connection_check_seconds",
            "Connect and ApiVersions round trip to one broker.",
            ("cluster", "broker", "rack"),
            buckets=LATENCY_BUCKETS_S,
            registry=registry,
        )
        self.commits = Counter(
            f"{PREFIX}_offset_commits",
            "Offset commits of the probe group, by result.",
            ("cluster", "result", "error"),
            registry=registry,
        )
        self.commit_latency = Histogram(
            f"{PREFIX}_offset_commit_latency_seconds",
            "Offset commit to the group coordinator, sent to answered (ok commits).",
            ("cluster",),
            buckets=LATENCY_BUCKETS_S,
            registry=registry,
        )
        registry.register(_SnapshotCollector(self))

    # ---- ProbeSink -------------------------------------------------------------------------------------

    def record(self, event: ProbeResult) -> None:
        labels = (self._cluster, _label(event.broker), _label(event.rack), self._client_rack)
        if event.duplicate:
            self.duplicated.labels(*labels).inc()
            return
        self.produce_attempts.labels(*labels).inc()
        if not event.produce_ok:
            self.produce_errors.labels(*labels, event.error or "unknown").inc()
        if event.produce_latency_s is not None:  # acknowledged, in time or not (`_SLO_EXCEEDED`)
            self.produce_latency.labels(*labels).observe(event.produce_latency_s)
        if event.consume_ok:
            self.consumed.labels(*labels).inc()
            if event.e2e_latency_s is not None:
                self.e2e_latency.labels(*labels, "leader").observe(event.e2e_latency_s)
        if event.lost:
            self.lost.labels(*labels).inc()
        if event.out_of_order:
            self.out_of_order.labels(*labels).inc()

    # ---- other probes ----------------------------------------------------------------------------------

    def connection_checked(self, result: CheckResult, rack: str | None) -> None:
        labels = (self._cluster, str(result.broker), _label(rack))
        self.checks.labels(*labels, "ok" if result.ok else result.error or "error").inc()
        if result.ok:
            self.check_latency.labels(*labels).observe(result.latency_s)

    def committed(self, result: CommitResult) -> None:
        self.commits.labels(self._cluster, "ok" if result.ok else "error", result.error or "").inc()
        if result.ok:
            self.commit_latency.labels(self._cluster).observe(result.latency_s)

    def closest_arrival(self, latency_s: float, broker: int | None, rack: str | None) -> None:
        self.e2e_latency.labels(self._cluster, _label(broker), _label(rack), self._client_rack, "closest").observe(
            latency_s
        )


class _SnapshotCollector:
    def __init__(self, metrics: CanaryMetrics) -> None:
        self._m = metrics

    def collect(self) -> Iterator[Metric]:
        m = self._m
        s = m._snapshot()
        cluster = m._cluster
        availability = GaugeMetricFamily(
            f"{PREFIX}_produce_availability",
            f"Good / judged probes charged to the broker over the last {m._window_s:g} s (absent: no verdict).",
            labels=("cluster", "broker", "rack"),
        )
        for broker, ratio in sorted(s.availability.items()):
            if ratio is not None:
                availability.add_metric((cluster, str(broker), _label(s.racks.get(broker))), ratio)
        yield availability
        up = GaugeMetricFamily(
            f"{PREFIX}_broker_up",
            "1 when the broker's last ApiVersions check answered.",
            labels=("cluster", "broker", "rack"),
        )
        for broker, ok in sorted(s.broker_up.items()):
            up.add_metric((cluster, str(broker), _label(s.racks.get(broker))), 1.0 if ok else 0.0)
        yield up
        led = GaugeMetricFamily(
            f"{PREFIX}_partitions_led", "Monitor partitions the broker leads now.", labels=("cluster", "broker", "rack")
        )
        for broker, count in sorted(s.partitions_led.items()):
            led.add_metric((cluster, str(broker), _label(s.racks.get(broker))), count)
        yield led
        yield _gauge(f"{PREFIX}_topic_partitions", "Partitions of the monitor topic.", cluster, s.partitions)
        yield _gauge(
            f"{PREFIX}_topic_placement_gaps",
            "Ways the monitor topic's placement differs from the plan (0 when all is well).",
            cluster,
            s.placement_gaps,
        )
        yield _gauge(f"{PREFIX}_probes_pending", "Probes sent and not yet settled.", cluster, s.pending)
        actions = CounterMetricFamily(
            f"{PREFIX}_topic_changes", "Changes made to the monitor topic, by action.", labels=("cluster", "action")
        )
        for action, count in sorted(s.topic_actions.items()):
            actions.add_metric((cluster, action), count)
        yield actions
        for name, attr, doc in (
            ("truncations", "truncations", "Times a partition's log was found shorter than an acknowledged offset."),
            ("records_truncated", "truncated", "Probes read back and later truncated away."),
            ("records_late", "late", "Probes read back after being declared lost."),
            (
                "records_persisted_after_error",
                "persisted_after_error",
                "Probes read back although their produce reported an error.",
            ),
            ("records_unknown", "unknown", "Records with this instance's id and an untracked sequence."),
        ):
            family = CounterMetricFamily(f"{PREFIX}_{name}", doc, labels=("cluster", "partition"))
            for partition, counts in sorted(s.tracker.items()):
                family.add_metric((cluster, str(partition)), getattr(counts, attr))
            yield family
        for name, value, doc in (
            ("records_malformed", s.consumer.malformed, "Records on the monitor topic that are not probes."),
            ("records_foreign", s.consumer.foreign, "Records of other canary instances (skipped)."),
            ("consumer_resets", s.consumer.resets, "Out-of-range positions handled by the probe consumer."),
            ("producer_restarts", s.producer_restarts, "Probe producer clients replaced after a fatal error."),
        ):
            family = CounterMetricFamily(f"{PREFIX}_{name}", doc, labels=("cluster",))
            family.add_metric((cluster,), value)
            yield family
        errors = CounterMetricFamily(
            f"{PREFIX}_consumer_errors", "Probe consumer errors, by librdkafka name.", labels=("cluster", "error")
        )
        for error, count in sorted((s.consumer.errors or {}).items()):
            errors.add_metric((cluster, error), count)
        yield errors
        fetch = GaugeMetricFamily(
            f"{PREFIX}_closest_replica_fetch_broker",
            "Closest-replica probe: the broker each partition is fetched from.",
            labels=("cluster", "partition"),
        )
        for partition, broker in sorted(s.fetch_brokers.items()):
            fetch.add_metric((cluster, str(partition)), broker)
        yield fetch


def _gauge(name: str, doc: str, cluster: str, value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=("cluster",))
    family.add_metric((cluster,), value)
    return family
